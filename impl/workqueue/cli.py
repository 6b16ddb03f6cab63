"""`leaseproof workqueue run`: the command line of the reference work queue.

Registered by `conformance/cli/__init__.py` through `register(subparsers)`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from impl.workqueue.config import Gates, Settings


def register(subparsers: Any) -> None:
    """Add the `workqueue` command and its `run` sub-command."""
    wq = subparsers.add_parser("workqueue", help="the reference Redis Streams work queue and command layer")
    sub = wq.add_subparsers(dest="workqueue_command", metavar="SUBCOMMAND")
    sub.required = True
    _add_run(sub)


def _add_run(sub: Any) -> None:
    p = sub.add_parser("run", help="run commands through consumer processes on Redis and record a trace",
                       description="Submit commands (some twice), run them through consumer processes whose "
                                   "handlers sometimes outlive the visibility timeout, throw or return not-done, "
                                   "record the trace and print a summary. Exit 1 if any invocation overlapped "
                                   "or a command did not finish.")
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
        ("duplicate invocations (must be 0)", out["duplicate_invocations"]),
        ("self-reclaims dropped", out["duplicates_dropped"]),
        ("external calls per command", f"min {ext.get('min')} max {ext.get('max')} mean {ext.get('mean')} (total {ext.get('total')})"),
        ("terminal states changed (must be 0)", out["terminal_changes"]),
        ("seconds / commands per second", f"{out['seconds']} / {out['commands_per_s']}"),
        ("trace", out["trace"]),
        ("verdict", "ok" if out["ok"] else "FAILED"),
    ]
    for k, v in rows:
        table.add_row(k, str(v))
    Console().print(table)
