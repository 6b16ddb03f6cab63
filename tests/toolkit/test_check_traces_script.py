"""scripts/check_traces.sh on seeded simulations of all three systems, as CI runs it: every
trace accepted and none skipped (`--fail-on-skip`: a set that should have no skip fails on one)."""

from __future__ import annotations

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
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "check_traces.sh"), "--fail-on-skip", "--no-coverage", str(tmp_path)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = next(ln for ln in proc.stdout.splitlines() if "in-scope runs accepted" in ln)
    n = int(summary.split()[0])
    assert n >= 10 and summary == f"{n} of {n} in-scope runs accepted, 0 skipped", summary
