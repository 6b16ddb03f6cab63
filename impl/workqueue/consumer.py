"""The real-mode consumer: a poller thread, a heartbeat thread and handler threads, on the wall
clock, around the steps of `node.py`.

    poller ──permit──> poll ──> reserve ──> executor.submit ──> [handler thread] start, handler, finish
      ^                            └── rejected: invoke_start rejected, permit back, entry left pending
      └── no permit or nothing to do: wait poll_interval, woken early by a handler's finish ──┘
    heartbeat ── every VT/3 ──> renew every active entry (+ its command guard)
    close: stop polling; wait for handlers while still renewing; then stop the heartbeat; stop

Faults are lines of the trace, logged by the thread that sees them (`QueueStore.line`): a
heartbeat round that ends later than planned (`heartbeat_lag`, observed: it may have let an
entry lapse), a hand-off the executor started late (`stall`, observed), an executor rejection
(`reject`, observed), and the windows a test or a run injects (`lag_heartbeat`). The consumer's
`stop` line says how many permits it still held when it closed.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import Any

from impl.clock import Clock, WallClock
from impl.sync import REAL, Sync
from impl.workqueue.config import Gates, Settings
from impl.workqueue.core import Invocation
from impl.workqueue.errors import QueueClosed
from impl.workqueue.node import QueueNode
from impl.workqueue.store import QueueStore

log = logging.getLogger(__name__)

Handler = Callable[[Invocation], bool]


def heartbeat_period_ms(settings: Settings) -> int:
    """How long your consumer's heartbeat thread waits between two rounds of renewals: the
    settings' heartbeat interval (VT/3 unless set), well inside the visibility timeout and the
    guard TTL it renews. The simulations and the stateful machines heartbeat on this same
    schedule (`sim.Simulation.elapse`), so what they check is the real consumer's choice.

    >>> heartbeat_period_ms(Settings(visibility_timeout_ms=300, heartbeat_ms=None))
    100
    """
    return settings.heartbeat_interval_ms


class ExecutorRejected(RuntimeError):
    """The executor will not take another task (it is full or shut down)."""


class ThreadExecutor:
    """Runs each task on a daemon thread of its own, at most `max_threads` tasks at once (None:
    no bound); past the bound `submit` raises `ExecutorRejected`, as a saturated Java executor
    does.

    A thread whose task has returned waits up to `keep_alive_s` for the next task before it
    ends, as a Java pool's worker does: starting a thread per task cost your poller a thread
    start, and its wait for the new thread to run, on every message.

        submit ──> tasks ──> idle thread (woken), or a new thread if none is idle
                               └── task returns: running - 1; waits keep_alive_s for the next
    """

    def __init__(self, max_threads: int | None = None, keep_alive_s: float = 1.0, sync: Sync = REAL) -> None:
        self.max_threads = max_threads
        self.sync = sync
        self.keep_alive_s = keep_alive_s
        self.running = 0  # tasks submitted and not yet returned
        self.reject_all = False  # a test switch: behave as a shut-down executor
        self._lock = sync.Lock()
        self._cond = sync.Condition(self._lock)  # `running` went down (wait_idle)
        self._work = sync.Condition(self._lock)  # a task was queued (idle threads)
        self._tasks: deque[Callable[[], None]] = deque()
        self._idle = 0  # threads waiting for a task
        # Called once a task's thread is back (`running` counted down), before it waits for the
        # next task: a caller that hands work over as capacity comes back waits for this.
        self.on_return: Callable[[], None] | None = None

    def submit(self, fn: Callable[[], None]) -> None:
        """Run `fn` on a thread of its own (an idle one, or a new one), or raise `ExecutorRejected`."""
        with self._lock:
            if self.reject_all or (self.max_threads is not None and self.running >= self.max_threads):
                raise ExecutorRejected("executor saturated")
            self.running += 1
            self._tasks.append(fn)
            if self._idle >= len(self._tasks):
                self._work.notify()  # an idle thread takes it
                return
        self.sync.Thread(target=self._worker, name="executor", daemon=True).start()

    def _worker(self) -> None:
        fn: Callable[[], None] | None = None
        while True:
            with self._lock:
                if fn is not None:
                    # The task has returned; from here, in one critical section, this thread
                    # counts as idle: a submit that sees `running` drop finds it waiting.
                    self.running -= 1
                    self._cond.notify_all()
                    if self.on_return is not None:
                        self.on_return()
                if not self._tasks:
                    self._idle += 1
                    self._work.wait_for(lambda: bool(self._tasks), timeout=self.keep_alive_s)
                    self._idle -= 1
                    if not self._tasks:
                        return  # no task for keep_alive_s: the thread ends
                fn = self._tasks.popleft()
            try:
                fn()
            except Exception:  # reported, as an uncaught exception in a thread of its own would be
                log.exception("an executor task failed")
            except BaseException:
                with self._lock:
                    self.running -= 1
                    self._cond.notify_all()
                raise

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until no task runs; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self.running == 0, timeout=timeout_s)


class Consumer:
    """A consumer process's queue worker: polls, runs `handler(invocation) -> bool` (True: done,
    ack; False or an exception: not done, the entry stays pending and comes back after a VT).

    >>> # consumer = Consumer(store, "worker-1", handler, settings=Settings(), gates=Gates())
    >>> # consumer.start(); ...; consumer.close()
    """

    def __init__(self, store: QueueStore, name: str, handler: Handler, *, settings: Settings,
                 gates: Gates, clock: Clock | None = None, executor: ThreadExecutor | None = None,
                 sync: Sync = REAL) -> None:
        self.sync = sync  # its threads, locks and events (`impl/sync.py`): real unless a test controls them
        self.node = QueueNode(store, name, clock or WallClock(), settings, gates, sync)
        self.handler = handler
        self.settings = settings
        self.gates = gates
        self.executor = executor or ThreadExecutor(None if not gates.permit_bound else settings.concurrency, sync=sync)
        # The poller waits for a handler's thread to be back, not only for its permit: woken at
        # the permit, it handed the next entry to a pool that still counted that thread busy and
        # refused it (the entry delivered, not run, back a VT later; under a steady intake a
        # retry was refused delivery after delivery: the steady_intake interleavings, PCT).
        self._wake_on_return = isinstance(self.executor, ThreadExecutor)
        if self._wake_on_return:
            self.executor.on_return = self._wake
        self.heartbeat_paused = sync.Event()  # set by `lag_heartbeat` (a fault hook)
        self._lag_kind: str | None = None  # the injected window open now, if any
        # Held for a whole heartbeat round, and to open or close an injected window: no renewal
        # of a round lands inside the window a test opens meanwhile. Likewise `_poll` for a poll
        # and a pause's start (its poller polls nothing inside the window).
        self._round = sync.Lock()
        self._poll = sync.Lock()
        # Fault hook: the poller polls only while this says yes (a stalled process polls not).
        self.may_poll: Callable[[], bool] | None = None
        # Fault hook: called with each invocation once it has ended (acked or released).
        self.after_finish: Callable[[Invocation], None] | None = None
        self.errors: list[BaseException] = []
        self._stop = sync.Event()
        # Set whenever a permit may have come back (an invocation ended or never started, its
        # thread back in the pool), and on close: the poller waits on it instead of sleeping out
        # its poll interval.
        self._permit_back = sync.Event()
        self._hb_stop = sync.Event()
        self._hb_wake = sync.Event()  # a stop, or a window's end: the heartbeat goes on at once
        self._threads: list[Any] = []
        self._closed = False
        self._stopped = False

    @property
    def name(self) -> str:
        """The consumer name (trace node)."""
        return self.node.name

    def start(self) -> "Consumer":
        """Start polling and heartbeating."""
        if self._closed:
            raise QueueClosed(f"consumer {self.name} is closed; create a new one")
        for target, tag in ((self._poll_loop, "poll"), (self._heartbeat_loop, "heartbeat")):
            t = self.sync.Thread(target=target, name=f"{self.name}-{tag}", daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def _poll_loop(self) -> None:
        wait_s = self.settings.poll_interval_ms / 1000
        while True:
            # Cleared before the stop check and the poll: a stop, or a permit given back, from
            # here on wakes the wait below.
            self._permit_back.clear()
            if self._stop.is_set():
                return
            with self._poll:  # a pause opened meanwhile waits for this poll, and no other begins
                if self.may_poll is not None and not self.may_poll():
                    inv, idle = None, True
                else:
                    try:
                        inv, idle = self.node.poll_and_admit(), False
                    except Exception as exc:  # a store error must not kill the poller
                        self._note(exc, "poll")
                        inv, idle = None, True
            if idle:
                self._stop.wait(wait_s)
                continue
            if inv is None:
                # Nothing to do, or every permit in use: wait a poll interval, or less if a
                # handler gives its permit back meanwhile (with work waiting, sleeping out the
                # interval left the permits idle: the queue's bench lost 5 ms each time).
                self._permit_back.wait(wait_s)
                continue
            self.node.reserve(inv)
            try:
                self.executor.submit(lambda inv=inv: self._invoke(inv))
            except ExecutorRejected:
                try:
                    self.node.store.line(self.name, "reject", "observed")  # the executor's refusal
                    self.node.reject(inv)
                except Exception as exc:
                    self._note(exc, "reject")

    def _invoke(self, inv: Invocation) -> None:
        try:
            # A hand-off the executor started late may have let its entry lapse before the call
            # began: say so, as the stall it was (reserve stamped the hand-off).
            late = self.node.now() - inv.started_ms
            if late > self._late_ms:
                self.node.store.line(self.name, "stall", "observed", late_ms=late)
            self.node.start(inv)
        except Exception as exc:
            self.node.abandon(inv)
            self._permit_back.set()
            self._note(exc, f"start {inv.entry}")
            return
        try:
            try:
                result = "done" if self.handler(inv) else "not_done"
            except Exception as exc:
                log.info("%s: handler threw on %s: %s", self.name, inv.entry, exc)
                result = "threw"
            self.node.finish(inv, result)
        except Exception as exc:
            self._note(exc, f"finish {inv.entry}")
        finally:
            if not self._wake_on_return:
                self._permit_back.set()
            if self.after_finish is not None:
                self.after_finish(inv)

    @property
    def _late_ms(self) -> int:
        """How late a heartbeat round or a hand-off may end before the consumer logs it as a
        fault line: half a heartbeat period. An entry lapses only when its renewal comes a VT
        after the last one, two periods late at least, so every lapse a lag can cause is logged."""
        return max(1, heartbeat_period_ms(self.settings) // 2)

    def _heartbeat_loop(self) -> None:
        period = heartbeat_period_ms(self.settings)
        due = self.node.now() + period  # a round is due a period after the last one ended
        while True:
            # A window's end wakes it at once, as a thread back from a real lag (its sleep long
            # run out) renews at once: waiting out the period let a guard taken inside the window,
            # never renewed in it, lapse just after it (commands_resubmitted on real Redis).
            self._hb_wake.wait(max(0, due - self.node.now()) / 1000)
            self._hb_wake.clear()
            if self._hb_stop.is_set():
                return
            with self._round:
                if not self.heartbeat_paused.is_set():
                    self._heartbeat_round(due)
            due = self.node.now() + period

    def _heartbeat_round(self, due: int) -> None:
        try:
            self.node.heartbeat()
            late = self.node.now() - due
            if late > self._late_ms:
                # The round ended `late` ms after it was due (the thread woke late, or its
                # renewals were served late): an entry may have lapsed meanwhile, and the trace
                # may excuse such a lapse inside this window only.
                self.node.store.line(self.name, "heartbeat_lag", "observed", late_ms=late)
        except Exception as exc:
            self._note(exc, "heartbeat")

    def lag_heartbeat(self, kind: str = "heartbeat_lag") -> None:
        """A fault hook: stop renewing until `resume_heartbeat` (a lagging heartbeat thread;
        `kind="pause"` when the caller stops the poller too, through `may_poll`, before this
        call), logged as the window's start once any round or poll in flight has ended."""
        with self._poll, self._round:
            if self._lag_kind is None:
                self._lag_kind = kind
                self.node.store.line(self.name, kind, "start")
                self.heartbeat_paused.set()

    def resume_heartbeat(self) -> None:
        """End the window `lag_heartbeat` opened: its end line, then renewals again."""
        with self._round:
            if self._lag_kind is not None:
                self.node.store.line(self.name, self._lag_kind, "end")
                self._lag_kind = None
                self.heartbeat_paused.clear()
                self._hb_wake.set()

    def _wake(self) -> None:
        """A handler's thread is back in the pool: the poller may hand the next entry over."""
        self._permit_back.set()

    def _note(self, exc: BaseException, where: str) -> None:
        log.warning("%s: %s failed: %s", self.name, where, exc)
        self.errors.append(exc)

    def close(self, timeout_s: float = 30.0) -> bool:
        """Stop polling, wait for running handlers (still renewing their entries), then stop the
        heartbeat. Returns False if handlers were still running at the timeout.

        With the gate `close_waits_for_handlers` off it stops the heartbeat at once: the old
        behaviour, under which a running handler's entry becomes reclaimable by a peer."""
        self._closed = True
        self._stop.set()
        self._permit_back.set()  # a poller waiting for a permit sees the stop at once
        if self._threads:
            self._threads[0].join(timeout_s)  # the poller: no new invocation after this
        idle = True
        if self.gates.close_waits_for_handlers:
            idle = self.executor.wait_idle(timeout_s)
        self._hb_stop.set()
        self._hb_wake.set()
        for t in self._threads[1:]:
            t.join(timeout_s)
        if self._threads and not self._stopped:
            self._stopped = True  # the stop below is logged once
            try:
                self.node.store.line(self.name, "stop", "stopped",
                                     args={"permits_in_use": self.node.permits.in_use})
            except Exception as exc:
                self._note(exc, "stop")
        return idle

    def snapshot(self) -> dict[str, Any]:
        """Counters for summaries."""
        return {"name": self.name, **self.node.snapshot(), "errors": len(self.errors)}
