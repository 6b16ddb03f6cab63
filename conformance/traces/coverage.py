"""The coverage guard: which spec actions the accepted traces exercised, and whether the
interesting ones (an honoured lease, a rerun, a reclaim, a refused stale write) were seen.

A trace set that never takes the interesting paths passes vacuously; the guard makes it fail.
A requirement names an op and its outcomes, and may also say what must hold at that event
(`where`: conditions on its fields, such as "the state after shows the guard held by another
attempt"), and that the entity's lease was last taken by another node (`held_by_other`): a
stale actor refused *while a live one holds the lease*, not after the lease simply lapsed.

    stale renewal refused while another node holds the lease:
      op: renew
      outcome: [conflict]
      where:
        - {field: state.task.status, eq: RUNNING}
        - {field: state.task.run_after, gt: {field: now}}   # another field of the same event
      held_by_other: {fetch: [leased], renew: [renewed]}

Guards can be met by a whole trace set or by each of its sources (`by_source`: one directory
per recorder, so that each of them reaches the interesting actions by itself). Pure.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.traces.system import System, lookup
from conformance.traces.trace import Trace

_MISSING = object()

COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": operator.eq, "ne": operator.ne, "gt": operator.gt, "ge": operator.ge, "lt": operator.lt, "le": operator.le,
}


@dataclass(frozen=True)
class Coverage:
    """Ops (with outcomes) seen in accepted traces of one system, and the requirements unmet."""

    system: str
    seen: Counter[tuple[str, str]]
    required: dict[str, int]
    source: str | None = None  # the trace directory these traces came from, when counted per source
    traces: int = 0  # how many accepted traces were counted

    @property
    def missing(self) -> list[str]:
        """The interesting behaviours that no accepted trace showed."""
        return [name for name, n in self.required.items() if n == 0]


def _value(event: Mapping[str, Any], dotted: str) -> Any:
    try:
        return lookup(event, dotted)
    except (KeyError, TypeError):
        return _MISSING


def holds(condition: Mapping[str, Any], event: Mapping[str, Any]) -> bool:
    """Whether one `where` condition holds at `event`: `{field: F, <cmp>: V}`, V a literal or
    `{field: G}` (G another field of the event). A field the event lacks makes it false, as does
    an order comparison between values that have none (a string and a number)."""
    (cmp,) = (k for k in condition if k != "field")
    left = _value(event, condition["field"])
    right = condition[cmp]
    if isinstance(right, Mapping):
        right = _value(event, right["field"])
    if left is _MISSING or right is _MISSING:
        return False
    if cmp not in ("eq", "ne"):
        numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (left, right))
        if not (numbers or (isinstance(left, str) and isinstance(right, str))):
            return False
    return COMPARISONS[cmp](left, right)


def _holder_is_other(takers: Mapping[str, list[str]], earlier: Iterable[Mapping[str, Any]], event: Mapping[str, Any],
                     entity: str | None) -> bool:
    """Whether the latest event before `event` (on its entity) that took or renewed the lease
    (an op and outcome of `takers`) was another node's."""
    last = None
    for e in earlier:
        if entity is not None and e.get(entity) != event.get(entity):
            continue
        if e["outcome"] in takers.get(e["op"], ()):
            last = e
    return last is not None and last.get("node") != event.get("node")


def meets(need: Mapping[str, Any], system: System, trace: Trace, index: int) -> bool:
    """Whether event `index` of `trace` shows the requirement `need` (a `coverage:` entry)."""
    e = trace.events[index]
    outcomes = need.get("outcome")
    if e["op"] != need["op"] or (outcomes is not None and e["outcome"] not in outcomes):
        return False
    if not all(holds(c, e) for c in need.get("where", ())):
        return False
    takers = need.get("held_by_other")
    return takers is None or _holder_is_other(takers, trace.events[:index], e, system.entity)


def coverage(system: System, accepted: list[Trace], source: str | None = None) -> Coverage:
    """Count (op, outcome) over the accepted traces of `system`, and how often each requirement
    was met (an event that meets it)."""
    seen: Counter[tuple[str, str]] = Counter((e["op"], e["outcome"]) for t in accepted for e in t.events)
    required = {}
    for name, need in system.coverage.items():
        required[name] = sum(meets(need, system, t, i) for t in accepted for i, e in enumerate(t.events) if e["op"] == need["op"])
    return Coverage(system.name, seen, required, source, len(accepted))


def source_of(path: Path, roots: list[Path]) -> str:
    """The source a trace file came from: under a directory given, its first sub-directory
    there (`out/traces/engine-sim`, one per recorder of `scripts/record_traces.sh`), or that
    directory itself for a file directly in it; for a file given by name, its directory."""
    for root in roots:
        if root.is_dir():
            try:
                rel = path.relative_to(root)
            except ValueError:
                continue
            return str(root / rel.parts[0]) if len(rel.parts) > 1 else str(root)
    return str(path.parent)


def by_source(system: System, accepted: list[tuple[str, Trace]], present: Iterable[str]) -> list[Coverage]:
    """The coverage of `system` in each source: `accepted` are `(source, trace)` pairs, and
    `present` the sources with in-scope traces of `system` (one with none accepted covers
    nothing, and is listed too). Sorted by source."""
    groups: dict[str, list[Trace]] = {src: [] for src in present}
    for src, t in accepted:
        if t.system == system.name:
            groups.setdefault(src, []).append(t)
    return [coverage(system, ts, src) for src, ts in sorted(groups.items())]
