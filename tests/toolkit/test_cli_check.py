"""`leaseproof check` end to end, as a user runs it: real TLC on the fixture specs, and bad inputs.

The fixture project (tests/fixtures/project) has one model per verdict; one run checks them all.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path
from typing import Any

import pytest

PROJECT = Path(__file__).parent.parent / "fixtures" / "project"


def leaseproof(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "conformance.cli", *args], capture_output=True, text=True,
                          env=full_env, cwd=cwd, timeout=300)


@cache
def fixture_run(tmp: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    junit = Path(tmp) / "junit.xml"
    proc = leaseproof("check", "--root", str(PROJECT), "--json", "--junit", str(junit), "--jobs", "2", "--workers", "1",
                      "--itf", str(Path(tmp) / "cx.itf.json"))
    return proc, json.loads(proc.stdout)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], Path]:
    tmp = tmp_path_factory.mktemp("check")
    proc, report = fixture_run(str(tmp))
    return proc, report, tmp / "junit.xml"


EXPECTED_ACTUAL = {
    "passing": ("ok", "PASS"),
    "expression_constant": ("ok", "PASS"),
    "invariant": ("violated BelowCap", "PASS"),
    "temporal": ("violated EventuallyOn", "PASS"),
    "lasso": ("violated SettlesOn", "PASS"),
    "deadlock": ("deadlock", "PASS"),
    "assertion": ("violated x went past 1", "FAIL"),
    "syntax_error": ("error (parse error)", "FAIL"),
    "semantic_error": ("error (semantic error)", "FAIL"),
    "cfg_error": ("error (cfg error)", "FAIL"),
    "evaluation_error": ("error (evaluation error)", "FAIL"),
    "no_initial_states": ("error (no initial states)", "FAIL"),
    "slow": ("timeout", "FAIL"),
}


@pytest.mark.tlc
def test_each_fixture_gets_its_verdict(run: Any) -> None:
    proc, report, _ = run
    got = {m["name"]: (m["actual"], m["result"]) for m in report["models"]}
    assert got == EXPECTED_ACTUAL
    assert proc.returncode == 1  # some fixtures are errors on purpose
    assert report["passed"] is False
    assert "Traceback" not in proc.stderr


@pytest.mark.tlc
def test_json_carries_the_counterexample_and_figures(run: Any) -> None:
    _, report, _ = run
    inv = next(m for m in report["models"] if m["name"] == "invariant")["verdict"]
    assert inv["kind"] == "violated" and inv["property_kind"] == "invariant"
    # Values are tagged (ITF's encoding): a number, a model value and a function stay apart.
    assert [s["variables"]["x"] for s in inv["counterexample"]["states"]] == [{"#bigint": str(i)} for i in range(4)]
    assert inv["counterexample"]["states"][0]["variables"]["seen"] == {
        "#map": [[{"#unserializable": "n1"}, {"#bigint": "0"}], [{"#unserializable": "n2"}, {"#bigint": "0"}]]}
    assert inv["counterexample"]["states"][1]["action"] == "Step"
    ok = next(m for m in report["models"] if m["name"] == "passing")["verdict"]
    assert (ok["distinct_states"], ok["depth"], ok["tlc_version"]) == (13, 4, "2.15")
    lasso = next(m for m in report["models"] if m["name"] == "lasso")
    assert lasso["verdict"]["counterexample"]["back_action"] is not None  # the loop's closing action
    workers = {m["name"]: (m["workers"], m["one_worker_for_temporal"]) for m in report["models"]}
    assert workers["temporal"] == (1, True) and workers["invariant"] == (1, False)


@pytest.mark.tlc
def test_junit_report(run: Any) -> None:
    _, _, junit = run
    suite = ET.parse(junit).getroot()
    assert suite.get("tests") == str(len(EXPECTED_ACTUAL))
    failed = {c.get("name") for c in suite if c.find("failure") is not None or c.find("error") is not None}
    assert failed == {n for n, (_, r) in EXPECTED_ACTUAL.items() if r == "FAIL"}


@pytest.mark.tlc
def test_all_passing_models_exit_zero() -> None:
    proc = leaseproof("check", "--root", str(PROJECT), "passing", "invariant", "deadlock")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 of 3 models gave their expected verdict" in proc.stdout


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("leaseproof: error: ")
    return lines[0]


def test_missing_java(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path), "JAVA_HOME": ""}
    assert "no `java` on PATH" in one_line_error(leaseproof("check", "--root", str(PROJECT), "passing", env=env))


def test_missing_jar(tmp_path: Path) -> None:
    env = {"TLA2TOOLS_JAR": str(tmp_path / "absent.jar")}
    assert "TLA2TOOLS_JAR is" in one_line_error(leaseproof("check", "--root", str(PROJECT), "passing", env=env))


def test_unknown_model() -> None:
    assert "no model 'pasing'" in one_line_error(leaseproof("check", "--root", str(PROJECT), "pasing"))


def test_each_refused_model_file_has_its_own_row_and_the_others_run(tmp_path: Path) -> None:
    shutil.copytree(PROJECT / "tla", tmp_path / "tla")
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(PROJECT / "models" / "passing.yaml", models / "passing.yaml")
    (models / "bad_verdict.yaml").write_text("module: Counter\nexpect: {verdict: maybe}\nwhy: a broken model file\n")
    (models / "bad_yaml.yaml").write_text("module: Counter\nexpect: {verdict: ok\n")
    (models / "bad_bytes.yaml").write_bytes(b"module: \xff\xfe\n")
    (models / "bad_module.yaml").write_text("module: Nowhere\nexpect: {verdict: ok}\nwhy: names a module that is not there\n")
    proc = leaseproof("check", "--root", str(tmp_path), "--json")
    assert proc.returncode == 1, proc.stderr
    rows = {m["name"]: m for m in json.loads(proc.stdout)["models"]}
    assert rows["passing"]["result"] == "PASS"
    for name, says in [("bad_verdict", "field expect.verdict"), ("bad_yaml", "not valid YAML"),
                       ("bad_bytes", "cannot read"), ("bad_module", "no module Nowhere.tla")]:
        assert rows[name]["result"] == "FAIL" and rows[name]["actual"] == "error (model file refused)"
        assert says in rows[name]["verdict"]["message"], rows[name]


def test_no_models_directory(tmp_path: Path) -> None:
    assert "no models/ directory" in one_line_error(leaseproof("check", "--root", str(tmp_path)))


def test_dry_run_prints_the_tlc_command() -> None:
    proc = leaseproof("check", "--root", str(PROJECT), "--dry-run", "deadlock")
    assert proc.returncode == 0, proc.stderr
    from conformance.check.runner import Tlc
    from conformance.tlc.launcher import launcher

    tlc = Tlc.locate()
    main = launcher(tlc.java, tlc.jar).main  # LocalTLC, or TLC's own where javac is missing
    assert f"{main} -tool -workers" in proc.stdout and "-config deadlock.cfg" in proc.stdout and "Stuck.tla" in proc.stdout
    stock = leaseproof("check", "--root", str(PROJECT), "--dry-run", "deadlock", env={"LEASEPROOF_TLC_MAIN": "stock"})
    assert "tlc2.TLC -tool -workers" in stock.stdout and "LocalTLC" not in stock.stdout, stock.stdout
    temporal = leaseproof("check", "--root", str(PROJECT), "--dry-run", "--workers", "2", "temporal")
    assert "-workers 1 " in temporal.stdout, temporal.stdout  # a temporal property: one worker, whatever -w says


@pytest.mark.tlc
def test_itf_writes_each_counterexample_as_other_tools_read_it(run: Any) -> None:
    from conformance.output.itf import from_itf

    _, report, junit = run
    tmp = junit.parent
    with_cx = sorted(m["name"] for m in report["models"] if m["verdict"]["counterexample"])
    assert sorted(p.name for p in tmp.glob("cx.*.itf.json")) == [f"cx.{n}.itf.json" for n in with_cx]
    inv = json.loads((tmp / "cx.invariant.itf.json").read_text())
    assert inv["#meta"]["format"] == "ITF" and inv["vars"] == ["seen", "x"] and "loop" not in inv
    assert [s["#meta"]["index"] for s in inv["states"]] == [0, 1, 2, 3]
    assert inv["states"][1]["#meta"]["action"] == "Step"
    assert from_itf(inv["states"][3]["x"]) == 3
    lasso = json.loads((tmp / "cx.lasso.itf.json").read_text())
    assert 0 <= lasso["loop"] < len(lasso["states"])  # where the lasso goes back to


def test_the_command_line_starts_without_the_redis_client() -> None:
    # impl.workqueue imported its stores (and redis) at once: a fifth of a second at the start of
    # every command, `traces check` included. They load on first use.
    probe = "import sys; from conformance.cli import build_parser; build_parser(); print('redis' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stdout + done.stderr
    used = "import sys; from impl.workqueue import QueueStore; print('redis' in sys.modules, QueueStore.__name__)"
    assert subprocess.run([sys.executable, "-c", used], capture_output=True, text=True, timeout=120).stdout.split() == ["True", "QueueStore"]


def test_an_unknown_tlc_main_is_a_one_line_error() -> None:
    proc = leaseproof("check", "--root", str(PROJECT), "--dry-run", "passing", env={"LEASEPROOF_TLC_MAIN": "fast"})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "LEASEPROOF_TLC_MAIN is 'fast': use local (the default) or stock" in proc.stderr


def test_an_output_folder_that_cannot_be_made_is_a_one_line_error_before_tlc_runs(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("in the way")
    for option, value in (("--keep", "file"), ("--html", "file/report"), ("--junit", "file/junit.xml")):
        said = one_line_error(leaseproof("check", "--root", str(PROJECT), "passing", option, str(tmp_path / value)))
        assert f"{option} {tmp_path / 'file'}" in said and "cannot make the folder" in said
