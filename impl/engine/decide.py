"""Pure decisions of the scheduling protocol: given the row read, what to write and what to say.

Each store transaction (`store.py`) reads, asks one of these functions, and writes the answer
with a version guard. Nothing here reads a clock or touches a store, so every branch of the
protocol is testable without a server.
"""

from __future__ import annotations

from dataclasses import dataclass

from impl.engine.model import FAILED, PENDING, RUNNING, Instance, ScheduleRequest, Task


@dataclass(frozen=True)
class ScheduleDecision:
    """The trace outcome of a schedule and the row to write (`None`: leave the row untouched)."""

    outcome: str
    write: Task | None


def decide_schedule(
    row: Task | None, request: ScheduleRequest, now: int, lease_ms: int, *, bump: bool, fence: int = 0
) -> ScheduleDecision:
    """Insert, honour, honour and bump, or overwrite: `schedule(request)` of the reference.

    `fence` is the version of the last row removed under the key: an inserted row continues
    from it, so that a node still holding a lease on the removed row (its lease lapsed under
    it) never finds its version again (the ABA case; Engine.tla ContinueVersions).

    >>> r = ScheduleRequest("wf1", run_after=0)
    >>> decide_schedule(None, r, 0, 1000, bump=True).outcome
    'inserted'
    >>> decide_schedule(None, r, 0, 1000, bump=True, fence=4).write.version
    5
    """
    if row is None:
        new = Task(
            owner=request.owner,
            task_id=request.task_id,
            status=PENDING,
            run_after=request.run_after,
            version=fence + 1,
            retry_count=0,
            payload=request.payload,
            type=request.type,
        )
        return ScheduleDecision("inserted", new)
    if request.honour_leases and row.has_active_lease(now, lease_ms):
        if bump:
            # The bump is the rerun signal: the holder's versioned remove will now fail.
            return ScheduleDecision("bumped", row.with_(version=row.version + 1))
        return ScheduleDecision("honoured", None)
    new = row.with_(
        status=PENDING,
        run_after=request.run_after,
        retry_count=0,
        version=row.version + 1,
        payload=request.payload,
        type=request.type,
    )
    return ScheduleDecision("overwritten", new)


def decide_queue_copy(outcome: str, *, honour_check: bool) -> bool:
    """Whether the execution queue keeps an in-memory copy after its backstop write.

    The seed's fix: on an honoured lease someone else holds the row, so no copy. With the
    honour check off (the old behaviour) a copy is queued whatever the write did.
    """
    if not honour_check:
        return True
    return outcome not in ("honoured", "bumped")


def decide_fetch(row: Task | None, seen_version: int, now: int, lease_ms: int) -> Task | None:
    """The leased row, or `None` when another node won (row gone, changed, or no longer due)."""
    if row is None or row.version != seen_version or not row.is_due(now):
        return None
    return row.with_(
        status=RUNNING,
        run_after=now + lease_ms,
        version=row.version + 1,
        retry_count=row.retry_count + 1,
    )


def decide_renew(row: Task | None, held_version: int, now: int, lease_ms: int) -> Task | None:
    """The renewed row, or `None` on a version mismatch or a row no longer live (`renew_lease`)."""
    if row is None or row.version != held_version or row.status not in (PENDING, RUNNING):
        return None
    return row.with_(run_after=now + lease_ms, version=row.version + 1)


def classify_failed_remove(row: Task | None, held_run_after: int) -> str:
    """Why a versioned remove failed, read from the row as it is now (`finishTask`).

    Row gone: removed elsewhere (`gone`). Same `run_after` as held: a rerun was recorded on our
    lease by an honoured, bumping schedule (`rerun`). Otherwise our lease was lost (`lost`).
    """
    if row is None:
        return "gone"
    if row.run_after == held_run_after and row.status in (PENDING, RUNNING):
        return "rerun"
    return "lost"


def remove_guard(row: Task | None, held_version: int) -> int:
    """The version a finishing `DELETE ... WHERE version = v` is guarded by: the one held."""
    return held_version


def is_rerun_signal(row: Task | None, held: Task) -> bool:
    """Whether a row that no longer has our version still carries our lease (a recorded rerun)."""
    return classify_failed_remove(row, held.run_after) == "rerun"


def decide_retry(row: Task | None, held_version: int, run_after: int) -> Task | None:
    """The rescheduled row after a failed run, or `None` on a version mismatch."""
    if row is None or row.version != held_version:
        return None
    return row.with_(status=PENDING, run_after=run_after, version=row.version + 1)


def decide_mark_failed(row: Task | None, held_version: int) -> Task | None:
    """The dead-lettered row, or `None` on a version mismatch."""
    if row is None or row.version != held_version:
        return None
    return row.with_(status=FAILED, version=row.version + 1)


def retries_exhausted(task: Task, max_retries: int) -> bool:
    """Whether a task that failed its run goes to the dead-letter state instead of a retry."""
    return task.retry_count >= max_retries


def retry_delay_ms(task: Task, backoff_ms: int) -> int:
    """The delay before a failed run's retry: a constant backoff, as `Backoff` in the spec."""
    return backoff_ms


def decide_run_end(inst: Instance | None, expected_version: int) -> bool:
    """Whether a run's save commits: over the version the run read, and only on a RUNNING
    instance (a stale run of a finished workflow writes nothing: TerminalIsStable).

    >>> decide_run_end(Instance("wf1", "approval", "FAILED", 3, "{}"), 3)
    False
    """
    return inst is not None and not inst.terminal and inst.version == expected_version


def decide_update_instance(inst: Instance, expected_version: int) -> str:
    """`terminal`, `conflict` or `updated`: the outcome of a signal's versioned instance write."""
    if inst.terminal:
        return "terminal"
    if inst.version != expected_version:
        return "conflict"
    return "updated"
