"""One engine node: its scheduler view, execution queue, result futures and public API.

You start and signal workflows through a node, as an in-process caller of the reference
engine would:

>>> from impl.clock import VirtualClock
>>> from impl.engine.backend import MemoryBackend
>>> from impl.engine.effects import drive
>>> node = Node("n1", Store(MemoryBackend(), lease_ms=1000), VirtualClock())
>>> handle = drive(node.start("wf1", "approval", {}))
>>> handle.scheduled.queued_in_memory
True

Every method that touches the store is a fiber (`effects.py`): drive it at once with
`effects.drive`, step it in a simulation (`sim.py`), or give it a thread (`threads.py`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from impl.clock import Clock
from impl.engine import worker
from impl.engine.effects import Call, Fiber, Sleep
from impl.engine.errors import ResultTimeout, ResultUnavailable, SignalConflict, UnknownWorkflow
from impl.engine.futures import ResultFuture
from impl.engine.model import ACTIVE_TASK_STATUSES, COMPLETED, FAILED, Gates, Instance, Scheduled, ScheduleRequest, Settings
from impl.engine.monitor import RunMonitor
from impl.engine.queue import ExecutionQueue, QueuedTask
from impl.engine.scheduler import Scheduler
from impl.engine.store import Store
from impl.engine.workflows import DEFAULT_REGISTRY, Registry
from impl.sync import REAL, Sync

_SIGNAL_ATTEMPTS = 20


class WorkflowFailed(Exception):
    """The workflow ended FAILED (its task was dead-lettered)."""


@dataclass
class Handle:
    """What a start gives you: the workflow id, its result future, and what was scheduled."""

    wf: str
    future: ResultFuture
    scheduled: Scheduled | None


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


class Node:
    """A node of the engine (one process, or one object in a simulation)."""

    def __init__(
        self,
        name: str,
        store: Store,
        clock: Clock,
        *,
        gates: Gates | None = None,
        settings: Settings | None = None,
        workflows: Registry = DEFAULT_REGISTRY,
        monitor: RunMonitor | None = None,
        sync: Sync = REAL,
    ) -> None:
        self.name = name
        self.store = store
        self.clock = clock
        self.gates = gates or Gates()
        self.settings = settings or Settings(lease_ms=store.lease_ms, renew_interval_ms=max(store.lease_ms // 3, 1))
        self.workflows = workflows
        self.monitor = monitor or RunMonitor()
        self.sync = sync  # its locks, events and threads (`impl/sync.py`): real ones unless a test controls them
        # The leases this node saw lapse under it (each logged once, a `lapse` line: faults.py).
        self._lapsed: set[tuple[str, int]] = set()
        self._lapsed_lock = sync.Lock()
        self.scheduler = Scheduler(store, name, clock)
        self.queue = ExecutionQueue(self.scheduler, self.gates, sync)
        self._futures: dict[str, list[ResultFuture]] = defaultdict(list)
        self._futures_lock = sync.Lock()  # callers and runs touch it from their threads

    # -- start, signal, result -------------------------------------------------------------

    def start(self, wf: str, workflow: str, input: dict[str, Any] | None = None) -> Fiber[Handle]:
        """Start workflow `wf` of type `workflow`: create the instance, then schedule it.

        Two transactions, as in the reference. An existing instance is not scheduled again if
        it is terminal or `CREATE_EXISTING_WORKFLOW_IS_NOOP` is on, unless its start was
        stranded (no live row) and `recover_stranded_start` is on. If your call queued no copy
        on this node, the handle's future fails with `ResultUnavailable`: use `result`.
        """
        self.workflows.get(workflow)  # fail early on an unknown type
        # Armed (answered by this node's runs) only when this call queues its copy: a run that
        # ends before then answers someone else's call (tla/Engine.tla: RunEnd answers an
        # `awaiting` caller, one whose ScheduleInMemory queued a copy).
        future = ResultFuture(self.sync)
        now = self.clock.now_ms
        state = _json(dict(input or {}))
        outcome, inst, row = yield Call(
            lambda: self.store.create_instance(self.name, now, wf, workflow, state), "create_instance"
        )
        g = self.gates
        if outcome == "exists" and not inst.terminal and g.create_existing_workflow_is_noop:
            stranded = row is None or row.status not in ACTIVE_TASK_STATUSES
            if stranded and g.recover_stranded_start and g.recover_after_lease:
                # scheduleAfterLease: whoever stalled between the two writes gets a lease's grace.
                out = yield Call(
                    lambda: self.scheduler.schedule_with_outcome(
                        ScheduleRequest(wf, run_after=now() + self.store.lease_ms, honour_leases=True,
                                        delay_ms=self.store.lease_ms)
                    ),
                    "schedule",
                )
                self._unavailable(wf, future, "the stranded start was recovered through the store")
                return Handle(wf, future, Scheduled(out.task, False))
            if not (stranded and g.recover_stranded_start):
                self._unavailable(wf, future, "the instance already exists")
                return Handle(wf, future, None)
        elif outcome == "exists" and inst.terminal:
            self._unavailable(wf, future, "the workflow has finished")
            return Handle(wf, future, None)
        scheduled = yield from self._schedule_now(wf, in_memory=self.settings.in_memory_execution,
                                                  on_queued=lambda: self._arm(wf, future))
        if not scheduled.queued_in_memory:
            self._unavailable(wf, future, "no copy was queued on this node")
        return Handle(wf, future, scheduled)

    def signal(self, wf: str, name: str, payload: Any = None) -> Fiber[Scheduled | None]:
        """Send signal `name` to `wf`: run its signal method, save the state, schedule a run.

        The run is scheduled through the store, or in memory on this node when
        `FORCE_SIGNAL_WORKFLOW_EXEC_IN_SCHEDULER` is off. Returns what was scheduled, or `None`
        if the workflow had already ended.
        """
        for _ in range(_SIGNAL_ATTEMPTS):
            inst: Instance | None = yield Call(lambda: self.store.get_instance(wf), "read_instance")
            if inst is None:
                raise UnknownWorkflow(f"cannot signal {wf!r}: no such workflow instance")
            method = self.workflows.get(inst.workflow).signals.get(name)
            if method is None:
                raise UnknownWorkflow(f"workflow {inst.workflow!r} has no signal {name!r}")
            state = _json(method(json.loads(inst.state), payload))
            version = inst.version
            outcome, _ = yield Call(
                lambda: self.store.update_instance(self.name, self.clock.now_ms, wf, version, state),
                "update_instance",
            )
            if outcome == "terminal" or outcome == "missing":
                return None
            if outcome == "updated":
                break
        else:
            raise SignalConflict(f"signal {name!r} to {wf!r} lost {_SIGNAL_ATTEMPTS} races; send it again")
        in_memory = self.settings.in_memory_execution and not self.gates.force_signal_workflow_exec_in_scheduler
        scheduled = yield from self._schedule_now(wf, in_memory=in_memory)
        return scheduled

    def result(self, handle: Handle, limit_ms: int | None = None) -> Fiber[Any]:
        """The workflow's result: from this node's copy if it ran here, else polled from storage.

        Raises `ResultTimeout` past `limit_ms` (default `result_polling_time_limit_ms`), and
        `WorkflowFailed` if the workflow ended FAILED.
        """
        limit = self.settings.result_polling_time_limit_ms if limit_ms is None else limit_ms
        deadline = self.clock.now_ms() + limit
        while True:
            fut = handle.future
            if fut.done() and fut.exception() is None:
                return fut.result()
            inst: Instance | None = yield Call(lambda: self.store.get_instance(handle.wf), "read_instance")
            if inst is not None and inst.status == COMPLETED:
                return json.loads(inst.result) if inst.result is not None else None
            if inst is not None and inst.status == FAILED:
                raise WorkflowFailed(f"workflow {handle.wf!r} failed")
            if self.clock.now_ms() >= deadline:
                raise ResultTimeout(
                    f"workflow {handle.wf!r} did not finish within {limit} ms; "
                    "raise result_polling_time_limit_ms or look for a stuck run"
                )
            yield Sleep(self.settings.result_poll_interval_ms)

    # -- workers ---------------------------------------------------------------------------

    def fetch_once(self) -> Fiber[int]:
        """Lease due rows (one transaction each) and queue them; how many were queued."""
        queued, _ = yield from self._fetch_batch()
        return queued

    def _fetch_batch(self) -> Fiber[tuple[int, bool]]:
        """`fetch_once`, and whether the read filled the fetch limit (more may be due)."""
        seen = yield Call(lambda: self.scheduler.due(self.settings.fetch_limit), "due_tasks")
        queued = 0
        for row in seen:
            if self.queue.leaves_alone(row.task_id):
                # The reference leases such a row and drops it, and its lease lapses unused;
                # skipping it only removes that delay (and matches Fetch in tla/Engine.tla).
                # Asked again in the step: the lease and its copy's push are one step under the
                # workflow's lock (`ExecutionQueue.fetch`).
                continue
            copy = yield Call(lambda row=row: self.queue.fetch(row.task_id, lambda: self.scheduler.lease(row)), "fetch")
            if copy is not None:
                queued += 1
        return queued, len(seen) >= self.settings.fetch_limit

    def fetch_loop(self) -> Fiber[None]:
        """Fetch forever, `poll_interval_ms` apart; at once again after a full batch that queued
        something (a backlog of due rows is drained at the store's pace, not `fetch_limit`
        rows a poll; a batch that queued nothing waits, so the loop never spins)."""
        while True:
            queued, full = yield from self._fetch_batch()
            if not (full and queued):
                yield Sleep(self.settings.poll_interval_ms)

    def take(self, timeout: float | None = 0) -> QueuedTask | None:
        """The next queued task to run, if any (the taker's half; not a store step)."""
        return self.queue.take(timeout)

    def run(self, item: QueuedTask) -> Fiber[None]:
        """Run a taken task: the handler with lease renewal, then `finish_task`."""
        return worker.run_task(self, item)

    # -- futures ---------------------------------------------------------------------------

    def _arm(self, wf: str, fut: ResultFuture) -> None:
        """`fut`'s call queued its copy here: this node's runs of `wf` answer it from now on.
        Called in the schedule's step, before the copy is pushed (`ExecutionQueue.schedule`), so
        that no run of that copy can end before it."""
        with self._futures_lock:
            self._futures[wf].append(fut)

    def awaited(self) -> set[str]:
        """The workflows a caller here awaits the future of (what a crash of this node loses)."""
        with self._futures_lock:
            return {wf for wf, futures in self._futures.items() if futures}

    def _told(self, wf: str, outcome: str, source: str) -> None:
        """Log what a caller of `wf` on this node was told (an `answer` line, in commit order
        with the workflow's steps): `unavailable` (ResultUnavailable: it polls storage), or the
        workflow's `result` / that it `failed`, read `from` the run that finished it here or
        from storage. TraceEngine checks it against what the spec owes that caller."""
        self.store.line(self.name, self.clock.now_ms, wf, "answer", outcome, {"from": source})

    def _unavailable(self, wf: str, fut: ResultFuture, why: str) -> None:
        if fut.set_exception(ResultUnavailable(f"no result for {wf!r} arrives on {self.name}: {why}; polling storage")):
            self._told(wf, "unavailable", "call")

    def complete(self, wf: str, value: Any, source: str = "run") -> None:
        """A run on this node completed `wf` (or, `source="store"`, read it completed from
        storage): complete the futures of callers here."""
        with self._futures_lock:
            futures = self._futures.pop(wf, [])
        for fut in futures:
            if fut.set_result(value):
                self._told(wf, "result", source)

    def fail(self, wf: str, exc: BaseException, source: str = "run") -> None:
        """`wf` failed for good: fail the futures of callers here."""
        with self._futures_lock:
            futures = self._futures.pop(wf, [])
        for fut in futures:
            if fut.set_exception(exc):
                self._told(wf, "failed", source)

    def lapse(self, wf: str, run_after: int, meant: int) -> None:
        """Its lease on `wf`'s row, due to end at `run_after`, lapsed under this node: a step it
        meant to take at `meant`, before that end, came at or after it. Logged once per lease, as
        a `lapse` line (faults.py)."""
        with self._lapsed_lock:
            if (wf, run_after) in self._lapsed:
                return
            self._lapsed.add((wf, run_after))
        self.store.line(self.name, self.clock.now_ms, wf, "lapse", "observed", {"run_after": run_after, "meant": meant})

    def crash(self) -> None:
        """Lose everything in memory: the queue, the futures, the runs (the monitor forgets them)."""
        self.queue.clear()
        with self._futures_lock:
            self._futures.clear()
        self.monitor.drop_node(self.name)

    # -- helpers ---------------------------------------------------------------------------

    def _schedule_now(self, wf: str, *, in_memory: bool, on_queued: Callable[[], None] | None = None) -> Fiber[Scheduled]:
        """Schedule `wf` to run now: in memory (the backstop write, then maybe a copy here, with
        `on_queued` called in that step before the copy is pushed), or through the store."""
        if in_memory:
            request = ScheduleRequest(wf, run_after=self.clock.now_ms(), honour_leases=True, delay_ms=0)
            scheduled = yield from self.queue.schedule(request, on_queued)
            return scheduled
        out = yield Call(
            lambda: self.scheduler.schedule_with_outcome(
                ScheduleRequest(wf, run_after=self.clock.now_ms(), honour_leases=True, delay_ms=0)
            ),
            "schedule",
        )
        return Scheduled(out.task, False)
