"""Threading primitives, injected where the runtimes make them, as the clock is.

The engine's node runtime and the queue's consumer make every lock, condition, event, thread,
sleep and monotonic reading through a `Sync`. In production that is `REAL`: the `threading` and
`time` modules themselves, nothing wrapped. A test passes a controlled one instead
(`conformance/interleave`), under which the same code's real threads run one at a time and a
strategy picks, at each of these points, which thread goes on, on a virtual clock.

    >>> lock = REAL.Lock()
    >>> with lock:
    ...     lock.locked()
    True
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol


class Sync(Protocol):
    """What the runtimes make their threads and their waits with."""

    def Lock(self) -> Any:
        """A new mutual-exclusion lock (`threading.Lock`'s interface)."""
        ...

    def RLock(self) -> Any:
        """A new re-entrant lock."""
        ...

    def Condition(self, lock: Any = None) -> Any:
        """A new condition variable, over `lock` or a new re-entrant lock."""
        ...

    def Event(self) -> Any:
        """A new event."""
        ...

    def Thread(self, target: Callable[..., Any], name: str | None = None, daemon: bool | None = None,
               args: tuple[Any, ...] = ()) -> Any:
        """A new (unstarted) thread running `target(*args)`."""
        ...

    def sleep(self, seconds: float) -> None:
        """Hold up the calling thread for `seconds`."""
        ...

    def monotonic(self) -> float:
        """A monotonic clock in seconds (for timeouts and timers, not for trace times)."""
        ...


class RealSync:
    """The `threading` and `time` modules, for production: each attribute is theirs."""

    Lock = staticmethod(threading.Lock)
    RLock = staticmethod(threading.RLock)
    Condition = staticmethod(threading.Condition)
    Event = staticmethod(threading.Event)
    sleep = staticmethod(time.sleep)
    monotonic = staticmethod(time.monotonic)

    @staticmethod
    def Thread(target: Callable[..., Any], name: str | None = None, daemon: bool | None = None,
               args: tuple[Any, ...] = ()) -> threading.Thread:
        return threading.Thread(target=target, name=name, daemon=daemon, args=args)


REAL: Sync = RealSync()
