"""A schedule on a node between its taker's take of a copy and that run's `run_start`.

The taker takes a copy off the node's queue (`ExecutionQueue.take`, not a store step) before
its run's first transaction (`run_start`) commits. In between, the copy is in no queue, as the
seed has it ("a second schedule from the node whose copy is running queues nothing": its
write honours the copy's lease, bumps it and queues nothing; the run then owes a rerun).
`tla/Engine.tla`'s RunStart takes and starts in one step, so `tla/TraceEngine.tla` explains
the window with a hidden step of its own (`TakenBeforeStart`, under ImplQuirk). The engine's
stateful machine found it on SQLite under the `mutate_wide` profile (examples 115 and 116,
kept as `traces/corpus/engine/accepted/machine-schedule-between-take-and-run-start.ndjson`).

      n2 start     n1 signal          n2 fetch loop      n2 taker      n2 run
    create ---.
              |    update, schedule
              |                       lease, queue copy
              |                                          take ------.
    schedule_in_memory: bumped, nothing queued                      |
                                                                    run_start ... remove: rerun
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.check.runner import Tlc
from conformance.traces.check import check_traces
from conformance.traces.read import parse_trace, read_trace_file
from conformance.traces.system import load_systems
from conformance.traces.trace import Trace, TraceKind
from impl.engine.backend import MemoryBackend
from impl.engine.export import by_workflow, render_workflow
from impl.engine.model import Settings
from impl.engine.sim import Simulation

from .helpers import LEASE, ops

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "traces" / "schema"
CORPUS = ROOT / "traces" / "corpus" / "engine" / "accepted" / "machine-schedule-between-take-and-run-start.ndjson"


def finish(sim: Simulation, fiber: object) -> None:
    """Step `fiber` alone until it ends."""
    while not fiber.done:
        assert sim.step_where(lambda k, f: f is fiber)


def take_then_schedule() -> Simulation:
    """n2's start writes its backstop after n2's taker took the copy a fetch queued, before its
    run's run_start: every step named, so the interleaving is forced."""
    sim = Simulation(MemoryBackend(), fetch_loops=False, settings=Settings(lease_ms=LEASE, renew_interval_ms=LEASE // 3))
    n1, n2 = sim.nodes["n1"], sim.nodes["n2"]
    start = sim.spawn("n2", n2.start("wf", "approval", {}), "start:wf")
    assert sim.step_where(lambda k, f: f is start)  # create_instance; the backstop write waits
    signal = sim.spawn("n1", n1.signal("wf", "approve"), "signal:wf")  # through the store (the gate's default)
    finish(sim, signal)
    fetch = sim.spawn("n2", n2.fetch_once(), "fetch")
    finish(sim, fetch)
    assert fetch.value == 1
    assert sim.step_where(lambda k, w: k == "take" and w == "n2")  # the copy leaves the queue
    assert sim.step_where(lambda k, f: f is start)  # the start's schedule_in_memory, before run_start
    assert start.done and not start.value.scheduled.queued_in_memory
    assert sim.run_until(lambda: not any(not f.done for f in sim.fibers))
    return sim


def test_the_engine_bumps_the_taken_copys_lease_and_the_run_reruns() -> None:
    sim = take_then_schedule()
    assert ops(sim.backend) == [
        ("n2", "create_instance", "created"),
        ("n1", "update_instance", "updated"),
        ("n1", "schedule", "inserted"),
        ("n2", "fetch", "leased"),
        ("n2", "schedule_in_memory", "bumped"),  # the copy is taken: in no queue
        ("n2", "run_start", "started"),
        ("n2", "run_end", "saved"),
        ("n2", "remove", "rerun"),  # the bump is the rerun signal
        ("n2", "run_start", "started"),
        ("n2", "run_end", "conflict"),
        ("n2", "remove", "removed"),
    ]
    assert sim.monitor.overlaps == 0


@pytest.mark.tlc
def test_trace_engine_explains_a_schedule_between_take_and_run_start() -> None:
    sim = take_then_schedule()
    (wf, events), = by_workflow(sim.backend.read_events()).items()
    forced = parse_trace(render_workflow(events, sim.gates, sim.settings, sim.node_names, "take-window/wf"), "take-window/wf", SCHEMA)
    kept = read_trace_file(CORPUS, SCHEMA)
    assert isinstance(forced, Trace) and isinstance(kept, Trace)
    # The corpus trace has the same window: n2's fetch, its backstop write, its run_start.
    window = [(e["node"], e["op"], e["outcome"]) for e in kept.events[5:8]]
    assert window == [("n2", "fetch", "leased"), ("n2", "schedule_in_memory", "bumped"), ("n2", "run_start", "started")]
    verdicts = check_traces([forced, kept], load_systems(ROOT), Tlc.locate())
    assert [v.kind for v in verdicts] == [TraceKind.ACCEPTED] * 2, [v.describe() for v in verdicts]
