"""Clocks, injected everywhere time is read.

Nothing in `impl` reads the wall clock directly: the engine and the queue take a `Clock`. In
simulation a `VirtualClock` moves only when told, so the same choices replay the same run; in
production a `WallClock` reads real time.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """A source of the current time in integer milliseconds."""

    def now_ms(self) -> int:
        """The current time in milliseconds."""
        ...


class WallClock:
    """Real time, for production mode."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class VirtualClock:
    """Simulated time: starts at `start_ms` and moves only through `advance`.

    >>> clock = VirtualClock(1_000)
    >>> clock.advance(250)
    >>> clock.now_ms()
    1250
    """

    def __init__(self, start_ms: int = 0) -> None:
        self._now = start_ms

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> None:
        """Move time forward by `ms` milliseconds (never backwards)."""
        if ms < 0:
            raise ValueError(f"a virtual clock cannot go back ({ms} ms)")
        self._now += ms
