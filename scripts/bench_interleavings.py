#!/usr/bin/env python3
"""Benchmark the controlled scheduler (conformance/interleave) beside the stateful machines, in
one run: schedules per second and store steps per second of the real threaded runtimes (one
engine scenario, one queue scenario), the size of a bounded exhaustive space and the share of
it explored within a time budget, and the Hypothesis machines' store steps per second on the
same twin stores (scripts/bench_machine.py's seeded runs).

A store step is one store call of the code under test (a transaction, a Lua script: what the
trace logs); a point is any synchronization the scheduler chose at (locks, events, sleeps...).

    PYTHONPATH=$PWD python scripts/bench_interleavings.py                   # 10 minutes of search each
    PYTHONPATH=$PWD python scripts/bench_interleavings.py --seconds 60 --schedules 20
    PYTHONPATH=$PWD python scripts/bench_interleavings.py --space "queue pool_at_bound"    # one space
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from conformance.interleave.exhaustive import Exhaustive, estimate, probe  # noqa: E402
from conformance.interleave.explore import run_once  # noqa: E402
from conformance.interleave.strategies import RandomWalk  # noqa: E402
from impl.engine import interleavings as engine  # noqa: E402
from impl.workqueue import interleavings as queue  # noqa: E402

SCENARIOS = {"engine two_nodes": engine.two_nodes, "queue long_handlers": queue.long_handlers}
SPACES = {"engine start_signal_fetch_sqlite": engine.start_signal_fetch_sqlite, "queue pool_at_bound": queue.pool_at_bound,
          "engine start_signal_fetch (8 workers)": engine.start_signal_fetch}


def _store_steps(run) -> int:  # type: ignore[no-untyped-def]
    return sum(1 for s in run.steps if s.point.kind.startswith("call "))


def random_runs(name: str, scenario, schedules: int) -> str:  # type: ignore[no-untyped-def]
    began = time.perf_counter()
    points = stores = 0
    for seed in range(schedules):
        r = run_once(scenario, RandomWalk(seed))
        if not r.ok:
            raise SystemExit(f"{name}: schedule {seed} failed: {r.failure.describe()}")  # type: ignore[union-attr]
        points += len(r.steps)
        stores += _store_steps(r)
    s = time.perf_counter() - began
    return (f"{'interleave ' + name:32} {schedules:>9} {s:>8.1f} {schedules / s:>10.1f} {points / s:>10.0f} "
            f"{stores / s:>10.0f}")


def space(name: str, scenario, seconds: float, bound: int, probes: int) -> str:  # type: ignore[no-untyped-def]
    products = []
    for k in range(probes):
        p = probe(k, bound)
        run_once(scenario, p)
        products.append(p.product)
    size = estimate(products)
    search = Exhaustive(bound)
    began = time.perf_counter()
    deadline = began + seconds
    while time.perf_counter() < deadline and (strategy := search.next()) is not None:
        search.record(run_once(scenario, strategy))
    took = time.perf_counter() - began
    distinct = search.runs - search.pruned
    if search.exhausted:  # the search itself counted the whole space: the estimate is moot
        share = f"all of it: the estimate was {size:,.0f}"
    else:
        share = f"{min(100.0, 100 * distinct / size):.2g} % of the estimate" if size else "-"
    return (f"{name:32} bound {bound}: about {size:,.0f} schedules (Knuth's estimate, {probes} random probes: "
            f"unbiased, heavy-tailed); {search.runs:,} run in {took:.0f} s of {seconds:g}, {distinct:,} of them not "
            f"cut short by sleep sets ({share}); the bounded space is {'covered' if search.exhausted else 'not covered'}")


def machines(examples: int, steps: int) -> list[str]:
    spec = importlib.util.spec_from_file_location("bench_machine", ROOT / "scripts" / "bench_machine.py")
    assert spec is not None and spec.loader is not None
    bm = importlib.util.module_from_spec(spec)
    sys.modules["bench_machine"] = bm  # its dataclasses look their module up
    spec.loader.exec_module(bm)
    lines = []
    f = bm.run_seeded("twin", examples, steps, bm.MYSQL_URL)
    lines.append(f"{'machine engine twin (seeded)':32} {f.examples:>9} {f.seconds:>8.1f} {f.examples / f.seconds:>10.1f} "
                 f"{'-':>10} {f.steps_per_s:>10.0f}")
    q = bm.run_queue("workqueue", "twin", examples, steps, bm.REDIS_URL)
    lines.append(f"{'machine workqueue twin':32} {q.examples:>9} {q.seconds:>8.1f} {q.examples / q.seconds:>10.1f} "
                 f"{'-':>10} {q.steps_per_s:>10.0f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--schedules", type=int, default=50, help="random schedules per scenario (default 50)")
    p.add_argument("--seconds", type=float, default=600, help="exhaustive search time per space (default 600)")
    p.add_argument("--bound", type=int, default=2, help="the preemption bound (default 2)")
    p.add_argument("--probes", type=int, default=50, help="random probes for the space's size (default 50)")
    p.add_argument("--examples", type=int, default=30, help="machine examples (default 30)")
    p.add_argument("--steps", type=int, default=30, help="machine rules per example (default 30)")
    p.add_argument("--space", action="append", choices=sorted(SPACES), metavar="NAME",
                   help=f"only this bounded space (repeatable; default every one: {', '.join(SPACES)})")
    args = p.parse_args(argv)
    print(f"{'':32} {'runs':>9} {'seconds':>8} {'runs/s':>10} {'points/s':>10} {'store st/s':>10}")
    for name, sc in SCENARIOS.items():
        print(random_runs(name, sc, args.schedules), flush=True)
    for line in machines(args.examples, args.steps):
        print(line, flush=True)
    for name, sc in SPACES.items():
        if args.space and name not in args.space:
            continue
        print(space(name, sc, args.seconds, args.bound, args.probes), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
