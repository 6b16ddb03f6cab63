"""`leaseproof interleave MODULE:SCENARIO`: a scenario's real threads under a controlled scheduler.

The scenario (a callable taking the controlled primitives, see conformance/interleave) builds
your threaded system with them and drives it; its threads run one at a time, and the strategy
picks who goes on at every lock, condition, event, sleep, thread start or join and store call,
on a virtual clock. Every run's invariants are checked at every point; every run's traces
(written to --trace-dir) are then checked against the trace specs in batches.

    random      a seeded random walk; run i uses seed SEED + i
    pct         probabilistic concurrency testing, bug depth --depth
    exhaustive  every schedule within --bound preemptions (sleep sets cut equivalent ones);
                prints the bounded space's estimated size and how much of it was run

A failure prints its schedule and the one command that replays it. Exit status: 0 when every
schedule passed, 1 when one failed, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from conformance.errors import LeaseproofError
from conformance.interleave.explore import STRATEGIES, explore, load_schedule, run_once, save_schedule
from conformance.interleave.report import failure_report, summary
from conformance.interleave.strategies import Replay
from conformance.output.safe_text import visible


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the `interleave` command."""
    p = sub.add_parser("interleave", help="explore a threaded scenario's interleavings under a controlled scheduler",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("target", metavar="MODULE:SCENARIO", help="the scenario, e.g. impl.engine.interleavings:two_nodes")
    p.add_argument("--strategy", choices=STRATEGIES, default="random")
    p.add_argument("--seed", type=int, default=0, help="the first run's seed (default 0)")
    p.add_argument("--runs", type=int, default=50, help="how many schedules at most (default 50)")
    p.add_argument("--depth", type=int, default=3, help="pct: the bug depth (default 3)")
    p.add_argument("--steps", type=int, default=0, help="pct: a run's length in steps (default: a first run's)")
    p.add_argument("--bound", type=int, default=2, help="exhaustive: the preemption bound (default 2)")
    p.add_argument("--replay", type=Path, metavar="FILE", help="run the schedule saved in FILE, once")
    p.add_argument("--trace-dir", type=Path, metavar="DIR", help="write each run's traces under DIR/run-N")
    p.add_argument("--no-validate", action="store_true", help="do not check the traces against the trace specs")
    p.add_argument("--root", type=Path, default=Path("."), help="the project holding the trace systems (default: .)")
    p.add_argument("--max-steps", type=int, default=200_000, help="a run longer than this fails (default 200000)")
    p.add_argument("--json", action="store_true", help="print the exploration as JSON")
    p.set_defaults(func=run)


def load_scenario(target: str) -> Any:
    """The callable `MODULE:NAME` names; a usage error otherwise."""
    module, _, name = target.partition(":")
    if not module or not name:
        raise LeaseproofError(f"{visible(target)!r}: name a scenario as MODULE:NAME, e.g. impl.engine.interleavings:two_nodes")
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise LeaseproofError(f"cannot import {visible(module)!r}: {exc}") from exc
    scenario = getattr(mod, name, None)
    if not callable(scenario):
        raise LeaseproofError(f"{visible(module)!r} has no scenario {visible(name)!r} (a callable taking the controlled primitives)")
    return scenario


def run(args: argparse.Namespace) -> int:
    """Run `leaseproof interleave`."""
    if args.runs < 1 or args.depth < 1 or args.bound < 0 or args.max_steps < 1:
        raise LeaseproofError("--runs, --depth and --max-steps are at least 1, --bound at least 0")
    scenario = load_scenario(args.target)
    trace_dir = args.trace_dir or Path(tempfile.mkdtemp(prefix="leaseproof-interleave-"))
    validate = None
    if not args.no_validate:
        from conformance.interleave.validate import trace_validator
        validate = trace_validator(args.root)
    if args.replay is not None:
        try:
            strategy = load_schedule(args.replay)
        except (OSError, ValueError) as exc:
            raise LeaseproofError(f"cannot read the schedule: {exc}") from exc
        r = run_once(scenario, strategy, trace_dir=trace_dir / "replay", max_steps=args.max_steps)
        from conformance.interleave.explore import Exploration, Outcome
        o = Outcome(0, f"replay {args.replay}", r, trace_dir / "replay", sorted((trace_dir / "replay").glob("*.ndjson")))
        if validate is not None and r.ok and o.traces:
            verdicts = validate(o.traces)
            o.rejected = [f"{t.name}: {verdicts[t]}" for t in o.traces if t in verdicts]
        x = Exploration(args.target, "replay", [o], None, len(r.steps))
    else:
        x = explore(scenario, name=args.target, strategy=args.strategy, runs=args.runs, seed=args.seed,
                    depth=args.depth, steps=args.steps, bound=args.bound, trace_dir=trace_dir,
                    validate=validate, max_steps=args.max_steps)
    saved = {}
    for o in x.failed:
        path = (o.trace_dir or trace_dir) / "schedule.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        saved[o.index] = str(save_schedule(o.run, path))
    if args.json:
        json.dump({"scenario": args.target, "strategy": x.strategy, "ok": x.ok, "schedules": len(x.outcomes),
                   "steps": x.steps, "space": x.space,
                   "failures": [{"schedule": o.index, "strategy": o.strategy, "kind": o.failure.kind,  # type: ignore[union-attr]
                                 "message": o.failure.message, "saved": saved[o.index]}  # type: ignore[union-attr]
                                for o in x.failed]}, sys.stdout, indent=2)
        print()
    else:
        for line in summary(x):
            print(line)
        print(f"  traces under {visible(trace_dir)}")
        for o in x.failed[:1]:
            # Replayed once more, recording the store as the scenario describes it at each step.
            again = run_once(scenario, Replay(o.run.schedule()), trace_dir=trace_dir / "shown", max_steps=args.max_steps,
                             record_states=True)
            for line in failure_report(args.target, o, saved[o.index] if args.strategy == "exhaustive" or args.replay else None,
                                       again.states or None):
                print(line)
    return 0 if x.ok else 1
