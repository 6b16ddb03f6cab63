"""The scheduler interface of one node: the reference engine's `Scheduler`, bound to a clock.

You call it as the engine does: `schedule_with_outcome(request)` says whether a lease was
honoured; `fetch(limit)` leases due rows, one transaction per row; `remove`, `renew_lease`,
`reschedule_for_retry` and `mark_as_failed` take the version you hold and raise
`OptimisticLockError` when it is no longer the row's.

>>> from impl.clock import VirtualClock
>>> from impl.engine.backend import MemoryBackend
>>> s = Scheduler(Store(MemoryBackend(), lease_ms=1000), "n1", VirtualClock())
>>> s.schedule(ScheduleRequest("wf1", run_after=0)).version
1
"""

from __future__ import annotations

from impl.clock import Clock
from impl.engine.errors import OptimisticLockError
from impl.engine.model import ScheduleOutcome, ScheduleRequest, Task, TaskKey
from impl.engine.store import Store


class Scheduler:
    """One node's view of the shared task table."""

    def __init__(self, store: Store, node: str, clock: Clock) -> None:
        self.store = store
        self.node = node
        self.clock = clock

    @property
    def lease_ms(self) -> int:
        """The lease every fetch and renewal takes."""
        return self.store.lease_ms

    def schedule_with_outcome(self, request: ScheduleRequest) -> ScheduleOutcome:
        """Schedule `request`; the row after it, and whether an active lease was honoured."""
        return self.store.schedule(self.node, self.clock.now_ms, request)

    def schedule(self, request: ScheduleRequest) -> Task:
        """Schedule `request` and return the row (delegates to `schedule_with_outcome`)."""
        return self.schedule_with_outcome(request).task

    def schedule_in_memory(self, request: ScheduleRequest, *, honour_check: bool) -> ScheduleOutcome:
        """The execution queue's backstop write; `outcome.queued` says whether to keep a copy."""
        return self.store.schedule(
            self.node, self.clock.now_ms, request, in_memory=True, honour_check=honour_check
        )

    def due(self, limit: int) -> list[Task]:
        """Rows due now, as a fetch sees them before leasing (a read, not a step)."""
        return self.store.due_tasks(self.clock.now_ms(), limit)

    def lease(self, seen: Task) -> Task | None:
        """Lease one row seen by `due`; `None` when another node won it."""
        return self.store.fetch(self.node, self.clock.now_ms, seen)

    def fetch(self, limit: int) -> list[Task]:
        """Lease up to `limit` due rows (each its own transaction); the rows you now hold."""
        leased = []
        for seen in self.due(limit):
            row = self.lease(seen)
            if row is not None:
                leased.append(row)
        return leased

    def renew_lease(self, task: Task) -> Task:
        """Extend your lease on `task` to now + lease; raises `OptimisticLockError` if lost."""
        outcome, row = self.store.renew(self.node, self.clock.now_ms, task.key, task.version, task.run_after)
        if outcome != "renewed" or row is None:
            raise OptimisticLockError(
                f"cannot renew {task.task_id}: you hold version {task.version}, the row has "
                f"{row.version if row else 'been removed'}"
            )
        return row

    def remove(self, task: Task) -> None:
        """Delete `task` at the version you hold; raises `OptimisticLockError` on a mismatch."""
        outcome, row = self.store.remove(self.node, self.clock.now_ms, task.key, task.version, task.run_after)
        if outcome != "removed":
            raise OptimisticLockError(
                f"cannot remove {task.task_id} at version {task.version}: {outcome} "
                f"(row {'gone' if row is None else f'at version {row.version}'})"
            )

    def reschedule_for_retry(self, task: Task, run_after: int) -> Task:
        """Make `task` PENDING again at `run_after`; raises `OptimisticLockError` on a mismatch."""
        outcome, row = self.store.reschedule_retry(
            self.node, self.clock.now_ms, task.key, task.version, run_after, held_run_after=task.run_after
        )
        if outcome != "rescheduled" or row is None:
            raise OptimisticLockError(f"cannot reschedule {task.task_id} at version {task.version}")
        return row

    def mark_as_failed(self, task: Task) -> Task:
        """Dead-letter `task` (and fail its instance); raises `OptimisticLockError` on a mismatch."""
        outcome, row = self.store.mark_failed(self.node, self.clock.now_ms, task.key, task.version, task.run_after)
        if outcome != "failed" or row is None:
            raise OptimisticLockError(f"cannot mark {task.task_id} failed at version {task.version}")
        return row

    def get_task(self, key: TaskKey | str) -> Task | None:
        """The row for `key` (a `TaskKey`, or a workflow id), or `None`."""
        if isinstance(key, str):
            key = TaskKey("workflow", key)
        return self.store.get_task(key)
