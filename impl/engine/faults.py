"""Counting the hidden faults of a run, per workflow: what a trace header's `faults` says.

A trace shows only committed store steps. Between two lines a node may have crashed, or one of
its leases may have lapsed under it (a pause, a GC stall, a slow commit); `tla/TraceEngine.tla`
explains such lines with hidden steps, and takes each at most as often as the header says the
run had it. So a run counts, for every workflow, the faults that could touch it:

    crash        a node crashed while it held a copy or a run of the workflow (its queue
                 and runs are lost: TraceEngine's Crash)
    lapse        a lease a node held on the workflow's row ended while the node was held up:
                 a step it meant to take before the lease's end (a store call it reached, a
                 wake-up it slept until, a queued task the taker takes at once) came at or
                 after that end (TraceEngine's Lapse)
    store_error  a finishing write that failed in the store (nothing injects these today,
                 so the count is always 0)

The holder notices a lapse itself (`worker.py`, at each store step and wake-up on a held lease),
in the simulation and on the wall clock alike: that is the measured stall, not a guess made from
the trace. A lease that ends because the code planned no step before its end (renewal off, or a
bug that stops renewing or drops a task) is no fault and is not counted, so a count never pays
for the bug it would hide. A node that never steps again after its lease lapsed has crashed
(counted) or was stopped at the end of the run. One lapse is counted once per held `run_after`.

>>> log = FaultLog()
>>> log.lapse("n1", "wf1", 1000); log.lapse("n1", "wf1", 1000); log.add("wf1", "crash")
>>> log.of("wf1")
{'crash': 1, 'lapse': 1}
>>> log.of("wf2")
{}
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

# The kinds traces/systems/engine.yaml lists under `faults`.
KINDS = ("crash", "lapse", "store_error")


class FaultLog:
    """Per-workflow counts of hidden faults, shared by the nodes of one process (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, Counter[str]] = defaultdict(Counter)
        self._lapsed: set[tuple[str, str, int]] = set()

    def add(self, wf: str, kind: str, n: int = 1) -> None:
        """`n` more faults of `kind` touched `wf`."""
        if kind not in KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; known: {KINDS}")
        with self._lock:
            self._counts[wf][kind] += n

    def lapse(self, node: str, wf: str, run_after: int) -> None:
        """`node` found its lease on `wf`'s row, due to end at `run_after`, lapsed (once per lease)."""
        with self._lock:
            if (node, wf, run_after) in self._lapsed:
                return
            self._lapsed.add((node, wf, run_after))
            self._counts[wf]["lapse"] += 1

    def of(self, wf: str) -> dict[str, int]:
        """The header's `faults` for `wf`'s trace: the kinds that happened, sorted."""
        with self._lock:
            c = self._counts.get(wf, Counter())
            return {k: c[k] for k in sorted(c) if c[k]}

    def to_json(self) -> dict[str, Any]:
        """The counts as plain data (a node process hands them to the parent)."""
        with self._lock:
            return {"counts": {wf: dict(c) for wf, c in self._counts.items()},
                    "lapsed": sorted(list(k) for k in self._lapsed)}

    def merge(self, data: dict[str, Any]) -> None:
        """Add the counts of another log's `to_json` (lapses already seen here are not added twice)."""
        with self._lock:
            for node, wf, run_after in data.get("lapsed", ()):
                self._lapsed.add((node, wf, run_after))
            for wf, c in data.get("counts", {}).items():
                self._counts[wf].update(c)


class Stalls:
    """A plan of injected stalls: the thread that is about to make a workflow's finishing
    write (`remove`, or the calls `ops` names for it) stalls first, once per workflow, for the planned time (a GC pause, a
    blocked thread, a slow disk between a handler's end and its last write).

    A stall past the lease lets another node lease the row; the stalled node's remove then
    meets that live holder and is refused (`lost`): a stale actor meeting a live one. Its
    lease lapsed under it, which the worker counts itself (a `lapse`), as for any stall.
    Thread-safe: every driver of a node asks it before each call.

    >>> s = Stalls({"wf1": 1500})
    >>> from impl.engine.effects import Call
    >>> [s.before(Call(lambda: None, "remove", "wf1")) for _ in range(2)], s.before(Call(lambda: None, "remove", "wf2"))
    ([1500, 0], 0)
    """

    ops = ("remove",)

    def __init__(self, plan: dict[str, int], ops: dict[str, tuple[str, ...]] | None = None) -> None:
        self._left = {wf: ms for wf, ms in plan.items() if ms > 0}
        # The calls a workflow's stall precedes, where not `ops` (a failing workflow's finishing
        # write is a retry or a dead letter, not a remove).
        self._ops = dict(ops or {})
        self._lock = threading.Lock()
        self.stalled: list[str] = []  # the workflows whose finishing thread stalled, in order

    def before(self, call: Any) -> int:
        """How long to stall before `call` (an `effects.Call`): its planned time once, else 0."""
        if not call.subject or call.label not in self._ops.get(call.subject, self.ops):
            return 0
        with self._lock:
            ms = self._left.pop(call.subject, 0)
            if ms:
                self.stalled.append(call.subject)
            return ms


def combined(logs: Iterable[FaultLog], wf: str) -> dict[str, int]:
    """The sum of several logs' counts for `wf` (each log counted once)."""
    total: Counter[str] = Counter()
    seen: set[int] = set()
    for log in logs:
        if id(log) not in seen:
            seen.add(id(log))
            total.update(log.of(wf))
    return {k: total[k] for k in sorted(total) if total[k]}
