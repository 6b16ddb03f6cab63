"""Counterexamples: the states TLC prints after a violation, parsed into data.

A state message (2217) reads

    3: <Step line 10, col 12 to line 12, col 48 of module Counter>
    /\\ seen = (n1 :> 2 @@ n2 :> 0)
    /\\ x = 2

(a single-variable spec prints `x = 2` without the `/\\`). A liveness counterexample ends with
a stuttering step (2218) or with a loop back to an earlier state (2122).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.output.values import parse_value

_HEADER = re.compile(
    r"^(?P<index>\d+): (?:<(?P<label>[^>]*)>|(?P<stutter>Stuttering)|Back to state(?::\s*<(?P<back_label>[^>]*)>)?)\s*$"
)
_LABEL = re.compile(r"^(?P<action>\S+?)(?: line (?P<line>\d+), col (?P<col>\d+) to line (?P<eline>\d+), col (?P<ecol>\d+) of module (?P<module>\w+))?$")
_ASSIGN = re.compile(r"^(?:/\\ )?(?P<name>[A-Za-z_][A-Za-z0-9_]*) = ", re.MULTILINE)


@dataclass(frozen=True)
class Location:
    """Where an action is defined: module, and the span of its definition."""

    module: str
    line: int
    column: int
    end_line: int
    end_column: int

    def __str__(self) -> str:
        return f"{self.module}.tla:{self.line}:{self.column}"


@dataclass(frozen=True)
class State:
    """One state of a counterexample: its number, the action that led to it, its variables."""

    index: int
    action: str  # "Initial predicate" for the first state
    location: Location | None
    variables: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Counterexample:
    """The behaviour TLC printed: its states, and how a liveness counterexample ends.

    `back_to` is the 1-based index of the state a lasso loops back to, and `back_action` (with
    `back_location`) the action that closes the loop, from the last state back to that one;
    `stutters` is true when the behaviour ends by stuttering forever.
    """

    states: tuple[State, ...]
    back_to: int | None = None
    stutters: bool = False
    back_action: str | None = None
    back_location: Location | None = None

    def __len__(self) -> int:
        return len(self.states)


def parse_variables(text: str, value: Callable[[str], Any] = parse_value) -> dict[str, Any]:
    """The `name = value` conjuncts of a printed state, values parsed by `value` (default
    `values.parse_value`)."""
    starts = list(_ASSIGN.finditer(text))
    out: dict[str, Any] = {}
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        out[m.group("name")] = value(text[m.end() : end].strip())
    return out


def _parse_label(label: str) -> tuple[str, Location | None]:
    if label == "Initial predicate":
        return label, None
    m = _LABEL.match(label.strip())
    if not m or m.group("module") is None:
        return label.strip(), None
    loc = Location(m.group("module"), int(m.group("line")), int(m.group("col")), int(m.group("eline")), int(m.group("ecol")))
    return m.group("action"), loc


def parse_state(body: str) -> State:
    """Parse the body of a state message (2217)."""
    head, _, rest = body.partition("\n")
    m = _HEADER.match(head.strip())
    if not m or m.group("label") is None:
        raise ValueError(f"not a state header: {head!r}")
    action, loc = _parse_label(m.group("label"))
    return State(int(m.group("index")), action, loc, parse_variables(rest))


def parse_back_to(body: str) -> tuple[int, str | None, Location | None]:
    """The state index a lasso goes back to, and the action (and its location) that goes back
    (message 2122: `1: Back to state: <Next line 7, col 9 to ... of module Spinner>`)."""
    m = _HEADER.match(body.strip().splitlines()[0])
    if not m:
        raise ValueError(f"not a back-to-state message: {body!r}")
    if m.group("back_label") is None:
        return int(m.group("index")), None, None
    action, loc = _parse_label(m.group("back_label"))
    return int(m.group("index")), action, loc
