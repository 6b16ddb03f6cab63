"""One controlled run: real threads, one at a time, a strategy choosing at every point.

    thread A ──point──> the controller asks the strategy which enabled thread goes on
                         ├── A again: A carries on
                         └── B: B's semaphore is released, A waits on its own
    no thread enabled ──> the virtual clock jumps to the earliest timed wait, which times out
                          none timed: deadlock, reported with every thread's place
    no point reached for `hang_s` real seconds ──> hang, reported with the threads' places

A point is a synchronization (`primitives.py`: a lock's acquire and release, a condition's wait
and notify, an event, a sleep, a thread's start, join and exit) or a call of an instrumented
object (a store's transaction). Between two points a thread runs alone, so the same strategy
choices give the same run: nothing else picks an order. The run ends when the scenario's own
thread (`main`) returns; threads still blocked then are abandoned (listed in the run).
"""

from __future__ import annotations

import math
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

_HERE = str(Path(__file__).parent)
_SYNC = str(Path(__file__).parents[2] / "impl" / "sync.py")


class _Abandoned(BaseException):
    """Raised in a thread of a run that has ended (failed, or its main thread returned): it
    unwinds the thread. A BaseException, so that code under test catching Exception lets it by."""


@dataclass(frozen=True)
class Point:
    """Where a thread stands: the operation it is about to do, on which object, from which line."""

    kind: str
    obj: str
    where: str

    def describe(self) -> str:
        return f"{self.kind} {self.obj} at {self.where}"


@dataclass(frozen=True)
class Step:
    """One choice of the run: `thread` went on from `point` at virtual time `now_ms`."""

    index: int
    thread: str
    point: Point
    now_ms: int
    enabled: tuple[str, ...]
    preempted: bool  # the thread that reached the point could have gone on, and another was chosen


@dataclass(frozen=True)
class Failure:
    """Why a run failed: `kind` is one of deadlock, hang, raised, invariant, budget, diverged."""

    kind: str
    message: str
    places: tuple[str, ...] = ()  # each live thread's place, for a deadlock or a hang

    def describe(self) -> str:
        lines = [f"{self.kind}: {self.message}"]
        lines += [f"    {p}" for p in self.places]
        return "\n".join(lines)


@dataclass
class Thread:
    """A thread the controller knows: its real thread, its turn, where it stands."""

    tid: int
    name: str
    sem: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))
    point: Point | None = None
    ready: Callable[[], bool] | None = None  # None: enabled; else enabled once it says so
    deadline_ns: int | None = None  # a timed wait: enabled (timed out) once the clock reaches it
    timed_out: bool = False
    done: bool = False
    real: threading.Thread | None = None

    def place(self) -> str:
        what = self.point.describe() if self.point is not None else "running"
        waits = " (blocked)" if self.ready is not None and not self.ready() else ""
        timed = f" until {self.deadline_ns // 1_000_000} ms" if self.deadline_ns is not None else ""
        return f"{self.name}: {what}{waits}{timed}"


class Strategy(Protocol):
    """Picks the thread that goes on at each point of a run."""

    def begin(self) -> None:
        """A run begins."""
        ...

    def choose(self, ctl: "Controller", enabled: list[Thread]) -> Thread:
        """One of `enabled` (in creation order; `ctl.current` reached the point)."""
        ...


@dataclass
class Run:
    """What one run did: its steps, its failure if any, and the threads it abandoned."""

    steps: list[Step]
    failure: Failure | None
    left: tuple[str, ...]
    now_ms: int
    value: Any = None
    states: list[str] = field(default_factory=list)  # the store before each step (when recorded)

    @property
    def ok(self) -> bool:
        return self.failure is None

    def schedule(self) -> list[str]:
        """The thread chosen at each step: replays this run (`strategies.Replay`)."""
        return [s.thread for s in self.steps]


def _where() -> str:
    """The first frame outside this package and impl/sync.py: the code that reached the point."""
    f = sys._getframe(2)
    while f is not None and (f.f_code.co_filename.startswith(_HERE) or f.f_code.co_filename == _SYNC):
        f = f.f_back
    if f is None:
        return "?"
    name = f.f_code.co_filename
    for root in (str(Path.cwd()) + "/", str(Path(__file__).parents[2]) + "/"):
        if name.startswith(root):
            name = name[len(root):]
            break
    return f"{name}:{f.f_lineno} in {f.f_code.co_name}"


class Controller:
    """Runs one scenario's threads one at a time; see the module docstring."""

    def __init__(self, strategy: Strategy, *, start_ms: int = 1_000_000, max_steps: int = 200_000,
                 hang_s: float = 60.0) -> None:
        self.strategy = strategy
        self.start_ms = start_ms
        self.max_steps = max_steps
        self.hang_s = hang_s
        self.now_ns = 0
        self.threads: list[Thread] = []
        self.current: Thread | None = None
        self.steps: list[Step] = []
        self.failure: Failure | None = None
        self.invariants: list[Callable[[], None]] = []
        self.observers: list[Callable[[], str]] = []  # describe the store, for a failure's schedule
        self.time_listeners: list[Callable[[int], None]] = []  # told each move of the clock, in ms
        self.record_states = False
        self.states: list[str] = []
        self._by_ident: dict[int, Thread] = {}
        self._aborted = False
        self._ended = threading.Event()  # real: the watching thread waits on it
        self._progress = 0
        self._main: Thread | None = None
        self._value: Any = None
        self._labels: dict[str, int] = {}

    def label(self, kind: str) -> str:
        """A name for a new primitive of this run (`lock#3`): the same in every run of a scenario."""
        n = self._labels[kind] = self._labels.get(kind, 0) + 1
        return f"{kind}#{n}"

    # -- time ----------------------------------------------------------------------------------

    def now_ms(self) -> int:
        """The virtual clock, in ms (a `Clock` for the code under test)."""
        return self.start_ms + self.now_ns // 1_000_000

    def deadline(self, timeout_s: float | None) -> int | None:
        """The virtual time `timeout_s` from now (None: no timeout)."""
        if timeout_s is None or timeout_s < 0:
            return None
        if timeout_s == 0:
            return self.now_ns
        # Rounded up, and at least 1 ns: a wait for a timer due in 0.3 ns must not time out
        # before the clock has reached the timer (its waker would wait again, at the same time).
        return self.now_ns + max(1, math.ceil(timeout_s * 1e9))

    # -- the run -------------------------------------------------------------------------------

    def run(self, main: Callable[[], Any]) -> Run:
        """Run `main` on a controlled thread of its own until it returns, the run fails or hangs."""
        self.strategy.begin()
        t = self._thread(main, "main")
        self._main = t
        self.current = t
        t.real.start()  # type: ignore[union-attr]
        t.sem.release()
        seen, since = -1, time.monotonic()
        while not self._ended.wait(0.2):
            if self._progress != seen:
                seen, since = self._progress, time.monotonic()
            elif time.monotonic() - since > self.hang_s:
                self._fail("hang", f"no thread reached a point for {self.hang_s:g} s (real time): a thread "
                           "runs without reaching one (a busy loop, or a primitive not injected)", places=True)
                break
        left = tuple(x.name for x in self.threads if not x.done)
        self._abandon()
        if self.failure is None or self.failure.kind != "hang":  # a hung thread cannot be woken
            for x in self.threads:
                if x.real is not None and x.real is not threading.current_thread():
                    x.real.join(5.0)
        return Run(list(self.steps), self.failure, left, self.now_ms(), self._value, list(self.states))

    def thread(self, target: Callable[[], Any], name: str) -> Thread:
        """Start a controlled thread running `target` (a `primitives.Thread`'s start)."""
        t = self._thread(target, name)
        t.real.start()  # type: ignore[union-attr]
        return t

    def _thread(self, target: Callable[[], Any], name: str) -> Thread:
        t = Thread(len(self.threads), self._unique(name))
        t.point = Point("begin", t.name, "start")
        t.real = threading.Thread(target=self._body, args=(t, target), name=f"interleave-{t.name}", daemon=True)
        self.threads.append(t)
        return t

    def _unique(self, name: str) -> str:
        names = {x.name for x in self.threads}
        if name not in names:
            return name
        n = 2
        while f"{name}#{n}" in names:
            n += 1
        return f"{name}#{n}"

    def _body(self, t: Thread, target: Callable[[], Any]) -> None:
        self._by_ident[threading.get_ident()] = t
        t.sem.acquire()
        if self._aborted:
            return
        t.point = None
        try:
            value = target()
            if t is self._main:
                self._value = value
        except _Abandoned:
            return
        except BaseException as exc:  # a thread's uncaught exception fails the run
            if self._aborted:
                return  # raised while unwinding an abandoned thread (a `with` releasing a lock a wait gave up)
            where = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-3:]).rstrip()
            self._fail("raised", f"thread {t.name} raised {type(exc).__name__}: {exc}\n{where}")
            return
        try:
            if t is not self._main:
                self.point("exit", t.name)
        except _Abandoned:
            return
        t.done = True
        if t is self._main:
            self._end()
            return
        self._pass_on(t)

    # -- points --------------------------------------------------------------------------------

    def me(self) -> Thread | None:
        """The calling thread, if this run controls it."""
        return self._by_ident.get(threading.get_ident())

    @property
    def active(self) -> bool:
        """Whether the run is going on (its threads must reach points)."""
        return not self._aborted and not self._ended.is_set()

    def point(self, kind: str, obj: str, ready: Callable[[], bool] | None = None,
              deadline_ns: int | None = None) -> bool:
        """The calling thread reaches a point; returns once it is chosen: True, or False if it
        was chosen because its timed wait timed out with `ready` still false."""
        t = self.me()
        if self._aborted or t is None:
            raise _Abandoned()
        t.point = Point(kind, obj, _where())
        t.ready, t.deadline_ns = ready, deadline_ns
        t.timed_out = deadline_ns is not None and deadline_ns <= self.now_ns  # a wait of 0: a plain yield
        self._progress += 1
        try:
            for check in self.invariants:
                check()
        except AssertionError as exc:
            self._fail("invariant", f"{exc} (checked at {t.point.describe()})")
            raise _Abandoned() from None
        nxt = self._pick(t)
        if nxt is not t:
            self.current = nxt
            nxt.sem.release()
            t.sem.acquire()
            if self._aborted:
                raise _Abandoned()
        ok = ready is None or ready() or not t.timed_out
        t.point, t.ready, t.deadline_ns, t.timed_out = None, None, None, False
        return ok

    def _enabled(self, x: Thread) -> bool:
        return not x.done and x.real is not None and (x.timed_out or x.ready is None or x.ready())

    def _pick(self, t: Thread) -> Thread:
        """The next thread to go on (the caller `t` waits at its point meanwhile)."""
        while True:
            enabled = [x for x in self.threads if self._enabled(x)]
            if enabled:
                break
            timed = [x for x in self.threads if not x.done and x.deadline_ns is not None]
            if not timed:
                self._fail("deadlock", "every live thread waits, and none with a timeout", places=True)
                raise _Abandoned()
            before = self.now_ns
            self.now_ns = max(self.now_ns, min(x.deadline_ns for x in timed))  # type: ignore[type-var]
            moved_ms = self.now_ns // 1_000_000 - before // 1_000_000
            for moved in self.time_listeners if moved_ms else ():
                moved(moved_ms)  # e.g. a real Redis server's clock, moved along (RedisTimeWarp)
            for x in timed:
                if x.deadline_ns is not None and x.deadline_ns <= self.now_ns:
                    x.timed_out = True
        if len(self.steps) >= self.max_steps:
            self._fail("budget", f"the run took {self.max_steps} steps without ending (a loop that never "
                       "stops, or a scenario too long for the budget)", places=True)
            raise _Abandoned()
        if self.record_states and self.observers:
            self.states.append("; ".join(describe() for describe in self.observers))
        chosen = self.strategy.choose(self, enabled)
        point = chosen.point or Point("?", "?", "?")
        self.steps.append(Step(len(self.steps), chosen.name, point, self.now_ms(),
                               tuple(x.name for x in enabled), chosen is not t and t in enabled))
        return chosen

    def _pass_on(self, t: Thread) -> None:
        """`t` has ended: hand the turn to the next thread, without waiting for one of its own."""
        try:
            nxt = self._pick(t)
        except _Abandoned:
            return
        self.current = nxt
        nxt.sem.release()

    # -- ending --------------------------------------------------------------------------------

    def _fail(self, kind: str, message: str, places: bool = False) -> None:
        if self.failure is None and not self._ended.is_set():
            where = tuple(x.place() for x in self.threads if not x.done) if places else ()
            self.failure = Failure(kind, message, where)
        self._end()

    def _end(self) -> None:
        self._aborted = True
        self._ended.set()

    def _abandon(self) -> None:
        self._aborted = True
        self._ended.set()
        for x in self.threads:
            x.sem.release()

    def diverged(self, message: str) -> None:
        """A replayed schedule does not fit this run (a strategy's report): the run fails."""
        self._fail("diverged", message)
        raise _Abandoned()
