"""A user's own threaded system under the controlled scheduler: the fixture project's job lease
(tests/fixtures/project) driven by two worker threads (its interleavings.py, as
docs/your-own-system.md section 6 shows), every schedule's trace checked against its own trace
spec (TraceJobLease.tla)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conformance.interleave.explore import explore

PROJECT = Path(__file__).resolve().parents[1] / "fixtures" / "project"
pytestmark = pytest.mark.tlc


@pytest.fixture
def lease(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.syspath_prepend(str(PROJECT))
    import interleavings
    return interleavings


def test_the_job_lease_s_two_threads_pass_every_explored_schedule(lease, tmp_path: Path) -> None:
    from conformance.interleave.validate import trace_validator

    x = explore(lease.two_workers, strategy="pct", runs=15, trace_dir=tmp_path, validate=trace_validator(PROJECT))
    assert x.ok, [o.failure.describe() for o in x.failed]  # type: ignore[union-attr]
    events = [line for o in x.outcomes for t in o.traces for line in t.read_text().splitlines()]
    # Not vacuous: w1's pause let w2 take the slot over, and w1's late renewal was refused.
    assert any('"op": "renew"' in e and '"outcome": "lost"' in e and '"node": "w1"' in e for e in events)


def test_a_renewal_without_the_owner_check_is_rejected_by_the_trace_spec(lease, tmp_path: Path) -> None:
    from conformance.interleave.validate import trace_validator

    x = explore(lease.two_workers_renewing_without_owner_check, strategy="random", runs=5, trace_dir=tmp_path,
                validate=trace_validator(PROJECT))
    assert x.failed and x.failed[0].failure.kind == "trace"  # type: ignore[union-attr]
    assert "rejected" in x.failed[0].failure.message  # type: ignore[union-attr]


def test_the_command_line_explores_it_from_the_project_folder(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "conformance.cli", "interleave", "interleavings:two_workers_renewing_without_owner_check",
                           "--root", ".", "--runs", "3", "--trace-dir", str(tmp_path)],
                          capture_output=True, text=True, cwd=PROJECT, timeout=600,
                          env={**__import__("os").environ, "PYTHONPATH": f"{PROJECT}:{Path(__file__).resolve().parents[2]}"})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAILED schedule 0" in proc.stdout and "rejected" in proc.stdout
    assert "replay: leaseproof interleave interleavings:two_workers_renewing_without_owner_check --strategy random --seed 0 --runs 1" in proc.stdout
