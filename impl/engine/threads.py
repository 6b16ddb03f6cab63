"""Production mode: one node's fibers on a small pool of threads, with the wall clock.

    workers (N threads, reused; one per write the store runs at once: one on SQLite):
                        take the next ready fiber and drive it until it sleeps or ends
        ready, first:   a copy in the node's queue (taken: a run fiber), then a run fiber that woke
                        (both are on a held lease: the lease runs while they wait)
        ready, then:    any other fiber that woke (fetch loop, starts, signals, result polls)
    timers (a heap):    a fiber's `Sleep` and an injected stall park it here, holding no thread
    between two calls:  a fiber on no lease gives its worker up when a copy or a woken run
                        waits and no worker is idle, and goes on first after them

The code that runs is the same as in the simulation; only the driver differs. A fiber runs on
one thread at a time, its calls in order; a worker keeps driving the fiber it took, so a run's
`run_start`, `run_end` and `remove` are one thread's work without hand-offs. A thread per
fiber, as before, cost a thread start per run and per caller, and a wake-up of a fresh thread
for every task taken: on one node most of a step's time (`scripts/bench_engine.py`).
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from typing import Any

from impl.engine.effects import Call, Fiber, Sleep
from impl.engine.faults import Stalls, stall_line
from impl.engine.node import Node
from impl.sync import Sync

_IDLE_WAIT_S = 0.05  # a worker with nothing to do looks again this often (stop, the queue)
DEFAULT_WORKERS = 8  # for a store that overlaps many transactions (MariaDB: commits wait for the disk)


def workers_for(backend: Any) -> int:
    """How many worker threads a node should run over `backend`.

    You get one per write the store can run at once (the backend's `max_writers`), and
    `DEFAULT_WORKERS` for a store that runs many (no `max_writers`, or None). On SQLite, one
    writer at a time, more threads only queue on its writer lock, and each hand-off of that
    lock between threads is a thread switch and a GIL hand-off: with 2 to 8 workers a node
    spent ~210 us of CPU per transaction, with one ~105 us (one node, 1000 workflows of the
    `scripts/bench_engine.py` plan).

    >>> from impl.engine.backend import MemoryBackend
    >>> workers_for(MemoryBackend())
    8
    """
    return getattr(backend, "max_writers", None) or DEFAULT_WORKERS


class _Task:
    """One fiber on the pool: where it is, and the box its submitter reads."""

    __slots__ = ("fiber", "box", "urgent", "started", "value", "pending")

    def __init__(self, fiber: Fiber[Any], box: dict[str, Any], urgent: bool) -> None:
        self.fiber = fiber
        self.box = box
        self.urgent = urgent  # on a held lease: ready before the others
        self.started = False
        self.value: Any = None
        self.pending: Call | None = None  # a call held back by a stall, run when it wakes


class NodeRuntime:
    """Runs a `Node`'s fibers on `workers` threads until `stop()`."""

    def __init__(self, node: Node, stalls: Stalls | None = None, workers: int = DEFAULT_WORKERS) -> None:
        self.node = node
        self.sync: Sync = node.sync  # the node's primitives: real threads, or a test's controlled ones
        self.stalls = stalls  # injected stalls of a fiber before some calls (faults.Stalls)
        self.errors: list[BaseException] = []
        self._workers = workers
        self._stop = self.sync.Event()
        self._cond = self.sync.Condition()
        self._urgent: deque[_Task] = deque()
        self._ready: deque[_Task] = deque()
        self._timers: list[tuple[float, int, _Task]] = []
        self._seq = itertools.count()
        self._threads: list[Any] = []
        self._idle = 0

    # -- the public side ---------------------------------------------------------------------

    def start(self) -> None:
        """Start the workers and the fetch loop."""
        self.node.queue.on_push = self._wake
        self._threads = [
            self.sync.Thread(target=self._work, name=f"{self.node.name}-worker{i}", daemon=True)
            for i in range(self._workers)
        ]
        for t in self._threads:
            t.start()
        self.submit(self.node.fetch_loop(), "fetch")

    def submit(self, fiber: Fiber[Any], name: str = "call") -> dict[str, Any]:
        """Run `fiber` on the pool; returns a box that gets `done`, `value` or `error`."""
        box: dict[str, Any] = {"done": False, "name": name}
        with self._cond:
            self._ready.append(_Task(fiber, box, urgent=False))
            self._notify()
        return box

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the workers (fibers asleep end as `stopped`) and wait for them."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        for t in self._threads:
            t.join(timeout)
        with self._cond:
            left = [t for _, _, t in self._timers] + list(self._urgent) + list(self._ready)
            self._timers.clear()
            self._urgent.clear()
            self._ready.clear()
        for task in left:
            task.box["stopped"] = True
            task.box["done"] = True
            task.fiber.close()

    def stalled(self) -> int:
        """How many fibers wait to make a call an injected stall holds back (its window open)."""
        with self._cond:
            return sum(1 for _, _, task in self._timers if task.pending is not None)

    # -- the workers -------------------------------------------------------------------------

    def _wake(self) -> None:
        """The node's queue got a copy: let an idle worker take it."""
        with self._cond:
            self._notify()

    def _notify(self) -> None:
        if self._idle:
            self._cond.notify()

    def _next(self) -> _Task | None:
        """The next fiber to drive, waiting for one; None once stopping."""
        with self._cond:
            while not self._stop.is_set():
                item = self.node.take(0)
                if item is not None:
                    return _Task(self.node.run(item), {"done": False}, urgent=True)
                now = self.sync.monotonic()
                while self._timers and self._timers[0][0] <= now:
                    _, _, task = heapq.heappop(self._timers)
                    (self._urgent if task.urgent else self._ready).append(task)
                if self._urgent:
                    return self._urgent.popleft()
                if self._ready:
                    return self._ready.popleft()
                wait = _IDLE_WAIT_S if not self._timers else min(_IDLE_WAIT_S, self._timers[0][0] - now)
                self._idle += 1
                try:
                    self._cond.wait(wait)
                finally:
                    self._idle -= 1
        return None

    def _run_first(self) -> bool:
        """Whether, between two calls of a fiber on no lease, its worker should take other work
        first: a copy waits in the node's queue, or a run that woke (or whose wake-up is due)
        waits, and no worker is idle to take it. With one worker (SQLite) the fetch loop, draining a
        backlog of due rows in full batches, otherwise leased them all before the first of
        their copies ran, each copy's lease running meanwhile."""
        if self._idle:
            return False
        if len(self.node.queue):
            return True
        with self._cond:
            if self._urgent:
                return True
            # The earliest timer only: a woken run's wake-up (a renewal) is the one that matters.
            return bool(self._timers) and self._timers[0][2].urgent and self._timers[0][0] <= self.sync.monotonic()

    def _resume_next(self, task: _Task) -> None:
        """Put `task` (between two calls) first among the fibers on no lease, so that it goes
        on as soon as the work `_run_first` saw is done."""
        with self._cond:
            self._ready.appendleft(task)
            self._notify()

    def _park(self, task: _Task, ms: int) -> None:
        with self._cond:
            heapq.heappush(self._timers, (self.sync.monotonic() + ms / 1000, next(self._seq), task))
            self._notify()

    def _work(self) -> None:
        while True:
            task = self._next()
            if task is None:
                return
            self._drive(task)

    def _drive(self, task: _Task) -> None:
        """Step `task` until it sleeps (parked), stalls (parked) or ends."""
        try:
            while True:
                if task.pending is not None:
                    effect: Any = task.pending
                    task.pending = None
                    stall_line(self.node, effect, "end")  # the stalled call is made at last
                elif not task.started:
                    task.started = True
                    effect = next(task.fiber)
                else:
                    effect = task.fiber.send(task.value)
                if isinstance(effect, Sleep):
                    task.value = None
                    if self._stop.is_set():
                        raise _Stopping()
                    self._park(task, effect.ms)
                    return
                held_up = self.stalls.before(effect) if self.stalls is not None else 0
                if held_up > 0:
                    stall_line(self.node, effect, "start")  # a fault window: the thread is held up
                    task.pending = effect
                    self._park(task, held_up)
                    return
                task.value = effect.fn()
                if not task.urgent and self._run_first():
                    self._resume_next(task)
                    return
        except StopIteration as stop:
            task.box["value"] = stop.value
            task.box["done"] = True
        except _Stopping:
            task.box["stopped"] = True
            task.box["done"] = True
            task.fiber.close()
        except BaseException as exc:  # kept for the caller; a worker must not die silently
            task.box["error"] = exc
            task.box["done"] = True
            self.errors.append(exc)


class _Stopping(Exception):
    """A fiber asked to sleep while the runtime stops: it ends there."""
