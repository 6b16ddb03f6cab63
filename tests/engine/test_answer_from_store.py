"""A copy that runs after another node finished its workflow still answers its caller.

Two in-process starts, the no-op gate off: n1 creates the instance, n2 starts it again and
completes it; only then does n1's schedule queue n1's copy, which runs on a COMPLETED instance
and saves nothing. n1's caller awaits its future (its call queued a copy here), so unless the
run answers from the store, that future is never completed (`AnswerFromStore`,
`models/engine/inmem_start_late_copy.yaml`).
"""

from __future__ import annotations

import pytest

from impl.engine import worker
from impl.engine.model import Gates
from impl.engine.sim import Simulation
from .helpers import fault_lines

GATES = Gates(create_existing_workflow_is_noop=False)


def step(sim: Simulation, node: str, label: str) -> str:
    """Run `node`'s fiber `label` (its next effect), or `take` on `node`; the effect's label."""
    for i, (kind, what) in enumerate(sim.choices()):
        if label == "take" and kind == "take" and what == node:
            sim.step(lambda n, i=i: i)
            return "take"
        if kind == "fiber" and what.node == node and what.label == label:
            effect = getattr(what.effect, "label", "wake")
            sim.step(lambda n, i=i: i)
            return effect
    raise AssertionError(f"{node} {label} cannot step now: {sim.choices()}")


def queued_late_copy(sim: Simulation):  # type: ignore[no-untyped-def]
    """n2 completes w1 while n1's start waits; then n1's start queues a copy: n1's start's
    fiber."""
    s1 = sim.spawn("n1", sim.nodes["n1"].start("w1", "approval", {"work_ms": 0, "approved": True}), "start:n1")
    s2 = sim.spawn("n2", sim.nodes["n2"].start("w1", "approval", {"work_ms": 0, "approved": True}), "start:n2")
    assert step(sim, "n1", "start:n1") == "create_instance"
    assert step(sim, "n2", "start:n2") == "create_instance"
    assert step(sim, "n2", "start:n2") == "schedule_in_memory"
    step(sim, "n2", "take")
    while any(f.label == "run:w1" and f.node == "n2" for f in sim.fibers):
        step(sim, "n2", "run:w1")
    assert sim.backend.read_instance("w1").status == "COMPLETED"
    assert step(sim, "n1", "start:n1") == "schedule_in_memory"  # inserts a row, queues a copy
    assert s1.done and s1.value.scheduled.queued_in_memory and s2.done
    return s1


def late_copy(sim: Simulation):  # type: ignore[no-untyped-def]
    """n1's start is answered by a copy that ran after n2 completed the workflow: its handle."""
    s1 = queued_late_copy(sim)
    step(sim, "n1", "take")
    while any(f.label == "run:w1" and f.node == "n1" for f in sim.fibers):
        step(sim, "n1", "run:w1")
    return s1.value


def test_the_late_copy_answers_its_caller_from_the_store() -> None:
    sim = Simulation(gates=GATES, fetch_loops=False)
    handle = late_copy(sim)
    assert handle.future.done() and handle.future.result() == {"approved": True}


def test_without_answer_from_store_the_caller_waits_forever(monkeypatch: pytest.MonkeyPatch) -> None:
    # The guard off: the test above must fail without it.
    def silent(node, wf):  # type: ignore[no-untyped-def]
        return
        yield

    monkeypatch.setattr(worker, "_answer_from_store", silent)
    handle = late_copy(Simulation(gates=GATES, fetch_loops=False))
    assert not handle.future.done()


def test_a_lease_that_ends_while_the_copy_reads_its_answer_counts_a_lapse() -> None:
    """The remove is meant for right after run_end: a read for the callers that keeps it past
    the lease's end (a slow store) is a lapse the node counts, for the trace header. Counted
    from the remove's own start, it was not: the remove came after the lease, unexplained."""
    sim = Simulation(gates=GATES, fetch_loops=False)
    queued_late_copy(sim)
    step(sim, "n1", "take")
    store = sim.nodes["n1"].store
    read = store.get_instance

    def slow_read(wf):  # type: ignore[no-untyped-def]
        sim.clock.advance(2 * sim.settings.lease_ms)  # returns past the lease's end
        return read(wf)

    store.get_instance = slow_read  # type: ignore[method-assign]
    assert [step(sim, "n1", "run:w1") for _ in range(2)] == ["run_start", "run_end"]
    assert fault_lines(sim.backend, "w1") == {}
    assert step(sim, "n1", "run:w1") == "read_instance"
    assert step(sim, "n1", "run:w1") == "remove"
    assert fault_lines(sim.backend, "w1") == {"lapse": 1}
