"""The `traces` check of each mutant catalogue (mutants/*.yaml) fails when a simulation's own
monitors fail, not only when the trace check does: a sim exits 1 on a double run, and that run
used to be discarded (`>/dev/null;`), its status with it.

The commands run as the catalogue gives them, with a stand-in for `{python}` that logs each call
and exits as told: no simulation or TLC runs, so every command of both catalogues is cheap.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from conformance.mutate.catalogue import Check, load_catalogues

ROOT = Path(__file__).resolve().parents[2]
CHECKS = [(system, variant) for system in sorted(load_catalogues(ROOT)) for variant in ("run", "quick")]

# $1 -m, $2 conformance.cli, $3 the command (engine, workqueue, traces), $4 its sub-command.
STAND_IN = """#!/usr/bin/env bash
echo "$*" >> "$CALLS"
if [ "$4" = sim ]; then echo "seed 0: 1 overlapping"; exit "$SIM_STATUS"; fi
exit "$CHECK_STATUS"
"""


def traces_check(system: str, variant: str) -> Check:
    check = load_catalogues(ROOT)[system].checks["traces"]
    return check.quick_variant() if variant == "quick" else check


def run(check: Check, tmp_path: Path, sim: int, trace_check: int) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    python = tmp_path / "python"
    python.write_text(STAND_IN)
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    calls = tmp_path / "calls.txt"
    calls.unlink(missing_ok=True)
    env = {**os.environ, "CALLS": str(calls), "SIM_STATUS": str(sim), "CHECK_STATUS": str(trace_check)}
    proc = subprocess.run(check.argv(str(python), tmp_path / "out"), cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60)
    return proc, calls.read_text().splitlines()


@pytest.mark.parametrize(("system", "variant"), CHECKS)
def test_a_failing_simulation_fails_the_traces_check(system: str, variant: str, tmp_path: Path) -> None:
    check = traces_check(system, variant)
    passed, calls = run(check, tmp_path, sim=0, trace_check=0)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    sims = [c for c in calls if c.split()[3:4] == ["sim"]]
    assert len(sims) >= 2 and calls[-1].startswith("-m conformance.cli traces check")
    assert passed.stdout == ""  # a sim that passes says nothing, as before

    failed, calls_after = run(check, tmp_path, sim=1, trace_check=0)
    assert failed.returncode != 0
    assert calls_after == calls  # every sim and the trace check still ran
    said = [ln for ln in failed.stdout.splitlines() if ln.startswith("FAILED ")]
    assert said == [f"FAILED (the simulation's own monitors, exit 1): {c.split(maxsplit=2)[2]}" for c in sims]
    assert "seed 0: 1 overlapping" in failed.stdout  # the sim's own report, kept for the matrix's detail

    rejected, _ = run(check, tmp_path, sim=0, trace_check=1)
    assert rejected.returncode != 0
