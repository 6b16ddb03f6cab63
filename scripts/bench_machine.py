#!/usr/bin/env python3
"""Benchmark the Hypothesis machines: store steps per second on each store, side by side: the
engine's (tests/engine/machine.py) on the twin, SQLite, MariaDB; the queue's and the command
layer's (tests/workqueue/machine.py) on fakeredis and on a real Redis (`--queue-stores`).

A store step is one committed store transaction, i.e. one trace event (the unit the trace spec
explains); the figure counts them over the whole run (rules, the drain at the end of each
example, the result calls), divided by the run's wall time (opening and dropping each
example's store included: it is what a test pays). Two ways, one line each per store:

    hypothesis  `run_state_machine_as_test`, derandomized, as the default tests run it; its
                examples depend on what earlier ones did, so they differ from store to store
    seeded      the same machine driven by a seeded random choice of rules: the very same
                schedules on every store, side by side

    PYTHONPATH=$PWD python scripts/bench_machine.py
    PYTHONPATH=$PWD python scripts/bench_machine.py --stores sqlite --profile 25
    PYTHONPATH=$PWD python scripts/bench_machine.py --stores --queue-stores twin redis
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis.stateful import run_state_machine_as_test  # noqa: E402

from tests.engine.machine import machine_for  # noqa: E402

MYSQL_URL = "mysql://root@127.0.0.1:3306/test"
REDIS_URL = "redis://127.0.0.1:6379/0"
GOAL = 1_000  # store steps per second on SQLite (issue 13)


@dataclass(frozen=True)
class Figures:
    """One store's run."""

    store: str
    examples: int
    rules: int
    store_steps: int
    seconds: float

    @property
    def steps_per_s(self) -> float:
        return self.store_steps / self.seconds


def run(kind: str, examples: int, steps: int, mysql_url: str, profile: cProfile.Profile | None = None) -> Figures:
    """Run the machine on `kind` for `examples` examples of up to `steps` rules; its figures."""
    m = machine_for(kind, mysql_url=mysql_url, prefix="lp_bench_")
    budget = settings(max_examples=examples, stateful_step_count=steps, derandomize=True, deadline=None, database=None,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    began = time.perf_counter()
    if profile is not None:
        profile.enable()
    try:
        run_state_machine_as_test(m, settings=budget)
    finally:
        if profile is not None:
            profile.disable()
    seconds = time.perf_counter() - began
    events = sum(text.count('"kind": "event"') for ex in m.examples.all for text in ex.traces.values())
    return Figures(kind, len(m.examples.all), sum(len(ex.steps) for ex in m.examples.all), events, seconds)


def run_seeded(kind: str, examples: int, steps: int, mysql_url: str, seed: int = 0) -> Figures:
    """The machine on `kind`, its rules chosen by `random.Random(seed)`: the same schedules on
    every store (invariants after each rule, the drain and its checks at the end)."""
    import random

    from tests.engine.machine import LEASE, NODES, WFS

    m = machine_for(kind, mysql_url=mysql_url, prefix="lp_bench_")
    rng = random.Random(seed)
    began = time.perf_counter()
    for _ in range(examples):
        machine = m()
        for _ in range(rng.randrange(1, steps + 1)):
            node, wf = rng.choice(NODES), rng.choice(WFS)
            rule = rng.choices(["start", "signal", "store_step", "poll", "take", "time_passes", "pause", "crash"],
                               weights=[2, 2, 6, 4, 3, 3, 1, 0.3])[0]
            if rule == "start":
                if len(machine.handles) < 3:
                    machine.start(node, wf, "long" if rng.random() < 0.5 else "short", rng.random() < 0.5)
            elif rule == "signal":
                machine.signal(node, wf)
            elif rule in ("store_step", "poll", "take", "crash"):
                getattr(machine, rule)(node)
            elif rule == "pause":
                machine.pause(node, rng.randrange(1, LEASE // 2 + 1))
            else:
                machine.time_passes()
            machine.no_overlapping_runs()
            machine.terminal_is_stable()
            machine.no_fiber_errors()
        machine.teardown()
    seconds = time.perf_counter() - began
    events = sum(text.count('"kind": "event"') for ex in m.examples.all for text in ex.traces.values())
    return Figures(kind, len(m.examples.all), sum(len(ex.steps) for ex in m.examples.all), events, seconds)


def run_queue(system: str, kind: str, examples: int, steps: int, redis_url: str) -> Figures:
    """The queue machine of `system` on `kind` (`twin`, `redis`), as the default tests run it."""
    import logging

    from tests.workqueue.machine import machine_for as queue_machine_for

    logging.getLogger("impl.workqueue").setLevel(logging.ERROR)
    m = queue_machine_for(system, kind, redis_url=redis_url, prefix="lp-bench")
    budget = settings(max_examples=examples, stateful_step_count=steps, derandomize=True, deadline=None, database=None,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    began = time.perf_counter()
    run_state_machine_as_test(m, settings=budget)
    seconds = time.perf_counter() - began
    events = sum(ex.trace.count('"kind": "event"') for ex in m.examples.all)
    return Figures(f"{system}-{kind}", len(m.examples.all), sum(len(ex.steps) for ex in m.examples.all), events, seconds)


def main(argv: list[str] | None = None) -> int:
    """Print one line per store, and with --profile where the time went."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stores", nargs="*", default=["twin", "sqlite"], choices=["twin", "sqlite", "mysql"])
    p.add_argument("--queue-stores", nargs="*", default=["twin", "redis"], choices=["twin", "redis"],
                   help="stores of the queue and command machines (default: twin redis; none: leave them out)")
    p.add_argument("--redis-url", default=REDIS_URL)
    p.add_argument("--examples", type=int, default=60, help="Hypothesis examples per store (default 60)")
    p.add_argument("--steps", type=int, default=30, help="rules per example at most (default 30, as the default test run)")
    p.add_argument("--mysql-url", default=MYSQL_URL)
    p.add_argument("--profile", type=int, default=0, metavar="N", help="profile the run and print its N costliest functions")
    args = p.parse_args(argv)
    print(f"{'run':10} {'store':17} {'examples':>8} {'rules':>6} {'store steps':>11} {'seconds':>8} {'steps/s':>8}")
    below = False
    for kind in args.stores:
        f = run_seeded(kind, args.examples, args.steps, args.mysql_url)
        print(f"{'seeded':10} {f.store:17} {f.examples:>8} {f.rules:>6} {f.store_steps:>11} {f.seconds:>8.2f} {f.steps_per_s:>8.0f}", flush=True)
        below |= kind == "sqlite" and f.steps_per_s < GOAL
    for kind in args.stores:
        prof = cProfile.Profile() if args.profile else None
        f = run(kind, args.examples, args.steps, args.mysql_url, prof)
        print(f"{'hypothesis':10} {f.store:17} {f.examples:>8} {f.rules:>6} {f.store_steps:>11} {f.seconds:>8.2f} {f.steps_per_s:>8.0f}", flush=True)
        below |= kind == "sqlite" and f.steps_per_s < GOAL and not args.profile
        if prof is not None:
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(args.profile)
            print(out.getvalue())
    for kind in args.queue_stores:
        for system in ("workqueue", "command"):
            f = run_queue(system, kind, args.examples, args.steps, args.redis_url)
            print(f"{'hypothesis':10} {f.store:17} {f.examples:>8} {f.rules:>6} {f.store_steps:>11} {f.seconds:>8.2f} "
                  f"{f.steps_per_s:>8.0f}", flush=True)
    if below:
        print(f"SQLite is below the goal of {GOAL} store steps/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
