"""Injected store faults: a test says "the next ack by node a fails" and the store raises
`StoreFault` instead of running that step, as a lost connection would (nothing commits)."""

from __future__ import annotations

import threading
from collections import Counter

from impl.workqueue.errors import StoreFault


class FaultPlan:
    """Counts of steps that must fail, by (op, node); node None matches any node.

    >>> plan = FaultPlan(); plan.fail("ack", "a")
    >>> plan.check("ack", "b"); plan.check("ack", "a")
    Traceback (most recent call last):
    ...
    impl.workqueue.errors.StoreFault: injected fault: ack by a did not commit
    """

    def __init__(self) -> None:
        self._left: Counter[tuple[str, str | None]] = Counter()
        # The faults that fired, by op: what the run injected, for the trace header's `faults`
        # (a planned fault that never fires injected nothing).
        self.fired: Counter[str] = Counter()
        self._lock = threading.Lock()

    def fail(self, op: str, node: str | None = None, times: int = 1) -> None:
        """Make the next `times` steps `op` by `node` (any node if None) fail."""
        with self._lock:
            self._left[(op, node)] += times

    def check(self, op: str, node: str) -> None:
        """Raise `StoreFault` if a fault is planned for this step (and use it up)."""
        with self._lock:
            for key in ((op, node), (op, None)):
                if self._left[key] > 0:
                    self._left[key] -= 1
                    self.fired[op] += 1
                    raise StoreFault(f"injected fault: {op} by {node} did not commit")
