"""Every claimed property needs a calibration that violated it (pure, and through the CLI)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.check.compare import outcome
from conformance.check.witness import unwitnessed, witnesses
from conformance.models.model import Expect, load_model
from conformance.output.verdict import Kind, PropertyKind, Stats, Verdict

PROJECT = Path(__file__).parent.parent / "fixtures" / "project"


def model(name: str, expect: Expect, invariants: tuple[str, ...] = ("TypeOK", "BelowCap")):  # type: ignore[no-untyped-def]
    base = load_model(PROJECT / "models" / "passing.yaml", (PROJECT / "tla",))
    return dataclasses.replace(base, name=name, expect=expect, invariants=invariants, properties=())


def test_a_claim_is_witnessed_only_by_a_calibration_that_violated_it() -> None:
    ok = Verdict(Kind.OK, Stats(13, 20, 4))
    broke = Verdict(Kind.VIOLATED, Stats(3, 3, 3), property="BelowCap", property_kind=PropertyKind.INVARIANT)
    runs = [outcome(model("holds", Expect("ok")), ok),
            outcome(model("calibration", Expect("violated", "BelowCap")), broke)]
    ws = {w.property: w for w in witnesses(runs)}
    assert ws["BelowCap"].witnesses == ("calibration",) and ws["BelowCap"].claimed_by == ("holds",)
    assert [w.property for w in unwitnessed(list(ws.values()))] == ["TypeOK"]
    # A calibration that did not fail as expected witnesses nothing, and is named as such.
    lazy = [runs[0], outcome(model("calibration", Expect("violated", "BelowCap")), ok)]
    w = next(w for w in witnesses(lazy) if w.property == "BelowCap")
    assert not w.witnessed and w.failed_witnesses == ("calibration",)
    # Only what some model claims needs a witness: a reachability probe's property does not.
    assert witnesses([outcome(model("probe", Expect("violated", "BelowCap")), broke)]) == []


def leaseproof(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.tlc
def test_strict_fails_on_an_unwitnessed_property() -> None:
    # `passing` claims TypeOK, BelowCap and Reaches; `invariant` witnesses BelowCap only.
    plain = leaseproof("check", "--root", str(PROJECT), "passing", "invariant")
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "2 of 3 claimed properties unwitnessed" in plain.stdout and "Counter Reaches, Counter TypeOK" in plain.stdout
    strict = leaseproof("check", "--root", str(PROJECT), "--strict", "--json", "passing", "invariant")
    assert strict.returncode == 1
    report = json.loads(strict.stdout)
    assert report["passed"] is False
    assert {w["property"]: w["witnesses"] for w in report["witnesses"]} == {"BelowCap": ["invariant"], "Reaches": [], "TypeOK": []}


def test_a_calibration_left_out_of_a_partial_run_is_named_not_run_not_missing() -> None:
    ok = Verdict(Kind.OK, Stats(13, 20, 4))
    holds = model("holds", Expect("ok"))
    calibration = model("calibration", Expect("violated", "BelowCap"))
    w = next(w for w in witnesses([outcome(holds, ok)], [holds, calibration]) if w.property == "BelowCap")
    assert not w.witnessed and w.not_run == ("calibration",) and not w.missing
    # TypeOK has no calibration anywhere in the suite: missing, partial run or not.
    assert [w.property for w in unwitnessed(witnesses([outcome(holds, ok)], [holds, calibration]))] == ["TypeOK"]
    # A calibration that ran and did not fail is missing even when another was left out.
    lazy = witnesses([outcome(holds, ok), outcome(calibration, ok)], [holds, calibration, model("other", Expect("violated", "BelowCap"))])
    assert next(w for w in lazy if w.property == "BelowCap").missing


@pytest.mark.tlc
def test_strict_does_not_count_a_left_out_calibration_against_a_partial_run() -> None:
    # `invariant` (which witnesses BelowCap) is not in this run, but it is in the suite.
    strict = leaseproof("check", "--root", str(PROJECT), "--strict", "--json", "passing")
    report = json.loads(strict.stdout)
    below = next(w for w in report["witnesses"] if w["property"] == "BelowCap")
    assert below["not_run"] == ["invariant"] and below["unwitnessed"] is False
    assert {w["property"] for w in report["witnesses"] if w["unwitnessed"]} == {"Reaches", "TypeOK"}
    assert strict.returncode == 1  # TypeOK and Reaches still have no calibration anywhere


@pytest.mark.tlc
def test_a_model_file_that_does_not_load_does_not_stop_a_partial_run(tmp_path: Path) -> None:
    # The witnesses of a partial run read every model file; one that does not load is left out
    # of them (it is reported when it is selected), and the run's own verdicts stand.
    import shutil

    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    (project / "models" / "broken.yaml").write_text("name: broken\nmodule: [not, a, name\n", encoding="utf-8")
    run = leaseproof("check", "--root", str(project), "--json", "passing", "invariant")
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    assert {m["name"] for m in report["models"]} == {"passing", "invariant"}
    selected = leaseproof("check", "--root", str(project), "broken")
    assert selected.returncode == 1 and "broken.yaml: not valid YAML" in selected.stdout, selected.stdout + selected.stderr
