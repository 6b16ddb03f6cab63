"""The project's own model suite: every model file is valid, and (with `-m slow`) the quick subset
gives its expected verdicts with real TLC (the whole suite runs in `scripts/check.sh`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.models.discover import model_files
from conformance.models.model import load_model

ROOT = Path(__file__).resolve().parents[2]
MODELS = model_files(ROOT / "models")


def test_there_are_models() -> None:
    assert MODELS, "no model files under models/"


@pytest.mark.parametrize("path", MODELS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_model_file_is_valid(path: Path) -> None:
    model = load_model(path, (ROOT / "tla",))
    assert model.name == path.stem, "a model's name is its file name"


@pytest.mark.parametrize("system", sorted({p.parent.name for p in MODELS}))
def test_each_system_has_passing_and_calibration_models(system: str) -> None:
    verdicts = {load_model(p, (ROOT / "tla",)).expect.verdict for p in MODELS if p.parent.name == system}
    assert "ok" in verdicts, f"{system}: no model of the fixed design that must pass"
    assert "violated" in verdicts, f"{system}: no calibration model that must fail"


# Every model, the quick ones among them, runs in `scripts/check.sh` (the main job, which CI runs
# after the tests): here, in the default run, it would be the same 5 minutes twice.
@pytest.mark.slow
@pytest.mark.tlc
def test_quick_models_give_their_expected_verdicts() -> None:
    proc = subprocess.run([sys.executable, "-m", "conformance.cli", "check", "--root", str(ROOT), "--quick", "--json"],
                          capture_output=True, text=True, timeout=600)
    assert proc.stdout, proc.stderr
    report = json.loads(proc.stdout)
    failed = {m["name"]: m["mismatches"] for m in report["models"] if m["result"] != "PASS"}
    assert not failed, failed
    assert proc.returncode == 0
    systems = {Path(m["file"]).parent.name for m in report["models"]}
    assert systems >= {p.parent.name for p in MODELS}, "every system needs at least one quick model"
