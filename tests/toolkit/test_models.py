"""Model files: loading, the errors that name the file and the field, rendering to a cfg."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.errors import ModelFileError, UnknownModel
from conformance.models.discover import select
from conformance.models.model import load_model, parse_model
from conformance.models.render import render_model

PROJECT = Path(__file__).parent.parent / "fixtures" / "project"
TLA = (PROJECT / "tla",)
GOOD: dict[str, Any] = {
    "module": "Counter",
    "constants": {"Limit": 3, "Cap": 5, "Nodes": ["n1", "n2"]},
    "invariants": ["TypeOK", "BelowCap"],
    "expect": {"verdict": "violated", "property": "BelowCap"},
    "why": "A model used by the tests.",
}


def load(tmp_path: Path, data: Any) -> None:
    parse_model(data, tmp_path / "m.yaml", TLA)


def with_(**changes: Any) -> dict[str, Any]:
    return {**GOOD, **changes}


@pytest.mark.parametrize(
    ("data", "field", "says"),
    [
        (with_(expect={"verdict": "okay"}), "expect.verdict", "is not one of"),
        (with_(module="Nope"), "module", "no module Nope.tla"),
        (with_(expect={"verdict": "violated"}), "expect.property", "must name the property"),
        (with_(expect={"verdict": "violated", "property": "Other"}), "expect.property", "never checked"),
        (with_(expect={"verdict": "ok", "property": "BelowCap"}), "expect.property", "only a violated verdict"),
        (with_(expect={"verdict": "deadlock"}, check_deadlock=False), "check_deadlock", "deadlock checking on"),
        (with_(constants={"Limit": 2.5}), "constants.Limit", "is not valid"),
        (with_(timeout=0), "timeout", "less than or equal"),
        (with_(workers="two"), "workers", "is not of type"),
        (with_(invariants="TypeOK"), "invariants", "is not of type"),
        (with_(bogus=1), "(top level)", "Additional properties"),
        (with_(gates={"Limit": True}), "gates.Limit", "also given under constants"),
        (with_(constants={"Limit": -1}), "constants.Limit", "no negative numbers"),
        (with_(constants={"Tag": {"string": 'a"b'}}), "constants.Tag", "cannot hold a double quote"),
        (with_(assumptions_only=True), "invariants", "ASSUME-only"),
        (with_(cfg="nope.cfg"), "cfg", "no cfg file"),
        (with_(init="Init"), "next", "go together"),
        ({k: v for k, v in GOOD.items() if k != "why"}, "(top level)", "'why' is a required property"),
        # Python's `$` matches before a final line feed; JSON Schema's (ECMA-262's) does not.
        (with_(name="inmem_overlap\n"), "name", "does not match"),
        (with_(constants={"Limit\n": 3, "Cap": 5, "Nodes": ["n1", "n2"]}), "constants", "does not match"),
        (with_(gates={"Flag\n": True}), "gates", "does not match"),
        (with_(invariants=["TypeOK\n"]), "invariants.0", "does not match"),
        (with_(expect={"verdict": "violated", "property": "BelowCap\n"}), "expect.property", "does not match"),
    ],
)
def test_invalid_model_names_file_and_field(tmp_path: Path, data: dict[str, Any], field: str, says: str) -> None:
    with pytest.raises(ModelFileError) as err:
        load(tmp_path, data)
    assert str(err.value).startswith(f"{tmp_path / 'm.yaml'}: field {field}: ")
    assert says in str(err.value)


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("module: Counter\nexpect: {verdict: ok\n")
    with pytest.raises(ModelFileError, match=r"bad.yaml: not valid YAML at line \d+"):
        load_model(path, TLA)


def test_missing_and_non_mapping_files(tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match="no such model file"):
        load_model(tmp_path / "absent.yaml", TLA)
    (tmp_path / "list.yaml").write_text("- 1\n")
    with pytest.raises(ModelFileError, match="must be a YAML mapping"):
        load_model(tmp_path / "list.yaml", TLA)


def test_render_cfg_and_wrapper(tmp_path: Path) -> None:
    (tmp_path / "Counter.tla").write_text(
        "---- MODULE Counter ----\nEXTENDS Naturals\nCONSTANTS Limit, Cap,\n  Nodes \\* the nodes\n"
        "CONSTANT Tag, HonourCheck\nVARIABLE x\nInit == x = 0\n====\n")
    m = parse_model(with_(constants={"Limit": {"tla": "1 + 2"}, "Cap": 5, "Nodes": ["n1", "n2"], "Tag": {"string": 'a b'}},
                          gates={"HonourCheck": False}, properties=["Reaches"], constraint="Bound", check_deadlock=False),
                    tmp_path / "m.yaml", TLA)
    r = render_model(m)
    assert r.main == "LP_Counter"
    lines = r.cfg.splitlines()
    for expected in ["SPECIFICATION Spec", "    Limit <- lp_Limit", "    Cap = 5", "    Nodes = {n1, n2}",
                     '    Tag = "a b"', "    HonourCheck = FALSE", "INVARIANT TypeOK", "INVARIANT BelowCap",
                     "PROPERTY Reaches", "CONSTRAINT Bound"]:
        assert expected in lines
    assert "lp_Limit == 1 + 2" in r.extra_modules["LP_Counter.tla"]
    assert "EXTENDS Counter" in r.extra_modules["LP_Counter.tla"]


def test_misspelt_gate_is_refused(tmp_path: Path) -> None:
    # TLC 2.15 would silently ignore the assignment and check the spec with the gate unset.
    with pytest.raises(ModelFileError, match=r"field constants.Limt: Counter declares no constant and defines no operator Limt .*did you mean Limit"):
        load(tmp_path, with_(constants={"Limt": 3, "Cap": 5, "Nodes": ["n1"]}))
    with pytest.raises(ModelFileError, match=r"field gates.HonorCheck: Counter declares no constant and defines no operator HonorCheck"):
        load(tmp_path, with_(gates={"HonorCheck": True}))


def test_declared_constants_follow_extends(tmp_path: Path) -> None:
    from conformance.models.declared import declared_constants

    (tmp_path / "Base.tla").write_text("---- MODULE Base ----\nCONSTANTS A, \\* one\n  B(_, _),\n  \\* a comment line\n\n  D\n(* CONSTANT Hidden *)\nVARIABLE x\n====\n")
    (tmp_path / "MCBase.tla").write_text("---- MODULE MCBase ----\nEXTENDS Base, Naturals\nCONSTANT C\nBound == 3\n====\n")
    assert declared_constants(tmp_path / "MCBase.tla") == {"A", "B", "C", "D"}


def test_render_one_property_at_a_time(tmp_path: Path) -> None:
    m = parse_model(with_(properties=["A", "B"]), tmp_path / "m.yaml", TLA)
    assert "PROPERTY B" in render_model(m, ("B",)).cfg and "PROPERTY A" not in render_model(m, ("B",)).cfg


def test_select_by_name_dir_and_path() -> None:
    models = PROJECT / "models"
    assert [p.stem for p in select(models, ["invariant", "lasso"])] == ["invariant", "lasso"]
    assert select(models, [str(models / "deadlock.yaml")]) == [models / "deadlock.yaml"]
    assert len(select(models, [])) == len(list(models.glob("*.yaml")))


def test_unknown_model_suggests_close_names() -> None:
    with pytest.raises(UnknownModel, match="no model 'invarant'.*did you mean invariant"):
        select(PROJECT / "models", ["invarant"])


def test_every_fixture_model_loads() -> None:
    for path in select(PROJECT / "models", []):
        assert load_model(path, TLA).name == path.stem


def test_assumptions_are_read_whole_or_not_at_all(tmp_path: Path) -> None:
    from conformance.models.declared import assumptions

    (tmp_path / "Base.tla").write_text('---- MODULE Base ----\nCONSTANT B\nASSUME B \\in Nat (* "ASSUME" in a comment *)\n====\n')
    (tmp_path / "M.tla").write_text(
        "---- MODULE M ----\nEXTENDS Base, Naturals\nCONSTANTS C, D\n"
        "ASSUME /\\ C > 0\n       /\\ D \\in {\"ASSUME\", \"x\"}\n\\* a comment line is part of it\n       /\\ C < 9\n"
        "Op == C\n(* ASSUME FALSE, commented out *)\nASSUME D # \"y\"\n====\n")
    found = assumptions(tmp_path / "M.tla")
    assert found == ['ASSUME B \\in Nat (* "ASSUME" in a comment *)',
                     'ASSUME /\\ C > 0\n       /\\ D \\in {"ASSUME", "x"}\n\\* a comment line is part of it\n       /\\ C < 9',
                     'ASSUME D # "y"']
    # What might be read wrongly is not read at all: a named assumption, an indented one, and
    # one whose next line at column 0 could continue it.
    for odd in ("ASSUME Pos == C > 0\n", "  ASSUME C > 0\n", "ASSUME C > 0\n/\\ C < 9\n"):
        (tmp_path / "M.tla").write_text(f"---- MODULE M ----\nEXTENDS Naturals\nCONSTANTS C\n{odd}====\n")
        assert assumptions(tmp_path / "M.tla") is None, odd


def test_a_name_taken_from_the_files_name_is_a_model_name_too(tmp_path: Path) -> None:
    # Files are written under a model's name (NAME.cfg, NAME.out): a line feed in it is refused.
    import yaml

    path = tmp_path / "inmem_overlap\n.yaml"
    path.write_text(yaml.safe_dump(GOOD))
    with pytest.raises(ModelFileError, match=r"field name: 'inmem_overlap\\n' \(the file's name .*is not a model name"):
        load_model(path, TLA)
    (tmp_path / "inmem_overlap.yaml").write_text(yaml.safe_dump(GOOD))
    assert load_model(tmp_path / "inmem_overlap.yaml", TLA).name == "inmem_overlap"
