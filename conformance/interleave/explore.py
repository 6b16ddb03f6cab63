"""Explore a scenario's schedules: run it under a strategy again and again, check every run's
invariants as it goes and, at the end, every run's traces against the trace specs in batches.

A scenario is a callable taking `Controlled` (the run's primitives, clock, `calls`,
`invariant`, `rng`, and `trace_dir`, the folder its traces go to, or None). It builds the
system under test with those primitives and drives it on the run's main thread; an exception
or a failed invariant fails the run. Run i of a seeded strategy uses seed `seed + i`, so a
failing run replays alone with `--seed <its seed> --runs 1`.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.interleave.exhaustive import Exhaustive, estimate, probe
from conformance.interleave.primitives import Controlled
from conformance.interleave.runtime import Controller, Failure, Run, Strategy
from conformance.interleave.strategies import PCT, RandomWalk, Replay

Scenario = Callable[[Controlled], Any]
STRATEGIES = ("random", "pct", "exhaustive")


@dataclass
class Outcome:
    """One run of an exploration: how it was chosen, and what became of it."""

    index: int
    strategy: str  # the flags that replay it, e.g. "random --seed 17"
    run: Run
    trace_dir: Path | None
    traces: list[Path] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)  # a trace's verdict, when not accepted

    @property
    def failure(self) -> Failure | None:
        if self.run.failure is not None:
            return self.run.failure
        if self.rejected:
            return Failure("trace", "; ".join(self.rejected))
        return None


@dataclass
class Exploration:
    """What an exploration ran and found."""

    scenario: str
    strategy: str
    outcomes: list[Outcome]
    space: str | None = None  # exhaustive: the bounded space's size, and how much was run
    steps: int = 0

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.failure is not None]

    @property
    def ok(self) -> bool:
        return bool(self.outcomes) and not self.failed


def run_once(scenario: Scenario, strategy: Strategy, *, seed: int = 0, trace_dir: Path | None = None,
             max_steps: int = 200_000, hang_s: float = 60.0, record_states: bool = False) -> Run:
    """One run of `scenario` under `strategy` (its randomness seeded with `seed`); with
    `record_states`, the store as the scenario's observers describe it before each step."""
    ctl = Controller(strategy, max_steps=max_steps, hang_s=hang_s)
    ctl.record_states = record_states
    sync = Controlled(ctl, seed)
    sync.trace_dir = trace_dir
    if trace_dir is not None:
        trace_dir.mkdir(parents=True, exist_ok=True)
    return ctl.run(lambda: scenario(sync))


def _strategies(kind: str, runs: int, seed: int, depth: int, steps: int) -> Iterator[tuple[Strategy, int]]:
    for i in range(runs):
        if kind == "random":
            yield RandomWalk(seed + i), seed + i
        elif kind == "pct":
            yield PCT(seed + i, depth=depth, steps=steps), seed + i
        else:
            raise ValueError(f"unknown strategy {kind!r}; one of {', '.join(STRATEGIES)}")


def explore(scenario: Scenario, *, name: str = "scenario", strategy: str = "random", runs: int = 50,
            seed: int = 0, depth: int = 3, steps: int = 0, bound: int = 2, trace_dir: Path | None = None,
            validate: Callable[[list[Path]], dict[Path, str]] | None = None, stop_at_failure: bool = True,
            max_steps: int = 200_000, hang_s: float = 60.0, probes: int = 10,
            progress: Callable[[Outcome], None] | None = None, batch: int = 10) -> Exploration:
    """Run `scenario` up to `runs` times under `strategy` (random, pct, exhaustive).

    `validate` gets the trace files of every run that passed, `batch` runs at a time, and
    returns, for each one not accepted, its verdict: those runs fail too (and the exploration
    stops there, with `stop_at_failure`). PCT's `steps` (a run's number of steps with a
    choice, for its change points) defaults to a first random run's. Exhaustive search estimates its space
    with `probes` random runs first."""
    outcomes: list[Outcome] = []
    space = None
    total = 0
    unchecked: list[Outcome] = []

    def check_traces() -> bool:
        """Validate the runs not yet checked; whether one of them failed its traces."""
        if validate is None or not unchecked:
            return False
        paths = [t for o in unchecked if o.run.ok for t in o.traces]
        verdicts = validate(paths) if paths else {}
        for o in unchecked:
            o.rejected = [f"{t.name}: {verdicts[t]}" for t in o.traces if t in verdicts]
        unchecked.clear()
        return any(o.rejected for o in outcomes)

    def stop(o: Outcome) -> bool:
        unchecked.append(o)
        if o.run.failure is not None and stop_at_failure:
            return True
        return len(unchecked) >= batch and check_traces() and stop_at_failure

    def one(i: int, strat: Strategy, run_seed: int, desc: str) -> Outcome:
        nonlocal total
        folder = trace_dir / f"run-{i:05d}" if trace_dir is not None else None
        if folder is not None and folder.exists():
            shutil.rmtree(folder)
        r = run_once(scenario, strat, seed=run_seed, trace_dir=folder, max_steps=max_steps, hang_s=hang_s)
        total += len(r.steps)
        o = Outcome(i, desc, r, folder, sorted(folder.glob("*.ndjson")) if folder is not None else [])
        outcomes.append(o)
        if progress is not None:
            progress(o)
        return o

    if strategy == "exhaustive":
        products = []
        for k in range(probes):
            p = probe(seed + k, bound)
            run_once(scenario, p, seed=seed, max_steps=max_steps, hang_s=hang_s)
            products.append(p.product)
        search = Exhaustive(bound)
        i = 0
        while i < runs and (strat := search.next()) is not None:
            o = one(i, strat, seed, f"exhaustive --bound {bound} --seed {seed} (schedule {i})")
            search.record(o.run)
            i += 1
            if stop(o):
                break
        space = (f"{search.describe()}; its size is about {estimate(products):,.0f} schedules "
                 f"(Knuth's estimate over {len(products)} random runs within the bound)")
    else:
        if strategy == "pct" and steps <= 0:
            first = run_once(scenario, RandomWalk(seed), seed=seed, max_steps=max_steps, hang_s=hang_s)
            steps = max(1, sum(1 for s in first.steps if len(s.enabled) > 1))
        for i, (strat, run_seed) in enumerate(_strategies(strategy, runs, seed, depth, steps)):
            o = one(i, strat, run_seed, strat.describe())  # type: ignore[attr-defined]
            if stop(o):
                break
    check_traces()
    return Exploration(name, strategy, outcomes, space, total)


def save_schedule(run: Run, path: Path) -> Path:
    """Write `run`'s schedule (the thread chosen at each step) as JSON, for `--replay`."""
    path.write_text(json.dumps({"schedule": run.schedule()}, indent=0) + "\n", encoding="utf-8")
    return path


def load_schedule(path: Path) -> Replay:
    """A `Replay` of a schedule `save_schedule` wrote."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("schedule"), list) or \
            not all(isinstance(x, str) and len(x) < 200 for x in data["schedule"]):
        raise ValueError(f"{path}: not a schedule (a JSON object whose 'schedule' is a list of thread names)")
    return Replay(data["schedule"])
