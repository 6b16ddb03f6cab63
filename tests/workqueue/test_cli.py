"""`leaseproof workqueue run`: a short run on the real Redis, and a clear one-line error when
Redis is unreachable."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conformance.cli import main
from impl.workqueue import analysis, recording

from .conftest import validate_trace


def test_unreachable_redis_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["workqueue", "run", "--redis", "redis://127.0.0.1:1/0", "--commands", "2",
               "--trace-dir", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1
    assert err.startswith("leaseproof: error: Redis at redis://127.0.0.1:1/0 does not answer")
    assert "Traceback" not in err


def test_a_simulation_on_an_unreachable_redis_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["workqueue", "sim", "--redis", "redis://127.0.0.1:1/0", "--seeds", "1", "--trace-dir", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("leaseproof: error: Redis at redis://127.0.0.1:1/0 does not answer")


def test_unknown_gate_is_a_user_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["workqueue", "run", "--gate-off", "no_such_gate", "--trace-dir", str(tmp_path)])
    assert rc == 2 and "unknown gate" in capsys.readouterr().err


@pytest.mark.redis
def test_run_two_consumer_processes(redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["workqueue", "run", "--consumers", "2", "--commands", "12", "--duplicates", "6", "--redis", redis_url,
               "--trace-dir", str(tmp_path), "--json", "--timeout", "30"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0, out
    assert out["commands_done"] == 12 and out["terminal_changes"] == 0
    assert out["duplicate_invocations"] <= out["lapses_injected"]  # each after a stall let a lease lapse
    assert out["external_calls"]["min"] >= 1
    commands = validate_trace(Path(out["trace"]))
    assert {e["op"] for e in commands} >= {"submit_state", "offer", "receive_new", "guard_take", "put_if_owner",
                                           "external_call", "guard_release", "ack"}
    assert all("cmd" in e for e in commands if e["op"] not in recording.LINE_OPS)
    assert analysis.command_order_problems(commands) == []
    events = validate_trace(Path(out["queue_trace"]))
    assert {e["node"] for e in events if e["op"] == "invoke_start"} <= {"consumer-1", "consumer-2"}
    assert analysis.order_problems(events) == []


@pytest.mark.redis
def test_run_with_the_attempt_guard_off_fails(redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The calibration: without the guard, duplicate submissions call the external system
    twice and overwrite terminal states, and the run says so (exit 1)."""
    rc = main(["workqueue", "run", "--consumers", "2", "--commands", "20", "--duplicates", "20", "--redis", redis_url,
               "--trace-dir", str(tmp_path), "--json", "--timeout", "30", "--gate-off", "attempt_guard"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1 and not out["ok"]
    assert out["external_calls"]["unexplained_repeats"] > 0


@pytest.mark.redis
@pytest.mark.tlc
def test_a_two_process_run_meets_stale_attempts_with_live_ones_and_its_traces_are_accepted(
        redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each consumer process stalls twice until its peer holds the command (impl/workqueue/chaos.py),
    and lags its heartbeat once until it reclaims its own entry: so every run shows, by itself,
    what the coverage guard asks of both systems (stale writes, renewals and releases refused
    while the peer holds the guard or the entry; a self-reclaim dropped), and is accepted."""
    from conformance.check.runner import Tlc
    from conformance.traces.check import check_traces
    from conformance.traces.coverage import coverage
    from conformance.traces.read import read_trace_file
    from conformance.traces.system import load_systems
    from conformance.traces.trace import TraceKind

    # With LEASEPROOF_TRACE_DIR set (scripts/record_traces.sh) its traces are kept there: the
    # tests' share of the coverage guard's stale writes and renewals.
    out_dir = Path(os.environ.get("LEASEPROOF_TRACE_DIR") or tmp_path) / "command-run"
    rc = main(["workqueue", "run", "--consumers", "2", "--commands", "30", "--redis", redis_url,
               "--trace-dir", str(out_dir), "--json", "--timeout", "60"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0, out
    assert out["takeovers_met"] == 4 and out["duplicates_dropped"] >= 1, out
    root = Path(__file__).resolve().parents[2]
    systems = load_systems(root)
    traces = [read_trace_file(Path(out["trace"])), read_trace_file(Path(out["queue_trace"]))]
    verdicts = check_traces(traces, systems, Tlc.locate())
    assert [v.kind for v in verdicts] == [TraceKind.ACCEPTED] * 2, [v.describe() for v in verdicts]
    for t in traces:
        cov = coverage(systems[t.system], [t])
        assert cov.missing == [], (t.system, cov.missing)
