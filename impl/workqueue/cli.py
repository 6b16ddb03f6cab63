"""`leaseproof workqueue run`: the command line of the reference work queue.

Registered by `conformance/cli/__init__.py` through `register(subparsers)`.
"""

from __future__ import annotations

import argparse
import json
import uuid
from pathlib import Path
from typing import Any

from impl.workqueue.config import Gates, Settings


def register(subparsers: Any) -> None:
    """Add the `workqueue` command and its `run` sub-command."""
    wq = subparsers.add_parser("workqueue", help="the reference Redis Streams work queue and command layer")
    sub = wq.add_subparsers(dest="workqueue_command", metavar="SUBCOMMAND")
    sub.required = True
    _add_run(sub)
    _add_sim(sub)


def _add_sim(sub: Any) -> None:
    p = sub.add_parser("sim", help="deterministic simulations over an in-memory Redis twin; write their traces",
                       description="Run seeded simulations (fakeredis on a virtual clock, a seeded scheduler "
                                   "choosing each step) and write one trace per seed. The same seed writes the "
                                   "same trace, byte for byte. Exit 1 if a run overlapped invocations, changed a "
                                   "terminal state or left work unfinished.")
    p.add_argument("--system", choices=["workqueue", "command"], default="workqueue")
    p.add_argument("--seeds", type=int, default=10, help="seeds 0..N-1 (default 10)")
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--messages", type=int, default=3, help="messages (or commands) per run")
    p.add_argument("--crashes", type=int, default=1, help="nodes that may crash per run")
    p.add_argument("--faults", type=int, default=2, help="ack failures / executor rejections per run")
    p.add_argument("--lags", type=int, default=2, help="heartbeat lags past the VT per run")
    p.add_argument("--closes", type=int, default=1, help="nodes that may close during a run")
    p.add_argument("--trace-dir", type=Path, default=Path("traces/recorded"))
    p.add_argument("--gate-off", action="append", default=[], metavar="GATE")
    p.add_argument("--redis", default=None, metavar="URL",
                   help="run on this real Redis server (a key prefix per seed, its clock warped, durations "
                        "scaled) instead of the in-memory twin; the same seed takes the same steps")
    p.set_defaults(func=_sim)


def _sim(args: argparse.Namespace) -> int:
    import logging

    from impl.workqueue.sim import Server, SimConfig, for_real_server, run_ok, seeded
    from impl.workqueue.sim_redis import real_client

    logging.getLogger("impl.workqueue").setLevel(logging.ERROR)  # past-max-processing warnings are expected
    config = SimConfig(system=args.system, messages=args.messages, crashes=args.crashes, faults=args.faults, lags=args.lags, closes=args.closes,
                       gates=Gates().off(*args.gate_off))
    tag = "-".join(["sim", args.system, *[f"no_{g}" for g in args.gate_off]])
    client = real_client(args.redis) if args.redis else None
    if client is not None:
        config = for_real_server(config)
    bad = 0
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        server = Server(client, f"lp-{tag}-seed{seed}-{uuid.uuid4().hex[:8]}", args.redis) if client is not None else None
        sim = seeded(config, seed, server)
        out = sim.run()
        path = sim.write_trace(args.trace_dir / f"{tag}-seed{seed}.ndjson", run=f"{tag} seed {seed}")
        if args.system == "command":  # the queue's own view of the same run
            sim.write_trace(args.trace_dir / f"{tag}-seed{seed}-queue.ndjson", run=f"{tag} seed {seed} (queue)",
                            view="workqueue")
        if server is not None:
            sim.queue.delete_keys()
        ok = run_ok(out)
        bad += not ok
        print(f"{'ok  ' if ok else 'FAIL'} seed {seed}: {out['events']} events, {out['reclaims']} reclaims, "
              f"{out['duplicate_invocations']} overlapping, {out['terminal_changes']} terminal changes, "
              f"finished={out['finished']}" + (f", permits leaked {out['permits_leaked']}" if out["permits_leaked"] else "")
              + f" -> {path}")
    return 1 if bad else 0


def _add_run(sub: Any) -> None:
    p = sub.add_parser("run", help="run commands through consumer processes on Redis and record a trace",
                       description="Submit commands (some twice), run them through consumer processes whose "
                                   "handlers sometimes outlive the visibility timeout, throw or return not-done, "
                                   "and whose process now and then stalls past its leases (heartbeat included); "
                                   "record the trace and print a summary. Exit 1 if more invocations overlapped "
                                   "than the stalls let leases lapse, "
                                   "a command did not finish, a terminal state changed, or the external system "
                                   "was called again without a failed call to explain it.")
    p.add_argument("--consumers", type=int, default=2, help="consumer processes (default 2)")
    p.add_argument("--commands", type=int, default=20, help="commands to submit (default 20)")
    p.add_argument("--duplicates", type=int, default=2, help="of those, how many to submit twice (default 2)")
    p.add_argument("--redis", default="redis://127.0.0.1:6379/0", help="Redis URL")
    p.add_argument("--trace-dir", type=Path, default=Path("traces/recorded"), help="where to write the trace")
    p.add_argument("--visibility-timeout-ms", type=int, default=400)
    p.add_argument("--max-processing-ms", type=int, default=600)
    p.add_argument("--concurrency", type=int, default=4, help="handler invocations per consumer")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for every command to finish")
    p.add_argument("--seed", type=int, default=0, help="seeds the handlers' misbehaviour")
    p.add_argument("--gate-off", action="append", default=[], metavar="GATE",
                   help="switch a guard off (calibration), e.g. attempt_guard; repeatable")
    p.add_argument("--keep-keys", action="store_true", help="leave the run's Redis keys in place")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from impl.workqueue.runner import RunConfig, run

    settings = Settings(visibility_timeout_ms=args.visibility_timeout_ms, max_processing_ms=args.max_processing_ms,
                        concurrency=args.concurrency, guard_ttl_ms=args.visibility_timeout_ms,
                        state_ttl_ms=3_600_000, poll_interval_ms=10)
    config = RunConfig(redis_url=args.redis, trace_dir=args.trace_dir, consumers=args.consumers,
                       commands=args.commands, duplicates=min(args.duplicates, args.commands), seed=args.seed,
                       timeout_s=args.timeout, settings=settings, gates=Gates().off(*args.gate_off),
                       keep_keys=args.keep_keys)
    out = run(config)
    if args.json:
        print(json.dumps(out, sort_keys=True))
    else:
        _print_summary(out)
    return 0 if out["ok"] else 1


def _print_summary(out: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="workqueue run", show_header=False)
    ext = out.get("external_calls", {})
    rows = [
        ("commands done", f"{out['commands_done']} {out.get('commands', {})}"),
        ("reclaims", out["reclaims"]),
        ("invocations overlapping a lapsed one (at most the lapses injected)",
         f"{out['duplicate_invocations']} (lapses injected: {out.get('lapses_injected', 0)})"),
        ("stalls that lasted until the peer held the command", out.get("takeovers_met", 0)),
        ("self-reclaims dropped", out["duplicates_dropped"]),
        ("external calls per command", f"min {ext.get('min')} max {ext.get('max')} mean {ext.get('mean')} "
                                       f"(total {ext.get('total')}; repeats no failed call explains: "
                                       f"{ext.get('unexplained_repeats')})"),
        ("terminal states changed (must be 0)", out["terminal_changes"]),
        ("seconds / commands per second", f"{out['seconds']} / {out['commands_per_s']}"),
        ("traces", f"{out['trace']} (command), {out['queue_trace']} (queue)"),
        ("verdict", "ok" if out["ok"] else "FAILED"),
    ]
    for k, v in rows:
        table.add_row(k, str(v))
    Console().print(table)
