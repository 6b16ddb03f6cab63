"""The engine's behaviours: start, signal, results, retries, the dead letter, and every gate."""

from __future__ import annotations

import pytest

from impl.engine.backend import Backend, MemoryBackend
from impl.engine.effects import Sleep, drive
from impl.engine.errors import ResultTimeout, ResultUnavailable, UnknownWorkflow
from impl.engine.model import FAILED, Gates, ScheduleRequest, Settings, TaskKey
from impl.engine.node import WorkflowFailed
from impl.engine.queue import QueuedTask
from impl.engine.sim import Simulation
from impl.engine.store import Store

from .helpers import LEASE, fault_lines, ops, two_nodes

SETTINGS = Settings(lease_ms=LEASE, renew_interval_ms=LEASE // 3, retry_backoff_ms=100, max_retries=3)


def test_start_is_two_transactions_and_the_copy_completes_the_callers_future(backend: Backend) -> None:
    _, n1, _ = two_nodes(backend)
    h = drive(n1.start("wf", "approval", {"approved": True}))
    assert ops(backend) == [("n1", "create_instance", "created"), ("n1", "schedule_in_memory", "inserted")]
    drive(n1.run(n1.take()))
    assert h.future.result(0) == {"approved": True}
    assert backend.read_task(TaskKey("workflow", "wf")) is None
    assert backend.read_instance("wf").status == "COMPLETED"


@pytest.mark.parametrize("noop", [True, False])
def test_starting_an_existing_running_workflow(backend: Backend, noop: bool) -> None:
    _, n1, n2 = two_nodes(backend, Gates(create_existing_workflow_is_noop=noop))
    drive(n1.start("wf", "approval", {}))
    h = drive(n2.start("wf", "approval", {}))
    assert ops(backend)[2] == ("n2", "create_instance", "exists")
    if noop:
        assert h.scheduled is None and len(ops(backend)) == 3  # nothing scheduled
    else:
        # n1's copy holds the backstop row's lease: honoured and bumped, and no copy on n2.
        assert ops(backend)[3] == ("n2", "schedule_in_memory", "bumped")
        assert h.scheduled is not None and not h.scheduled.queued_in_memory


def test_a_terminal_workflow_is_not_scheduled_again_nor_signalled(backend: Backend) -> None:
    _, n1, _ = two_nodes(backend, Gates(create_existing_workflow_is_noop=False))
    drive(n1.start("wf", "approval", {"approved": True}))
    drive(n1.run(n1.take()))
    n = len(ops(backend))
    h = drive(n1.start("wf", "approval", {}))
    assert h.scheduled is None and ops(backend)[n:] == [("n1", "create_instance", "exists")]
    assert drive(n1.signal("wf", "approve")) is None
    assert ops(backend)[-1] == ("n1", "update_instance", "terminal")


@pytest.mark.parametrize("force", [True, False])
def test_a_signal_updates_the_instance_then_schedules(backend: Backend, force: bool) -> None:
    _, n1, n2 = two_nodes(backend, Gates(force_signal_workflow_exec_in_scheduler=force))
    drive(n1.start("wf", "approval", {}))
    drive(n1.run(n1.take()))  # runs, waits for the signal, removes its row
    assert backend.read_instance("wf").status == "RUNNING"
    scheduled = drive(n2.signal("wf", "approve"))
    assert ops(backend)[-2] == ("n2", "update_instance", "updated")
    assert ops(backend)[-1] == ("n2", "schedule" if force else "schedule_in_memory", "inserted")
    assert scheduled.queued_in_memory is (not force)
    if force:
        (row,) = n1.scheduler.fetch(10)
        drive(n1.run(QueuedTask(row, "store")))
    else:
        drive(n2.run(n2.take()))
    assert backend.read_instance("wf").status == "COMPLETED"


def test_unknown_workflows_and_signals_are_named(backend: Backend) -> None:
    _, n1, _ = two_nodes(backend)
    with pytest.raises(UnknownWorkflow, match="no workflow type 'nope'"):
        drive(n1.start("wf", "nope", {}))
    with pytest.raises(UnknownWorkflow, match="no such workflow instance"):
        drive(n1.signal("missing", "approve"))
    drive(n1.start("wf", "approval", {}))
    with pytest.raises(UnknownWorkflow, match="has no signal 'reject'"):
        drive(n1.signal("wf", "reject"))


def _sim(backend: Backend | None = None, gates: Gates | None = None, seed: int = 0) -> Simulation:
    return Simulation(backend or MemoryBackend(), seed=seed, gates=gates, settings=SETTINGS)


def test_a_failing_workflow_is_retried_with_backoff_until_it_completes(backend: Backend) -> None:
    sim = _sim(backend)
    n1 = sim.nodes["n1"]

    def client():
        h = yield from n1.start("wf", "flaky", {"fail_times": 2})
        return (yield from n1.result(h))

    c = sim.spawn("n1", client(), "client")
    assert sim.run_until(lambda: c.done)
    assert c.value == {"attempt": 3}
    outcomes = [(op, out) for _, op, out in ops(backend) if op in ("run_end", "reschedule_retry")]
    assert outcomes.count(("reschedule_retry", "rescheduled")) == 3


def test_a_workflow_past_max_retries_is_dead_lettered(backend: Backend) -> None:
    sim = _sim(backend)
    n1 = sim.nodes["n1"]

    def client():
        h = yield from n1.start("wf", "poison", {})
        return (yield from n1.result(h))

    c = sim.spawn("n1", client(), "client")
    assert sim.run_until(lambda: c.done)
    assert isinstance(c.error, WorkflowFailed)
    assert ops(backend)[-1][1:] == ("mark_failed", "failed")
    task = backend.read_task(TaskKey("workflow", "wf"))
    assert task.status == FAILED and backend.read_instance("wf").status == FAILED


def test_result_polling_has_a_time_limit() -> None:
    sim = _sim()
    n1 = sim.nodes["n1"]

    def client():
        h = yield from n1.start("wf", "approval", {})  # never signalled: waits forever
        return (yield from n1.result(h, limit_ms=2_000))

    c = sim.spawn("n1", client(), "client")
    assert sim.run_until(lambda: c.done)
    assert isinstance(c.error, ResultTimeout) and sim.clock.now_ms() >= 2_000


def _signal_during_long_run(gates: Gates, seed: int = 0) -> Simulation:
    sim = _sim(gates=gates, seed=seed)
    n1, n2 = sim.nodes["n1"], sim.nodes["n2"]

    def client():
        h = yield from n1.start("wf", "approval", {"work_ms": 3 * LEASE})
        yield Sleep(LEASE // 2)
        yield from n2.signal("wf", "approve")
        return (yield from n2.result(h, limit_ms=20 * LEASE))

    c = sim.spawn("n1", client(), "client")
    sim.run_until(lambda: c.done)
    sim.run_until(lambda: not any(f.label.startswith("run:") for f in sim.fibers))
    sim.client = c  # type: ignore[attr-defined]
    return sim


def test_a_handler_outliving_its_lease_with_a_signal_runs_once_at_a_time() -> None:
    sim = _signal_during_long_run(Gates())
    assert sim.client.value == {"approved": True}
    assert sim.monitor.overlaps == 0 and sim.monitor.runs["wf"] == 2  # the run, then its rerun


def test_without_lease_renewal_a_long_handler_overlaps_a_fetch() -> None:
    sim = _signal_during_long_run(Gates(automatic_lease_renewal=False))
    assert sim.monitor.overlaps >= 1


def test_without_renew_adopting_the_bump_a_renewal_loses_the_lease() -> None:
    # The reference's renewLease fails on the bumped version; the lease lapses under the run.
    sim = _signal_during_long_run(Gates(renew_adopts_rerun=False))
    assert sim.monitor.overlaps >= 1


def test_a_renewal_that_meets_a_second_bump_while_adopting_the_first_keeps_renewing() -> None:
    """Two signals bump the row around one renewal: the renewal adopts the first bump, its
    renewal at the adopted version meets the second. The run must adopt that one too and go on
    renewing (Renew in tla/Engine.tla adopts at each conflict): a run that stopped renewing there
    let its lease lapse under it, and a fetch ran the workflow beside it."""
    sim = _sim()
    n1, n2 = sim.nodes["n1"], sim.nodes["n2"]
    start = sim.spawn("n1", n1.start("wf", "approval", {"work_ms": 3 * LEASE}), "start")
    sim.run_until(lambda: start.done)
    assert sim.step_where(lambda kind, what: kind == "take")
    [run] = [f for f in sim.fibers if f.label == "run:wf"]
    sim.run_until(lambda: isinstance(run.effect, Sleep))  # run_start; the handler sleeps
    sim.clock.advance(run.wake_at - sim.clock.now_ms())

    def signal() -> None:
        f = sim.spawn("n2", n2.signal("wf", "approve"), "signal")
        while not f.done:
            assert sim.step_where(lambda kind, what: what is f)

    signal()  # the first bump
    assert sim.step_where(lambda kind, what: what is run)  # wake
    assert sim.step_where(lambda kind, what: what is run)  # renew: conflict, adopt the bump
    signal()  # the second bump, before the renewal at the adopted version
    assert sim.step_where(lambda kind, what: what is run)  # renew: conflict again
    sim.run_until(lambda: run.done, max_steps=10_000)
    assert ("n1", "renew", "renewed") in ops(sim.backend)
    assert sim.monitor.overlaps == 0 and fault_lines(sim.backend, "wf") == {}


def test_a_row_inserted_again_continues_the_removed_rows_version_so_a_stale_remove_is_refused(
    backend: Backend,
) -> None:
    """The ABA case of issue 38 (Engine.tla ContinueVersions, lease_faults_aba): n1's lease
    lapses under it, n2 leases, runs and removes the row, a signal inserts it again and n2
    leases it. Were the new row to start at version 1, its lease would be version 2, n1's, and
    n1's late remove would delete it; it continues the removed row's version instead."""
    store = Store(backend, lease_ms=LEASE)
    store.create_instance("n1", 0, "wf", "approval", "{}")
    first = store.schedule("n1", 0, ScheduleRequest("wf", run_after=0)).task
    stale = store.fetch("n1", 0, first)  # n1's lease, at version 2; it lapses at LEASE
    assert stale is not None and stale.version == 2
    taken = store.fetch("n2", LEASE, stale)  # due again: n2 leases it
    assert taken is not None
    assert store.remove("n2", LEASE, taken.key, taken.version, taken.run_after)[0] == "removed"
    again = store.schedule("n2", LEASE + 1, ScheduleRequest("wf", run_after=LEASE + 1))
    assert again.outcome == "inserted" and again.task.version == taken.version + 1
    leased = store.fetch("n2", LEASE + 1, again.task)
    assert leased is not None and leased.version != stale.version
    outcome, row = store.remove("n1", LEASE + 2, stale.key, stale.version, stale.run_after)
    assert outcome == "lost" and row == leased


def test_without_the_bump_the_rerun_signal_is_lost_and_the_workflow_stranded() -> None:
    sim = _signal_during_long_run(Gates(bump_task_version_on_honored_lease=False))
    assert isinstance(sim.client.error, ResultTimeout)
    assert sim.backend.read_instance("wf").status == "RUNNING"
    assert ("n1", "remove", "removed") in ops(sim.backend)  # the holder removed the row anyway
    assert sim.backend.due_tasks(10**12, 10) == []  # nothing will ever drive it


def test_a_fetch_leaves_alone_a_row_whose_copy_the_node_has_queued(backend: Backend) -> None:
    """The copy waits in the queue past its backstop lease (a busy worker); the node's own fetch
    must not lease the row again: a new lease moves the version, the fetched copy is dropped as a
    duplicate, and the queued one would run on a version the row no longer has (Fetch in
    tla/Engine.tla skips a task queued on the fetching node)."""
    clock, n1, _ = two_nodes(backend)
    h = drive(n1.start("wf", "approval", {"approved": True}))
    [copy] = n1.queue.items()
    clock.advance(3 * LEASE)  # the backstop lease has passed: the row is due
    assert [r.task_id for r in backend.due_tasks(clock.now_ms(), 10)] == [copy.task.task_id]
    before = ops(backend)
    assert drive(n1.fetch_once()) == 0
    assert ops(backend) == before  # no fetch written
    [row] = backend.due_tasks(clock.now_ms(), 10)
    assert row.version == copy.task.version
    drive(n1.run(n1.take()))
    assert drive(n1.result(h)) == {"approved": True}
    assert [o[1] for o in ops(backend)][-3:] == ["run_start", "run_end", "remove"]


def test_without_in_memory_execution_a_start_writes_the_row_and_a_fetch_runs_it(backend: Backend) -> None:
    from impl.engine.store import Store
    from impl.engine.node import Node
    from impl.clock import VirtualClock

    clock = VirtualClock(0)
    node = Node("n1", Store(backend, lease_ms=LEASE), clock,
                settings=Settings(lease_ms=LEASE, in_memory_execution=False))
    h = drive(node.start("wf", "approval", {"approved": True}))
    assert ops(backend) == [("n1", "create_instance", "created"), ("n1", "schedule", "inserted")]
    assert isinstance(h.future.exception(), ResultUnavailable) and len(node.queue) == 0
    assert drive(node.fetch_once()) == 1
    drive(node.run(node.take()))
    assert drive(node.result(h)) == {"approved": True}
    assert [o[1] for o in ops(backend)][2:] == ["fetch", "run_start", "run_end", "remove"]


def test_a_schedule_on_the_node_waits_until_its_fetch_has_queued_the_copy(backend: Backend) -> None:
    """A fetch's lease and the push of its copy are one step on its node: an in-memory schedule
    of the same workflow there, coming between them, waits, then finds the copy queued and
    writes nothing. Apart, the schedule wrote after the fetch's commit with no copy queued yet
    (`bumped`, no copy), which Fetch in tla/Engine.tla (the copy queued in the same step) cannot
    explain: TraceEngine rejected 1 to 4 of 300 traces of a 2-node SQLite bench run."""
    import threading

    from impl.engine.model import ScheduleRequest

    clock, n1, n2 = two_nodes(backend)
    drive(n2.start("wf", "approval", {}))
    drive(n2.run(n2.take()))  # runs, waits for its signal, removes the row
    drive(n2.signal("wf", "approve"))  # scheduled through the store: a row due now
    done = threading.Event()
    box: dict = {}

    def schedule_here() -> None:
        try:
            box["scheduled"] = drive(n1.queue.schedule(ScheduleRequest("wf", run_after=clock.now_ms(), delay_ms=0)))
        finally:
            done.set()

    lease = n1.scheduler.lease

    def lease_then_let_the_schedule_in(row):  # the fetch's transaction has committed here
        leased = lease(row)
        t = threading.Thread(target=schedule_here)
        t.start()
        box["thread"] = t
        for _ in range(100_000):  # until the schedule waits for the workflow, or has finished
            if done.is_set() or n1.queue.users("wf") >= 2:
                break
            done.wait(0.0001)
        return leased

    n1.scheduler.lease = lease_then_let_the_schedule_in
    assert drive(n1.fetch_once()) == 1
    box["thread"].join(30)
    assert done.is_set()
    assert box["scheduled"].task is None and not box["scheduled"].queued_in_memory
    assert [o for o in ops(backend) if o[0] == "n1"] == [("n1", "fetch", "leased")]
    [copy] = n1.queue.items()
    assert copy.source == "store"
