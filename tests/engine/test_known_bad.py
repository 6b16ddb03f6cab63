"""The known-bad engine traces (`known_bad.py`): recorded from the engine with one bug planted,
re-recorded byte for byte by their recipe, and rejected at the line that shows the bug, naming
the property. The last three end drained, where a caller left unanswered or a signal left
unscheduled is rejected; without their bugs the same simulations leave none."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.check.runner import Tlc
from conformance.traces.check import check_traces
from conformance.traces.read import read_trace_file
from conformance.traces.system import load_systems
from conformance.traces.trace import TraceKind
from impl.engine import model, worker
from impl.engine.node import Node

from .known_bad import CORPUS, RECIPES, ROOT, record

SCHEMA = ROOT / "traces" / "schema"  # this checkout's (see test_trace_budgets.py)


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda r: r.file)
def test_a_recipe_records_its_corpus_file_again_and_restores_the_code(recipe) -> None:
    before = (worker.run_task, model.Task.is_due, Node.start, Node.signal)
    text, _line = record(recipe)
    assert (worker.run_task, model.Task.is_due, Node.start, Node.signal) == before
    assert text == (CORPUS / recipe.file).read_text(encoding="utf-8")


@pytest.mark.tlc
def test_each_known_bad_trace_is_rejected_at_its_line_naming_the_property() -> None:
    paths = [CORPUS / r.file for r in RECIPES]
    items = [read_trace_file(p, SCHEMA) for p in paths]
    verdicts = {v.source: v for v in check_traces(items, load_systems(ROOT), Tlc.locate())}
    for recipe, path in zip(RECIPES, paths):
        v = verdicts[str(path)]
        line = recipe.shows(path.read_text(encoding="utf-8"))
        assert v.kind is TraceKind.REJECTED, v.describe()
        assert v.line == line, v.describe()
        assert recipe.says in v.describe(), v.describe()


def test_without_the_planted_bug_no_fetch_leases_a_row_under_a_lease() -> None:
    """The bug is the planted line's: the same simulations of the real engine never show it."""
    from impl.engine.simulate import simulate

    recipe = next(r for r in RECIPES if r.file == "fetch-under-lease.ndjson")
    for seed in recipe.seeds[:3]:
        run = simulate(seed=seed, max_steps=40_000, **recipe.sim)
        assert [recipe.shows(text) for text in run.traces.values()] == [None] * len(run.traces)


@pytest.mark.parametrize("file", ["caller-left-unanswered.ndjson", "caller-answered-from-conflict.ndjson",
                                  "signal-never-scheduled.ndjson"])
def test_without_the_planted_bug_the_same_seeds_show_nothing(file: str) -> None:
    """The bug is the planted line's: the recipe's simulations, unplanted, never show it (and
    their traces end drained, so the end checks apply)."""
    from impl.engine.simulate import simulate

    recipe = next(r for r in RECIPES if r.file == file)
    for seed in recipe.seeds[:3]:
        run = simulate(seed=seed, max_steps=40_000, **recipe.sim)
        assert run.drained
        assert [recipe.shows(text) for text in run.traces.values()] == [None] * len(run.traces)
