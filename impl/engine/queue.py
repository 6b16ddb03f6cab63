"""The per-node execution queue: a backstop row in the store, a copy in memory.

For a task due now, `ExecutionQueue.schedule` writes a backstop row (`run_after = now +
lease`, no payload, honouring any active lease) and keeps an in-memory copy carrying the
payload, which this node's taker runs without waiting for a fetch. If the node dies, the row
delivers the task once the lease lapses.

The seed's fix: when the backstop write honoured a lease, someone else holds the row (a worker
that fetched it, or a copy on another node), so no copy is kept here. `Scheduled` tells you
whether a copy with your payload runs here. With `Gates.honour_check` off the copy is kept
whatever the write did, which is the double run the seed removes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from impl.engine.effects import Call, Fiber
from impl.engine.model import Gates, ScheduleOutcome, Scheduled, ScheduleRequest, Task
from impl.engine.scheduler import Scheduler
from impl.sync import REAL, Sync


@dataclass(frozen=True)
class QueuedTask:
    """A task waiting in a node's queue: the row version it holds, and where it came from."""

    task: Task
    source: str  # "memory": a copy queued by `schedule`; "store": a row leased by a fetch
    payload: str | None = None


class ExecutionQueue:
    """One node's queue of tasks to run (thread-safe; the taker waits on it)."""

    def __init__(self, scheduler: Scheduler, gates: Gates, sync: Sync = REAL) -> None:
        self.scheduler = scheduler
        self.gates = gates
        self._items: deque[QueuedTask] = deque()
        self._ids: set[str] = set()
        self.sync = sync
        self._cond = sync.Condition()
        # One step at a time per workflow on this node (an in-memory schedule's check, write and
        # push; a fetch's check, lease and push): a lock per workflow, made when first needed.
        self._locks: dict[str, list] = {}  # task id -> [lock, users]
        self._locks_guard = sync.Lock()
        # Told after a copy is queued (a production driver wakes a worker to take it).
        self.on_push: Callable[[], None] | None = None

    def schedule(self, request: ScheduleRequest, on_queued: Callable[[], None] | None = None) -> Fiber[Scheduled]:
        """Schedule `request` to run on this node now: the backstop write, then maybe a copy
        (`on_queued` is called just before it is pushed, in the same step: a caller's future is
        armed there, before any run of the copy could end).

        The check for a copy already queued here, the write and the push are one step, under
        the workflow's lock on this node: checked before the write, a start and a signal of one
        workflow on one node both found no copy, both wrote, and the second bumped the first's
        own row (tla/Engine.tla's ScheduleInMemory needs no copy queued at the write; found by
        TraceEngine on a MariaDB run of `record_traces.sh`). Other workflows' schedules go on
        meanwhile (one lock for the node queued every start behind every other)."""
        sched = self.scheduler

        def backstop() -> ScheduleOutcome | None:
            with self.holding(request.task_id):
                if self.contains(request.task_id):
                    return None  # already queued here: that copy will run; nothing is written
                outcome = write()
                if outcome.queued:
                    if on_queued is not None:
                        on_queued()
                    self._push(QueuedTask(outcome.task, "memory", request.payload))
                return outcome

        def write() -> ScheduleOutcome:
            now = sched.clock.now_ms()
            row = ScheduleRequest(
                task_id=request.task_id,
                run_after=now + sched.lease_ms,
                payload=None,
                honour_leases=True,
                owner=request.owner,
                type=request.type,
                delay_ms=sched.lease_ms,  # a lease from when the write commits
            )
            return sched.schedule_in_memory(row, honour_check=self.gates.honour_check)

        outcome: ScheduleOutcome | None = yield Call(backstop, "schedule_in_memory", request.task_id)
        if outcome is None:
            return Scheduled(None, False)
        return Scheduled(outcome.task, outcome.queued)

    def fetch(self, task_id: str, lease: Callable[[], Task | None]) -> QueuedTask | None:
        """A fetch's step on this node: unless a copy of `task_id` is queued here, `lease()` (the
        store's transaction) and queue what it leased; the copy queued, or None.

        One step under the workflow's lock, as `schedule`'s: with the lease and the push apart,
        an in-memory schedule of the same workflow on this node could write between them,
        finding no copy queued although the row was already this node's (TraceEngine rejected
        the schedule_in_memory after the fetch: Fetch queues its copy in the same step). A row
        whose copy is queued here is left alone: the reference leases it and drops the copy,
        whose lease then lapses unused (Fetch in tla/Engine.tla skips it).
        """
        with self.holding(task_id):
            if self.leaves_alone(task_id):
                return None
            leased = lease()
            if leased is None:
                return None
            item = QueuedTask(leased, "store", leased.payload)
            return item if self._push(item) else None

    def leaves_alone(self, task_id: str) -> bool:
        """Whether a fetch on this node leaves `task_id`'s due row alone: a copy of it is
        queued here (leased by the backstop write or an earlier fetch), and will run."""
        return self.contains(task_id)

    @contextmanager
    def holding(self, task_id: str) -> Iterator[None]:
        """Hold `task_id`'s lock on this node (its schedules and fetches here wait)."""
        with self._locks_guard:
            entry = self._locks.get(task_id)
            if entry is None:
                entry = self._locks[task_id] = [self.sync.Lock(), 0]
            entry[1] += 1
        try:
            with entry[0]:
                yield
        finally:
            with self._locks_guard:
                entry[1] -= 1
                if entry[1] == 0:
                    del self._locks[task_id]

    def users(self, task_id: str) -> int:
        """How many steps hold or wait for `task_id`'s lock on this node (tests watch it)."""
        with self._locks_guard:
            entry = self._locks.get(task_id)
            return entry[1] if entry is not None else 0

    def offer(self, task: Task) -> bool:
        """Queue a row a fetch leased; dropped (False) if a copy of it is already queued."""
        if self.contains(task.task_id):
            return False
        self._push(QueuedTask(task, "store", task.payload))
        return True

    def _push(self, item: QueuedTask) -> bool:
        with self._cond:
            if item.task.task_id in self._ids:
                return False
            self._items.append(item)
            self._ids.add(item.task.task_id)
            self._cond.notify_all()
        if self.on_push is not None:
            self.on_push()
        return True

    def contains(self, task_id: str) -> bool:
        """Whether a copy of `task_id` waits in this queue (a running one no longer does)."""
        with self._cond:
            return task_id in self._ids

    def take(self, timeout: float | None = 0) -> QueuedTask | None:
        """The next task to run, removed from the queue; waits up to `timeout` seconds."""
        with self._cond:
            if not self._items and timeout:
                self._cond.wait(timeout)
            if not self._items:
                return None
            item = self._items.popleft()
            self._ids.discard(item.task.task_id)
            return item

    def take_first(self, held: Callable[[str], bool]) -> QueuedTask | None:
        """The first task whose id `held` does not hold back, removed from the queue.

        A simulation's taker that is stuck on one copy (a planned stall: `sim.Simulation`'s
        `take_stalls`) takes the next one meanwhile, as a pool's other threads would.
        """
        with self._cond:
            for item in self._items:
                if not held(item.task.task_id):
                    self._items.remove(item)
                    self._ids.discard(item.task.task_id)
                    return item
            return None

    def items(self) -> tuple[QueuedTask, ...]:
        """The tasks waiting here, in the order the taker takes them (a snapshot)."""
        with self._cond:
            return tuple(self._items)

    def ids(self) -> set[str]:
        """The ids of the tasks waiting here."""
        with self._cond:
            return set(self._ids)

    def __len__(self) -> int:
        with self._cond:
            return len(self._items)

    def clear(self) -> None:
        """Drop every queued copy (the node crashed)."""
        with self._cond:
            self._items.clear()
            self._ids.clear()
