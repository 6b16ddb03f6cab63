"""The engine tests' trace recorder (`recording.py`): headers from the run, features for what
the trace spec does not model. No TLC: the traces are only written and read back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from impl.engine.backend import MemoryBackend
from impl.engine.effects import drive
from impl.engine.model import Gates, ScheduleRequest
from impl.engine.simulate import Faults, simulate

from . import recording
from .helpers import two_nodes


@pytest.fixture
def recorder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A recorder of this test alone, writing under tmp_path."""
    if recording.active() is not None:
        pytest.skip("recording is on for the whole session; this test starts its own recorder")
    monkeypatch.setenv(recording.ENV, str(tmp_path))
    rec = recording.start("tests/engine/x.py::test_y[memory]", monkeypatch)
    assert rec is not None
    yield rec
    recording.stop()


def headers(directory: Path) -> list[dict]:
    return [json.loads(p.read_text().splitlines()[0]) for p in sorted(directory.glob("*.ndjson"))]


def test_a_simulation_is_written_one_trace_per_workflow_with_its_header(recorder, tmp_path: Path) -> None:
    run = simulate(seed=1, workflows=2, faults=Faults(pause=0.01))
    run.sim.crash("n1")  # holds nothing now: no line, and nothing in any header
    recorder.flush()
    heads = headers(tmp_path / "engine-tests")
    assert len(heads) == len(run.traces) == 2
    for head in heads:
        assert head["nodes"] == ["n1", "n2"] and "faults" not in head
        assert "node_crashes" not in head["settings"]
        assert head["gates"] == run.sim.gates.header()
        assert not {"direct_calls", "concurrent_calls"} & set(head.get("features", []))


def test_a_test_that_calls_the_queue_itself_is_marked_direct_calls(recorder, tmp_path: Path) -> None:
    _, n1, _ = two_nodes(MemoryBackend())
    drive(n1.queue.schedule(ScheduleRequest("wf", run_after=0)))
    recorder.flush()
    [head] = headers(tmp_path / "engine-tests")
    assert "direct_calls" in head["features"]


def test_a_run_with_a_protecting_gate_off_goes_apart(recorder, tmp_path: Path) -> None:
    simulate(seed=0, workflows=1, gates=Gates(honour_check=False))
    recorder.flush()
    assert not (tmp_path / "engine-tests").exists()
    assert len(headers(tmp_path.with_name(tmp_path.name + "-gates-off") / "engine-tests-gates-off")) == 1


def test_nodes_with_backends_of_their_own_over_one_store_make_one_trace_per_workflow(recorder, tmp_path: Path) -> None:
    # On SQLite and MariaDB each node has its own backend over the same tables. The recorder
    # once kept a run per backend: every workflow's trace written once per node, each with only
    # the crashes counted on its own node (a crash of n2 missing from n1's copy, which was then
    # rejected at the line the crash explains). Crashes are lines of the store now.
    from impl.engine.urls import node_backends

    backends = node_backends(f"sqlite:///{tmp_path}/store.db", ("n1", "n2"))
    run = simulate(seed=1, workflows=2, node_backends=backends)
    recorder.flush()
    heads = headers(tmp_path / "engine-tests")
    assert sorted(h["run"].rsplit("/", 1)[1] for h in heads) == sorted(i.wf for i in run.items)
