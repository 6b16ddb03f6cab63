"""`leaseproof engine run`: run workflows on several node processes and write their traces."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from impl.engine.model import Gates
from impl.engine.run import RunConfig, run_workload, summary_json


def register(subparsers: Any) -> None:
    """Add the `engine` command and its `run` sub-command to the `leaseproof` parser."""
    engine = subparsers.add_parser("engine", help="the reference workflow engine")
    sub = engine.add_subparsers(dest="engine_command", metavar="SUBCOMMAND")
    sub.required = True
    _add_run(sub)
    _add_sim(sub)
    _add_mutants(sub)


def _add_run(sub: Any) -> None:
    p = sub.add_parser(
        "run",
        help="run workflows on node processes sharing one store, and write their traces",
        description=(
            "Start --nodes node processes sharing the store, run --workflows approval workflows "
            "(starts, signals from random nodes, some handlers outliving a lease), write one "
            "trace per workflow, and print what happened. Exit 1 if a workflow did not complete, "
            "a run overlapped another, or a trace is invalid."
        ),
    )
    p.add_argument("--nodes", type=int, default=2, help="node processes (default 2)")
    p.add_argument("--workflows", type=int, default=200, help="workflows to run (default 200)")
    p.add_argument("--store", required=True, help="sqlite:///PATH or mysql://USER@HOST:PORT/DB")
    p.add_argument("--trace-dir", type=Path, default=None, help="where to write the traces")
    p.add_argument("--seed", type=int, default=0, help="seed of the workload plan")
    p.add_argument("--lease-ms", type=int, default=3_000, help="lease length (default 3000 ms)")
    p.add_argument("--spread-ms", type=int, default=5_000, help="starts spread over this time (default 5000 ms)")
    p.add_argument("--long-fraction", type=float, default=0.25, help="share of handlers that run 1.5 leases")
    p.add_argument("--waiting-fraction", type=float, default=0.5,
                   help="share of workflows that wait for their signal (the rest complete on their first run)")
    p.add_argument("--prefix", default=None,
                   help="table prefix (default: the URL's ?prefix=, else lpe_); the run drops and recreates its tables")
    p.add_argument("--stale-fraction", type=float, default=0.0,
                   help="share of long waiting handlers whose node stalls past the lease before the first finishing "
                        "write, while another node leases the row (a stale actor meets a live one; default 0)")
    p.add_argument("--deadline", type=float, default=300.0, help="seconds before the nodes give up")
    p.add_argument("--gate-off", action="append", default=[], metavar="GATE",
                   help="turn a gate off, e.g. HONOUR_CHECK (repeatable), to show a bug")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=_run)


def _gates(off: list[str]) -> Gates:
    from impl.engine.errors import EngineError

    known = Gates().header()
    unknown = [g for g in off if g not in known]
    if unknown:
        raise EngineError(f"unknown gate(s) {unknown}; known: {sorted(known)}")
    return Gates.from_header({g: g not in off for g in known})


def _run(args: argparse.Namespace) -> int:
    cfg = RunConfig(
        store_url=args.store,
        nodes=args.nodes,
        workflows=args.workflows,
        seed=args.seed,
        lease_ms=args.lease_ms,
        spread_ms=args.spread_ms,
        long_fraction=args.long_fraction,
        waiting_fraction=args.waiting_fraction,
        stale_fraction=args.stale_fraction,
        deadline_s=args.deadline,
        prefix=args.prefix,
        gates=_gates(args.gate_off),
    )
    summary = run_workload(cfg, args.trace_dir)
    if args.json:
        print(json.dumps(summary_json(summary), indent=2, default=str))
    else:
        for line in summary.lines():
            print(line)
    return 0 if summary.ok else 1


def _add_mutants(sub: Any) -> None:
    p = sub.add_parser(
        "mutants",
        help="write the traces of broken engines (the mutant catalogue) for a checker to reject",
        description=(
            "Simulate each engine mutant (one broken decision or gate) under --seeds seeds and "
            "write its traces to TRACE_DIR/<mutant>/. Prints what each mutant did: overlapping "
            "runs and stranded workflows seen by the engine itself."
        ),
    )
    p.add_argument("--trace-dir", type=Path, required=True, help="where to write the traces")
    p.add_argument("--seeds", type=int, default=3, help="seeds per mutant (default 3)")
    p.add_argument("--workflows", type=int, default=8, help="workflows per seed (default 8)")
    p.add_argument("--only", action="append", default=[], metavar="MUTANT", help="record only these (repeatable)")
    p.set_defaults(func=_mutants)


def _mutants(args: argparse.Namespace) -> int:
    from impl.engine.mutants import MUTANTS, by_name, record

    chosen = [by_name(n) for n in args.only] if args.only else list(MUTANTS)
    print(f"{'mutant':26} {'traces':>6} {'overlaps':>8} {'stranded':>8}  breaks")
    for m in chosen:
        result, paths = record(m, args.trace_dir, range(args.seeds), args.workflows)
        print(f"{m.name:26} {len(paths):>6} {result.overlaps:>8} {result.stranded:>8}  {m.breaks}")
    return 0


def _add_sim(sub: Any) -> None:
    p = sub.add_parser(
        "sim",
        help="run seeded simulations and write one trace per workflow",
        description=(
            "Simulate two nodes sharing a store (the in-memory twin, or a real one with a "
            "connection per node; a seeded scheduler choosing each step, a virtual clock, "
            "optional crashes and pauses) and write one trace per workflow and seed. The same "
            "seed writes the same traces, byte for byte. Exit 1 if a run overlapped runs, or "
            "(without crashes) left a workflow unfinished."
        ),
    )
    p.add_argument("--seeds", type=int, default=10, help="seeds 0..N-1 (default 10)")
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--workflows", type=int, default=8, help="workflows per seed (default 8)")
    p.add_argument("--crash-rate", type=float, default=0.0, help="chance of a node crash per step")
    p.add_argument("--pause-rate", type=float, default=0.005, help="chance of a short pause per step")
    p.add_argument("--waiting-fraction", type=float, default=0.5)
    p.add_argument("--long-fraction", type=float, default=0.3)
    p.add_argument("--stale-fraction", type=float, default=0.5,
                   help="share of long waiting handlers whose thread stalls past the lease before its first finishing "
                        "write, while another node leases the row (a stale actor meets a live one; default 0.5)")
    p.add_argument("--fail-fraction", type=_fraction, default=0.0,
                   help="share of workflows whose handler fails its first 1 to max_retries deliveries (the flaky "
                        "workflow: retries, and dead letters; default 0)")
    p.add_argument("--grid-ms", type=_grid, default=0,
                   help="put every start and signal on a multiple of this many ms (the poll interval, 50, makes "
                        "writes meet at lease boundaries: a fetch as a lease ends, a schedule as one is taken; default 0: off)")
    p.add_argument("--take-stall-fraction", type=_fraction, default=0.0,
                   help="share of workflows whose start node's taker stalls past the lease once the start's copy is "
                        "queued (the copy waits queued while the row is due; default 0)")
    p.add_argument("--stranded-fraction", type=_fraction, default=0.0,
                   help="share of workflows whose start stalls between its two writes while the other node starts "
                        "them again and recovers the stranded start (default 0)")
    p.add_argument("--signals", choices=["scheduler", "in-memory", "alternate"], default="alternate",
                   help="signals schedule through the store (FORCE_SIGNAL_WORKFLOW_EXEC_IN_SCHEDULER), in memory on the "
                        "signalling node (honoured by the honour check when another node holds the lease), or "
                        "in memory on odd seeds (default)")
    p.add_argument("--max-steps", type=_steps, default=200_000,
                   help="steps per seed before the simulation gives up (default 200,000; at most 10,000,000)")
    p.add_argument("--store", default="memory://",
                   help="memory:// (the twin, default), sqlite:///PATH or mysql://USER@HOST:PORT/DB, with a "
                        "connection per node; each seed drops and recreates the engine's tables")
    p.add_argument("--trace-dir", type=Path, default=None, help="where to write the traces")
    p.add_argument("--gate-off", action="append", default=[], metavar="GATE", help="turn a gate off (repeatable)")
    p.set_defaults(func=_sim)


def _steps(text: str) -> int:
    """A step budget: 1 to 10,000,000 (argparse turns the ValueError into a usage error)."""
    n = int(text)
    if not 1 <= n <= 10_000_000:
        raise ValueError(text)
    return n


def _fraction(text: str) -> float:
    """A share of the workflows: 0 to 1 (argparse turns the ValueError into a usage error)."""
    x = float(text)
    if not 0.0 <= x <= 1.0:
        raise ValueError(text)
    return x


def _grid(text: str) -> int:
    """A time grid in ms: 0 (off) to 60,000."""
    n = int(text)
    if not 0 <= n <= 60_000:
        raise ValueError(text)
    return n


def _fresh_store(url: str, nodes: tuple[str, ...]) -> dict[str, Any]:
    """A connection per node to the store at `url`, its tables dropped and recreated empty."""
    from impl.engine.urls import node_backends

    backends = node_backends(url, nodes)
    first = backends[nodes[0]]
    first.drop_schema()
    first.create_schema()
    return backends


def _sim(args: argparse.Namespace) -> int:
    from impl import trace
    from impl.engine.export import by_workflow, engine_header, features
    from impl.engine.simulate import Faults, simulate

    from dataclasses import replace

    base = _gates(args.gate_off)
    faults = Faults(crash=args.crash_rate, pause=args.pause_rate)
    bad = 0
    print(f"{'seed':>5} {'signals':>9} {'workflows':>9} {'completed':>9} {'events':>7} {'overlaps':>8} {'crashes':>7} {'pauses':>6} {'stalls':>6}")
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        in_memory = args.signals == "in-memory" or (args.signals == "alternate" and seed % 2 == 1)
        gates = replace(base, force_signal_workflow_exec_in_scheduler=False) if in_memory else base
        backends = _fresh_store(args.store, ("n1", "n2"))
        try:
            run = simulate(seed=seed, workflows=args.workflows, gates=gates, faults=faults,
                           waiting_fraction=args.waiting_fraction, long_fraction=args.long_fraction,
                           stale_fraction=args.stale_fraction, fail_fraction=args.fail_fraction, grid_ms=args.grid_ms,
                           take_stall_fraction=args.take_stall_fraction, stranded_fraction=args.stranded_fraction,
                           backend=backends["n1"], node_backends=backends,
                           max_steps=args.max_steps)
            events = run.sim.backend.read_events()
        finally:
            for b in {id(b): b for b in backends.values()}.values():
                b.close()
        if args.trace_dir is not None:
            for wf, evs in by_workflow(events).items():
                name = f"sim-seed{seed}/{wf}"
                head = engine_header(run.sim.gates, run.sim.settings, run.sim.node_names, name, features(evs),
                                     run.drained)
                trace.write(args.trace_dir / f"sim-seed{seed}-{wf}.ndjson", head, (e.line() for e in evs), store_seq=True)
        overlaps = run.sim.monitor.overlaps
        # A flaky workflow out of retries ends FAILED, as it should (--fail-fraction).
        unfinished = run.crashes == 0 and run.completed + run.dead_lettered < args.workflows
        bad += 1 if overlaps or unfinished or run.sim.errors else 0
        stalls = len(run.sim.stalls.stalled) if run.sim.stalls is not None else 0
        signals = "scheduler" if gates.force_signal_workflow_exec_in_scheduler else "in-memory"
        print(f"{seed:>5} {signals:>9} {args.workflows:>9} {run.completed:>9} {len(events):>7} {overlaps:>8} {run.crashes:>7} {run.pauses:>6} {stalls:>6}")
    return 1 if bad else 0
