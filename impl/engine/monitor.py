"""Watching for the bug: how many runs of one workflow are in progress at once.

A run is in progress from its `run_start` commit to its `run_end` commit. The simulation and
the tests keep one `RunMonitor` shared by every node; `leaseproof engine run`, whose nodes are
separate processes, counts the same thing from the trace (`export.count_overlaps`).
"""

from __future__ import annotations

import threading
from collections import Counter


class RunMonitor:
    """Counts runs in progress per workflow, the most ever at once, and overlapping starts.

    It keeps only the runs in progress, by workflow: a run's begin looks at its own workflow's
    runs, not at every workflow that ever ran (a scan of all of them cost a 1000-workflow node
    ~50 us a run, growing with the run's length).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[str, Counter[str]] = {}  # workflow -> node -> its runs in progress there
        self.max_concurrent: Counter[str] = Counter()
        self.runs: Counter[str] = Counter()
        self.overlaps = 0

    def begin(self, wf: str, node: str) -> None:
        """A run of `wf` started on `node` (after its `run_start` committed)."""
        with self._lock:
            nodes = self._open.setdefault(wf, Counter())
            running = sum(nodes.values())
            if running:
                self.overlaps += 1
            nodes[node] += 1
            self.runs[wf] += 1
            self.max_concurrent[wf] = max(self.max_concurrent[wf], running + 1)

    def end(self, wf: str, node: str) -> None:
        """A run of `wf` on `node` ended (its `run_end` committed, or it died)."""
        with self._lock:
            nodes = self._open.get(wf)
            if nodes is None or nodes[node] <= 0:
                return
            nodes[node] -= 1
            if nodes[node] == 0:
                del nodes[node]
                if not nodes:
                    del self._open[wf]

    def drop_node(self, node: str) -> None:
        """`node` crashed: its runs are no longer in progress."""
        with self._lock:
            for wf in [w for w, nodes in self._open.items() if node in nodes]:
                del self._open[wf][node]
                if not self._open[wf]:
                    del self._open[wf]

    def concurrent(self, wf: str) -> int:
        """Runs of `wf` in progress now."""
        with self._lock:
            return sum(self._open.get(wf, Counter()).values())

    def running(self) -> dict[str, int]:
        """The workflows with runs in progress now, and how many each."""
        with self._lock:
            return {wf: sum(nodes.values()) for wf, nodes in self._open.items()}
