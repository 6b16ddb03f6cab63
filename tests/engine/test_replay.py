"""TLC counterexamples replayed on the engine (`leaseproof replay`).

Each engine calibration's counterexample, saved in tests/fixtures/replay/ by
`scripts/record_replay_fixtures.sh`, is mapped to a schedule of the spec's actions and run on
the engine's simulation: with the model's guard off the property must break on the engine too
(`reproduced`, by the engine's own monitors); with the guard on, the same schedule must stop at
the step the guard prevents (`blocked`). One test runs TLC live, and also says when the saved
counterexamples are stale.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.models.model import load_model
from conformance.replay import run as replay_run
from conformance.replay.map import UnreadableCounterexample, schedule_of, steps_of
from impl.engine import replay as engine_replay

from . import recording


@pytest.fixture(autouse=True)
def _replays_are_not_recorded():
    """A replay runs a calibration's counterexample (its gates, its faults): not a designed
    run, so record_traces.sh keeps none of its traces (they would be rejected, rightly)."""
    with recording.not_recorded():
        yield

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "replay"

# model -> (verdict with the model's gates, verdict with its guards back on; None: no guard off)
EXPECTED = {
    # HonourCheck off: the second copy runs beside the first.
    "inmem_overlap_unguarded": ("reproduced", "blocked"),
    "inmem_overlap_unguarded_seed_renewal": ("reproduced", "blocked"),
    "signal_in_memory_unguarded": ("reproduced", "blocked"),
    "signal_in_memory_same_node_unguarded": ("reproduced", "blocked"),
    "start_race_unguarded": ("reproduced", "blocked"),
    "start_race_unguarded_seed_renewal": ("reproduced", "blocked"),
    "start_race_after_lease_unguarded": ("reproduced", "blocked"),
    # RenewAdoptsRerun off (the reference's renewLease): the holder loses its lease to a bump.
    "inmem_overlap_seed_renewal": ("reproduced", "blocked"),
    "signal_in_memory_seed_renewal": ("reproduced", "blocked"),
    "start_race_seed_renewal": ("reproduced", "blocked"),
    "start_race_recover_in_memory_seed_renewal": ("reproduced", "blocked"),
    "start_race_three_nodes_seed_renewal": ("reproduced", "blocked"),
    # BumpOnHonoredLease off: a signal honoured on a running copy's lease is lost.
    "pr12_regression": ("reproduced", "blocked"),
    # RecoverStrandedStart off: the retried start does not recover the stranded workflow.
    "start_retry_stranded_forever": ("reproduced", "blocked"),
    # RecoverStrandedStart off, but RunningIsDriven breaks before the retry the guard acts on.
    "start_retry_unrecovered": ("reproduced", "reproduced"),
    # RunEndChecksStatus off (no engine gate: its decision is swapped): a late run saves over FAILED.
    "terminal_overwritten": ("reproduced", "blocked"),
    # Guards with no engine gate (always on): blocked both ways.
    "inmem_start_late_copy": ("blocked", "blocked"),
    "inmem_start_awaits_unguarded": ("blocked", "blocked"),
    "run_end_saves_over_signal": ("blocked", "blocked"),
    # ContinueVersions off (no engine gate: decide_schedule is swapped for one that inserts at
    # version 1): the seed's ABA; the engine's task_fences block it.
    "lease_faults_aba": ("reproduced", "blocked"),
    "inmem_start": ("reproduced", "blocked"),
    "inmem_start_seed_renewal": ("reproduced", "blocked"),
    # Findings of the design with every guard on: the engine has them too.
    "lease_faults": ("reproduced", None),
    "lease_faults_rerun_on_new_row": ("reproduced", None),
    "lease_faults_failed_run_stranded": ("reproduced", None),
    "signal_other_node_start_unanswered": ("reproduced", None),
    "inmem_start_overlap": ("reproduced", None),
    "signal_failure": ("reproduced", None),
    # No equivalent in the engine.
    "timer_arming_crash": ("unmapped", "unmapped"),
    "timer_arming_store_error": ("unmapped", "unmapped"),
    "clock_past_window": ("unmapped", "unmapped"),
}


def _schedule(name: str):
    model = load_model(ROOT / "models" / "engine" / f"{name}.yaml", (ROOT / "tla",))
    verdict = replay_run.saved_verdict(FIXTURES / f"{name}.json", name)
    return schedule_of(name, verdict, {k: c.value for k, c in model.constants.items()})


def test_every_saved_counterexample_is_in_the_table() -> None:
    assert sorted(p.stem for p in FIXTURES.glob("*.json")) == sorted(EXPECTED)


@pytest.mark.parametrize("store", ["memory://", "sqlite"])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_replay_gives_the_expected_verdict_both_ways(name: str, store: str) -> None:
    off, on = EXPECTED[name]
    sched = _schedule(name)
    got = engine_replay.replay(sched.to_json(), store=store)
    assert got.verdict == off, f"{name} with its gates: {got.reason}\n{got.table()}"
    if sched.property in ("NoOverlappingRuns", "TerminalIsStable", "RunningIsDriven") and got.verdict == "reproduced":
        assert got.reason.split(": ", 2)[1].startswith(sched.property)
    if on is None:
        assert sched.guards_off == ()
        return
    got_on = engine_replay.replay(sched.with_guards_on().to_json(), store=store)
    assert got_on.verdict == on, f"{name} with its guards on: {got_on.reason}\n{got_on.table()}"


def test_the_seed_bug_reads_as_the_counterexample() -> None:
    sched = _schedule("inmem_overlap_unguarded")
    assert [s.describe() for s in sched.steps] == [
        "CreateInstance(n1, w1)", "ScheduleInMemory(n1, w1)", "RunStart(n1, w1, s1)",
        "CreateInstance(n2, w1)", "ScheduleInMemory(n2, w1)", "RunStart(n2, w1, s1)",
    ]
    assert sched.steps[4].detail["outcome"] == "bumped" and sched.steps[4].detail["queued"] is True
    assert sched.guards_off == ("HonourCheck",)


def test_the_guard_on_replay_names_the_step_and_the_guard() -> None:
    got = engine_replay.replay(_schedule("inmem_overlap_unguarded").with_guards_on().to_json())
    assert got.step == 5
    assert "ScheduleInMemory(n2, w1)" in got.reason and "queued no copy" in got.reason
    assert [ln.outcome for ln in got.lines][-1] == "BLOCKED"


def test_a_replay_is_deterministic() -> None:
    sched = _schedule("start_race_seed_renewal").to_json()
    first = engine_replay.replay(sched).to_json()
    assert all(engine_replay.replay(sched).to_json() == first for _ in range(5))


def test_time_does_not_pass_a_lease_its_holder_is_about_to_renew() -> None:
    got = engine_replay.replay(_schedule("inmem_overlap_seed_renewal").with_guards_on().to_json())
    assert got.verdict == "blocked" and "Tick" in got.reason and "renew" in got.reason


def test_a_gate_with_no_engine_gate_is_named() -> None:
    got = engine_replay.replay(_schedule("inmem_start_late_copy").to_json())
    assert any("AnswerFromStore is off in the model, but the engine has no such gate" in n for n in got.notes)
    assert "answered the caller" in got.reason


def test_a_gate_with_no_engine_gate_is_switched_off_by_its_decision() -> None:
    got = engine_replay.replay(_schedule("terminal_overwritten").to_json())
    assert any("RunEndChecksStatus is off" in n and "decide_run_end is swapped" in n for n in got.notes)
    assert got.verdict == "reproduced" and "TerminalIsStable: w1 was FAILED, is now COMPLETED" in got.reason


def test_an_unexplained_transition_is_an_error() -> None:
    states = [{"index": 1, "action": "Initial predicate", "variables": {"clock": 0, "mystery": 1}},
              {"index": 2, "action": "Next", "variables": {"clock": 0, "mystery": 2}}]
    with pytest.raises(UnreadableCounterexample, match="state 2 .*mystery"):
        steps_of(states, {})


def test_a_tick_at_max_clock_is_read_from_the_states_alone() -> None:
    # A path of the state graph (guided --edges) has no action labels: Tick at MaxClock keeps
    # the clock and moves every stored time down one, which must read as a Tick, not as a
    # finishing write of the run that holds the row.
    work = {"n1": {"w1": {"s1": {"phase": "ended", "result": "completed", "lease": 4, "version": 3}}}}
    before = {"clock": 3, "task": {"w1": {"version": 3, "status": "RUNNING", "run_after": 4, "retry_count": 1}},
              "work": work, "instance": {"w1": {"version": 3, "status": "COMPLETED"}}}
    after = {**before, "task": {"w1": {**before["task"]["w1"], "run_after": 3}},
             "work": {"n1": {"w1": {"s1": {**work["n1"]["w1"]["s1"], "lease": 3}}}}}
    states = [{"index": 1, "action": "Next", "variables": before}, {"index": 2, "action": "Next", "variables": after}]
    assert [s.action for s in steps_of(states, {"MaxClock": 3})] == ["Tick"]
    # Below MaxClock the same change is no tick (and nothing else explains it).
    below = [{**s, "variables": {**s["variables"], "clock": 2}} for s in states]
    assert [s.action for s in steps_of(below, {"MaxClock": 3})] != ["Tick"]


def test_cli_replays_a_saved_counterexample(capsys) -> None:
    rc = main(["replay", "inmem_overlap_unguarded", "--root", str(ROOT),
               "--from", str(FIXTURES / "inmem_overlap_unguarded.json"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["passed"]
    assert [(r["mode"], r["verdict"]) for r in out["replays"]] == [("guard off", "reproduced"), ("guard on", "blocked")]


def test_cli_exits_1_when_a_replay_is_not_as_expected(capsys) -> None:
    # RecoverStrandedStart acts on the retry, after RunningIsDriven is already broken.
    rc = main(["replay", "start_retry_unrecovered", "--root", str(ROOT), "--guard-on",
               "--from", str(FIXTURES / "start_retry_unrecovered.json")])
    assert rc == 1 and "FAIL start_retry_unrecovered [guard on" in capsys.readouterr().out


def test_cli_exits_2_for_a_model_with_no_counterexample(tmp_path, capsys) -> None:
    saved = tmp_path / "ok.json"
    saved.write_text(json.dumps({"models": [{"name": "baseline", "verdict": {"kind": "ok", "counterexample": None}}]}))
    rc = main(["replay", "baseline", "--root", str(ROOT), "--from", str(saved)])
    assert rc == 2 and "no counterexample" in capsys.readouterr().err


@pytest.mark.tlc
def test_replay_runs_tlc_live_and_the_saved_counterexample_is_current(capsys) -> None:
    rc = main(["replay", "inmem_overlap_unguarded", "--root", str(ROOT), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0, out
    live = [ln["step"] for ln in out["replays"][0]["lines"]]
    saved = [s.describe() for s in _schedule("inmem_overlap_unguarded").steps]
    assert live == saved, "tests/fixtures/replay is stale: run scripts/record_replay_fixtures.sh"


def test_the_map_docstring_example_runs() -> None:
    import doctest

    from conformance.replay import map as replay_map

    assert doctest.testmod(replay_map).failed == 0


@pytest.mark.mysql
@pytest.mark.parametrize("name", ["inmem_overlap_unguarded", "pr12_regression", "start_race_seed_renewal",
                                  "terminal_overwritten", "inmem_start_late_copy"])
def test_replay_on_mariadb(request, name: str, key_prefix: str) -> None:
    url = request.getfixturevalue("mysql_url")
    prefix = "lp_replay_" + key_prefix.rsplit("-", 1)[-1] + "_"
    off, on = EXPECTED[name]
    sched = _schedule(name)
    assert engine_replay.replay(sched.to_json(), store=url, prefix=prefix).verdict == off
    assert engine_replay.replay(sched.with_guards_on().to_json(), store=url, prefix=prefix).verdict == on


def _outlived_lease_schedule() -> dict:
    """A behaviour of guided/engine.yaml's edge model: n1's run outlives its lease (OutliveLease),
    saves, and is held up again; n2 leases the lapsed row and runs it; n1's remove then finds
    its lease lost."""
    def step(state: int, action: str, node: str | None = None, slot: str | None = None, tick: int = 0,
             **detail: object) -> dict:
        return {"state": state, "action": action, "node": node, "wf": None if action == "Tick" else "w1",
                "slot": slot, "tick": tick, "detail": detail}
    steps = [step(2, "CreateInstance", "n1", phase="created"),
             step(3, "ScheduleInMemory", "n1", who="starter", outcome="inserted", queued=True, phase="awaiting"),
             step(4, "RunStart", "n1", "s1", rerun=False, instance="RUNNING"),
             step(5, "OutliveLease", "n1", "s1"),
             step(6, "RunEnd", "n1", "s1", result="completed", saved=True, rerun=False, answered=True),
             step(7, "Tick", tick=1), step(8, "Tick", tick=2),
             step(9, "Fetch", "n2", tick=2), step(10, "RunStart", "n2", "s1", tick=2, rerun=False, instance="COMPLETED"),
             step(11, "Remove", "n1", "s1", tick=2, outcome="conflict")]
    gates = {g: True for g in ("HonourCheck", "BumpOnHonoredLease", "CreateExistingIsNoop", "ForceSignalInScheduler",
                               "InMemoryStart", "RecoverStrandedStart", "RecoverAfterLease", "RenewAdoptsRerun",
                               "RunEndChecksStatus", "ArmTimerWithSave", "ResultUnavailable", "AnswerFromStore")}
    return {"model": "outlived_lease", "property": "Edge", "gates": {**gates, "TimerRuns": False},
            "constants": {"Lease": 2, "Backoff": 1, "MaxRetries": 1, "MaxRenewals": 1, "MaxClock": 3,
                          "Nodes": ["n1", "n2"], "Workflows": ["w1"], "Slots": ["s1"], "StartNodes": ["n1"],
                          "SignalNodes": ["n2"]},
            "loop_from": None, "stutters": False, "steps": steps}


@pytest.mark.tlc
def test_an_outlived_lease_is_a_logged_stall_window_that_excuses_the_lapse(tmp_path: Path) -> None:
    from conformance.interleave.validate import trace_validator

    got = engine_replay.replay(_outlived_lease_schedule(), trace_dir=tmp_path)
    assert got.verdict == "held", got.reason
    [trace] = tmp_path.glob("*.ndjson")
    lines = [json.loads(x) for x in trace.read_text().splitlines()[1:-1]]
    seen = [(e["node"], e["op"], e["outcome"]) for e in lines]
    # The window is open when n2 takes the row (n1 is held up again after its save), and n1's
    # remove, once it steps again, finds the lease lost.
    assert seen.index(("n1", "stall", "start"), seen.index(("n1", "run_end", "saved"))) < seen.index(("n2", "fetch", "leased"))
    assert ("n1", "remove", "lost") in seen
    assert trace_validator(ROOT)([trace]) == {}
