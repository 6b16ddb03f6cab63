"""Pure decisions of a consumer: which poll comes first (fairness), how many handler invocations
may run (permits), and which entries this node is running (de-duplication, heartbeat).

Nothing here touches the store or reads a clock; `node.py` calls these with the store's answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from impl.sync import REAL, Sync


class Fairness:
    """Weighted fairness between intake and retries: out of every `ratio + 1` polls, `ratio` try
    `receive_new` first and one tries `reclaim` first; each falls back to the other.

    >>> f = Fairness(3); [f.next_order()[0] for _ in range(5)]
    ['receive_new', 'receive_new', 'receive_new', 'reclaim', 'receive_new']
    """

    def __init__(self, ratio: int) -> None:
        self.ratio = ratio
        self._polls = 0

    def next_order(self) -> tuple[str, str]:
        """The two poll kinds, in the order this poll tries them."""
        k = self._polls % (self.ratio + 1)
        self._polls += 1
        if k == self.ratio:
            return ("reclaim", "receive_new")
        return ("receive_new", "reclaim")


class Permits:
    """A counting bound on handler invocations (thread-safe, never blocks).

    With `bounded=False` (the `permit_bound` gate off) every acquire succeeds: the calibration in
    which more handlers than `concurrency()` run at once.
    """

    def __init__(self, capacity: int, *, bounded: bool = True, sync: Sync = REAL) -> None:
        self.capacity = capacity
        self.bounded = bounded
        self.in_use = 0
        self._lock = sync.Lock()

    def try_acquire(self) -> bool:
        """Take a permit if one is free."""
        with self._lock:
            if self.bounded and self.in_use >= self.capacity:
                return False
            self.in_use += 1
            return True

    def release(self) -> None:
        """Give a permit back."""
        with self._lock:
            if self.in_use <= 0:
                raise AssertionError("permit released more often than acquired (a bug in leaseproof)")
            self.in_use -= 1


@dataclass
class Invocation:
    """One handler call on one entry by this node."""

    entry: str
    payload: str
    deliveries: int
    source: str
    cmd: str | None = None
    started_ms: int = 0
    warned_past_max: bool = False
    lost: bool = False  # a renewal was refused: a peer owns the entry now
    running: bool = False  # invoke_start is recorded: the heartbeat may renew it
    renewed_ms: int | None = None  # when the heartbeat last renewed the entry (owner-checked)
    attempt: str | None = None  # a command's delivery: its attempt id, once it has one
    renewers: list[Callable[[], None]] = field(default_factory=list)

    def on_heartbeat(self, callback: Callable[[], None]) -> None:
        """Run `callback` on every heartbeat while this invocation is active (e.g. renewing a
        command's attempt guard alongside the entry)."""
        self.renewers.append(callback)


class ActiveTable:
    """The entries this node is running now, with how many invocations each (more than one only
    when the `local_dedup` gate is off)."""

    def __init__(self, sync: Sync = REAL) -> None:
        self._by_entry: dict[str, list[Invocation]] = {}
        self._lock = sync.Lock()

    def running(self, entry: str) -> bool:
        """Whether this node runs `entry` now."""
        with self._lock:
            return bool(self._by_entry.get(entry))

    def holds(self, inv: Invocation) -> bool:
        """Whether this very invocation is still registered."""
        with self._lock:
            return any(x is inv for x in self._by_entry.get(inv.entry, []))

    def add(self, inv: Invocation) -> None:
        """Register a started invocation."""
        with self._lock:
            self._by_entry.setdefault(inv.entry, []).append(inv)

    def remove(self, inv: Invocation) -> None:
        """Unregister an ended invocation."""
        with self._lock:
            invs = self._by_entry.get(inv.entry, [])
            if inv in invs:
                invs.remove(inv)
            if not invs:
                self._by_entry.pop(inv.entry, None)

    def all(self) -> list[Invocation]:
        """A snapshot of the active invocations, in entry order (deterministic)."""
        with self._lock:
            return [inv for entry in sorted(self._by_entry) for inv in self._by_entry[entry]]

    def __len__(self) -> int:
        with self._lock:
            return sum(len(v) for v in self._by_entry.values())
