"""The scheduler's base behaviours, the same suite on the in-memory twin, SQLite and MariaDB."""

from __future__ import annotations

import pytest

from impl.clock import VirtualClock
from impl.engine.backend import Backend
from impl.engine.errors import OptimisticLockError
from impl.engine.model import FAILED, PENDING, RUNNING, ScheduleRequest
from impl.engine.scheduler import Scheduler
from impl.engine.store import Store

LEASE = 1_000


def schedulers(backend: Backend, *names: str, bump: bool = True) -> tuple[VirtualClock, list[Scheduler]]:
    clock = VirtualClock(10_000)
    store = Store(backend, lease_ms=LEASE, bump=bump)
    return clock, [Scheduler(store, n, clock) for n in names]


def test_versions_move_across_schedule_fetch_refetch_reschedule_remove(backend: Backend) -> None:
    clock, (s,) = schedulers(backend, "n1")
    t = s.schedule(ScheduleRequest("wf", run_after=clock.now_ms(), payload="p"))
    assert (t.status, t.version, t.retry_count, t.payload) == (PENDING, 1, 0, "p")

    (leased,) = s.fetch(10)
    assert (leased.status, leased.version, leased.retry_count, leased.run_after) == (RUNNING, 2, 1, 10_000 + LEASE)
    assert s.fetch(10) == []  # leased: not due again until the lease lapses

    clock.advance(LEASE)
    (again,) = s.fetch(10)  # the lease lapsed: re-fetched, the version and count move on
    assert (again.version, again.retry_count) == (3, 2)

    retried = s.reschedule_for_retry(again, clock.now_ms() + 500)
    assert (retried.status, retried.version, retried.run_after) == (PENDING, 4, clock.now_ms() + 500)
    assert s.fetch(10) == []
    clock.advance(500)
    (third,) = s.fetch(10)
    assert third.version == 5
    s.remove(third)
    assert s.get_task("wf") is None


def test_schedule_overwrites_a_row_without_an_active_lease(backend: Backend) -> None:
    clock, (s,) = schedulers(backend, "n1")
    s.schedule(ScheduleRequest("wf", run_after=clock.now_ms() + 5 * LEASE))
    out = s.schedule_with_outcome(ScheduleRequest("wf", run_after=clock.now_ms(), payload="new"))
    assert out.outcome == "overwritten" and not out.lease_honoured
    assert (out.task.version, out.task.run_after, out.task.payload) == (2, clock.now_ms(), "new")
    assert s.get_task("wf") == out.task


def test_honour_leases_false_overwrites_even_a_leased_row(backend: Backend) -> None:
    clock, (s,) = schedulers(backend, "n1")
    s.schedule(ScheduleRequest("wf", run_after=clock.now_ms()))
    (leased,) = s.fetch(1)
    out = s.schedule_with_outcome(ScheduleRequest("wf", run_after=clock.now_ms(), honour_leases=False))
    assert out.outcome == "overwritten"
    assert (out.task.status, out.task.retry_count, out.task.version) == (PENDING, 0, leased.version + 1)


@pytest.mark.parametrize("bump", [True, False])
def test_schedule_with_outcome_honours_a_lease(backend: Backend, bump: bool) -> None:
    clock, (s1, s2) = schedulers(backend, "n1", "n2", bump=bump)
    s1.schedule(ScheduleRequest("wf", run_after=clock.now_ms()))
    (held,) = s1.fetch(1)
    out = s2.schedule_with_outcome(ScheduleRequest("wf", run_after=clock.now_ms()))
    assert out.lease_honoured
    assert out.outcome == ("bumped" if bump else "honoured")
    assert out.task.run_after == held.run_after and out.task.status == RUNNING
    assert out.task.version == held.version + (1 if bump else 0)


def test_stale_versions_raise_optimistic_lock_errors(backend: Backend) -> None:
    clock, (s1, s2) = schedulers(backend, "n1", "n2")
    s1.schedule(ScheduleRequest("wf", run_after=clock.now_ms()))
    (held,) = s1.fetch(1)
    clock.advance(LEASE)
    (stolen,) = s2.fetch(1)  # the lease lapsed and n2 took the row
    for call in (s1.remove, s1.renew_lease, s1.mark_as_failed, lambda t: s1.reschedule_for_retry(t, 0)):
        with pytest.raises(OptimisticLockError):
            call(held)
    assert s1.get_task("wf") == stolen  # nothing changed
    renewed = s2.renew_lease(stolen)
    assert (renewed.version, renewed.run_after) == (stolen.version + 1, clock.now_ms() + LEASE)


def test_mark_as_failed_dead_letters_the_row_and_it_is_never_fetched(backend: Backend) -> None:
    clock, (s,) = schedulers(backend, "n1")
    s.store.create_instance("n1", clock.now_ms(), "wf", "approval", "{}")
    s.schedule(ScheduleRequest("wf", run_after=clock.now_ms()))
    (held,) = s.fetch(1)
    failed = s.mark_as_failed(held)
    assert failed.status == FAILED
    assert s.store.get_instance("wf").status == FAILED
    clock.advance(10 * LEASE)
    assert s.fetch(10) == []


def test_fetch_leases_each_row_once_across_nodes(backend: Backend) -> None:
    clock, (s1, s2) = schedulers(backend, "n1", "n2")
    for i in range(5):
        s1.schedule(ScheduleRequest(f"wf{i}", run_after=clock.now_ms()))
    seen1, seen2 = s1.due(10), s2.due(10)
    got1 = [s1.lease(t) for t in seen1]
    got2 = [s2.lease(t) for t in seen2]  # every row already moved: n2 wins nothing
    assert all(g is not None for g in got1) and got2 == [None] * 5


def test_every_committed_transaction_records_one_event_with_its_state(backend: Backend) -> None:
    clock, (s,) = schedulers(backend, "n1")
    s.schedule(ScheduleRequest("wf", run_after=clock.now_ms()))
    (held,) = s.fetch(1)
    s.remove(held)
    events = backend.read_events()
    assert [(e.op, e.outcome, e.wf_seq) for e in events] == [
        ("schedule", "inserted", 1),
        ("fetch", "leased", 2),
        ("remove", "removed", 3),
    ]
    assert events[1].state == {
        "instance": None,
        "task": {"status": RUNNING, "run_after": clock.now_ms() + LEASE, "version": 2, "retry_count": 1},
    }
    assert events[2].state == {"instance": None, "task": None}
    assert all(e.node == "n1" and e.now == clock.now_ms() for e in events)


def test_a_fetch_that_loses_its_race_records_nothing(backend: Backend) -> None:
    clock, (s1, s2) = schedulers(backend, "n1", "n2")
    s1.schedule(ScheduleRequest("wf", run_after=clock.now_ms()))
    (seen,) = s2.due(1)
    s1.fetch(1)
    assert s2.lease(seen) is None
    assert [e.op for e in backend.read_events()] == ["schedule", "fetch"]


def test_a_reinserted_row_continues_the_removed_rows_version(backend: Backend) -> None:
    clock, (s,) = schedulers(backend, "n1")
    s.schedule(ScheduleRequest("wf", run_after=clock.now_ms()))
    (held,) = s.fetch(1)
    s.remove(held)
    # Not 1 again: a node whose lease on the removed row lapsed must never find its version
    # again (the ABA hazard; Engine.tla ContinueVersions).
    assert s.schedule(ScheduleRequest("wf", run_after=clock.now_ms())).version == held.version + 1
