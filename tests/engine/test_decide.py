"""The protocol's pure decisions, without any store."""

from __future__ import annotations

import pytest

from impl.engine import decide
from impl.engine.model import FAILED, PENDING, RUNNING, ScheduleRequest, Task

LEASE = 1_000


def row(status: str = PENDING, run_after: int = 0, version: int = 3, retry: int = 0) -> Task:
    return Task("workflow", "wf", status, run_after, version, retry)


def test_schedule_inserts_a_missing_row_at_version_1() -> None:
    d = decide.decide_schedule(None, ScheduleRequest("wf", run_after=500, payload="p"), 0, LEASE, bump=True)
    assert d.outcome == "inserted"
    assert d.write == Task("workflow", "wf", PENDING, 500, 1, 0, "p")


@pytest.mark.parametrize("status", [PENDING, RUNNING])
def test_an_active_lease_is_honoured_and_bumped(status: str) -> None:
    leased = row(status, run_after=900)
    d = decide.decide_schedule(leased, ScheduleRequest("wf", run_after=0), 0, LEASE, bump=True)
    assert d.outcome == "bumped"
    assert d.write == leased.with_(version=4)  # only the version moves


def test_without_the_bump_gate_an_honoured_row_is_untouched() -> None:
    d = decide.decide_schedule(row(RUNNING, 900), ScheduleRequest("wf", run_after=0), 0, LEASE, bump=False)
    assert d == decide.ScheduleDecision("honoured", None)


def test_a_row_due_within_a_lease_counts_as_leased() -> None:
    # A short retry backoff: due in 800 ms, inside one lease of now.
    assert row(PENDING, run_after=800).has_active_lease(0, LEASE)
    assert not row(PENDING, run_after=1_001).has_active_lease(0, LEASE)
    assert not row(FAILED, run_after=0).has_active_lease(0, LEASE)


def test_overwrite_when_leases_are_not_honoured_or_the_lease_is_far() -> None:
    r = row(RUNNING, run_after=900, retry=2)
    d = decide.decide_schedule(r, ScheduleRequest("wf", run_after=50, honour_leases=False), 0, LEASE, bump=True)
    assert d.outcome == "overwritten"
    assert d.write == r.with_(status=PENDING, run_after=50, retry_count=0, version=4)
    far = row(PENDING, run_after=5_000)
    assert decide.decide_schedule(far, ScheduleRequest("wf", run_after=0), 0, LEASE, bump=True).outcome == "overwritten"


def test_queue_keeps_a_copy_only_when_no_lease_was_honoured() -> None:
    assert decide.decide_queue_copy("inserted", honour_check=True)
    assert decide.decide_queue_copy("overwritten", honour_check=True)
    assert not decide.decide_queue_copy("bumped", honour_check=True)
    assert not decide.decide_queue_copy("honoured", honour_check=True)
    # The bug: without the check a copy is queued whatever the write did.
    assert decide.decide_queue_copy("bumped", honour_check=False)


def test_fetch_leases_a_due_row_once() -> None:
    due = row(PENDING, run_after=0, version=3, retry=1)
    leased = decide.decide_fetch(due, 3, 10, LEASE)
    assert leased == due.with_(status=RUNNING, run_after=10 + LEASE, version=4, retry_count=2)
    assert decide.decide_fetch(due, 2, 10, LEASE) is None  # another node changed it
    assert decide.decide_fetch(row(PENDING, run_after=20), 3, 10, LEASE) is None  # not due
    assert decide.decide_fetch(None, 3, 10, LEASE) is None


def test_renew_needs_the_held_version() -> None:
    r = row(RUNNING, run_after=100, version=5)
    assert decide.decide_renew(r, 5, 50, LEASE) == r.with_(run_after=50 + LEASE, version=6)
    assert decide.decide_renew(r, 4, 50, LEASE) is None
    assert decide.decide_renew(r.with_(status=FAILED), 5, 50, LEASE) is None


def test_a_failed_remove_is_classified_from_the_row_as_it_is() -> None:
    assert decide.classify_failed_remove(None, 100) == "gone"
    assert decide.classify_failed_remove(row(RUNNING, run_after=100), 100) == "rerun"
    assert decide.classify_failed_remove(row(RUNNING, run_after=250), 100) == "lost"


def test_retries_back_off_then_dead_letter() -> None:
    assert decide.retry_delay_ms(row(retry=1), 200) == 200
    assert decide.retry_delay_ms(row(retry=3), 200) == 200
    assert not decide.retries_exhausted(row(retry=2), 3)
    assert decide.retries_exhausted(row(retry=3), 3)
    assert decide.decide_mark_failed(row(version=2), 2) == row(FAILED, version=3)
    assert decide.decide_retry(row(RUNNING, version=2), 2, 700) == row(PENDING, run_after=700, version=3)


def test_instance_updates_are_versioned_and_stop_at_terminal() -> None:
    from impl.engine.model import Instance

    inst = Instance("wf", "approval", "RUNNING", 2, "{}")
    assert decide.decide_update_instance(inst, 2) == "updated"
    assert decide.decide_update_instance(inst, 1) == "conflict"
    assert decide.decide_update_instance(inst.with_(status="COMPLETED"), 2) == "terminal"
