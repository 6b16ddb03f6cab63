"""Reach targets and their models (pure): one per op/outcome of a trace spec's Outcomes table.

A target's model is the system's base model (`guided/<system>.yaml`) checking one action
property, `Never_<op>_<outcome>`, of the reach module (`tla/Reach<Spec>.tla`), expected violated:
its counterexample is a behaviour that reaches the target.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# system -> the reach module that defines Never_<op>_<outcome> for each of its targets.
REACH_MODULES = {"engine": "ReachEngine"}


@dataclass(frozen=True)
class Target:
    """One op and outcome of the trace spec, to be reached."""

    op: str
    outcome: str

    @property
    def name(self) -> str:
        return f"{self.op}/{self.outcome}"

    @property
    def property(self) -> str:
        return f"Never_{self.op}_{self.outcome}"


def targets(table: dict[str, frozenset[str]], unreachable: dict[str, str]) -> list[Target]:
    """Every op/outcome of `table` not declared unreachable, in a stable order.

    >>> [t.name for t in targets({"remove": frozenset({"lost", "removed"}), "fetch": frozenset({"leased"})}, {"remove/lost": "x"})]
    ['fetch/leased', 'remove/removed']
    """
    return [Target(op, o) for op in sorted(table) for o in sorted(table[op]) if f"{op}/{o}" not in unreachable]


def reach_model(base: dict[str, Any], target: Target) -> dict[str, Any]:
    """The model file data that reaches `target` from `base` (the base model's data).

    >>> reach_model({"name": "b", "module": "ReachEngine", "invariants": ["TypeOK"]}, Target("fetch", "leased"))["properties"]
    ['Never_fetch_leased']
    """
    return {**base, "name": f"reach_{target.op}_{target.outcome}", "properties": [target.property],
            "expect": {"verdict": "violated", "property": target.property},
            "why": f"A reach target of the model-guided workloads: a behaviour that takes {target.name}."}


def missing_properties(module_text: str, wanted: list[Target]) -> list[str]:
    """The targets whose property the reach module does not define (each needs one)."""
    return [t.name for t in wanted if f"\n{t.property} ==" not in f"\n{module_text}"]
