"""Exporting the recorded events as NDJSON traces, and reading a run's figures from them.

One trace per workflow: in `tla/Engine.tla` each workflow's steps depend only on its own rows,
so a workflow's events (in the order its transactions committed, `wf_seq`) are a behaviour of
the spec by themselves, and several small traces check faster than one large one. Each file
is self-contained: a header (system, gates, lease settings, nodes, run name), the events
numbered from 1, and an end line with the count (`impl.trace`).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from impl import trace
from impl.engine.model import Event, Gates, Settings

_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


def by_workflow(events: Iterable[Event]) -> dict[str, list[Event]]:
    """Each workflow's events in its commit order."""
    groups: dict[str, list[Event]] = defaultdict(list)
    for e in events:
        groups[e.wf].append(e)
    return {wf: sorted(evs, key=lambda e: (e.wf_seq, e.seq)) for wf, evs in sorted(groups.items())}


def features(events: Sequence[Event]) -> list[str]:
    """What one workflow's events use beyond the plain protocol, for the header.

    `wait_for_signal`: a run ended `waiting` (`WaitingRuns` in `tla/Engine.tla`, off in the
    models). `renew_adopts_rerun`: a renewal found its lease bumped and renewed at the row's
    version (`worker.py`). `traces/systems/engine.yaml` lists the features its spec covers; a
    checker skips traces with any other.
    """
    found = set()
    for prev, cur in zip(events, events[1:]):
        if (prev.op, prev.outcome, cur.op, cur.outcome) == ("renew", "conflict", "renew", "renewed") and prev.node == cur.node:
            found.add("renew_adopts_rerun")
    if any(e.op == "run_end" and e.args.get("result") == "waiting" for e in events):
        found.add("wait_for_signal")
    return sorted(found)


def engine_header(
    gates: Gates, settings: Settings, nodes: Sequence[str], run: str, feats: Sequence[str] = (), drained: bool = False,
) -> dict:
    """The header line of an engine trace.

    Its faults are lines of the trace (`faults.py`), not counts. `drained`: the run ended with
    nothing left to do (every workflow terminal, every caller and signal done, nothing queued or
    running: `Simulation.quiescent`), so that `tla/TraceEngine.tla` requires the trace to end
    where the work is done (`settings.drained`).
    """
    return trace.header(
        "engine", gates=gates.header(), settings={**settings.header(), "drained": drained}, nodes=nodes, run=run,
        features=feats,
    )


def render_workflow(
    events: Sequence[Event], gates: Gates, settings: Settings, nodes: Sequence[str], run: str, drained: bool = False,
) -> str:
    """One workflow's trace as NDJSON text."""
    head = engine_header(gates, settings, nodes, run, features(events), drained)
    return trace.render(head, (e.line() for e in events), store_seq=True)


def write_traces(
    events: Iterable[Event],
    directory: Path,
    *,
    gates: Gates,
    settings: Settings,
    nodes: Sequence[str],
    run: str,
    drained: bool = False,
) -> list[Path]:
    """Write one `<run>-<wf>.ndjson` per workflow into `directory`; the paths written."""
    paths = []
    for wf, evs in by_workflow(events).items():
        name = _SAFE.sub("_", f"{run}-{wf}") + ".ndjson"
        head = engine_header(gates, settings, nodes, f"{run}/{wf}", features(evs), drained)
        paths.append(trace.write(directory / name, head, (e.line() for e in evs), store_seq=True))
    return paths


def count_overlaps(events: Sequence[Event]) -> int:
    """Runs that started while another run of the same workflow was in progress.

    A run is in progress from its `run_start` to its `run_end`; the events must be one
    workflow's in commit order, or several workflows' (they are counted apart). Runs cut short
    by a crash never end, so use this on runs without crashes.
    """
    open_runs: Counter[str] = Counter()
    overlaps = 0
    for e in events:
        if e.op == "run_start":
            if open_runs[e.wf] > 0:
                overlaps += 1
            open_runs[e.wf] += 1
        elif e.op == "run_end" and open_runs[e.wf] > 0:
            open_runs[e.wf] -= 1
    return overlaps


@dataclass(frozen=True)
class RunFigures:
    """What a run did, read from its trace."""

    events: int
    workflows: int
    runs: int
    reruns: int
    honoured_leases: int
    overlapping_runs: int


def figures(events: Sequence[Event]) -> RunFigures:
    """Count runs, reruns (a remove that found a recorded rerun, or a renewal that adopted
    one), honoured leases and overlapping runs in `events`."""
    ordered = [e for evs in by_workflow(events).values() for e in evs]
    reruns = sum(1 for e in ordered if e.op == "remove" and e.outcome == "rerun")
    # A renewal that adopts a bump shows as a conflict followed by a renewal at the row's version.
    for prev, cur in zip(ordered, ordered[1:]):
        if prev.op == "renew" and prev.outcome == "conflict" and cur.op == "renew" and cur.wf == prev.wf and cur.node == prev.node and cur.outcome == "renewed":
            reruns += 1
    return RunFigures(
        events=len(ordered),
        workflows=len({e.wf for e in ordered}),
        runs=sum(1 for e in ordered if e.op == "run_start"),
        reruns=reruns,
        honoured_leases=sum(
            1 for e in ordered if e.op in ("schedule", "schedule_in_memory") and e.outcome in ("honoured", "bumped")
        ),
        overlapping_runs=count_overlaps(ordered),
    )
