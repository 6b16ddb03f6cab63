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
    """A logged field that disagrees with what the spec says at the rejected line."""

    field: str
    expected: Any
    logged: Any


@dataclass(frozen=True)
class TraceVerdict:
    """The verdict on one trace.

    For `rejected`, `line` is the first event (its `seq`) that no behaviour of the spec explains
    (`explained` = line - 1 events were), `op` and `node` say what it was, and `diffs` the
    fields that disagree where the spec's action applied but its logged state did not match.
    `reason` explains skipped, malformed and inconclusive verdicts.
    """

    source: str
    kind: TraceKind
    reason: str | None = None
    line: int | None = None
    op: str | None = None
    node: str | None = None
    explained: int | None = None
    diffs: tuple[Diff, ...] = field(default_factory=tuple)

    def describe(self) -> str:
        """One line for a report."""
        if self.kind is TraceKind.REJECTED:
            what = f" ({self.op} by {self.node})" if self.op else ""
            fields = ""
            if self.diffs:
                fields = "; disagrees on " + ", ".join(f"{d.field} (spec {d.expected}, trace {d.logged})" for d in self.diffs)
            return f"rejected at event {self.line}{what}: no behaviour of the spec explains it{fields}"
        if self.reason:
            return f"{self.kind.value}: {self.reason}"
        return self.kind.value
