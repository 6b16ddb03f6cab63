"""The engine mutant catalogue: broken engines whose traces a trace checker must reject.

Each mutant breaks one thing the protocol relies on, by a gate or by swapping one pure
decision (`Store(decisions=...)`), and `record` runs the seeded simulation with it and writes
its traces. A checker that accepts a mutant's traces cannot see that break. The engine's own
monitors say what each mutant does (overlapping runs, stranded workflows), so a mutant that
changes nothing observable is itself caught (`tests/engine/test_mutants.py`).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from impl import trace
from impl.engine import decide
from impl.engine.export import by_workflow, engine_header, features
from impl.engine.model import PENDING, RUNNING, Gates, ScheduleRequest, Task
from impl.engine.simulate import Faults, SimRun, simulate


def _fetch_steals_lease(row: Task | None, seen_version: int, now: int, lease_ms: int) -> Task | None:
    if row is None or row.status not in (PENDING, RUNNING):
        return None
    return row.with_(status=RUNNING, run_after=now + lease_ms, version=row.version + 1, retry_count=row.retry_count + 1)


def _remove_ignores_version(row: Task | None, held_version: int) -> int:
    return row.version if row is not None else held_version


def _rerun_as_lost(row: Task | None, held_run_after: int) -> str:
    outcome = decide.classify_failed_remove(row, held_run_after)
    return "lost" if outcome == "rerun" else outcome


def _schedule_ignores_leases(
    row: Task | None, request: ScheduleRequest, now: int, lease_ms: int, *, bump: bool, fence: int = 0
) -> decide.ScheduleDecision:
    return decide.decide_schedule(
        row, ScheduleRequest(request.task_id, request.run_after, request.payload, False, request.owner, request.type),
        now, lease_ms, bump=bump, fence=fence,
    )


def _renew_ignores_version(row: Task | None, held_version: int, now: int, lease_ms: int) -> Task | None:
    if row is None:
        return None
    return row.with_(run_after=now + lease_ms, version=row.version + 1)


@dataclass(frozen=True)
class Mutant:
    """One broken engine: a name, what it breaks, and how."""

    name: str
    breaks: str
    gates: Gates = Gates()
    overrides: dict[str, Callable[..., Any]] = field(default_factory=dict)

    def decisions(self) -> Any:
        """The decision namespace for `Store(decisions=...)`: `decide` with the overrides."""
        names = {n: getattr(decide, n) for n in dir(decide) if not n.startswith("_")}
        return types.SimpleNamespace(**{**names, **self.overrides})


MUTANTS: tuple[Mutant, ...] = (
    Mutant("copy_on_honoured_lease", "the seed's bug: a copy is queued when the backstop write honoured a lease",
           Gates(honour_check=False, force_signal_workflow_exec_in_scheduler=False)),
    Mutant("no_bump", "an honoured schedule leaves the version, so the holder never reruns",
           Gates(bump_task_version_on_honored_lease=False)),
    Mutant("no_renewal", "handlers that outlive a lease do not renew it", Gates(automatic_lease_renewal=False)),
    Mutant("fetch_steals_lease", "a fetch leases a row that another node leased since it read it",
           overrides={"decide_fetch": _fetch_steals_lease}),
    Mutant("remove_ignores_version", "finish deletes the row whatever version it has",
           overrides={"remove_guard": _remove_ignores_version}),
    Mutant("rerun_as_lost", "a failed remove never reruns: a recorded rerun is taken for a lost lease",
           overrides={"classify_failed_remove": _rerun_as_lost}),
    Mutant("schedule_ignores_leases", "every schedule overwrites, even an active lease",
           overrides={"decide_schedule": _schedule_ignores_leases}),
    Mutant("renew_ignores_version", "a renewal extends a row whatever version it has",
           overrides={"decide_renew": _renew_ignores_version}),
)


def by_name(name: str) -> Mutant:
    """The mutant called `name`."""
    for m in MUTANTS:
        if m.name == name:
            return m
    from impl.engine.errors import EngineError

    raise EngineError(f"no engine mutant {name!r}; known: {[m.name for m in MUTANTS]}")


@dataclass
class MutantRun:
    """What one mutant did over its seeds."""

    mutant: Mutant
    runs: list[SimRun]

    @property
    def overlaps(self) -> int:
        """Runs that started while another run of the same workflow was in progress."""
        return sum(r.sim.monitor.overlaps for r in self.runs)

    @property
    def stranded(self) -> int:
        """Workflows left RUNNING when the run ended."""
        return sum(len(r.items) - r.completed for r in self.runs)

    @property
    def traces(self) -> dict[str, str]:
        """Every trace, by `seed/workflow`."""
        return {f"{i}/{wf}": text for i, r in enumerate(self.runs) for wf, text in r.traces.items()}


def run_mutant(
    mutant: Mutant | None, seeds: range, workflows: int = 8, max_steps: int = 40_000
) -> MutantRun:
    """Simulate `mutant` (None: the correct engine) under each seed, with pauses only."""
    gates = mutant.gates if mutant else Gates()
    decisions = mutant.decisions() if mutant else None
    runs = [
        simulate(seed=s, workflows=workflows, gates=gates, decisions=decisions, long_fraction=0.5,
                 faults=Faults(pause=0.005), max_steps=max_steps)
        for s in seeds
    ]
    return MutantRun(mutant or Mutant("none", "the correct engine"), runs)


def record(mutant: Mutant, directory: Path, seeds: range, workflows: int = 8) -> tuple[MutantRun, list[Path]]:
    """Write `mutant`'s traces to `directory/<name>/`, one per workflow and seed."""
    result = run_mutant(mutant, seeds, workflows)
    paths = []
    for seed, run in zip(seeds, result.runs):
        for wf, evs in by_workflow(run.sim.backend.read_events()).items():
            name = f"mutant-{mutant.name}-seed{seed}/{wf}"
            # The run name says it is a mutant; `features` must not, or a checker might skip it.
            head = engine_header(run.sim.gates, run.sim.settings, run.sim.node_names, name, features(evs),
                                 run.drained)
            path = directory / mutant.name / f"seed{seed}-{wf}.ndjson"
            paths.append(trace.write(path, head, (e.line() for e in evs), store_seq=True))
    return result, paths
