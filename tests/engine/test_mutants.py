"""The engine mutant catalogue: every mutant changes the traces, and most are seen by the
engine's own monitors. The traces are for a checker to reject (the lead's `traces check`)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import jsonschema
import pytest

from impl.engine.mutants import MUTANTS, by_name, record, run_mutant
from impl.engine.schema import trace_line_schema

SEEDS = range(5)


@functools.cache
def mutant_run(name: str):
    return run_mutant(by_name(name), SEEDS)


@pytest.fixture(scope="module")
def good():
    return run_mutant(None, SEEDS)


def test_the_correct_engine_shows_nothing(good) -> None:
    assert good.overlaps == 0 and good.stranded == 0


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_every_mutant_changes_its_traces(good, mutant) -> None:
    assert mutant_run(mutant.name).traces != good.traces


@pytest.mark.parametrize(
    "name, overlaps, stranded",
    [
        ("copy_on_honoured_lease", True, False),
        ("no_renewal", True, False),
        ("schedule_ignores_leases", True, False),
        ("no_bump", False, True),
        ("remove_ignores_version", False, True),
        ("renew_ignores_version", False, True),
    ],
)
def test_what_the_engine_itself_sees(name: str, overlaps: bool, stranded: bool) -> None:
    run = mutant_run(name)
    assert (run.overlaps > 0, run.stranded > 0) == (overlaps, stranded)


def test_rerun_as_lost_shows_only_in_the_remove_outcomes(good) -> None:
    run = mutant_run("rerun_as_lost")
    outcomes = lambda r: [json.loads(x)["outcome"] for t in r.traces.values() for x in t.splitlines()[1:-1]  # noqa: E731
                          if json.loads(x)["op"] == "remove"]
    assert "rerun" in outcomes(good) and "rerun" not in outcomes(run)


def test_recorded_traces_are_valid_and_name_their_mutant(tmp_path: Path) -> None:
    result, paths = record(by_name("no_bump"), tmp_path, range(2), workflows=4)
    validator = jsonschema.Draft202012Validator(trace_line_schema())
    assert len(paths) == 8 and all(p.parent == tmp_path / "no_bump" for p in paths)
    for p in paths:
        lines = [json.loads(x) for x in p.read_text().splitlines()]
        for line in lines:
            validator.validate(line)
        assert lines[0]["run"].startswith("mutant-no_bump-seed")
        assert not any(f.startswith("mutant") for f in lines[0].get("features", []))
