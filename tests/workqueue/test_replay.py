"""TLC counterexamples of tla/WorkQueue.tla replayed on the queue's nodes (`leaseproof replay`).

As tests/engine/test_replay.py for the engine: each work-queue calibration's saved
counterexample (tests/fixtures/replay/workqueue/, `scripts/record_replay_fixtures.sh`) runs on
`QueueNode`s over fakeredis on a virtual clock; with the model's guard off the property breaks
on the queue too, with it on the same schedule is `blocked` at the step the guard prevents.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.models.model import load_model
from conformance.replay import run as replay_run
from conformance.replay.workqueue_map import schedule_of
from impl.workqueue import replay as queue_replay

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "replay" / "workqueue"

# model -> (verdict with the model's gates, with its guards back on, the step that blocks)
EXPECTED = {
    # The node's own heartbeat renews in time (run before the Tick that would lapse the entry).
    "heartbeat_off": ("reproduced", "blocked", "Reclaim(c2, e1)"),
    "stop_renew_past_max_processing": ("reproduced", "blocked", "Reclaim(c2, e1)"),
    "close_without_waiting": ("reproduced", "blocked", "Reclaim(c2, e1)"),
    "no_owner_check": ("reproduced", "blocked", "Renew(c1, e1)"),
    "nonatomic_renew_lag": ("reproduced", "blocked", "Reclaim(c2, e1)"),
    "nonatomic_renew_stall": ("reproduced", "blocked", "Reclaim(c2, e1)"),
    "permit_unbounded": ("reproduced", "blocked", "ReceiveNew(c1, e2)"),
    # Liveness: the schedule, then a fair drain (blocked: the drain finishes every entry).
    "no_reclaim": ("reproduced", "blocked", None),
    "permit_for_message_life": ("reproduced", "blocked", None),
    # PollFallback has no queue gate (a poll always falls back): blocked both ways.
    "no_fallback": ("blocked", "blocked", None),
    # DropDuplicateStart has no queue gate: the node drops its own reclaim at the poll (logged
    # as duplicate_dropped), so the model's second start never runs; it holds both ways.
    "duplicate_start": ("held", "held", None),
    # The model puts c1's own reclaim between its call's end and the ack; the replay holds the
    # call there (QueueNode's between_end_and_settle hook), but the call's permit comes back only
    # after the ack, where the model gives it back at InvokeEnd: the model can, the code cannot.
    "ack_failure_leaks": ("blocked", "blocked", "Reclaim(c1, e1)"),
    # Not replayed: LaggingLearnsLoss; the endless producer's re-offer (EndlessSpec).
    "lagging_claims_back": ("unmapped", "unmapped", None),
    "never_reclaim_first": ("unmapped", "unmapped", None),
    # A model-checking device (TypeOK's calibration).
    "type_unpaid_fault": ("unmapped", "unmapped", None),
}


def _schedule(name: str):
    model = load_model(ROOT / "models" / "workqueue" / f"{name}.yaml", (ROOT / "tla",))
    verdict = replay_run.saved_verdict(FIXTURES / f"{name}.json", name)
    return schedule_of(name, verdict, {k: c.value for k, c in model.constants.items()})


def test_every_saved_counterexample_is_in_the_table() -> None:
    assert sorted(p.stem for p in FIXTURES.glob("*.json")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_replay_gives_the_expected_verdict_both_ways(name: str) -> None:
    off, on, at = EXPECTED[name]
    sched = _schedule(name)
    got = queue_replay.replay(sched.to_json())
    assert got.verdict == off, f"{name} with its gates: {got.reason}\n{got.table()}"
    if off == "reproduced":
        assert got.reason.split(": ", 2)[1].startswith(sched.property)
    got_on = queue_replay.replay(sched.with_guards_on().to_json())
    assert got_on.verdict == on, f"{name} with its guards on: {got_on.reason}\n{got_on.table()}"
    if at is not None:
        assert got_on.reason.split(": ", 1)[0].endswith(at), got_on.reason


def test_the_non_atomic_renewal_runs_the_steps_between_its_read_and_its_claim() -> None:
    got = queue_replay.replay(_schedule("nonatomic_renew_lag").to_json())
    assert [ln.step for ln in got.lines][4:9] == [
        "RenewCheck(c1, e1)", "HeartbeatLag(c1, e1)", "Tick", "Reclaim(c2, e1)", "RenewClaim(c1, e1)"]
    assert got.lines[7].rows == "e1: pending, owner c2" and got.lines[8].rows == "e1: pending, owner c1"


def test_a_replay_is_deterministic() -> None:
    sched = _schedule("no_owner_check").to_json()
    first = queue_replay.replay(sched).to_json()
    assert all(queue_replay.replay(sched).to_json() == first for _ in range(3))


def test_cli_replays_a_queue_model(capsys) -> None:
    rc = main(["replay", "no_owner_check", "--root", str(ROOT), "--from", str(FIXTURES / "no_owner_check.json"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and [(r["mode"], r["verdict"]) for r in out["replays"]] == [("guard off", "reproduced"),
                                                                               ("guard on", "blocked")]


def test_another_run_s_counterexample_of_ack_failure_leaks_is_reproduced_and_blocked() -> None:
    # TLC's liveness counterexamples differ between runs; this one (kept from another run in
    # other_runs/) ends the call and fails its ack with only a Tick between, so it replays.
    model = load_model(ROOT / "models" / "workqueue" / "ack_failure_leaks.yaml", (ROOT / "tla",))
    verdict = replay_run.saved_verdict(FIXTURES / "other_runs" / "ack_failure_leaks.json", "ack_failure_leaks")
    sched = schedule_of("ack_failure_leaks", verdict, {k: c.value for k, c in model.constants.items()})
    got = queue_replay.replay(sched.to_json())
    assert got.verdict == "reproduced" and "EveryEntryAcked: e1 never acked" in got.reason
    got_on = queue_replay.replay(sched.with_guards_on().to_json())
    assert got_on.verdict == "blocked" and "runs no call of e1" in got_on.reason


@pytest.mark.redis
@pytest.mark.parametrize("name", sorted(n for n, (off, _, _) in EXPECTED.items() if off != "unmapped"))
def test_replay_on_real_redis(request, name: str) -> None:
    url = request.getfixturevalue("redis_url")  # keys under a fresh lp-replay-* prefix, deleted after
    off, on, _ = EXPECTED[name]
    sched = _schedule(name)
    assert queue_replay.replay(sched.to_json(), store=url).verdict == off
    assert queue_replay.replay(sched.with_guards_on().to_json(), store=url).verdict == on


@pytest.mark.tlc
def test_replay_runs_tlc_live_for_a_queue_model(capsys) -> None:
    rc = main(["replay", "heartbeat_off", "--root", str(ROOT), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0, out
    live = [ln["step"] for ln in out["replays"][0]["lines"]]
    assert live == [s.describe() for s in _schedule("heartbeat_off").steps], \
        "tests/fixtures/replay/workqueue is stale: run scripts/record_replay_fixtures.sh"


def test_the_queue_map_names_the_heartbeat_calibration_s_steps() -> None:
    sched = _schedule("heartbeat_off")
    assert [s.describe() for s in sched.steps] == [
        "Offer(e1)", "ReceiveNew(c1, e1)", "Tick", "InvokeStart(c1, e1)", "Tick", "Reclaim(c2, e1)", "InvokeStart(c2, e1)"]
    assert sched.guards_off == ("HeartbeatOn",)


def _step(state: int, action: str, node: str | None, tick: int, **detail: str) -> dict:
    return {"state": state, "action": action, "node": node, "wf": None if action == "Tick" else "e1",
            "slot": None, "tick": tick, "detail": detail}


def test_a_call_whose_settle_the_model_puts_later_is_held_while_the_same_consumer_runs_another(tmp_path: Path) -> None:
    # The model ends c1's first call (not done), c1 reclaims e1 and runs it again to its ack,
    # and only then does the first call's release come, refused (the entry is acked). The
    # replay holds the first call's finish between its invoke_end and its release on a thread
    # of its own; the second call, on the replay's thread, must go through the same node's
    # hook without being held. Without the hold, the first release touches the entry back
    # before the ack.
    gates = {g: True for g in ("RenewOwnerCheck", "RenewPastMaxProc", "InvocationScopedPermits", "AtomicRenew",
                               "HeartbeatOn", "CleanupOnAckFailure", "ReclaimRetries", "CloseWaitsForHandlers",
                               "PermitCheck", "ReclaimTurn", "PollFallback", "CrashFault", "PauseFault", "LagFault",
                               "AckFailFault", "RejectFault", "CloseFault")}
    steps = [_step(2, "Offer", None, 0), _step(3, "ReceiveNew", "c1", 0), _step(4, "Tick", None, 1),
             _step(5, "InvokeStart", "c1", 1, outcome="started"), _step(6, "InvokeEnd", "c1", 1, result="not_done"),
             _step(7, "Tick", None, 2), _step(8, "Reclaim", "c1", 2), _step(9, "InvokeStart", "c1", 2, outcome="started"),
             _step(10, "InvokeEnd", "c1", 2, result="done"), _step(11, "Ack", "c1", 2, outcome="acked"),
             _step(12, "Release", "c1", 2, outcome="refused")]
    schedule = {"model": "held_settle", "property": "Edge", "gates": gates, "loop_from": None, "stutters": False,
                "constants": {"VT": 2, "MaxProc": 1, "MaxDeliveries": 2, "MaxFaults": 2, "Permits": 2,
                              "Consumers": ["c1", "c2"], "Entries": ["e1"]}, "steps": steps}
    got = queue_replay.replay(schedule, trace_dir=tmp_path)
    assert got.verdict == "held", got.reason
    [trace] = tmp_path.glob("*.ndjson")
    events = [json.loads(line) for line in trace.read_text().splitlines()[1:]]
    settles = [(e["op"], e["outcome"]) for e in events if e.get("op") in ("ack", "release")]
    assert settles == [("ack", "acked"), ("release", "refused")]
