"""A trace as read from its NDJSON file, and the verdicts a trace can get."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


@dataclass(frozen=True)
class Trace:
    """A well-formed trace: where it came from, its header, and its events in order."""

    source: str
    header: dict[str, Any]
    events: tuple[dict[str, Any], ...]
    # The trace's TLA+ text, by the time fields it was made with (to_tla.literal_of): the checker
    # needs it when sorting traces out and again when writing a batch. Not copied by replace().
    literals: dict[tuple[str, ...], str] = field(default_factory=dict, init=False, compare=False, repr=False)
    # Its constants, by system name, with the System they were read for (system.constants_for):
    # sorting, grouping and writing a batch each need them. Not copied by replace() either.
    constants: dict[str, tuple[Any, dict[str, Any]]] = field(default_factory=dict, init=False, compare=False, repr=False)

    @property
    def system(self) -> str:
        """The system that recorded it (`engine`, `workqueue`, `command`)."""
        return str(self.header["system"])


class TraceKind(str, Enum):
    """What checking a trace showed."""

    ACCEPTED = "accepted"
    REJECTED = "rejected"
    SKIPPED = "skipped"
    MALFORMED = "malformed"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class Diff:
    """A logged field that disagrees with what the spec says at the rejected line.

    A field named by a property (capitalised: `NoOverlappingRuns`) is a safety property the
    line breaks: `expected` is then the spec's state after the line, `logged` what the
    property allows (for a TRUE/FALSE property, whether it is broken, and FALSE).
    """

    field: str
    expected: Any
    logged: Any

    @property
    def is_property(self) -> bool:
        """Is this a property the line breaks rather than a logged field?"""
        return self.field[:1].isupper()

    def describe(self) -> str:
        """`NoStaleWrite`, `NoOverlappingRuns (after it A, allowed B)` or `field (spec A, trace B)`."""
        if not self.is_property:
            return f"{self.field} (spec {self.expected}, trace {self.logged})"
        if {str(self.expected), str(self.logged)} <= {"TRUE", "FALSE"}:
            return self.field
        return f"{self.field} (after it {self.expected}, allowed {self.logged})"


@dataclass(frozen=True)
class Excuse:
    """A fault line of an accepted trace that its acceptance needed: the hidden step it excused
    (a lease that lapsed under a lagging heartbeat, say) has no other explanation."""

    line: int    # the fault line's `seq`
    op: str      # the fault's kind (heartbeat_lag, pause, lapse, ...)
    node: str    # the node it hit

    def describe(self) -> str:
        """`heartbeat_lag at line 23 (n1)`."""
        return f"{self.op} at line {self.line} ({self.node})"


def excuses(trace: Trace, lines: tuple[int, ...]) -> tuple[Excuse, ...]:
    """The fault lines numbered `lines` (1-based positions in `trace.events`), as excuses."""
    out = []
    for n in lines:
        if 1 <= n <= len(trace.events):
            e = trace.events[n - 1]
            out.append(Excuse(int(e["seq"]), str(e["op"]), str(e["node"])))
    return tuple(out)


@dataclass(frozen=True)
class TraceVerdict:
    """The verdict on one trace.

    For `rejected`, `line` is the first event (its `seq`) that no behaviour of the spec explains
    (`explained` = line - 1 events were), `op` and `node` say what it was, and `diffs` the
    fields that disagree where the spec's action applied but its logged state did not match.
    `reason` explains skipped, malformed and inconclusive verdicts, and a rejection decided
    before TLC (a fault line under --no-faults). An acceptance that needed fault lines to excuse
    a hidden step names them in `excused`.
    """

    source: str
    kind: TraceKind
    reason: str | None = None
    line: int | None = None
    op: str | None = None
    node: str | None = None
    explained: int | None = None
    diffs: tuple[Diff, ...] = field(default_factory=tuple)
    excused: tuple[Excuse, ...] = field(default_factory=tuple)

    def describe(self) -> str:
        """One line for a report."""
        if self.kind is TraceKind.ACCEPTED and self.excused:
            return f"accepted, excused by {', '.join(x.describe() for x in self.excused)}"
        if self.kind is TraceKind.REJECTED:
            what = f" ({self.op} by {self.node})" if self.op else ""
            if self.reason:
                return f"rejected at event {self.line}{what}: {self.reason}"
            broken = [d.describe() for d in self.diffs if d.is_property]
            fields = [d.describe() for d in self.diffs if not d.is_property]
            why = "".join([f"; breaks {', '.join(broken)}" if broken else "", f"; disagrees on {', '.join(fields)}" if fields else ""])
            return f"rejected at event {self.line}{what}: no behaviour of the spec explains it{why}"
        if self.reason:
            return f"{self.kind.value}: {self.reason}"
        return self.kind.value
