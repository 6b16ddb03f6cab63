"""Controlled primitives: `threading`'s interface, every operation a point of the controller.

`Controlled` has the shape of `impl/sync.py`'s `Sync` (Lock, RLock, Condition, Event, Thread,
sleep, monotonic), plus what a scenario needs: the virtual `clock`, `calls(obj)` to make every
method call of an object (a store) a point, `invariant(fn)` to check after every step, and
`rng`, the run's seeded randomness.

A blocking operation waits at its point until the controller finds it enabled (the lock free,
the event set, the thread ended), or, with a timeout, until the virtual clock reaches it.
"""

from __future__ import annotations

import random
from pathlib import Path
from collections.abc import Callable
from typing import Any

from conformance.interleave.runtime import Controller


class _Named:
    def __init__(self, ctl: Controller, kind: str) -> None:
        self._ctl = ctl
        self.label = ctl.label(kind)


class Lock(_Named):
    """`threading.Lock`: acquire and release are points."""

    def __init__(self, ctl: Controller) -> None:
        super().__init__(ctl, "lock")
        self._holder: object | None = None

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if not blocking:
            self._ctl.point("try_acquire", self.label)
            return self._take()
        me = self._ctl.me()
        ok = self._ctl.point("acquire", self.label, ready=lambda: self._free_for(me),
                             deadline_ns=self._ctl.deadline(timeout))
        return ok and self._take()

    def _free_for(self, me: object) -> bool:
        """Whether thread `me` could take it now (predicates run in whichever thread picks)."""
        return self._holder is None

    def _take(self) -> bool:
        if self._holder is not None:
            return False
        self._holder = self._ctl.me() or True
        return True

    def release(self) -> None:
        if self._holder is None:
            raise RuntimeError("release unlocked lock")
        self._ctl.point("release", self.label)
        self._holder = None

    def locked(self) -> bool:
        return self._holder is not None

    def _owned(self) -> bool:
        return self._holder is not None

    def _save(self) -> Any:
        self._holder = None
        return None

    def _restore(self, state: Any) -> None:
        self._holder = self._ctl.me() or True

    __enter__ = acquire

    def __exit__(self, *exc: object) -> None:
        self.release()


class RLock(Lock):
    """`threading.RLock`: re-entrant for its owner."""

    def __init__(self, ctl: Controller) -> None:
        super().__init__(ctl)
        self._count = 0

    def _free_for(self, me: object) -> bool:
        return self._holder is None or self._holder is me

    def _take(self) -> bool:
        me = self._ctl.me()
        if self._holder is not None and self._holder is not me:
            return False
        self._holder = me
        self._count += 1
        return True

    def release(self) -> None:
        if self._holder is not self._ctl.me():
            raise RuntimeError("cannot release un-acquired lock")
        self._ctl.point("release", self.label)
        self._count -= 1
        if self._count == 0:
            self._holder = None

    def _owned(self) -> bool:
        return self._holder is self._ctl.me()

    def _save(self) -> Any:
        count, self._count, self._holder = self._count, 0, None
        return count

    def _restore(self, state: Any) -> None:
        self._holder, self._count = self._ctl.me(), state


class Condition(_Named):
    """`threading.Condition` over a controlled lock (a new RLock by default)."""

    def __init__(self, ctl: Controller, lock: Lock | None = None) -> None:
        super().__init__(ctl, "cond")
        self._lock = lock if lock is not None else RLock(ctl)
        self._waiters: list[list[bool]] = []

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return self._lock.acquire(blocking, timeout)

    def release(self) -> None:
        self._lock.release()

    __enter__ = acquire

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    def wait(self, timeout: float | None = None) -> bool:
        if not self._lock._owned():
            raise RuntimeError("cannot wait on un-acquired lock")
        me = [False]
        self._waiters.append(me)
        saved = self._lock._save()  # released as the wait begins: a notifier can take it
        notified = self._ctl.point("wait", self.label, ready=lambda: me[0], deadline_ns=self._ctl.deadline(timeout))
        if not notified and me in self._waiters:
            self._waiters.remove(me)
        me_thread = self._ctl.me()
        self._ctl.point("reacquire", self._lock.label, ready=lambda: self._lock._free_for(me_thread))
        self._lock._restore(saved)
        return notified

    def wait_for(self, predicate: Callable[[], Any], timeout: float | None = None) -> Any:
        end = self._ctl.deadline(timeout)
        result = predicate()
        while not result:
            if end is not None:
                left = (end - self._ctl.now_ns) / 1e9
                if left <= 0:
                    break
                self.wait(left)
            else:
                self.wait()
            result = predicate()
        return result

    def notify(self, n: int = 1) -> None:
        if not self._lock._owned():
            raise RuntimeError("cannot notify on un-acquired lock")
        self._ctl.point("notify", self.label)
        for w in self._waiters[:n]:
            w[0] = True
        del self._waiters[:n]

    def notify_all(self) -> None:
        self.notify(len(self._waiters))


class Event(_Named):
    """`threading.Event`: set, clear, is_set and wait are points."""

    def __init__(self, ctl: Controller) -> None:
        super().__init__(ctl, "event")
        self._flag = False

    def is_set(self) -> bool:
        self._ctl.point("is_set", self.label)
        return self._flag

    def set(self) -> None:
        self._ctl.point("set", self.label)
        self._flag = True

    def clear(self) -> None:
        self._ctl.point("clear", self.label)
        self._flag = False

    def wait(self, timeout: float | None = None) -> bool:
        self._ctl.point("wait", self.label, ready=lambda: self._flag, deadline_ns=self._ctl.deadline(timeout))
        return self._flag


class Thread:
    """`threading.Thread`: start, join and the thread's exit are points."""

    def __init__(self, ctl: Controller, target: Callable[..., Any], name: str | None = None,
                 daemon: bool | None = None, args: tuple[Any, ...] = ()) -> None:
        self._ctl = ctl
        self._target = target
        self._args = args
        self.name = name or "thread"
        self.daemon = daemon
        self._t: Any = None

    def start(self) -> None:
        if self._t is not None:
            raise RuntimeError("threads can only be started once")
        self._t = self._ctl.thread(lambda: self._target(*self._args), self.name)
        self.name = self._t.name
        self._ctl.point("start", self.name)

    def join(self, timeout: float | None = None) -> None:
        if self._t is None:
            raise RuntimeError("cannot join thread before it is started")
        t = self._t
        self._ctl.point("join", self.name, ready=lambda: t.done, deadline_ns=self._ctl.deadline(timeout))

    def is_alive(self) -> bool:
        return self._t is not None and not self._t.done


class _Calls:
    """An object whose every method call is first a point (`Controlled.calls`), and then takes
    `cost_ms` of virtual time in its thread (a store's round trip: others go on meanwhile)."""

    def __init__(self, ctl: Controller, obj: Any, label: str, cost_ms: float) -> None:
        self._ctl, self._obj, self._label, self._cost_ms = ctl, obj, label, cost_ms

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._obj, name)
        if not callable(value) or isinstance(value, type):
            return value
        ctl, label, cost = self._ctl, self._label, self._cost_ms

        def call(*args: Any, **kwargs: Any) -> Any:
            ctl.point(f"call {name}", label)
            result = value(*args, **kwargs)
            if cost > 0:
                me = ctl.me()
                ctl.point("busy", f"clock:{me.name if me else '?'}", ready=lambda: False,
                          deadline_ns=ctl.deadline(cost / 1000))
            return result
        return call


class _Clock:
    def __init__(self, ctl: Controller) -> None:
        self._ctl = ctl

    def now_ms(self) -> int:
        return self._ctl.now_ms()


class Controlled:
    """The primitives of one controlled run (`impl/sync.py`'s `Sync`, and a scenario's tools)."""

    def __init__(self, ctl: Controller, seed: int = 0) -> None:
        self.controller = ctl
        self.clock = _Clock(ctl)
        self.rng = random.Random(seed)
        self.trace_dir: Path | None = None  # where the scenario writes this run's traces (None: nowhere)

    def Lock(self) -> Lock:
        return Lock(self.controller)

    def RLock(self) -> RLock:
        return RLock(self.controller)

    def Condition(self, lock: Lock | None = None) -> Condition:
        return Condition(self.controller, lock)

    def Event(self) -> Event:
        return Event(self.controller)

    def Thread(self, target: Callable[..., Any], name: str | None = None, daemon: bool | None = None,
               args: tuple[Any, ...] = ()) -> Thread:
        return Thread(self.controller, target, name, daemon, args)

    def sleep(self, seconds: float) -> None:
        me = self.controller.me()
        self.controller.point("sleep", f"clock:{me.name if me else '?'}", ready=lambda: False,
                              deadline_ns=self.controller.deadline(max(0.0, seconds)))

    def monotonic(self) -> float:
        return self.controller.now_ns / 1e9

    def calls(self, obj: Any, label: str = "store", cost_ms: float = 0) -> Any:
        """`obj`, with every method call made a point first (all of them on one object: they
        do not commute), each taking `cost_ms` of virtual time after it returns (the calling
        thread is busy; the others go on). Give a store to the code under test this way."""
        return _Calls(self.controller, obj, label, cost_ms)

    def observe(self, describe: Callable[[], str]) -> None:
        """Describe the store in a line (`describe()`): a failure's replayed schedule prints it
        after each step."""
        self.controller.observers.append(describe)

    def on_time(self, moved: Callable[[int], None]) -> None:
        """Call `moved(ms)` each time the virtual clock moves forward (by `ms` whole
        milliseconds): a clock outside the process (a real Redis server's, warped) follows it."""
        self.controller.time_listeners.append(moved)

    def invariant(self, check: Callable[[], None]) -> None:
        """Check `check()` (an AssertionError fails the run) at every point from now on."""
        self.controller.invariants.append(check)
