"""The seed's cases: two nodes' queues sharing one scheduler, on every store.

Each case runs with the honour check on (the fix) and off (the old behaviour); with it off
each one shows the bug, which is how we know the test can see it.
"""

from __future__ import annotations

import pytest

from impl.engine.backend import Backend
from impl.engine.effects import Sleep, drive
from impl.engine.errors import OptimisticLockError, ResultUnavailable
from impl.engine.model import Gates, ScheduleRequest, Settings
from impl.engine.sim import Simulation

from .helpers import LEASE, ops, two_nodes

FIX = pytest.mark.parametrize("fix", [True, False], ids=["fix", "no-fix"])


@FIX
def test_both_nodes_schedule_in_memory_and_only_one_holds_a_copy(backend: Backend, fix: bool) -> None:
    clock, n1, n2 = two_nodes(backend, Gates(honour_check=fix))
    req = ScheduleRequest("wf", run_after=clock.now_ms())
    first = drive(n1.queue.schedule(req))
    second = drive(n2.queue.schedule(req))
    assert first.queued_in_memory and len(n1.queue) == 1
    assert second.task is not None and second.task.version == 2  # honoured and bumped
    copies = len(n1.queue) + len(n2.queue)
    if fix:
        assert (second.queued_in_memory, copies) == (False, 1)
    else:
        assert (second.queued_in_memory, copies) == (True, 2)  # the bug: two copies


@FIX
def test_a_second_schedule_from_the_node_whose_copy_runs_queues_nothing(backend: Backend, fix: bool) -> None:
    clock, n1, _ = two_nodes(backend, Gates(honour_check=fix))
    req = ScheduleRequest("wf", run_after=clock.now_ms())
    drive(n1.queue.schedule(req))
    running = n1.take()  # the copy is running now: no longer queued
    assert running is not None and len(n1.queue) == 0
    again = drive(n1.queue.schedule(req))
    assert again.queued_in_memory is (not fix)
    assert len(n1.queue) == (0 if fix else 1)


def test_a_schedule_while_a_copy_waits_in_this_queue_writes_nothing(backend: Backend) -> None:
    clock, n1, _ = two_nodes(backend)
    req = ScheduleRequest("wf", run_after=clock.now_ms())
    drive(n1.queue.schedule(req))
    before = ops(backend)
    assert drive(n1.queue.schedule(req)).queued_in_memory is False
    assert ops(backend) == before


@FIX
def test_an_honoured_schedule_bumps_the_version_and_the_holder_reruns(backend: Backend, fix: bool) -> None:
    clock, n1, n2 = two_nodes(backend, Gates(honour_check=fix))
    handle = drive(n1.start("wf", "approval", {"approved": True}))
    held = n1.take()
    assert held is not None and handle.scheduled.queued_in_memory
    bumped = drive(n2.queue.schedule(ScheduleRequest("wf", run_after=clock.now_ms())))
    assert bumped.task.version == held.task.version + 1
    assert bumped.queued_in_memory is (not fix)
    with pytest.raises(OptimisticLockError):  # the holder's remove fails: the rerun signal
        n1.scheduler.remove(held.task)
    assert ops(backend)[-1] == ("n1", "remove", "rerun")
    before = len(ops(backend))
    drive(n1.run(held))
    runs = [o for o in ops(backend)[before:] if o[1] in ("run_start", "remove")]
    assert runs == [
        ("n1", "run_start", "started"),
        ("n1", "remove", "rerun"),
        ("n1", "run_start", "started"),
        ("n1", "remove", "removed"),
    ]
    assert drive(n1.result(handle)) == {"approved": True}
    # With the fix nothing else runs; without it n2's copy is still queued: a second runner.
    assert len(n2.queue) == (0 if fix else 1)


@FIX
def test_an_in_process_signal_during_an_in_process_run_gives_one_run(backend: Backend, fix: bool) -> None:
    gates = Gates(honour_check=fix, force_signal_workflow_exec_in_scheduler=False)
    sim = Simulation(backend, seed=7, gates=gates, settings=Settings(lease_ms=LEASE, renew_interval_ms=LEASE // 3))
    n1 = sim.nodes["n1"]

    def client():
        handle = yield from n1.start("wf", "approval", {"work_ms": 1_500})
        yield Sleep(400)
        yield from n1.signal("wf", "approve")  # in process, on the node whose copy is running
        return (yield from n1.result(handle))

    c = sim.spawn("n1", client(), "client")
    assert sim.run_until(lambda: c.done)
    assert c.error is None and c.value == {"approved": True}
    sim.run_until(lambda: not any(f.label.startswith("run:") for f in sim.fibers))
    if fix:
        assert sim.monitor.max_concurrent["wf"] == 1 and sim.monitor.overlaps == 0
    else:
        assert sim.monitor.max_concurrent["wf"] == 2  # expected: <1> but was: <2>


def test_no_copy_queued_gives_result_unavailable_then_the_result_from_storage(backend: Backend) -> None:
    clock, n1, n2 = two_nodes(backend, Gates(create_existing_workflow_is_noop=False))
    h1 = drive(n1.start("wf", "approval", {"approved": True}))
    item = n1.take()
    h2 = drive(n2.start("wf", "approval", {"approved": True}))  # running on n1: lease honoured
    assert h2.scheduled is not None and not h2.scheduled.queued_in_memory
    assert isinstance(h2.future.exception(), ResultUnavailable)
    assert len(n2.queue) == 0
    drive(n1.run(item))
    assert h1.future.result(0) == {"approved": True}  # n1's caller got it from its own copy
    assert drive(n2.result(h2)) == {"approved": True}  # n2's caller read it from storage


def test_a_start_while_a_copy_is_queued_here_gives_result_unavailable(backend: Backend) -> None:
    _, n1, _ = two_nodes(backend, Gates(create_existing_workflow_is_noop=False))
    drive(n1.start("wf", "approval", {}))
    again = drive(n1.start("wf", "approval", {}))
    assert again.scheduled is not None and again.scheduled.task is None
    assert isinstance(again.future.exception(), ResultUnavailable)


def test_a_start_and_a_signal_scheduling_at_once_on_one_node_write_once(backend: Backend) -> None:
    """Both callers reach the execution queue before either has queued its copy; the second
    must find the first's copy at its write, not before it (Engine.tla's ScheduleInMemory needs
    no copy queued when it writes: AlreadyQueued otherwise). Checked before the write, both
    wrote and the second bumped the first's own row (a MariaDB run of record_traces.sh)."""
    sim = Simulation(backend, nodes=("n1", "n2"), fetch_loops=False,
                     gates=Gates(force_signal_workflow_exec_in_scheduler=False))
    n1 = sim.nodes["n1"]
    start = sim.spawn("n1", n1.start("wf", "approval", {}), "start:wf")
    assert sim.step_where(lambda k, f: f is start)  # create_instance
    signal = sim.spawn("n1", n1.signal("wf", "approve"), "signal:wf")
    while signal.effect.label != "schedule_in_memory":
        assert sim.step_where(lambda k, f: f is signal)
    assert start.effect.label == "schedule_in_memory"
    assert sim.step_where(lambda k, f: f is start)  # inserted, and its copy queued
    assert sim.step_where(lambda k, f: f is signal)
    assert signal.done and signal.value.task is None and not signal.value.queued_in_memory
    assert [e.op for e in backend.read_events()].count("schedule_in_memory") == 1
    assert len(n1.queue) == 1
