"""Check each spec mutant with its catalogue's models, in scratch copies of the project.

Each mutant's copy has its one edit of a TLA+ module; its models are loaded from that copy and
model-checked there with TLC. First every model runs on the unmutated copy: one that does not
give its expected verdict there cannot catch anything, and each of its cells is an error.

A cell says what the model showed of the mutant (`spec_cell`): `killed` when a model that holds
on the spec (expected `ok`) violates a property, naming it (or deadlocks); `survived` when it
still holds, with the distinct-state count when only that moved (no property names such a
change, so it is no kill); `timeout`; `error` when TLC could not check it (a mutant that does
not parse is one). A calibration in the model set (expected `violated P`) kills only by
violating another property.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import time
from pathlib import Path

from conformance.check.compare import outcome
from conformance.check.runner import Tlc, check_model
from conformance.cli.check import load_selected
from conformance.errors import LeaseproofError
from conformance.models.model import Model
from conformance.mutate.catalogue import Mutant
from conformance.mutate.matrix import ERROR, KILLED, SURVIVED, TIMEOUT, Cell, Row
from conformance.mutate.run import Progress, Scratch, each_row, prepared
from conformance.mutate.spec_catalogue import SpecCatalogue
from conformance.output.verdict import Kind, Verdict

log = logging.getLogger(__name__)
# A mutant may blow a model's state space up: its run gets this many times the model's baseline
# time (at least MIN_BUDGET_S, at most the model's own timeout), and past it the cell is a timeout.
BUDGET_FACTOR = 10
MIN_BUDGET_S = 30.0


def spec_cell(model: Model, verdict: Verdict, baseline_states: int | None) -> Cell:
    """What `verdict` (of `model` on a mutant) says of the mutant (pure)."""
    seconds = verdict.stats.seconds or 0.0
    want, prop = model.expect.verdict, model.expect.property
    if verdict.kind is Kind.TIMEOUT:
        return Cell(TIMEOUT, seconds, "ran past its budget (the state space grew)")
    if verdict.kind is Kind.ERROR:
        return Cell(ERROR, seconds, f"TLC could not check it: {verdict.summary()[:200]}")
    if verdict.kind is Kind.DEADLOCK:
        return Cell(KILLED if want != "deadlock" else SURVIVED, seconds, "deadlock")
    if verdict.kind is Kind.VIOLATED:
        if want == "violated" and verdict.property == prop:
            return Cell(SURVIVED, seconds, f"{prop} violated, as without the mutant")
        return Cell(KILLED, seconds, str(verdict.property))
    states = verdict.stats.distinct_states
    moved = baseline_states is not None and states is not None and states != baseline_states
    if want == "violated":
        return Cell(SURVIVED, seconds, f"no longer violates {prop}")
    return Cell(SURVIVED, seconds, f"states {baseline_states} -> {states}: no property names it" if moved else "")


def _load(tree: Path, names: list[str]) -> dict[str, Model]:
    models, bad = load_selected(tree, names, False)
    if bad:
        raise LeaseproofError(f"a model of the catalogue does not load: {bad[0].verdict.message}")
    return {m.name: m for m in models}


def columns(cat: SpecCatalogue, m: Mutant) -> list[str]:
    """The models `m` is checked with: all of the catalogue's (in --quick, those it names)."""
    return [c for c in cat.models if c in m.quick] if cat.quick_subset else list(cat.models)


def spec_baseline(cat: SpecCatalogue, names: list[str], scratch: Scratch,
                  tlc: Tlc) -> tuple[dict[str, str], dict[str, int | None], dict[str, float]]:
    """Each model named on the unmutated copy: the ones that do not give their expected verdict
    there, with why, and every model's distinct-state count and seconds."""
    broken: dict[str, str] = {}
    states: dict[str, int | None] = {}
    seconds: dict[str, float] = {}
    for name, model in _load(scratch.base, names).items():
        result = outcome(model, check_model(model, tlc), 0)
        states[name] = result.verdict.stats.distinct_states
        seconds[name] = result.verdict.stats.seconds or 0.0
        if result.mismatches:
            broken[name] = f"the model fails on the unmutated spec: {'; '.join(result.mismatches)[:200]}"
        log.info("%s baseline %s: %s", cat.system, name, "broken" if name in broken else "ok")
    return broken, states, seconds


def budget(model: Model, baseline_s: float) -> Model:
    """`model` with the time a mutant's run may take (see BUDGET_FACTOR)."""
    return dataclasses.replace(model, timeout=min(model.timeout, max(MIN_BUDGET_S, BUDGET_FACTOR * baseline_s)))


def spec_row(cat: SpecCatalogue, m: Mutant, scratch: Scratch, tlc: Tlc, broken: dict[str, str],
             states: dict[str, int | None], seconds: dict[str, float], *, first_kill: bool = False) -> Row:
    """Every model of the catalogue on one mutant (in --quick, the models it names).

    With `first_kill`, the models run fastest first (by their baseline seconds) and the row
    stops at the first kill: the models after it have no cell (the matrix shows `-`)."""
    row = Row(cat.system, m.name, m.bug_class)
    names = columns(cat, m)
    row.expected = tuple(names) if cat.quick_subset else ()
    tree = prepared(row, m, names, scratch)
    if tree is None:
        return row
    try:
        models = _load(tree, names)
        order = sorted(names, key=lambda n: seconds.get(n, 0.0)) if first_kill else names
        for name in order:
            if name in broken:
                row.cells[name] = Cell(ERROR, detail=broken[name])
                continue
            started = time.monotonic()
            model = budget(models[name], seconds.get(name, 0.0))
            cell = spec_cell(model, check_model(model, tlc), states.get(name))
            row.cells[name] = Cell(cell.verdict, cell.seconds or time.monotonic() - started, cell.detail)
            if first_kill and cell.verdict == KILLED:
                break
    except LeaseproofError as exc:
        row.cells = {c: Cell(ERROR, detail=str(exc)[:300]) for c in names}
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    return row


def run_spec_matrix(cat: SpecCatalogue, mutants: list[Mutant], scratch: Scratch, tlc: Tlc, *, jobs: int = 1,
                    progress: Progress | None = None, first_kill: bool = False) -> list[Row]:
    """The rows of `mutants`, in catalogue order, `jobs` mutants at a time (`first_kill`: see
    `spec_row`; ignored in --quick, where each named model must kill)."""
    first_kill = first_kill and not cat.quick_subset
    needed = [c for c in cat.models if any(c in columns(cat, m) for m in mutants if m.equivalent is None)]
    broken, states, seconds = spec_baseline(cat, needed, scratch, tlc) if needed else ({}, {}, {})
    for name, why in broken.items():
        if progress:
            progress(f"{cat.system}: model {name}: {why}")
    return each_row(cat.system, mutants,
                    lambda m: spec_row(cat, m, scratch, tlc, broken, states, seconds, first_kill=first_kill),
                    jobs=jobs, progress=progress, said=caught_by)


def caught_by(row: Row) -> str:
    """What a spec mutant's row shows, in a few words (pure)."""
    caught = [f"{k} {c.detail}" for k, c in row.cells.items() if c.verdict == KILLED]
    if caught:
        return "caught by " + ", ".join(caught)
    return "equivalent" if row.equivalent else ", ".join(sorted({c.verdict for c in row.cells.values()}))


def survived_only_by_states(row: Row) -> bool:
    """A survivor whose only trace in the models is a moved state count (pure)."""
    return not row.killed and any(c.verdict == SURVIVED and c.detail.startswith("states ") for c in row.cells.values())
