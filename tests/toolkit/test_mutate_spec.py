"""Spec mutation (`leaseproof mutate --spec`): the operators that edit a TLA+ module, the
catalogue that names edits and models, and the cell a model's verdict makes of a mutant."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.models.model import Expect, Model
from conformance.mutate.catalogue import CatalogueError
from conformance.mutate.matrix import ERROR, KILLED, SURVIVED, TIMEOUT
from conformance.mutate.spec_catalogue import SpecCatalogue, load_spec_catalogues, parse_spec_catalogue
from conformance.mutate.spec_operators import generate
from conformance.mutate.spec_run import budget, spec_cell
from conformance.output.verdict import Kind, Stats, Verdict

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "tests" / "fixtures" / "project"

MODULE = """---- MODULE Slot ----
EXTENDS Naturals
VARIABLES owner, n
Held(t) == owner # 0 /\\ t < n
Take(w) ==
    LET free == ~Held(3) IN
    /\\ free
    /\\ n < 3                 \\* a bound
    /\\ owner' = w
    /\\ n' = n + 1
Drop(w) == /\\ owner = w
           /\\ Reset
Reset == owner' = 0 /\\ UNCHANGED n
Spec == Init /\\ [][Next]_vars
        /\\ WF_vars(Take(1))
Fair ==
    /\\ \\A w \\in {1, 2} :
        /\\ WF_vars(Take(w))
        /\\ WF_vars(Drop(w)
                   /\\ UNCHANGED n)
Inv == n <= 3
Grows == [][n' >= n]_<<owner, n>>
====
"""


def test_the_operators_edit_each_action_once_and_leave_properties_alone() -> None:
    edits = {e.name: e for e in generate(MODULE)}
    assert sorted(edits) == ["drop_change_take_1", "drop_change_take_2", "drop_fairness_fair_1",
                             "drop_fairness_fair_2", "drop_fairness_spec_1", "drop_guard_drop_1", "drop_guard_take_1",
                             "drop_guard_take_2", "flip_compare_held_1", "flip_compare_take_1"]
    for e in edits.values():
        assert MODULE.count(e.find) == 1, e.name  # anchored at its definition's header
    # A LET's definitions come before the list; the comment is no part of the guard's text.
    assert MODULE.replace(edits["drop_guard_take_2"].find, edits["drop_guard_take_2"].replace).count("n < 3") == 0
    assert "/\\ UNCHANGED owner\n" in edits["drop_change_take_1"].replace
    # A conjunct that calls an action (Reset) is a change, not a guard; the invariant, which no
    # action names, and the action property keep their comparisons; the predicate an action
    # uses does not.
    assert edits["drop_guard_drop_1"].what == "/\\ owner = w"
    assert "Inv" not in {e.definition for e in edits.values()}
    # An action property primes variables, but it is a property the models check, not a step.
    assert "Grows" not in {e.definition for e in edits.values()}
    assert edits["flip_compare_held_1"].replace.endswith("t <= n\n")
    # A fairness condition written over two lines goes whole (else the module no longer parses).
    dropped = MODULE.replace(edits["drop_fairness_fair_2"].find, edits["drop_fairness_fair_2"].replace)
    assert "WF_vars(Drop(w)" not in dropped and "UNCHANGED n)" not in dropped


def test_the_operators_can_be_narrowed_to_some_operators_and_actions() -> None:
    edits = generate(MODULE, ("flip_compare",), only={"Take"})
    assert [e.name for e in edits] == ["flip_compare_take_1"]
    assert edits[0].replace.endswith("/\\ n <= 3                 \\* a bound\n")


def _model(verdict: str = "ok", prop: str | None = None) -> Model:
    return Model(name="m", path=Path("m.yaml"), module="M", module_path=Path("M.tla"), expect=Expect(verdict, prop),
                 why="a test")


def _verdict(kind: Kind, prop: str | None = None, states: int | None = 10) -> Verdict:
    return Verdict(kind, Stats(distinct_states=states, seconds=1.5), property=prop, message="boom")


@pytest.mark.parametrize(("model", "verdict", "cell"), [
    (_model(), _verdict(Kind.VIOLATED, "NoStaleCall"), (KILLED, "NoStaleCall")),
    (_model(), _verdict(Kind.DEADLOCK), (KILLED, "deadlock")),
    (_model(), _verdict(Kind.OK), (SURVIVED, "")),
    # A moved state count is shown, and is no kill.
    (_model(), _verdict(Kind.OK, states=12), (SURVIVED, "states 10 -> 12: no property names it")),
    (_model(), _verdict(Kind.TIMEOUT), (TIMEOUT, "ran past its budget (the state space grew)")),
    (_model("violated", "P"), _verdict(Kind.VIOLATED, "P"), (SURVIVED, "P violated, as without the mutant")),
    (_model("violated", "P"), _verdict(Kind.VIOLATED, "Q"), (KILLED, "Q")),
    (_model("violated", "P"), _verdict(Kind.OK), (SURVIVED, "no longer violates P")),
])
def test_a_cell_is_a_kill_only_where_a_property_is_violated(model: Model, verdict: Verdict, cell: tuple) -> None:
    got = spec_cell(model, verdict, 10)
    assert (got.verdict, got.detail) == cell


def test_a_mutants_run_gets_ten_times_its_models_baseline_within_the_models_own_timeout() -> None:
    model = _model()
    assert budget(model, 0.5).timeout == 30.0  # at least half a minute
    assert budget(model, 12.0).timeout == 120.0
    assert budget(model, 1000.0).timeout == model.timeout


def test_a_mutant_that_does_not_parse_is_an_error_not_a_kill() -> None:
    got = spec_cell(_model(), Verdict(Kind.ERROR, Stats(), message="Parse error"), 10)
    assert got.verdict == ERROR and "Parse error" in got.detail


def _catalogue(tmp_path: Path, text: str) -> SpecCatalogue:
    (tmp_path / "tla").mkdir(exist_ok=True)
    (tmp_path / "tla" / "Slot.tla").write_text(MODULE, encoding="utf-8")
    return parse_spec_catalogue(tmp_path / "slot.yaml", text, tmp_path)


@pytest.mark.parametrize(("text", "error"), [
    ("system: slot\nmodels: [a]\n", "no mutant: give mutants, operators, or both"),
    ("system: slot\nmodels: [a]\nsurprise: 1\noperators: {module: Slot}\n", "unknown field(s) ['surprise']"),
    ("system: slot\nmodels: [a]\noperators: {module: Gone}\n", "no module tla/Gone.tla"),
    ("system: slot\nmodels: [a]\noperators: {module: ../Slot.tla}\n", "a path inside the project"),
    ("system: slot\nmodels: [a]\noperators: {module: Slot, use: [drop_all]}\n", "no operator ['drop_all']"),
    ("system: slot\nmodels: [a]\noperators: {module: Slot, equivalent: {drop_guard_gone_1: why}}\n",
     "no generated mutant ['drop_guard_gone_1']"),
    ("system: slot\nmodels: [a]\nmutants: [{name: x, module: Slot, file: tla/Slot.tla, find: a, replace: b,"
     " class: c, breaks: d}]\n", "unknown field 'file'"),
    ("system: slot\nmodels: [a]\nmutants: [{name: x, module: Slot, find: a, replace: b, class: c, breaks: d,"
     " quick: [b]}]\n", "quick"),
    ("system: slot\nmodels: [a]\noperators: {module: Slot}\nmutants: [{name: drop_guard_take_1, module: Slot,"
     " find: a, replace: b, class: c, breaks: d}]\n", "named twice"),
])
def test_a_bad_catalogue_is_an_error_that_names_the_field(tmp_path: Path, text: str, error: str) -> None:
    with pytest.raises(CatalogueError, match=None) as caught:
        _catalogue(tmp_path, text)
    assert error in str(caught.value)


def test_the_catalogues_name_their_models_and_every_mutant_applies() -> None:
    for cat in load_spec_catalogues(ROOT).values():
        for m in cat.mutants:
            m.apply((ROOT / m.file).read_text(encoding="utf-8"))  # MutantError if it no longer applies
        assert all((ROOT / "models").rglob(f"{name}.yaml") for name in cat.models)
        assert any(m.quick for m in cat.mutants), f"{cat.system}: no quick mutant"


@pytest.mark.tlc
@pytest.mark.parametrize("system", sorted(load_spec_catalogues(ROOT)))
def test_each_quick_spec_mutant_is_caught_by_the_models_it_names(system: str) -> None:
    cat = load_spec_catalogues(ROOT)[system].quick()
    proc = subprocess.run([sys.executable, "-m", "conformance.cli", "mutate", "--spec", "--root", str(ROOT), "--quick",
                           "--system", system, "--json"], capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(proc.stdout)
    cells = {(m["mutant"], k): c["verdict"] for m in doc["mutants"] for k, c in m["cells"].items()}
    assert cells == {(m.name, c): "killed" for m in cat.mutants for c in m.quick}
    # The kill names the property that caught it.
    assert all(c["detail"] for m in doc["mutants"] for c in m["cells"].values())


@pytest.mark.tlc
def test_a_users_spec_is_mutated_and_a_survivor_fails_the_run(tmp_path: Path) -> None:
    # The fixture project's Counter, checked with its `passing` model (Limit 3, Cap 5): a step
    # guard loosened past the cap is caught by BelowCap; a step that forgets who stepped moves
    # the state count only, which no property names: a survivor, and the run fails.
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    (project / "mutants" / "specs").mkdir(parents=True)
    (project / "mutants" / "specs" / "counter.yaml").write_text(
        "system: counter\nmodels: [passing]\nmutants:\n"
        "  - {name: runs_past_limit, module: Counter, find: 'x < Limit', replace: 'x < Limit + 5',"
        " class: a bound dropped, breaks: the counter climbs past its limit, quick: [passing]}\n"
        "  - {name: forgets_who, module: Counter, find: \"/\\\\ seen' = [seen EXCEPT ![n] = x + 1]\","
        " replace: '/\\ UNCHANGED seen', class: a change dropped, breaks: the step is not recorded}\n",
        encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "conformance.cli", "mutate", "--spec", "--root", str(project), "--json"],
                          capture_output=True, text=True, timeout=600, cwd=project)
    doc = json.loads(proc.stdout)
    cells = {m["mutant"]: m["cells"]["passing"] for m in doc["mutants"]}
    assert cells["runs_past_limit"]["verdict"] == "killed" and cells["runs_past_limit"]["detail"] == "BelowCap", cells
    assert cells["forgets_who"]["verdict"] == "survived", cells
    assert cells["forgets_who"]["detail"].startswith("states 13 -> "), cells
    assert proc.returncode == 1 and doc["survivors"] == ["counter/forgets_who"]


def _user_project(tmp_path: Path, catalogue: str) -> Path:
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    (project / "mutants" / "specs").mkdir(parents=True)
    (project / "mutants" / "specs" / "counter.yaml").write_text(catalogue, encoding="utf-8")
    return project


def _mutate(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli", "mutate", "--spec", "--root", str(project), "--json"],
                          capture_output=True, text=True, timeout=600, cwd=project)


MUTANT = ("mutants:\n  - {name: runs_past_limit, module: Counter, find: 'x < Limit', replace: 'x < Limit + 5',"
          " class: a bound dropped, breaks: the counter climbs past its limit}\n")


def test_a_catalogue_naming_a_model_that_is_not_there_is_a_usage_error(tmp_path: Path) -> None:
    proc = _mutate(_user_project(tmp_path, "system: counter\nmodels: [passing, gone]\n" + MUTANT))
    assert proc.returncode == 2 and "gone" in proc.stderr, proc.stderr[-2000:]


@pytest.mark.tlc
def test_a_model_that_fails_on_the_unmutated_spec_makes_its_cells_errors(tmp_path: Path) -> None:
    # Its pinned count is wrong: it cannot catch anything, and no cell of it may read as a kill.
    project = _user_project(tmp_path, "system: counter\nmodels: [passing]\n" + MUTANT)
    model = project / "models" / "passing.yaml"
    model.write_text(model.read_text(encoding="utf-8").replace("distinct_states: 13", "distinct_states: 14"),
                     encoding="utf-8")
    proc = _mutate(project)
    doc = json.loads(proc.stdout)
    (cell,) = [m["cells"]["passing"] for m in doc["mutants"]]
    assert cell["verdict"] == "error" and "fails on the unmutated spec" in cell["detail"], cell
    assert proc.returncode == 1 and doc["errors"]


@pytest.mark.tlc
def test_first_kill_stops_a_killed_mutants_row_and_runs_a_survivor_on_every_model(tmp_path: Path) -> None:
    # Two copies of `passing`: runs_past_limit is killed by the first to run and the second has
    # no cell; forgets_who survives, so it runs on both (a survivor is proven on every model).
    catalogue = ("system: counter\nmodels: [passing, passing_again]\n" + MUTANT +
                 "  - {name: forgets_who, module: Counter, find: \"/\\\\ seen' = [seen EXCEPT ![n] = x + 1]\","
                 " replace: '/\\ UNCHANGED seen', class: a change dropped, breaks: the step is not recorded}\n")
    project = _user_project(tmp_path, catalogue)
    models = project / "models"
    (models / "passing_again.yaml").write_text((models / "passing.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "conformance.cli", "mutate", "--spec", "--first-kill", "--root",
                           str(project), "--json"], capture_output=True, text=True, timeout=600, cwd=project)
    doc = json.loads(proc.stdout)
    cells = {m["mutant"]: m["cells"] for m in doc["mutants"]}
    assert [c["verdict"] for c in cells["runs_past_limit"].values()] == ["killed"], cells
    assert sorted(cells["forgets_who"]) == ["passing", "passing_again"], cells
    assert all(c["verdict"] == "survived" for c in cells["forgets_who"].values()), cells
    assert proc.returncode == 1 and doc["survivors"] == ["counter/forgets_who"]
