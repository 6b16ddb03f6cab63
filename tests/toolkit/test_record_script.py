"""scripts/record_traces.sh: a failing step is reported, the others still record, and the
script fails at the end (driven with a stand-in Python, so no real workload runs)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_failing_step_does_not_stop_the_others(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    fake = tmp_path / "python"
    # Fails the integration tests (`-m pytest`); every other step "succeeds" and says so.
    fake.write_text(f"""#!/usr/bin/env bash
echo "$*" >> {calls}
case "$*" in *"-m pytest"*) exit 1 ;; esac
exit 0
""")
    fake.chmod(0o755)
    env = {**os.environ, "PYTHON": str(fake), "CI": "false"}
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "record_traces.sh"), str(tmp_path / "out")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "record_traces.sh: FAILED: the integration tests" in proc.stderr
    assert "record_traces.sh: 1 step(s) failed: the integration tests" in proc.stderr
    ran = calls.read_text()
    # Every later workload still ran.
    for step in ("engine sim --seeds 20 --workflows 8", "engine run --nodes 2 --workflows 200",
                 "workqueue sim --system command", "workqueue run --consumers 2"):
        assert step in ran, (step, ran)
