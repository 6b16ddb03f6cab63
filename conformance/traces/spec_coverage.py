"""Spec coverage of a trace set: what of the trace spec's steps the accepted traces exercised.

The trace spec declares every outcome it can give each logged store step, in a table
`Outcomes == [op |-> {"outcome", ...}, ...]` that its own outcome check holds it to (a line
whose spec outcome is not in the table is rejected, so the table cannot miss one). From that
table, not from a hand-picked list, a trace set's spec coverage is:

- each op and outcome the traces showed, with counts, and each one the spec can give that no
  trace showed, by name (less those the system file declares unreachable by the designed
  code, each with its reason: `unreachable: {"schedule/honoured": "why"}`);
- each pair of consecutive steps of one entity (the system's `entity` field: a workflow, an
  entry, a command), `op/outcome -> op/outcome`, with counts.

Pure: the spec's text, the system and the traces in; a report out.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from conformance.errors import LeaseproofError
from conformance.traces.system import System
from conformance.traces.trace import Trace

_TABLE = re.compile(r"^Outcomes\s*==\s*\[", re.MULTILINE)
_ENTRY = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*\|->\s*\{([^{}]*)\}\s*')
_STRING = re.compile(r'\s*"([^"\\]*)"\s*')
MAX_TABLE = 20_000  # characters: a table is a few lines; past this the text is not one


class SpecCoverageError(LeaseproofError):
    """The spec's `Outcomes` table, or the system file's `unreachable`, cannot be used."""


def outcomes_table(text: str, where: str) -> dict[str, frozenset[str]] | None:
    """The spec's `Outcomes` table (op -> outcomes), or None when the spec has none.

    >>> t = outcomes_table('Outcomes == [fetch |-> {"leased"},\\n  remove |-> {"removed", "lost"}]', "T")
    >>> {op: sorted(outs) for op, outs in t.items()}
    {'fetch': ['leased'], 'remove': ['lost', 'removed']}
    >>> outcomes_table("Next == TRUE", "T") is None
    True
    """
    found = _TABLE.search(text)
    if found is None:
        return None
    end = text.find("]", found.end())
    if end < 0 or end - found.end() > MAX_TABLE:
        raise SpecCoverageError(f"{where}: Outcomes: no closing ] of the table")
    body = text[found.end():end]
    table: dict[str, frozenset[str]] = {}
    for part in _split(body, where):
        m = _ENTRY.fullmatch(part)
        if m is None:
            raise SpecCoverageError(f"{where}: Outcomes: {part.strip()[:80]!r} is not `op |-> {{\"outcome\", ...}}`")
        op, inner = m.groups()
        items = [s for s in inner.split(",")] if inner.strip() else []
        outcomes = []
        for item in items:
            sm = _STRING.fullmatch(item)
            if sm is None:
                raise SpecCoverageError(f"{where}: Outcomes.{op}: {item.strip()[:80]!r} is not a string literal")
            outcomes.append(sm.group(1))
        if not outcomes:
            raise SpecCoverageError(f"{where}: Outcomes.{op}: no outcome")
        if op in table:
            raise SpecCoverageError(f"{where}: Outcomes: {op} twice")
        table[op] = frozenset(outcomes)
    if not table:
        raise SpecCoverageError(f"{where}: Outcomes: an empty table")
    return table


def _split(body: str, where: str) -> list[str]:
    """The table's entries: commas outside braces."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(body):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                raise SpecCoverageError(f"{where}: Outcomes: an unmatched }}")
        elif ch == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    parts.append(body[start:])
    return [p for p in parts if p.strip()]


@dataclass(frozen=True)
class SpecCoverage:
    """One system's spec coverage by a set of accepted traces."""

    system: str
    spec: str
    table: dict[str, frozenset[str]]
    unreachable: dict[str, str]
    seen: Counter[str] = field(default_factory=Counter)  # "op/outcome" -> lines
    pairs: Counter[tuple[str, str]] = field(default_factory=Counter)
    traces: int = 0
    entity_word: str = "trace"  # what a pair's two steps act on (the system's entity field)

    @property
    def required(self) -> list[str]:
        """Every op/outcome the spec can give that the system file does not declare unreachable."""
        return sorted(f"{op}/{o}" for op, outs in self.table.items() for o in outs
                      if f"{op}/{o}" not in self.unreachable)

    @property
    def covered(self) -> list[str]:
        """The required op/outcomes some accepted trace showed."""
        return [k for k in self.required if self.seen[k]]

    @property
    def missing(self) -> list[str]:
        """What the spec can do that no accepted trace showed (and nothing declares unreachable)."""
        return [k for k in self.required if not self.seen[k]]

    @property
    def shown_unreachable(self) -> list[str]:
        """Outcomes declared unreachable that a trace showed all the same: the declaration is
        wrong, or the trace was recorded with a gate off (a calibration's run)."""
        return sorted(k for k in self.unreachable if self.seen[k])

    def summary(self) -> str:
        req = self.required
        line = (f"spec coverage ({self.system}, {self.spec}): {len(self.covered)} of {len(req)} op outcomes "
                f"({len(self.unreachable)} declared unreachable), {len(self.pairs)} distinct pairs of steps of one "
                f"{self.entity_word}, in {self.traces} accepted trace{'s' if self.traces != 1 else ''}")
        if self.missing:
            line += f"; never shown: {', '.join(self.missing)}"
        if self.shown_unreachable:
            line += f"; declared unreachable but shown: {', '.join(self.shown_unreachable)}"
        return line

    def to_json(self) -> dict[str, Any]:
        return {
            "spec": self.spec, "traces": self.traces,
            "outcomes": {k: self.seen[k] for k in sorted(f"{op}/{o}" for op, outs in self.table.items() for o in outs)},
            "required": len(self.required), "covered": len(self.covered), "missing": self.missing,
            "unreachable": dict(sorted(self.unreachable.items())), "shown_unreachable": self.shown_unreachable,
            "pairs": {f"{a} -> {b}": n for (a, b), n in sorted(self.pairs.items())},
        }


def unreachable_of(system: System, table: dict[str, frozenset[str]], where: str) -> dict[str, str]:
    """The system file's `unreachable` declarations, each an op/outcome of the spec's table."""
    out = {}
    for key, why in system.unreachable.items():
        op, _, outcome = key.partition("/")
        if op not in table or outcome not in table[op]:
            raise SpecCoverageError(f"{where}: unreachable: {key!r} is no op/outcome of {system.spec}'s Outcomes "
                                    f"({', '.join(sorted(f'{o}/{x}' for o, xs in table.items() for x in xs))})")
        out[key] = why
    return out


def count_steps(events: Iterable[Any], table: dict[str, frozenset[str]], entity: str | None,
                seen: Counter[str], pairs: Counter[tuple[str, str]]) -> None:
    """Add one trace's `events` to `seen` (op/outcome -> lines) and `pairs` (consecutive steps
    of one entity, the events' `entity` field; every step one entity without it).

    >>> seen, pairs = Counter(), Counter()
    >>> count_steps([{"op": "a", "outcome": "x", "k": 1}, {"op": "stop"}, {"op": "a", "outcome": "y", "k": 1}],
    ...             {"a": frozenset({"x", "y"})}, "k", seen, pairs)
    >>> dict(pairs)
    {('a/x', 'a/y'): 1}
    """
    last: dict[Any, str] = {}
    for event in events:
        if not isinstance(event, dict):
            continue
        op, outcome = event.get("op"), event.get("outcome")
        if op not in table or not isinstance(outcome, str):
            continue
        step = f"{op}/{outcome}"
        seen[step] += 1
        key = event.get(entity) if entity else None
        key = key if isinstance(key, str | int) else None  # untrusted: a key must be hashable
        if key in last:
            pairs[(last[key], step)] += 1
        last[key] = step


def spec_coverage(system: System, spec_text: str, traces: Iterable[Trace]) -> SpecCoverage | None:
    """`system`'s spec coverage by `traces` (accepted ones), or None when its spec has no table."""
    table = outcomes_table(spec_text, f"{system.spec}.tla")
    if table is None:
        return None
    unreachable = unreachable_of(system, table, f"the {system.name} system file")
    seen: Counter[str] = Counter()
    pairs: Counter[tuple[str, str]] = Counter()
    n = 0
    for trace in traces:
        n += 1
        count_steps(trace.events, table, system.entity, seen, pairs)
    return SpecCoverage(system.name, system.spec, table, unreachable, seen, pairs, n,
                        entity_word=system.entity or "trace")
