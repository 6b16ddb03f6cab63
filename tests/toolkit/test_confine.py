"""Paths a model file names stay inside the project (`conformance/models/confine.py`): a module,
a cfg or a module folder outside the root, by an absolute path, by `../` or through a symlink,
is refused without being read, unless the command allows its folder (`--allow-path DIR`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.errors import ModelFileError
from conformance.models.confine import Confinement, PathNotAllowed
from conformance.models.model import Model, load_model

FIXTURE = Path(__file__).parent.parent / "fixtures" / "project"
COUNTER = (FIXTURE / "tla" / "Counter.tla").read_text()
MODEL = ("constants: {{Limit: 3, Cap: 5, Nodes: [n1, n2]}}\ninvariants: [TypeOK, BelowCap]\n"
         "expect: {{verdict: ok}}\nwhy: a model that names its module by a path\n")


def project(tmp_path: Path) -> tuple[Path, Path]:
    """A project (models/, tla/Counter.tla) and a folder beside it, outside it, holding another
    Counter.tla, a Java class and a cfg whose first word is a secret."""
    root, outside = tmp_path / "proj", tmp_path / "elsewhere"
    (root / "models").mkdir(parents=True)
    (root / "tla").mkdir()
    (root / "tla" / "Counter.tla").write_text(COUNTER)
    (outside / "classes").mkdir(parents=True)
    (outside / "Counter.tla").write_text(COUNTER)
    (outside / "classes" / "Counter.class").write_bytes(b"\xca\xfe\xba\xbe")
    (outside / "secret.cfg").write_text("HUNTER2 is the password\n")
    return root, outside


def model_file(root: Path, name: str, first_line: str) -> Path:
    path = root / "models" / f"{name}.yaml"
    path.write_text(first_line + "\n" + MODEL.format())
    return path


def refusal(path: Path, root: Path, allowed: tuple[Path, ...] = ()) -> str:
    with pytest.raises(PathNotAllowed) as err:
        load_model(path, (root / "tla",), Confinement.project(root, allowed))
    return str(err.value)


def test_a_module_by_absolute_path_outside_the_root_is_refused_naming_field_path_root_and_the_fix(tmp_path: Path) -> None:
    root, outside = project(tmp_path)
    said = refusal(model_file(root, "absolute", f"module: {outside / 'Counter.tla'}"), root)
    assert said.startswith(f"{root / 'models' / 'absolute.yaml'}: field module: the module ")
    assert f"resolves to {outside.resolve() / 'Counter.tla'}, outside the project root {root.resolve()}" in said
    assert f"pass --allow-path {outside.resolve()}" in said


def test_a_module_by_dotdot_outside_the_root_is_refused_and_one_inside_is_not(tmp_path: Path) -> None:
    root, _ = project(tmp_path)
    said = refusal(model_file(root, "dotdot", "module: ../../elsewhere/Counter.tla"), root)
    assert "field module: the module" in said and "outside the project root" in said
    inside = load_model(model_file(root, "inside", "module: ../tla/Counter.tla"), (root / "tla",), Confinement.project(root))
    assert inside.module == "Counter"


def test_a_cfg_outside_the_root_is_refused_before_it_is_read(tmp_path: Path) -> None:
    root, outside = project(tmp_path)
    path = root / "models" / "cfg.yaml"
    path.write_text(f"cfg: {outside / 'secret.cfg'}\nexpect: {{verdict: ok}}\nwhy: a cfg from elsewhere\n")
    said = refusal(path, root)
    assert "field cfg: the cfg" in said and "outside the project root" in said
    assert "HUNTER2" not in said
    # Unconfined, the loader reads it and quotes its first word: what the refusal keeps out.
    with pytest.raises(ModelFileError, match="HUNTER2"):
        load_model(path, (root / "tla",))


def test_a_symlink_inside_the_project_that_points_outside_is_outside(tmp_path: Path) -> None:
    root, outside = project(tmp_path)
    (root / "tla" / "Linked.tla").symlink_to(outside / "Counter.tla")
    said = refusal(model_file(root, "linked_file", "module: ../tla/Linked.tla"), root)
    assert f"resolves to {outside.resolve() / 'Counter.tla'}" in said
    (root / "specs").symlink_to(outside, target_is_directory=True)
    said = refusal(model_file(root, "linked_folder", "module: ../specs/Counter.tla"), root)
    assert "field module: the module" in said and str(outside.resolve()) in said
    (root / "cfgs").symlink_to(outside, target_is_directory=True)
    path = root / "models" / "linked_cfg.yaml"
    path.write_text("cfg: ../cfgs/secret.cfg\nexpect: {verdict: ok}\nwhy: a cfg through a link\n")
    assert "HUNTER2" not in refusal(path, root)


def test_a_module_whose_folder_is_reached_through_a_link_out_and_back_is_refused(tmp_path: Path) -> None:
    # The module file resolves inside, but the folder staged for TLC (every .class under it goes
    # on its classpath) is the one outside.
    root, outside = project(tmp_path)
    (outside / "Back.tla").symlink_to(root / "tla" / "Counter.tla")
    (root / "specs").symlink_to(outside, target_is_directory=True)
    said = refusal(model_file(root, "out_and_back", "module: ../specs/Back.tla"), root)
    assert "field module: the module's folder" in said


def test_allow_path_admits_the_folder_and_its_classes_go_on_the_classpath(tmp_path: Path) -> None:
    from conformance.check.runner import Tlc, invocation
    from conformance.models.render import render_model

    root, outside = project(tmp_path)
    path = model_file(root, "allowed", f"module: {outside / 'Counter.tla'}")
    m = load_model(path, (root / "tla",), Confinement.project(root, (outside,)))
    assert Path("classes/Counter.class") in m.spec_files
    cp = invocation(m, render_model(m), Tlc.locate(), 1, tmp_path / "run").classpath
    assert str(tmp_path / "run" / "classes") in cp  # the staged copy, in the run's own folder


def test_a_class_folder_linked_from_outside_is_never_staged(tmp_path: Path) -> None:
    root, outside = project(tmp_path)
    (root / "tla" / "classes").symlink_to(outside / "classes", target_is_directory=True)
    (root / "tla" / "Linked.class").symlink_to(outside / "classes" / "Counter.class")
    m = load_model(model_file(root, "plain", "module: Counter"), (root / "tla",), Confinement.project(root))
    assert m.class_dirs == () and all(f.suffix == ".tla" for f in m.spec_files)


def test_a_staged_file_can_never_leave_the_modules_folder() -> None:
    with pytest.raises(ValueError, match="under the module's folder"):
        Model(name="m", path=Path("m.yaml"), module="M", module_path=Path("M.tla"), expect=None, why="",  # type: ignore[arg-type]
              spec_files=(Path("../x/Evil.class"),))


def leaseproof(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli", *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})


@pytest.mark.tlc
def test_check_refuses_each_escaping_model_in_its_own_row_runs_the_others_and_exits_1(tmp_path: Path) -> None:
    root, outside = project(tmp_path)
    shutil.copy(FIXTURE / "models" / "passing.yaml", root / "models" / "passing.yaml")
    model_file(root, "absolute", f"module: {outside / 'Counter.tla'}")
    (root / "models" / "linked.yaml").symlink_to(outside / "secret.cfg")  # a model file that is a link out
    proc = leaseproof("check", "--root", str(root), "--json", "-j", "1")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    rows = {m["name"]: m for m in json.loads(proc.stdout)["models"]}
    assert rows["passing"]["result"] == "PASS"
    for name in ("absolute", "linked"):
        assert rows[name]["actual"] == "error (model file refused)", rows[name]
        assert "outside the project root" in rows[name]["verdict"]["message"]
        assert "--allow-path" in rows[name]["verdict"]["message"]
    assert "HUNTER2" not in proc.stdout
    (outside / "classes" / "Counter.class").unlink()  # TLC would load it, and it is no class
    allowed = leaseproof("check", "--root", str(root), "--allow-path", str(outside), "--json", "absolute", "passing")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr


def test_allow_path_must_name_a_folder_and_replay_takes_it_too(tmp_path: Path) -> None:
    proc = leaseproof("check", "--root", str(FIXTURE), "--dry-run", "--allow-path", str(tmp_path / "absent"), "passing")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"--allow-path {tmp_path / 'absent'}: no such directory" in proc.stderr
    from conformance.cli import build_parser

    args = build_parser().parse_args(["replay", "m", "--allow-path", "a", "--allow-path", "b"])
    assert args.allow_path == [Path("a"), Path("b")]
