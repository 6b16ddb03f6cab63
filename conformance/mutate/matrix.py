"""The kill matrix: each mutant by each check, and what it adds up to (pure).

A cell is one check's verdict on one mutant:

- `killed`: the check failed on the mutant (it passes on the unmutated source: the baseline);
- `survived`: the check passed on the mutant;
- `timeout`: the check ran past its time (neither a kill nor a pass);
- `error`: the mutant could not be applied, or the check could not run (the baseline failed);
- `blind`: the catalogue says this check cannot observe this mutant (not run; the reason shown);
- `equivalent`: the catalogue says the mutant changes no behaviour (not run; the reason shown).

A mutant is killed when any check killed it. The run fails (exit 1) when a mutant that is not
declared equivalent is killed by no check, or when any cell is an error. In the --quick subset
each mutant names the checks that must kill it, and one that did not is a miss, which fails the
run too (the subset proves that each check still can kill).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

KILLED, SURVIVED, TIMEOUT, ERROR, BLIND, EQUIVALENT = "killed", "survived", "timeout", "error", "blind", "equivalent"
RAN = (KILLED, SURVIVED, TIMEOUT)


@dataclass(frozen=True)
class Cell:
    """One check's verdict on one mutant, with its seconds and a line saying why."""

    verdict: str
    seconds: float = 0.0
    detail: str = ""


@dataclass
class Row:
    """One mutant's cells, by check."""

    system: str
    mutant: str
    bug_class: str
    cells: dict[str, Cell] = field(default_factory=dict)
    expected: tuple[str, ...] = ()  # the checks that must kill it (the --quick subset)

    @property
    def killed(self) -> bool:
        return any(c.verdict == KILLED for c in self.cells.values())

    @property
    def equivalent(self) -> bool:
        return any(c.verdict == EQUIVALENT for c in self.cells.values())

    @property
    def seconds(self) -> float:
        return sum(c.seconds for c in self.cells.values())


@dataclass(frozen=True)
class Rate:
    """What one check killed of the mutants it can observe (ran on them: not blind, not equivalent)."""

    check: str
    killed: int
    observed: int

    @property
    def share(self) -> float | None:
        return self.killed / self.observed if self.observed else None


def rates(rows: list[Row], checks: list[str]) -> list[Rate]:
    """Each check's kills over the mutants it ran on."""
    out = []
    for check in checks:
        cells = [r.cells[check] for r in rows if check in r.cells and r.cells[check].verdict in RAN]
        out.append(Rate(check, sum(c.verdict == KILLED for c in cells), len(cells)))
    return out


def survivors(rows: list[Row]) -> list[Row]:
    """The mutants no check killed that every check ran on or declared blind (equivalent ones,
    and ones with an error, excepted: those are not survivors but unproven)."""
    return [r for r in rows if not r.killed and not r.equivalent
            and not any(c.verdict == ERROR for c in r.cells.values())]


def errors(rows: list[Row]) -> list[tuple[Row, str]]:
    """The cells that are errors, with their check; one per row when they say the same."""
    out: list[tuple[Row, str]] = []
    for r in rows:
        said: set[str] = set()
        for check, c in r.cells.items():
            if c.verdict == ERROR and c.detail not in said:
                said.add(c.detail)
                out.append((r, check))
    return out


def missed(rows: list[Row]) -> list[tuple[Row, str]]:
    """The checks that were to kill a mutant (the --quick subset) and did not."""
    return [(r, c) for r in rows for c in r.expected if c in r.cells and r.cells[c].verdict != KILLED]


def ok(rows: list[Row]) -> bool:
    """Whether every mutant that is not equivalent was killed, by every check that was to kill
    it, and no cell is an error."""
    return not survivors(rows) and not errors(rows) and not missed(rows)


def as_json(rows: list[Row], checks: list[str]) -> dict[str, Any]:
    """The matrix as JSON: rows with their cells, rates per check, survivors and the total."""
    return {
        "checks": checks,
        "mutants": [{"system": r.system, "mutant": r.mutant, "class": r.bug_class, "killed": r.killed,
                     "seconds": round(r.seconds, 2),
                     "cells": {k: {"verdict": c.verdict, "seconds": round(c.seconds, 2), "detail": c.detail}
                               for k, c in r.cells.items()}} for r in rows],
        "rates": {x.check: {"killed": x.killed, "observed": x.observed} for x in rates(rows, checks)},
        "survivors": [f"{r.system}/{r.mutant}" for r in survivors(rows)],
        "errors": [f"{r.system}/{r.mutant}: {check}: {r.cells[check].detail}" for r, check in errors(rows)],
        "missed": [f"{r.system}/{r.mutant}: {check}: {r.cells[check].verdict}" for r, check in missed(rows)],
        "seconds": round(sum(r.seconds for r in rows), 2),
        "ok": ok(rows),
    }


@dataclass(frozen=True)
class Difference:
    """One cell whose verdict differs between an earlier run and this one."""

    mutant: str  # system/mutant
    check: str
    before: str
    now: str


class MatrixFileError(ValueError):
    """An earlier run's JSON (`--compare`) is unreadable or not a kill matrix."""


MAX_COMPARED_MUTANTS = 10_000  # an earlier run's file is input: bound what it may claim


def earlier_verdicts(doc: Any) -> dict[tuple[str, str], str]:
    """The verdicts of an earlier `--json` run, by (system/mutant, check); `MatrixFileError` when
    the document is not such a run."""
    if not isinstance(doc, dict) or not isinstance(doc.get("mutants"), list):
        raise MatrixFileError("not a kill matrix: expected an object with a `mutants` list (`leaseproof mutate --json`)")
    if len(doc["mutants"]) > MAX_COMPARED_MUTANTS:
        raise MatrixFileError(f"{len(doc['mutants'])} mutants, over the bound of {MAX_COMPARED_MUTANTS}")
    out: dict[tuple[str, str], str] = {}
    for i, m in enumerate(doc["mutants"]):
        try:
            name = f"{m['system']}/{m['mutant']}"
            cells = {str(k): c["verdict"] for k, c in m["cells"].items()}
        except (TypeError, KeyError, AttributeError) as exc:
            raise MatrixFileError(f"mutant #{i + 1}: missing or malformed field {exc}") from None
        for check, verdict in cells.items():
            if verdict not in (KILLED, SURVIVED, TIMEOUT, ERROR, BLIND, EQUIVALENT):
                raise MatrixFileError(f"{name} {check}: unknown verdict {str(verdict)[:40]!r}")
            out[(name, check)] = verdict
    return out


def differences(before: dict[tuple[str, str], str], rows: list[Row]) -> list[Difference]:
    """The cells both runs have whose verdicts differ (cells only one run has are not compared:
    a run may select fewer mutants or checks)."""
    out = []
    for r in rows:
        for check, c in r.cells.items():
            was = before.get((f"{r.system}/{r.mutant}", check))
            if was is not None and was != c.verdict:
                out.append(Difference(f"{r.system}/{r.mutant}", check, was, c.verdict))
    return out


def compared(before: dict[tuple[str, str], str], rows: list[Row]) -> int:
    """How many cells of this run the earlier run also has."""
    return sum((f"{r.system}/{r.mutant}", check) in before for r in rows for check in r.cells)


def cell_text(c: Cell) -> str:
    """A cell as the table prints it: the verdict and its seconds (ran), or the verdict."""
    return f"{c.verdict} {c.seconds:.1f}s" if c.verdict in RAN else c.verdict
