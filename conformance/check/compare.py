"""Does a verdict match what a model file expects? Pure.

A mismatch is any difference that a CI job must not let through: another verdict kind, another
violated property (a calibration model failing for the wrong reason), another counterexample
length when one is pinned, another distinct-state count when one is pinned (on an ok model
and on a violated one alike). An error or a timeout never matches.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from conformance.models.model import Expect, Model
from conformance.output.verdict import ErrorKind, Kind, Stats, Verdict


@dataclass(frozen=True)
class Outcome:
    """A model, the verdict it gave, why it does not match (empty: it passes), and how many TLC
    workers checked it."""

    model: Model
    verdict: Verdict
    mismatches: tuple[str, ...]
    workers: int | None = None

    @property
    def passed(self) -> bool:
        """True when the verdict is exactly what the model file expects."""
        return not self.mismatches


def actual_label(v: Verdict) -> str:
    """The verdict in the same words as `Expect.describe`: ok, deadlock, violated X, error, timeout."""
    if v.kind is Kind.VIOLATED:
        return f"violated {v.property or '(unnamed)'}"
    if v.kind is Kind.ERROR:
        return f"error ({v.error_kind.value})" if v.error_kind else "error"
    return v.kind.value


def mismatches(expect: Expect, v: Verdict) -> tuple[str, ...]:
    """Every way `v` differs from `expect`; empty when it matches."""
    if v.kind in (Kind.ERROR, Kind.TIMEOUT):
        return (f"expected {expect.describe()}, got {v.summary()}",)
    if v.kind.value != expect.verdict:
        return (f"expected {expect.describe()}, got {v.summary()}",)
    found: list[str] = []
    if expect.verdict == "violated" and v.property != expect.property:
        found.append(f"expected {expect.property} to be violated, but {v.property or 'an unnamed property'} was")
    if expect.length is not None:
        got = len(v.counterexample) if v.counterexample else None
        if got != expect.length:
            found.append(f"expected a counterexample of {expect.length} states, got {got}")
    # A violated model's count is pinned too: where the search stopped is part of what it showed
    # (its models run with one worker or are safety-only, so the count is stable).
    if expect.distinct_states is not None and v.stats.distinct_states != expect.distinct_states:
        found.append(f"expected {expect.distinct_states:,} distinct states, got {v.stats.distinct_states or 0:,}")
    return tuple(found)


def outcome(model: Model, v: Verdict, workers: int | None = None) -> Outcome:
    """Compare `model`'s expectation with `v` (checked with `workers` TLC workers)."""
    return Outcome(model, v, mismatches(model.expect, v), workers)


REFUSED = "-"  # the expectation of a model file that could not be read: none


def refused(path: Path, reason: str) -> Outcome:
    """The outcome of a model file the loader refused: its own error row, so that one bad file
    never stops the others (a stand-in model named after the file, expecting nothing)."""
    stand_in = Model(name=path.stem, path=path, module=REFUSED, module_path=path, expect=Expect(REFUSED), why=reason)
    verdict = Verdict(Kind.ERROR, Stats(), error_kind=ErrorKind.MODEL_FILE, message=reason)
    return Outcome(stand_in, verdict, (f"the model file was refused: {reason}",))
