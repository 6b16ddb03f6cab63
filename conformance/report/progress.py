"""Progress of a long run (models, trace batches, mutants): what runs, how many are done, the time
elapsed and an estimate of what is left. A rich progress bar on a terminal; in a log (CI), one
line per item as it ends, since a bar redrawn in place is noise there.

The estimate is the mean time an item took so far times the items left: crude, and honest about
it (`~`), and none before the first item ends.

>>> progress_suffix(3, 10, 30.0)
'3/10, 30 s elapsed, ~1:10 left'
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from conformance.output.safe_text import markup, visible


def estimate(done: int, total: int, elapsed: float) -> float | None:
    """Seconds left at the mean pace so far; None before the first item ends."""
    if done <= 0:
        return None
    return max(0.0, elapsed / done * (total - done))


def clock_text(seconds: float) -> str:
    """`45 s` under a minute, `1:10` or `1:02:03` above."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


def progress_suffix(done: int, total: int, elapsed: float) -> str:
    """`3/10, 30 s elapsed, ~1:10 left` (no estimate before the first item ends, none after the last)."""
    left = estimate(done, total, elapsed)
    tail = f", ~{clock_text(left)} left" if left is not None and done < total else ""
    return f"{done}/{total}, {clock_text(elapsed)} elapsed{tail}"


def columns() -> tuple[object, ...]:
    """The columns of a terminal's progress bar: what runs, done of total, elapsed, left."""
    return (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(bar_width=20), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn())


class ItemProgress:
    """Progress over `total` items, safe to advance from several threads.

        with ItemProgress("trace batches", 12, console) as p:
            ...
            p.advance("engine: 40 traces")   # a line in a log: `engine: 40 traces (1/12, 3 s elapsed, ~33 s left)`
    """

    def __init__(self, what: str, total: int, console: Console, *, clock: Callable[[], float] = time.monotonic,
                 lines: bool | None = None) -> None:
        self.what, self.total, self.console, self.clock = what, total, console, clock
        self.lines = not console.is_terminal if lines is None else lines
        self.done = 0
        self._lock = threading.Lock()
        self._start = clock()
        self._bar: Progress | None = None
        self._task = None

    def __enter__(self) -> ItemProgress:
        self._start = self.clock()
        if not self.lines:
            self._bar = Progress(*columns(), console=self.console, transient=True)  # type: ignore[arg-type]
            self._bar.start()
            self._task = self._bar.add_task(self.what, total=self.total)
        return self

    def set_total(self, total: int) -> None:
        """The number of items, once known (a trace check plans its batches after reading)."""
        with self._lock:
            self.total = total
            if self._bar is not None and self._task is not None:
                self._bar.update(self._task, total=total)

    def advance(self, label: str) -> None:
        """One more item done: `label` says which."""
        with self._lock:
            self.done += 1
            if self._bar is not None and self._task is not None:
                # The bar's description is markup; a label names input (a system, a file): escaped.
                self._bar.update(self._task, advance=1, description=f"{markup(self.what)}: {markup(label)}")
            else:
                line = f"{visible(label)} ({progress_suffix(self.done, self.total, self.clock() - self._start)})"
                self.console.print(line, markup=False, highlight=False, soft_wrap=True)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()
