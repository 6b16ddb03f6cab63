"""Reach targets and their models (pure): one per op/outcome of a trace spec's Outcomes table.

A target's model is the system's base model (`guided/<system>.yaml`) checking one action
property, `Never_<op>_<outcome>`, of the reach module (`tla/Reach<Spec>.tla`), expected violated:
its counterexample is a behaviour that reaches the target.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# leaseproof's own systems -> the reach module that defines Never_<op>_<outcome> for each of its
# targets (their base models name it too; a user's base model names its own).
REACH_MODULES = {"engine": "ReachEngine", "workqueue": "ReachWorkQueue", "command": "ReachCommandQueue"}
# A base model's keys that are not a model file's.
GUIDED_KEYS = ("situations", "replay", "outside_model", "edges")


@dataclass(frozen=True)
class Target:
    """One op and outcome of the trace spec, to be reached; a situation also names its own
    property (a state the step must be taken in), and its traces must show the op and outcome."""

    op: str
    outcome: str
    situation: str = ""  # e.g. remove_lost_under_live_lease: Never_<situation> in the reach module

    @property
    def name(self) -> str:
        return self.situation or f"{self.op}/{self.outcome}"

    @property
    def reach_property(self) -> str:
        return f"Never_{self.situation or f'{self.op}_{self.outcome}'}"

    @property
    def slug(self) -> str:
        return self.situation or f"{self.op}-{self.outcome}"


def situations(base: dict[str, Any]) -> list[Target]:
    """The base model file's `situations` (name -> {shows: op/outcome, why}) as targets.

    >>> [t.reach_property for t in situations({"situations": {"x_late": {"shows": "remove/lost", "why": "w"}}})]
    ['Never_x_late']
    """
    out = []
    for name, s in (base.get("situations") or {}).items():
        op, _, outcome = str(s["shows"]).partition("/")
        out.append(Target(op, outcome, str(name)))
    return out


def outside_model(base: dict[str, Any], table: dict[str, frozenset[str]], where: str) -> dict[str, str]:
    """The base model's `outside_model` (op/outcome -> why no behaviour of the model takes it),
    each checked against `table`: naming an outcome the spec does not have is an error.

    >>> outside_model({"outside_model": {"ack/failed": "no such step"}}, {"ack": frozenset({"failed"})}, "b")
    {'ack/failed': 'no such step'}
    """
    declared = base.get("outside_model") or {}
    if not isinstance(declared, dict):
        raise ValueError(f"{where}: outside_model must map op/outcome to the reason")
    out = {}
    for name, why in declared.items():
        op, _, outcome = str(name).partition("/")
        if outcome not in table.get(op, frozenset()):
            raise ValueError(f"{where}: outside_model names {name!r}, which is no outcome of the spec's Outcomes table")
        if not isinstance(why, str) or not why.strip():
            raise ValueError(f"{where}: outside_model {name!r} needs the reason")
        out[str(name)] = " ".join(why.split())
    return out


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
    base = {k: v for k, v in base.items() if k not in GUIDED_KEYS}  # not a model file's
    return {**base, "name": f"reach_{target.slug.replace('-', '_')}", "properties": [target.reach_property],
            "expect": {"verdict": "violated", "property": target.reach_property},
            "why": f"A reach target of the model-guided workloads: a behaviour that takes {target.name}."}


def missing_properties(module_text: str, wanted: list[Target]) -> list[str]:
    """The targets whose property the reach module does not define (each needs one)."""
    return [t.name for t in wanted if f"\n{t.reach_property} ==" not in f"\n{module_text}"]
