"""The cfg language as TLC 2.15 reads it (`conformance/models/cfg.py`), and model files that reuse
a cfg (`cfg:`) or name their module by path: what is read, what is refused and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.errors import ModelFileError
from conformance.models.cfg import (Assignment, CfgSet, CfgString, ModelValueName, Override, format_cfg_value,
                                    parse_cfg, without_sections)
from conformance.models.model import load_model, parse_model
from conformance.models.render import render_model

CFGPROJECT = Path(__file__).parent.parent / "fixtures" / "cfgproject"


def test_every_construct_tlc_reads() -> None:
    cfg = parse_cfg("""\\* a comment line
SPECIFICATION Spec (* a block (* nested *) comment *)
CONSTANTS
  N = 3  Flag = TRUE  Name = "x y"
  Nodes = {n1, n2}  Quorums = {{n1, n2}, {}}  Leader = n1  Nil = Nil
  Send <- MCSend  Double <- [Inner] MCDouble  Seven = [Inner] 8
INVARIANTS TypeOK Safe
PROPERTY Live PROPERTIES Other
CONSTRAINT Small CONSTRAINTS Smaller
ACTION_CONSTRAINT Step
SYMMETRY Perms
VIEW Shown
""")
    assert cfg.specification == "Spec" and cfg.init is None
    assert cfg.constants == [
        Assignment("N", 3), Assignment("Flag", True), Assignment("Name", CfgString('"x y"')),
        Assignment("Nodes", CfgSet((ModelValueName("n1"), ModelValueName("n2")))),
        Assignment("Quorums", CfgSet((CfgSet((ModelValueName("n1"), ModelValueName("n2"))), CfgSet(())))),
        Assignment("Leader", ModelValueName("n1")), Assignment("Nil", ModelValueName("Nil")),
        Override("Send", "MCSend"), Override("Double", "MCDouble", "Inner"), Assignment("Seven", 8, "Inner"),
    ]
    assert cfg.invariants == ["TypeOK", "Safe"] and cfg.properties == ["Live", "Other"]
    assert cfg.constraints == ["Small", "Smaller"] and cfg.action_constraints == ["Step"]
    assert (cfg.symmetry, cfg.view) == ("Perms", "Shown")


def test_a_module_name_may_start_with_a_digit_and_init_next_go_together() -> None:
    assert parse_cfg("INIT Init NEXT Next CONSTANT RM = {r1}").next == "Next"
    with pytest.raises(ModelFileError, match="INIT without NEXT"):
        parse_cfg("INIT Init")


@pytest.mark.parametrize(("text", "says"), [
    ("CONSTANT N = -1", "no negative numbers"),
    ("CONSTANT Send(_, _) <- MCSend", "override the operator constant by name"),
    ("CONSTANT N 3", "expected `=` or `<-`"),
    ("CONSTANT S = {a, b", "the cfg ends"),
    ("CONSTANT S = {a b}", "expected `,` or `}`"),
    ("POSTCONDITION Done", "later TLC"),
    ("ALIAS Shown", "later TLC"),
    ("CHECK_DEADLOCK MAYBE", "TRUE or FALSE"),
    ("INVARIANT", "names nothing"),
    ("FROB x", "not a cfg keyword"),
    ("(* never closed", "never closed"),
    ("SPECIFICATION Spec INIT Init NEXT Next", "both SPECIFICATION and INIT"),
    ("CONSTANT S = " + "{" * 40 + "}" * 40, "nested deeper"),
])
def test_what_tlc_would_not_read_is_refused_with_the_line(text: str, says: str) -> None:
    with pytest.raises(ModelFileError, match=says):
        parse_cfg(text)


def test_values_print_as_the_cfg_had_them() -> None:
    text = '{{n1, n2}, {"a", 3, TRUE}}'
    parsed = parse_cfg(f"CONSTANT Q = {text}").constants[0]
    assert isinstance(parsed, Assignment) and format_cfg_value(parsed.value) == text


def test_sections_are_cut_and_the_rest_kept_verbatim() -> None:
    text = "SPECIFICATION Spec\nPROPERTY A B \\* two\nINVARIANT Inv\nCHECK_DEADLOCK FALSE\nPROPERTIES C\n"
    cut = without_sections(text, {"PROPERTY", "PROPERTIES", "CHECK_DEADLOCK"})
    assert cut == "SPECIFICATION Spec\n\nINVARIANT Inv\n\n\n"
    assert parse_cfg(cut).properties == [] and parse_cfg(cut).invariants == ["Inv"]


def _project(tmp_path: Path, cfg: str, model: str, spec: str = "") -> Path:
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "MC.tla").write_text(spec or (
        "---- MODULE MC ----\nEXTENDS Naturals\nCONSTANT N, Send(_, _)\nVARIABLE x\nLimit == 3\n"
        "Init == x = 0\nNext == x < Limit /\\ x' = Send(x, N)\nSpec == Init /\\ [][Next]_x\nInv == x < 9\n"
        "Live == <>(x = Limit)\nMCSend(a, b) == a + b\n====\n"))
    (tmp_path / "specs" / "MC.cfg").write_text(cfg)
    (tmp_path / "m.yaml").write_text(model)
    return tmp_path / "m.yaml"


def test_a_cfg_is_used_verbatim_and_the_model_file_adds_checks(tmp_path: Path) -> None:
    cfg = "SPECIFICATION Spec\nCONSTANTS N = 1 Send <- MCSend\nINVARIANT Inv\n"
    m = load_model(_project(tmp_path, cfg, "cfg: specs/MC.cfg\ninvariants: [Inv]\nproperties: [Live]\n"
                            "expect: {verdict: ok}\nwhy: the counter reaches its limit\n"))
    assert m.module == "MC" and m.module_path == (tmp_path / "specs" / "MC.tla").resolve()
    assert m.invariants == ("Inv",) and m.properties == ("Live",)
    rendered = render_model(m)
    assert rendered.cfg.startswith(cfg)
    assert rendered.cfg.endswith("\\* Added by leaseproof from m.yaml:\nPROPERTY Live\n")
    # Checking one temporal property at a time cuts the cfg's own PROPERTY lines, keeps the rest.
    alone = render_model(m, ("Live",), invariants=False)
    assert "INVARIANT" not in alone.cfg and alone.cfg.count("PROPERTY Live") == 1


@pytest.mark.parametrize(("extra", "field", "says"), [
    ("constants: {N: 2}\n", "constants", "comes from the cfg"),
    ("specification: Spec\n", "specification", "comes from the cfg"),
    ("expect: {verdict: violated, property: Nope}\n", "expect.property", "never checked"),
])
def test_a_cfg_model_may_not_give_again_what_the_cfg_gives(tmp_path: Path, extra: str, field: str, says: str) -> None:
    body = "cfg: specs/MC.cfg\n" + extra + ("" if "expect" in extra else "expect: {verdict: ok}\n") + "why: a test model file\n"
    with pytest.raises(ModelFileError, match=f"field {field}: .*{says}"):
        load_model(_project(tmp_path, "SPECIFICATION Spec\nCONSTANTS N = 1 Send <- MCSend\n", body))


def test_a_name_the_module_neither_declares_nor_defines_is_refused_but_a_defined_one_is_not(tmp_path: Path) -> None:
    path = _project(tmp_path, "SPECIFICATION Spec\nCONSTANTS N = 1 Send <- MCSend Limt = 2\n",
                    "cfg: specs/MC.cfg\nexpect: {verdict: ok}\nwhy: a misspelt override\n")
    with pytest.raises(ModelFileError, match="field cfg: MC declares no constant and defines no operator Limt .*did you mean Limit"):
        load_model(path)
    (tmp_path / "specs" / "MC.cfg").write_text("SPECIFICATION Spec\nCONSTANTS N = 1 Send <- MCSend Limit = 2\n")
    assert load_model(path).constants["Limit"].value == 2


def test_a_cfg_with_check_deadlock_runs_with_the_flag_and_says_so(tmp_path: Path) -> None:
    m = load_model(_project(tmp_path, "SPECIFICATION Spec\nCHECK_DEADLOCK FALSE\nCONSTANTS N = 1 Send <- MCSend\n",
                            "cfg: specs/MC.cfg\nexpect: {verdict: ok}\nwhy: a later TLC's cfg\n"))
    assert m.check_deadlock is False and "CHECK_DEADLOCK" not in render_model(m).cfg
    assert any("later TLC's keyword" in n for n in m.notes)


def test_symmetry_with_a_temporal_property_is_a_note_not_a_refusal() -> None:
    m = load_model(CFGPROJECT / "models" / "symmetry_with_property_yaml.yaml", (CFGPROJECT / "tla",))
    assert m.symmetry == "Perms" and m.properties == ("AllVote",)
    assert any("symmetry" in n.lower() for n in m.notes)


def test_the_modules_folder_is_staged_with_its_subfolders_and_java_classes(tmp_path: Path) -> None:
    m = load_model(CFGPROJECT / "models" / "subfolder_module_cfg.yaml", (CFGPROJECT / "tla",))
    assert set(m.spec_files) == {Path("Main.tla"), Path("lib/Helper.tla")} and m.library_dirs == (Path("lib"),)
    (tmp_path / "classes").mkdir()
    (tmp_path / "classes" / "Helper.class").write_bytes(b"\xca\xfe\xba\xbe")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "X.tla").write_text("hidden")
    (tmp_path / "M.tla").write_text("---- MODULE M ----\nSpec == TRUE\n====\n")
    m = parse_model({"module": "M.tla", "expect": {"verdict": "ok"}, "why": "a folder with a class"}, tmp_path / "m.yaml", ())
    assert set(m.spec_files) == {Path("M.tla"), Path("classes/Helper.class")} and m.class_dirs == (Path("classes"),)


def test_an_assume_only_model_renders_no_behaviour_and_may_pin_zero_states() -> None:
    m = load_model(CFGPROJECT / "models" / "assume_only_yaml.yaml", (CFGPROJECT / "tla",))
    assert m.assumptions_only and m.expect.distinct_states == 0
    cfg = render_model(m).cfg
    assert "SPECIFICATION" not in cfg and "INIT" not in cfg and "N = 3" in cfg
    assert load_model(CFGPROJECT / "models" / "assume_only_cfg.yaml", (CFGPROJECT / "tla",)).assumptions_only


def test_yaml_values_render_as_tlc_reads_them(tmp_path: Path) -> None:
    (tmp_path / "V.tla").write_text("---- MODULE V ----\nCONSTANTS A, B, C, D, E\nOp == 1\nSpec == TRUE\n====\n")
    m = parse_model({"module": "V", "expect": {"verdict": "ok"}, "why": "every value kind",
                     "constants": {"A": [["n1", "n2"], [1, {"string": "s"}, True]], "B": {"model_value": "n1"},
                                   "C": {"model_value": True}, "D": {"override": "Def", "module": "Inner"},
                                   "E": {"value": [3], "module": "Inner"}, "Op": {"override": "MCOp"}}},
                    tmp_path / "m.yaml", (tmp_path,))
    lines = render_model(m).cfg.splitlines()
    for want in ['    A = {{n1, n2}, {1, "s", TRUE}}', "    B = n1", "    C = C", "    D <- [Inner] Def",
                 "    E = [Inner] {3}", "    Op <- MCOp"]:
        assert want in lines


@pytest.mark.tlc
def test_tlc_uses_a_java_override_class_beside_the_spec(tmp_path: Path) -> None:
    # A user's Java override (a class named after the module, a static method per operator) is
    # staged with the spec and put on TLC's classpath: with it the invariant holds, without it not.
    import shutil
    import subprocess

    from conformance.check.runner import Tlc, check_model
    from conformance.tlc.locate import find_jar

    javac = shutil.which("javac")
    if javac is None:
        pytest.skip("no javac on PATH to compile the override class (apt-get install openjdk-17-jdk-headless)")
    spec = tmp_path / "spec"
    (spec / "lib").mkdir(parents=True)
    (spec / "lib" / "Slow.tla").write_text("---- MODULE Slow ----\nEXTENDS Naturals\nSlow(n) == n + 1\n====\n")
    (spec / "Main.tla").write_text("---- MODULE Main ----\nEXTENDS Slow\nVARIABLE x\nInit == x = 1\nNext == UNCHANGED x\n"
                                   "Spec == Init /\\ [][Next]_x\nFast == Slow(x) = 100\n====\n")
    (tmp_path / "Slow.java").write_text("import tlc2.value.impl.IntValue;\npublic class Slow {\n"
                                        "  public static IntValue Slow(IntValue n) { return IntValue.gen(100); }\n}\n")
    model = {"module": "spec/Main.tla", "invariants": ["Fast"], "expect": {"verdict": "ok"}, "why": "the override answers 100",
             "workers": 1}
    without = check_model(parse_model(model, tmp_path / "m.yaml", ()), Tlc.locate())
    assert without.kind.value == "violated" and without.property == "Fast"
    subprocess.run([javac, "-cp", str(find_jar()), "-d", str(spec / "classes"), str(tmp_path / "Slow.java")],
                   check=True, capture_output=True, timeout=120)
    with_class = check_model(parse_model(model, tmp_path / "m.yaml", ()), Tlc.locate())
    assert with_class.kind.value == "ok", with_class.summary()
