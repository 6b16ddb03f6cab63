"""scripts/check_traces.sh on seeded simulations of all three systems, as CI runs it: every
trace accepted and none skipped (a skip fails unless its feature is allowed, and none is here);
and on record_traces.sh's directory, where it allows the two features the engine tests' recorder
may claim, by name."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.tlc


def lp(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "conformance.cli", *args], check=True, capture_output=True, timeout=600)


def test_simulation_traces_are_all_accepted_and_none_skipped(tmp_path: Path) -> None:
    lp("engine", "sim", "--seeds", "2", "--workflows", "3", "--trace-dir", str(tmp_path / "engine-sim"))
    lp("workqueue", "sim", "--system", "workqueue", "--seeds", "2", "--trace-dir", str(tmp_path / "workqueue-sim"))
    lp("workqueue", "sim", "--system", "command", "--seeds", "2", "--trace-dir", str(tmp_path / "command-sim"))
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "check_traces.sh"), "--no-coverage", str(tmp_path)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = next(ln for ln in proc.stdout.splitlines() if "in-scope runs accepted" in ln)
    n = int(summary.split()[0])
    assert n >= 10 and summary == f"{n} of {n} in-scope runs accepted, 0 skipped", summary


def test_on_record_traces_directory_it_allows_the_engine_tests_features_by_name(tmp_path: Path) -> None:
    """The script's default: out/traces under its project, skips allowed for direct_calls and
    concurrent_calls (they were allowed by path, --skip-ok, which is gone). A copy of the script
    in a project of its own, whose out/traces holds the tests' two kinds of skip; no TLC runs."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "check_traces.sh", tmp_path / "scripts")
    for name in ("traces", "tla"):
        (tmp_path / name).symlink_to(ROOT / name)
    double_run = (ROOT / "traces" / "corpus" / "engine" / "rejected" / "honour-check-off-double-run-two-nodes.ndjson").read_text()
    header, rest = double_run.split("\n", 1)
    for feature in ("direct_calls", "concurrent_calls"):
        trace = tmp_path / "out" / "traces" / "tests" / f"{feature}.ndjson"
        trace.parent.mkdir(parents=True, exist_ok=True)
        trace.write_text(json.dumps({**json.loads(header), "features": [feature]}) + "\n" + rest)
    env = {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(["bash", str(tmp_path / "scripts" / "check_traces.sh")], capture_output=True, text=True,
                          timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "skips: 2 allowed (concurrent_calls 1, direct_calls 1), 0 failed" in proc.stdout
