"""`leaseproof mutate`: run the checks on every mutant of the catalogues and print the kill matrix.

Each mutant (`mutants/<system>.yaml`) is one small edit of the real source, made in a scratch
copy of the project (never the work tree); each check of its catalogue (the system's tests, the
stateful machines, trace recording plus validation) runs there. The matrix shows, for each
mutant and check: killed, survived, timeout, error, blind (the check cannot observe it: the
catalogue says why) or equivalent (it changes no behaviour: the catalogue says why).

With `--spec`, the mutants are edits of the TLA+ specs (`mutants/specs/<system>.yaml`: named
edits, each a bug class, and edits the operators make from a module: a guard conjunct dropped,
a variable's change dropped, a comparison's boundary moved, a fairness condition removed), and
the checks are the catalogue's models: a mutant is killed when a model that holds on the spec
violates a named property (a moved state count alone is no kill). `--checks` then names models.

With `--compare EARLIER.json` (an earlier run's `--json`), the run also lists every cell whose
verdict differs from that run's: the matrix is reproducible when none does.

Exit status: 0 when every mutant that is not equivalent was killed by some check, no cell is an
error and (with --compare) no verdict differs from the earlier run's; 1 otherwise; 2 for a
usage error (an unknown system, check or mutant, a catalogue that does not load, an earlier run
that is no kill matrix).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from conformance.cli.options import output_dir
from conformance.errors import LeaseproofError
from conformance.output.safe_text import visible

if TYPE_CHECKING:
    from conformance.check.runner import Tlc
    from conformance.mutate.matrix import Cell
    from conformance.mutate.spec_catalogue import SpecCatalogue


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the `mutate` command."""
    p = sub.add_parser("mutate", help="run the checks on every mutant and print the kill matrix",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", type=Path, default=Path("."), help="the project directory holding mutants/ (default: .)")
    p.add_argument("--system", action="append", default=[], help="only this system's catalogue (repeatable)")
    p.add_argument("--checks", default="", help="a comma-separated list of checks to run (default: every check)")
    p.add_argument("--mutant", action="append", default=[], metavar="NAME", help="only this mutant (repeatable)")
    p.add_argument("--quick", action="store_true",
                   help="only the mutants marked quick, each check as its quick command (the default test run's subset)")
    p.add_argument("--jobs", type=int, default=1, help="mutants checked at once (default 1)")
    p.add_argument("--keep", type=Path, metavar="DIR",
                   help="make the scratch copies under DIR (made if it is not there) and keep them")
    p.add_argument("--json", action="store_true", help="print the matrix as JSON")
    p.add_argument("--spec", action="store_true",
                   help="mutate the TLA+ specs (mutants/specs/) and check each mutant with the catalogue's models")
    p.add_argument("--first-kill", action="store_true",
                   help="with --spec: run each mutant's models fastest first and stop at the first that kills it "
                        "(the later models show -); a survivor still runs every model")
    p.add_argument("--compare", type=Path, metavar="EARLIER.json",
                   help="an earlier run's --json: list the cells whose verdict differs, and fail if any does")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run `leaseproof mutate`."""
    from conformance.mutate import matrix
    from conformance.mutate.catalogue import load_catalogues
    from conformance.mutate.run import Scratch, run_matrix

    if args.jobs < 1 or args.jobs > 16:
        raise LeaseproofError("--jobs: expected 1 to 16")
    root = args.root.resolve()
    if args.spec:
        from conformance.mutate.spec_catalogue import load_spec_catalogues

        catalogues = load_spec_catalogues(root)
    else:
        catalogues = load_catalogues(root)
    if args.quick:
        catalogues = {s: c.quick() for s, c in catalogues.items()}
    systems = args.system or sorted(catalogues)
    unknown = [s for s in systems if s not in catalogues]
    if unknown:
        raise LeaseproofError(f"--system: no catalogue for {unknown}; known: {sorted(catalogues)}")
    wanted = [c for c in args.checks.split(",") if c]
    what = "model" if args.spec else "check"
    for s in systems:
        missing = [c for c in wanted if c not in catalogues[s].checks]
        if missing:
            raise LeaseproofError(f"--checks: {s} has no {what} {missing}; its {what}s: {sorted(catalogues[s].checks)}")
    names = set(args.mutant)
    known = {m.name for s in systems for m in catalogues[s].mutants}
    if names - known:
        raise LeaseproofError(f"--mutant: no mutant {sorted(names - known)} in {systems}"
                              f"{' (among those marked quick)' if args.quick else ''}")
    selected = {s: [m for m in catalogues[s].mutants if not names or m.name in names] for s in systems}

    if not any(selected.values()):
        raise LeaseproofError(f"no mutant selected in {systems}{' (none is marked quick)' if args.quick else ''}")
    before = _earlier(args.compare) if args.compare is not None else None
    if args.keep is not None:
        output_dir("--keep", args.keep)  # as `check --keep`: made if missing, a usage error if it cannot be
    work = Path(tempfile.mkdtemp(prefix="lp-mutate-", dir=args.keep))
    rows: list[matrix.Row] = []
    checks_all: list[str] = []
    try:
        scratch = Scratch(root, work)
        tlc = _tlc() if args.spec else None
        for s in systems:
            checks = wanted or list(catalogues[s].checks)
            checks_all += [c for c in checks if c not in checks_all]
            if args.spec:
                from conformance.mutate.spec_run import run_spec_matrix

                cat = catalogues[s] if not wanted else _only_models(catalogues[s], checks)
                rows += run_spec_matrix(cat, selected[s], scratch, tlc, jobs=args.jobs, first_kill=args.first_kill,
                                        progress=lambda line: print(line, file=sys.stderr, flush=True))
            else:
                rows += run_matrix(catalogues[s], selected[s], checks, scratch, jobs=args.jobs,
                                   progress=lambda line: print(line, file=sys.stderr, flush=True))
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    diffs = matrix.differences(before, rows) if before is not None else []
    if args.json:
        doc = matrix.as_json(rows, checks_all)
        if before is not None:
            doc["compared"] = {"earlier": str(args.compare), "cells": matrix.compared(before, rows),
                               "differences": [vars(d) for d in diffs]}
        json.dump(doc, sys.stdout, indent=2)
        print()
    else:
        _print(rows, checks_all, spec=args.spec)
        if before is not None:
            _print_comparison(args.compare, matrix.compared(before, rows), diffs)
    return 0 if matrix.ok(rows) and not diffs else 1


def _tlc() -> Tlc:
    """TLC for `--spec`; a usage error when Java or TLC is missing."""
    from conformance.check.runner import Tlc

    try:
        return Tlc.locate()
    except LeaseproofError as exc:
        raise LeaseproofError(f"--spec needs TLC: {exc}") from None


def _only_models(cat: SpecCatalogue, models: list[str]) -> SpecCatalogue:
    """`cat` checked with `models` only (`--checks`)."""
    import dataclasses

    return dataclasses.replace(cat, models=tuple(models))


def _earlier(path: Path) -> dict[tuple[str, str], str]:
    """The verdicts of an earlier run's JSON; a usage error when it cannot be read as one."""
    from conformance.mutate import matrix

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return matrix.earlier_verdicts(doc)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, matrix.MatrixFileError) as exc:
        raise LeaseproofError(f"--compare {path}: {exc}") from None


def _print_comparison(path: Path, cells: int, diffs: list) -> None:
    if not diffs:
        print(visible(f"the same verdicts as {path} in all {cells} cells both runs have"))
    for d in diffs:
        print(visible(f"DIFFERS {d.mutant} {d.check}: {d.before} in {path}, {d.now} now"))


def _print(rows: list, checks: list[str], *, spec: bool = False) -> None:
    from rich.console import Console
    from rich.table import Table

    from conformance.mutate import matrix
    from conformance.output.safe_text import markup

    # What a check printed (an error's detail) and what a catalogue says are shown, not obeyed:
    # pytest's `[100%]` is no markup, and its colours no escape sequences here.
    table = Table(title="kill matrix")
    table.add_column("mutant")
    for c in checks:
        table.add_column(c)
    table.add_column("s", justify="right")
    for r in rows:
        table.add_row(markup(f"{r.system}/{r.mutant}"),
                      *(_cell(r.cells[c], spec) if c in r.cells else "-" for c in checks), f"{r.seconds:.1f}")
    console = Console(width=max(100, 24 + 18 * len(checks)))
    console.print(table)
    for x in matrix.rates(rows, checks):
        share = f"{100 * x.share:.0f}%" if x.share is not None else "-"
        console.print(f"{x.check}: killed {x.killed} of the {x.observed} mutants it ran on ({share})")
    for r in matrix.survivors(rows):
        console.print(markup(f"SURVIVED {r.system}/{r.mutant} ({r.bug_class})"))
    for r, check in matrix.errors(rows):
        console.print(markup(f"ERROR {r.system}/{r.mutant} {check}: {r.cells[check].detail}"))
    for r, check in matrix.missed(rows):
        console.print(markup(f"MISSED {r.system}/{r.mutant} {check}: was to kill it (the quick subset), {r.cells[check].verdict}"))
    if spec:
        from conformance.mutate.spec_run import survived_only_by_states

        moved = [r for r in matrix.survivors(rows) if survived_only_by_states(r)]
        if moved:
            console.print(f"{len(moved)} of the survivors moved a state count only: "
                          + ", ".join(markup(r.mutant) for r in moved))
    console.print(f"{len(rows)} mutants, {sum(r.killed for r in rows)} killed, "
                  f"{sum(r.equivalent for r in rows)} equivalent, {sum(r.seconds for r in rows):.1f} s of checks")


def _cell(c: Cell, spec: bool) -> str:
    """A cell as the table prints it; with --spec a kill names the property that caught it."""
    from conformance.mutate import matrix
    from conformance.output.safe_text import markup

    if spec and c.verdict == matrix.KILLED:
        return markup(f"{c.detail} {c.seconds:.1f}s")
    return matrix.cell_text(c)
