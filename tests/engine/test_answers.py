"""What a start's caller is told is a line of the trace (`answer`), checked by TraceEngine.

A caller's future is answered by this node's runs only once its call queued its copy
(`Node._arm`, in the schedule's step): tla/Engine.tla's RunEnd answers an `awaiting` caller,
one whose ScheduleInMemory queued a copy. The engine's stateful machine found the gap under the
`mutate_wide` profile: a future registered when the call began was answered by a run that ended
before the call's create_instance, and the call then logged `unavailable` as well: two answers,
the first owed to nobody.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.check.runner import Tlc
from conformance.traces.check import check_traces
from conformance.traces.read import parse_trace
from conformance.traces.system import load_systems
from conformance.traces.trace import Trace, TraceKind
from impl.engine.errors import ResultUnavailable
from impl.engine.export import by_workflow, render_workflow
from impl.engine.sim import Simulation

from .helpers import edited, lines
from .test_answer_from_store import step

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "traces" / "schema"


def second_call_during_a_run() -> tuple[Simulation, object, object]:
    """n1 starts w1 and runs its copy; a second start of w1 on n1 begins (its first store call
    not yet made) while that run completes the workflow; then it finds w1 finished."""
    sim = Simulation(fetch_loops=False)
    n1 = sim.nodes["n1"]
    first = sim.spawn("n1", n1.start("w1", "approval", {"work_ms": 0, "approved": True}), "start:a")
    assert step(sim, "n1", "start:a") == "create_instance"
    assert step(sim, "n1", "start:a") == "schedule_in_memory"
    step(sim, "n1", "take")
    second = sim.spawn("n1", n1.start("w1", "approval", {"work_ms": 0, "approved": True}), "start:b")
    while any(f.label == "run:w1" for f in sim.fibers):
        step(sim, "n1", "run:w1")
    assert step(sim, "n1", "start:b") == "create_instance"  # exists, COMPLETED
    assert first.done and second.done
    return sim, first.value, second.value


def test_a_run_answers_only_the_calls_that_queued_a_copy_before_it_ended() -> None:
    sim, first, second = second_call_during_a_run()
    assert first.future.result() == {"approved": True}
    assert isinstance(second.future.exception(), ResultUnavailable)
    assert lines(sim.backend) == [("n1", "answer", "result"), ("n1", "answer", "unavailable")]


@pytest.mark.tlc
def test_trace_engine_accepts_the_answers_and_rejects_a_second_one() -> None:
    sim, _, _ = second_call_during_a_run()
    (wf, events), = by_workflow(sim.backend.read_events()).items()
    text = render_workflow(events, sim.gates, sim.settings, sim.node_names, "answers/w1", drained=True)
    # The same trace with the run's answer logged twice: what the engine wrote before `_arm`.
    i = next(k for k, ln in enumerate(text.splitlines()) if '"answer"' in ln)
    doubled = text.splitlines()
    doubled.insert(i + 1, doubled[i])
    traces = [parse_trace(text, "answers", SCHEMA), parse_trace(edited("\n".join(doubled)), "doubled", SCHEMA)]
    assert all(isinstance(t, Trace) for t in traces), traces
    good, bad = check_traces(traces, load_systems(ROOT), Tlc.locate())
    assert good.kind is TraceKind.ACCEPTED, good.describe()
    assert bad.kind is TraceKind.REJECTED and bad.line == i + 1 and "disagrees on answer" in bad.describe(), bad.describe()
