"""TLC counterexamples of tla/CommandQueue.tla replayed on the command layer (`leaseproof replay`).

Each command calibration's saved counterexample (tests/fixtures/replay/command/) runs on real
`CommandProcessor.steps` generators, one `next()` per step of the spec's attempt, over fakeredis
on a virtual clock. With the model's guard off the property breaks on the code too; with it on
the same schedule is `blocked` at the step the guard prevents.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.models.model import load_model
from conformance.replay import run as replay_run
from conformance.replay.command_map import schedule_of
from impl.workqueue import command_replay

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "replay" / "command"

# model -> (verdict with the model's gates, with its guards back on, the step that blocks)
EXPECTED = {
    "no_attempt_guard": ("reproduced", "blocked", "GuardTake(w2, k1)"),
    "no_terminal_check": ("reproduced", "blocked", "PutIfOwner(w2, k1)"),
    "put_if_owner_two_steps": ("reproduced", "blocked", "PutIfOwner(w1, k1)"),
    "state_expired_no_terminal_check": ("reproduced", "blocked", "PutIfOwner(w2, k1)"),
    # The code reads the status in the step of its first write, after guard_take, not in
    # GuardTake as the model does: the model's write after a cancel (or a peer's terminal
    # write) between the two cannot happen here, with the guard off too.
    "cancel_ignores_guard": ("blocked", "blocked", None),
    "put_if_owner_two_steps_terminal": ("blocked", "blocked", None),
    # Findings with every guard on: an uncooperative remote called twice after a crash, and a
    # late resubmit after the record expired; the code has them too.
    "crash_uncooperative_remote": ("reproduced", None, None),
    "seed_safety_non_idempotent": ("reproduced", None, None),
    "state_expired_late_resubmit": ("reproduced", None, None),
    # RepairOnResubmit off: the stranded command is never done (EveryCommandDone, after a fair drain).
    "submit_without_repair": ("reproduced", "blocked", None),
    # The code has no switch for the call's owner check: the model's stale call is refused.
    "call_unchecked": ("blocked", "blocked", "ExternalCall(w1, k1)"),
    "late_call_unchecked": ("blocked", "blocked", "ExternalCall(w1, k1)"),
    # TerminalCheck off: the code too writes a result after a cancel, with no call.
    "finish_without_call": ("reproduced", "blocked", "PutIfOwner(w1, k1)"),
    # Not replayed: OneLiveAttempt (no monitor yet), TypeOK's device.
    "no_attempt_guard_overlap": ("unmapped", "unmapped", None),
    "release_plain_delete": ("unmapped", "unmapped", None),
    "type_offer_retry": ("unmapped", "unmapped", None),
}


def _schedule(name: str):
    model = load_model(ROOT / "models" / "command" / f"{name}.yaml", (ROOT / "tla",))
    verdict = replay_run.saved_verdict(FIXTURES / f"{name}.json", name)
    return schedule_of(name, verdict, {k: c.value for k, c in model.constants.items()})


def test_every_saved_counterexample_is_in_the_table() -> None:
    assert sorted(p.stem for p in FIXTURES.glob("*.json")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_replay_gives_the_expected_verdict_both_ways(name: str) -> None:
    off, on, at = EXPECTED[name]
    sched = _schedule(name)
    got = command_replay.replay(sched.to_json())
    assert got.verdict == off, f"{name} with its gates: {got.reason}\n{got.table()}"
    if off == "reproduced":
        assert got.reason.split(": ", 2)[1].startswith(sched.property)
    if on is None:
        assert sched.guards_off == ()
        return
    got_on = command_replay.replay(sched.with_guards_on().to_json())
    assert got_on.verdict == on, f"{name} with its guards on: {got_on.reason}\n{got_on.table()}"
    if at is not None:
        assert got_on.reason.split(": ", 1)[0].endswith(at), got_on.reason


@pytest.mark.redis
@pytest.mark.parametrize("name", sorted(n for n, (off, _, _) in EXPECTED.items() if off != "unmapped"))
def test_replay_on_real_redis(request, name: str) -> None:
    # The same verdicts on a real server: keys under a fresh lp-replay-* prefix, deleted after;
    # the guard's and the record's TTLs move with the virtual clock (RedisTimeWarp).
    url = request.getfixturevalue("redis_url")
    off, on, _ = EXPECTED[name]
    sched = _schedule(name)
    assert command_replay.replay(sched.to_json(), store=url).verdict == off
    if on is not None:
        assert command_replay.replay(sched.with_guards_on().to_json(), store=url).verdict == on


def test_the_stale_write_is_seen_at_the_write() -> None:
    got = command_replay.replay(_schedule("put_if_owner_two_steps").to_json())
    assert [ln.step for ln in got.lines][-4:] == ["Pause(w1, k1)", "GuardExpire(w1, k1)", "Resume(w1, k1)",
                                                 "PutIfOwner(w1, k1)"]
    assert got.lines[-1].outcome == "wrote SUBMITTING" and "guard -" in got.lines[-1].rows


def test_cli_replays_a_command_model(capsys) -> None:
    rc = main(["replay", "no_terminal_check", "--root", str(ROOT), "--from", str(FIXTURES / "no_terminal_check.json"),
               "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and [(r["mode"], r["verdict"]) for r in out["replays"]] == [("guard off", "reproduced"),
                                                                               ("guard on", "blocked")]


@pytest.mark.tlc
def test_replay_runs_tlc_live_for_a_command_model(capsys) -> None:
    rc = main(["replay", "no_terminal_check", "--root", str(ROOT), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0, out
    live = [ln["step"] for ln in out["replays"][0]["lines"]]
    assert live == [s.describe() for s in _schedule("no_terminal_check").steps], \
        "tests/fixtures/replay/command is stale: run scripts/record_replay_fixtures.sh"


def _state(pc: str, guard: str = "w1", cmd: str = "k1") -> dict:
    return {"pc": {"w1": pc, "w2": "idle"}, "cmdOf": {"w1": cmd, "w2": "NoOne"}, "wmode": {"w1": "running", "w2": "running"},
            "stale": {"w1": False, "w2": False}, "checked": {"w1": False, "w2": False}, "status": {"k1": "SUBMITTING"},
            "submits": {"k1": 1}, "client": {"k1": "done"}, "guard": {"k1": guard}, "fresh": {"k1": 0}}


@pytest.mark.parametrize(("before", "after", "action", "want"), [
    # A refused call and a lost renewal both end the attempt: TLC's action name tells them apart.
    (_state("call", guard="w2"), _state("idle", guard="w2", cmd="NoOne"), "ExternalCall", ("ExternalCall", "refused")),
    (_state("call", guard="w2"), _state("idle", guard="w2", cmd="NoOne"), "GuardRenew", ("GuardRenew", "lost")),
    (_state("call"), _state("process"), "ExternalCall", ("ExternalCall", "called")),
    (_state("process"), _state("drop"), "Throw", ("CallThrows", None)),
    (_state("drop"), _state("idle", guard="NoOne", cmd="NoOne"), "GuardRelease", ("GuardRelease", None)),
])
def test_the_map_names_a_refused_call_a_throw_and_its_early_release(before: dict, after: dict, action: str,
                                                                     want: tuple) -> None:
    verdict = {"counterexample": {"states": [{"index": 1, "action": "Next", "variables": before},
                                             {"index": 2, "action": action, "variables": after}]}}
    (step,) = schedule_of("m", verdict, {"WorkerIds": ["w1", "w2"], "CommandIds": ["k1"]}).steps
    assert (step.action, step.detail.get("outcome")) == want
    if step.action == "GuardRelease":
        assert step.detail["after_throw"] is True
