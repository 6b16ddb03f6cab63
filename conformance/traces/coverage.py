"""The coverage guard: which spec actions the accepted traces exercised, and whether the
interesting ones (an honoured lease, a rerun, a reclaim, a refused stale write) were seen.

A trace set that never takes the interesting paths passes vacuously; the guard makes it fail.
Pure.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from conformance.traces.system import System
from conformance.traces.trace import Trace


@dataclass(frozen=True)
class Coverage:
    """Ops (with outcomes) seen in accepted traces of one system, and the requirements unmet."""

    system: str
    seen: Counter[tuple[str, str]]
    required: dict[str, int]

    @property
    def missing(self) -> list[str]:
        """The interesting behaviours that no accepted trace showed."""
        return [name for name, n in self.required.items() if n == 0]


def coverage(system: System, accepted: list[Trace]) -> Coverage:
    """Count (op, outcome) over the accepted traces of `system`, and check its requirements."""
    seen: Counter[tuple[str, str]] = Counter((e["op"], e["outcome"]) for t in accepted for e in t.events)
    required = {}
    for name, need in system.coverage.items():
        outcomes = need.get("outcome")
        required[name] = sum(n for (op, out), n in seen.items() if op == need["op"] and (outcomes is None or out in outcomes))
    return Coverage(system.name, seen, required)
