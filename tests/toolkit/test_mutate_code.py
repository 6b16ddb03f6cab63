"""`leaseproof mutate` on a toy project (tests/fixtures/mutate): catalogues are validated, each
mutant runs in a scratch copy (never the work tree), and every verdict of the kill matrix shows."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.mutate import matrix
from conformance.mutate.catalogue import CatalogueError, MutantError, parse_catalogue

ROOT = Path(__file__).resolve().parents[2]
TOY = ROOT / "tests" / "fixtures" / "mutate"

GOOD = """
system: toy
checks:
  tests: {run: ["{python}", check.py]}
mutants:
  - {name: m1, file: a.py, find: "x <= y", replace: "x < y", breaks: b, class: c}
"""


def mutate(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli", "mutate", "--root", str(root), *args],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)


def verdicts(out: str) -> dict[str, dict[str, str]]:
    doc = json.loads(out)
    return {m["mutant"]: {k: c["verdict"] for k, c in m["cells"].items()} for m in doc["mutants"]}


@pytest.mark.parametrize(("edit", "message"), [
    (lambda t: t.replace("system: toy", "system: Toy!"), "system"),
    (lambda t: t.replace("system: toy", 'system: "toy\\n"'), "system"),  # `$` would let a final line feed through
    (lambda t: t.replace("name: m1", 'name: "m1\\n"'), "name"),
    (lambda t: t.replace("tests: {run", '"tests\\n": {run'), "checks"),
    (lambda t: t.replace("class: c}", "class: c, extra: 1}"), "unknown field"),
    (lambda t: t.replace("file: a.py", "file: ../a.py"), "inside the project"),
    (lambda t: t.replace("replace: \"x < y\"", "replace: \"x <= y\""), "the same text"),
    (lambda t: t.replace("class: c}", "class: c, blind: {nope: why}}"), "no check"),
    (lambda t: t + "  - {name: m1, file: a.py, find: q, replace: r, breaks: b, class: c}\n", "named twice"),
    (lambda t: t.replace("{run: [\"{python}\", check.py]}", "{run: []}"), "argv"),
    (lambda t: t.replace("{run: [\"{python}\", check.py]}", "{run: [x], timeout_s: -1}"), "timeout_s"),
    (lambda t: "mutants: [", "not valid YAML"),
    (lambda t: t.replace("class: c}", "class: c, quick: [nope]}"), "no check"),
    (lambda t: t.replace("class: c}", "class: c, quick: yes please}"), "quick"),
    (lambda t: t.replace("class: c}", "class: c, quick: [tests], blind: {tests: why}}"), "blind"),
    (lambda t: t.replace("class: c}", "class: c, quick: true, equivalent: why}"), "equivalent"),
])
def test_a_bad_catalogue_names_its_field(edit, message: str) -> None:
    with pytest.raises(CatalogueError, match=message):
        parse_catalogue(Path("toy.yaml"), edit(GOOD))


def test_a_mutant_applies_only_where_its_text_occurs_as_often_as_declared() -> None:
    m = parse_catalogue(Path("toy.yaml"), GOOD).mutants[0]
    assert m.apply("if x <= y:") == "if x < y:"
    for text in ("if x < y:", "x <= y or x <= y"):
        with pytest.raises(MutantError, match="occurs"):
            m.apply(text)


def test_the_matrix_shows_every_verdict_and_fails_on_an_error() -> None:
    before = (TOY / "lease.py").read_text()
    proc = mutate(TOY, "--json")
    assert proc.returncode == 1, proc.stderr
    assert verdicts(proc.stdout) == {
        "boundary_off_by_one": {"tests": "killed", "always_passes": "blind"},
        "renewal_moves_too_little": {"tests": "killed", "always_passes": "survived"},
        "gone_from_the_source": {"tests": "error", "always_passes": "error"},
        "docstring_only": {"tests": "equivalent", "always_passes": "equivalent"},
    }
    doc = json.loads(proc.stdout)
    assert doc["rates"] == {"tests": {"killed": 2, "observed": 2}, "always_passes": {"killed": 0, "observed": 1}}
    assert doc["survivors"] == [] and len(doc["errors"]) == 1 and "occurs 0 times" in doc["errors"][0]
    assert "[4/4]" in proc.stderr  # a progress line per mutant
    assert (TOY / "lease.py").read_text() == before  # the work tree is never edited


def test_a_survivor_fails_the_run_and_killed_mutants_pass_it() -> None:
    assert mutate(TOY, "--checks", "always_passes", "--mutant", "renewal_moves_too_little").returncode == 1
    proc = mutate(TOY, "--checks", "tests", "--mutant", "boundary_off_by_one", "--mutant", "renewal_moves_too_little")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "tests: killed 2 of the 2 mutants it ran on (100%)" in proc.stdout


def test_two_runs_give_the_same_verdicts(tmp_path: Path) -> None:
    first = mutate(TOY, "--json").stdout
    earlier = tmp_path / "first.json"
    earlier.write_text(first)
    second = mutate(TOY, "--json", "--compare", str(earlier))
    assert verdicts(first) == verdicts(second.stdout)
    assert json.loads(second.stdout)["compared"]["differences"] == []
    assert json.loads(second.stdout)["compared"]["cells"] == 8


def test_compare_names_each_cell_whose_verdict_differs(tmp_path: Path) -> None:
    doc = json.loads(mutate(TOY, "--json", "--checks", "tests", "--mutant", "boundary_off_by_one").stdout)
    doc["mutants"][0]["cells"]["tests"]["verdict"] = "survived"  # as if the earlier run had missed it
    earlier = tmp_path / "earlier.json"
    earlier.write_text(json.dumps(doc))
    proc = mutate(TOY, "--checks", "tests", "--mutant", "boundary_off_by_one", "--compare", str(earlier))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"DIFFERS lease/boundary_off_by_one tests: survived in {earlier}, killed now" in proc.stdout


@pytest.mark.parametrize(("text", "message"), [
    ("", "Expecting value"),
    ("[1, 2]", "not a kill matrix"),
    ('{"mutants": [{"system": "lease"}]}', "mutant #1"),
    ('{"mutants": [{"system": "lease", "mutant": "m", "cells": {"tests": {"verdict": "passed"}}}]}', "unknown verdict"),
])
def test_an_earlier_run_that_is_no_matrix_is_a_usage_error(tmp_path: Path, text: str, message: str) -> None:
    earlier = tmp_path / "earlier.json"
    earlier.write_text(text)
    proc = mutate(TOY, "--mutant", "boundary_off_by_one", "--compare", str(earlier))
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert "[1/1]" not in proc.stderr  # refused before any check ran


def test_a_missing_earlier_run_is_a_usage_error(tmp_path: Path) -> None:
    proc = mutate(TOY, "--compare", str(tmp_path / "nope.json"))
    assert proc.returncode == 2 and "nope.json" in proc.stderr


def _copy(tmp_path: Path, checks: str) -> Path:
    """The toy project outside git (the copy walks the directory), with other checks."""
    root = tmp_path / "toy"
    shutil.copytree(TOY, root)
    cat = root / "mutants" / "lease.yaml"
    text = cat.read_text()
    head, rest = text.split("mutants:\n", 1)
    cat.write_text(f"system: lease\nchecks:\n{checks}mutants:\n{rest}")
    return root


def test_a_check_that_fails_on_the_unmutated_source_kills_nothing(tmp_path: Path) -> None:
    root = _copy(tmp_path, '  tests: {run: ["{python}", -c, "raise SystemExit(3)"]}\n  always_passes: {run: ["{python}", -c, "pass"]}\n')
    proc = mutate(root, "--json", "--mutant", "boundary_off_by_one", "--checks", "tests")
    assert proc.returncode == 1
    cell = json.loads(proc.stdout)["mutants"][0]["cells"]["tests"]
    assert cell["verdict"] == "error" and "fails on the unmutated source" in cell["detail"]


def test_a_check_past_its_time_is_a_timeout_not_a_kill(tmp_path: Path) -> None:
    hang = "import lease, time; time.sleep(60) if lease.renewed(5, 100) != 105 else None"
    root = _copy(tmp_path, f'  tests: {{run: ["{{python}}", -c, "{hang}"], timeout_s: 3}}\n'
                           '  always_passes: {run: ["{python}", -c, "pass"]}\n')
    proc = mutate(root, "--json", "--mutant", "renewal_moves_too_little", "--checks", "tests")
    assert proc.returncode == 1
    assert verdicts(proc.stdout) == {"renewal_moves_too_little": {"tests": "timeout"}}


def test_the_quick_subset_runs_the_marked_mutants_with_the_quick_commands() -> None:
    proc = mutate(TOY, "--quick", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # `quick: true`: every check not blind to it must kill it there, and only those run.
    assert verdicts(proc.stdout) == {"boundary_off_by_one": {"tests": "killed"}}
    # A mutant not marked quick is not in the subset: selecting only it selects nothing.
    assert mutate(TOY, "--quick", "--mutant", "renewal_moves_too_little").returncode == 2


def test_a_quick_mutant_its_check_does_not_kill_fails_the_subset(tmp_path: Path) -> None:
    # The quick command tests only the boundary: the renewal's mutant, named for it, survives
    # there, though the whole check kills it. The subset must say so, not pass.
    root = tmp_path / "toy"
    shutil.copytree(TOY, root)
    cat = root / "mutants" / "lease.yaml"
    cat.write_text(cat.read_text().replace("    class: a renewal that moves the lease too little\n",
                                           "    class: a renewal that moves the lease too little\n    quick: [tests]\n"))
    proc = mutate(root, "--quick", "--json")
    assert proc.returncode == 1
    out = json.loads(proc.stdout)
    assert out["missed"] == ["lease/renewal_moves_too_little: tests: survived"]
    assert "MISSED lease/renewal_moves_too_little tests" in mutate(root, "--quick").stdout


def test_unknown_names_are_usage_errors() -> None:
    for args in (["--system", "nope"], ["--checks", "nope"], ["--mutant", "nope"]):
        proc = mutate(TOY, *args)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr


def test_the_rates_count_only_the_mutants_a_check_ran_on() -> None:
    rows = [matrix.Row("s", "a", "c", {"t": matrix.Cell("killed"), "u": matrix.Cell("blind")}),
            matrix.Row("s", "b", "c", {"t": matrix.Cell("timeout"), "u": matrix.Cell("survived")}),
            matrix.Row("s", "e", "c", {"t": matrix.Cell("equivalent"), "u": matrix.Cell("equivalent")})]
    assert [(r.check, r.killed, r.observed) for r in matrix.rates(rows, ["t", "u"])] == [("t", 1, 2), ("u", 0, 1)]
    assert [r.mutant for r in matrix.survivors(rows)] == ["b"] and not matrix.ok(rows)


def test_every_mutant_of_the_project_catalogues_applies_to_the_source() -> None:
    # A fix in the source can leave a mutant's text behind; the whole matrix then calls it an
    # error, but only when someone runs it (submitting_after_external_call stopped applying at a
    # fix in commands.py and nobody saw until the next whole run): the default run says so now.
    from conformance.mutate.catalogue import load_catalogues

    for cat in load_catalogues(ROOT).values():
        for m in cat.mutants:
            m.apply((ROOT / m.file).read_text(encoding="utf-8"))


def test_keep_makes_its_folder_as_check_keep_does_and_refuses_one_it_cannot_make(tmp_path: Path) -> None:
    keep = tmp_path / "not" / "there"
    proc = mutate(TOY, "--checks", "always_passes", "--mutant", "boundary_off_by_one", "--keep", str(keep))
    assert "Traceback" not in proc.stderr and proc.returncode in (0, 1), proc.stderr
    assert [p.name[:10] for p in keep.iterdir()] == ["lp-mutate-"]  # the scratch copies, kept there
    (tmp_path / "file").write_text("in the way")
    proc = mutate(TOY, "--checks", "always_passes", "--keep", str(tmp_path / "file" / "sub"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith(f"leaseproof: error: --keep {tmp_path / 'file' / 'sub'}: cannot make the folder")
