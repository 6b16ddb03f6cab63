"""What a replay of a TLC counterexample on an implementation gives: one shape for every system.

The adapters (`impl/engine/replay.py`, `impl/workqueue/replay.py`) return a `Replay`: its
verdict (`reproduced`, `blocked`, `unmapped`, `held`), the step it ended at and why, and the
steps as replayed, each with what the implementation did and the rows it left.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Line:
    """One replayed step: what the implementation did, and the rows it left."""

    number: int
    step: str
    outcome: str
    rows: str


@dataclass
class Replay:
    """How a replay ended: `reproduced`, `blocked`, `unmapped` or `held` (ran to the end, and
    the property held), with the step it ended at, why, and the schedule as replayed."""

    verdict: str
    property: str | None
    reason: str
    step: int | None = None
    lines: list[Line] = field(default_factory=list)
    gates: dict[str, bool] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def table(self) -> str:
        """The replayed steps as a table (number, step, outcome, rows after)."""
        width = max((len(ln.step) for ln in self.lines), default=4)
        wide = max((len(ln.outcome) for ln in self.lines), default=7)
        out = [f"  {'#':>3}  {'step':<{width}}  {'outcome':<{wide}}  rows after"]
        out += [f"  {ln.number:>3}  {ln.step:<{width}}  {ln.outcome:<{wide}}  {ln.rows}" for ln in self.lines]
        return "\n".join(out)

    def to_json(self) -> dict[str, Any]:
        """The replay as plain data."""
        return {"verdict": self.verdict, "property": self.property, "reason": self.reason, "step": self.step,
                "gates": self.gates, "notes": self.notes,
                "lines": [{"number": ln.number, "step": ln.step, "outcome": ln.outcome, "rows": ln.rows} for ln in self.lines]}
