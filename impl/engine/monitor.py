"""Watching for the bug: how many runs of one workflow are in progress at once.

A run is in progress from its `run_start` commit to its `run_end` commit. The simulation and
the tests keep one `RunMonitor` shared by every node; `leaseproof engine run`, whose nodes are
separate processes, counts the same thing from the trace (`export.count_overlaps`).
"""

from __future__ import annotations

import threading
from collections import Counter


class RunMonitor:
    """Counts runs in progress per workflow, the most ever at once, and overlapping starts."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: Counter[tuple[str, str]] = Counter()
        self.max_concurrent: Counter[str] = Counter()
        self.runs: Counter[str] = Counter()
        self.overlaps = 0

    def begin(self, wf: str, node: str) -> None:
        """A run of `wf` started on `node` (after its `run_start` committed)."""
        with self._lock:
            running = sum(n for (w, _), n in self._open.items() if w == wf)
            if running:
                self.overlaps += 1
            self._open[(wf, node)] += 1
            self.runs[wf] += 1
            self.max_concurrent[wf] = max(self.max_concurrent[wf], running + 1)

    def end(self, wf: str, node: str) -> None:
        """A run of `wf` on `node` ended (its `run_end` committed, or it died)."""
        with self._lock:
            if self._open[(wf, node)] > 0:
                self._open[(wf, node)] -= 1

    def drop_node(self, node: str) -> None:
        """`node` crashed: its runs are no longer in progress."""
        with self._lock:
            for key in [k for k in self._open if k[1] == node]:
                del self._open[key]

    def concurrent(self, wf: str) -> int:
        """Runs of `wf` in progress now."""
        with self._lock:
            return sum(n for (w, _), n in self._open.items() if w == wf)
