"""Model-guided workloads (conformance/guided): every outcome of TraceEngine's and
TraceWorkQueue's Outcomes tables is reached by a behaviour of the small model, which the engine
or the queue's nodes are driven along, and its trace is validated; a bug on such a path is found."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.guided.run import GuidedError, run_guided
from conformance.guided.targets import REACH_MODULES, missing_properties, targets
from conformance.traces.spec_coverage import outcomes_table, unreachable_of
from conformance.traces.system import load_systems
from impl.engine import decide, worker
from impl.workqueue import scripts
from impl.workqueue.command_store import CommandStore
from impl.workqueue.node import QueueNode
from tests.interleave.planting import planted

ROOT = Path(__file__).resolve().parents[2]


def _engine_targets() -> list:  # type: ignore[type-arg]
    system = load_systems(ROOT)["engine"]
    table = outcomes_table(system.spec_path.read_text(encoding="utf-8"), system.spec)
    assert table is not None
    return targets(table, unreachable_of(system, table, "engine"))


def test_the_reach_module_defines_a_property_for_every_target() -> None:
    wanted = _engine_targets()
    assert len(wanted) == 25  # 27 outcomes, less the two honoured schedules (declared unreachable)
    text = (ROOT / "tla" / f"{REACH_MODULES['engine']}.tla").read_text(encoding="utf-8")
    assert missing_properties(text, wanted) == []
    assert missing_properties(text.replace("Never_remove_lost ==", "Never_remove_lost_x =="), wanted) == ["remove/lost"]


def test_an_unknown_target_or_system_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(GuidedError, match="no target"):
        run_guided(ROOT, "engine", tmp_path, only=["remove/vanished"])
    with pytest.raises(GuidedError, match="no model-guided workloads for 'lease'"):
        run_guided(ROOT, "lease", tmp_path)


@pytest.mark.tlc
def test_the_stale_paths_are_reached_taken_by_the_engine_and_their_traces_accepted(tmp_path: Path) -> None:
    # The paths issue 37 names: a stale remove meeting a row another node leased (lost), a
    # signal's update that conflicts, a renewal that meets a bump; on SQLite (the planted test
    # below runs on the twin; `leaseproof guided` runs every target on either).
    results = run_guided(ROOT, "engine", tmp_path, store="sqlite",
                         only=["remove_lost_under_live_lease", "update_instance/conflict", "renew/conflict"])
    assert [r.finding for r in results] == [None, None, None], [r.line() for r in results]
    assert all(r.model == "reached" and r.replay == "held" and r.shown and r.traces for r in results)


@pytest.mark.tlc
def test_a_blocked_replay_drains_so_that_its_trace_shows_what_the_code_did_instead(tmp_path: Path) -> None:
    # second_bump_stops_renewal (mutants/engine.yaml): a run that meets a second bump while it
    # adopts the first stops renewing. The replay is blocked at the model's renewal; drained from
    # there, the other node runs the workflow past the lease the run still holds, which the trace
    # check rejects: the recorded trace shows the bug, not only the guided run's finding.
    with planted(worker, "_renew", "return again, True, True\n        return adopted",
                 "return again, True, False\n        return adopted"):
        (r,) = run_guided(ROOT, "engine", tmp_path, only=["renew_renewed_after_two_adoptions"])
    assert r.replay == "blocked" and "sleeps until" in r.reason, r.line()
    ((path, why),) = r.rejected.items()
    assert "breaks HeldLeaseKept" in why and "(fetch by n2)" in why, why


@pytest.mark.tlc
def test_a_remove_that_takes_a_lost_lease_for_a_rerun_is_a_finding(tmp_path: Path) -> None:
    # lost_lease_taken_for_rerun: the model's stale remove is `lost`; the planted engine calls it
    # a rerun. The replay meets the difference at that step, or the trace spec rejects the line.
    with planted(decide, "classify_failed_remove", "if row.run_after == held_run_after and",
                 "if row.run_after >= held_run_after and"):
        (r,) = run_guided(ROOT, "engine", tmp_path, only=["remove/lost"])
    assert r.model == "reached"
    assert r.finding is not None and ("the model can, the code cannot" in r.finding or "trace rejected" in r.finding), r.line()


@pytest.mark.tlc
def test_the_command_prints_a_line_per_target_and_fails_on_a_finding(tmp_path: Path) -> None:
    run = [sys.executable, "-m", "conformance.cli", "guided", "--root", str(ROOT), "--target", "fetch/leased",
           "--out", str(tmp_path)]
    proc = subprocess.run(run, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("ok        fetch/leased") and "1 of 1 targets" in proc.stdout
    assert list((tmp_path / "traces" / "fetch-leased").glob("*.ndjson"))


@pytest.mark.tlc
def test_the_queue_stale_paths_are_reached_taken_by_the_nodes_and_their_traces_accepted(tmp_path: Path) -> None:
    # A stale renewal and a stale release meeting a peer's live ownership, and a self-reclaim
    # after a heartbeat lag (dropped): each trace carries the fault lines that excuse its lapse.
    results = run_guided(ROOT, "workqueue", tmp_path, only=["renew_refused_under_live_owner",
                         "release_refused_under_live_owner", "invoke_start/duplicate_dropped"])
    assert [r.finding for r in results] == [None, None, None], [r.line() for r in results]
    assert all(r.model == "reached" and r.replay == "held" and r.shown and r.traces for r in results)
    lag = (tmp_path / "traces" / "invoke_start-duplicate_dropped").glob("*.ndjson")
    assert '"op": "heartbeat_lag", "outcome": "start"' in next(lag).read_text(encoding="utf-8")


@pytest.mark.tlc
def test_a_release_without_its_owner_check_is_a_finding(tmp_path: Path) -> None:
    # The node's release touches the entry whoever owns it: the model's stale release is refused.
    with planted(QueueNode, "_settle", "check_owner=self.gates.renew_owner_check", "check_owner=False"):
        (r,) = run_guided(ROOT, "workqueue", tmp_path, only=["release_refused_under_live_owner"])
    assert r.model == "reached"
    assert r.finding is not None and "trace rejected" in r.finding, r.line()


@pytest.mark.tlc
def test_the_command_stale_paths_are_reached_taken_and_accepted_and_the_quirks_declared(tmp_path: Path) -> None:
    # A stale write refused and a stale guard renewal lost while another attempt holds the
    # guard, a cancel refused while a handler holds it, a stale call refused by the call's own
    # owner check, and a thrown call's early release that finds another attempt's guard; the
    # outcome only the trace spec's quirks give is listed with its reason, not run.
    results = run_guided(ROOT, "command", tmp_path, only=["put_refused_under_live_guard", "renew_lost_under_live_guard",
                                                          "cancel/busy", "external_call/refused",
                                                          "release_lost_after_throw", "ack/failed"])
    assert [r.finding for r in results] == [None] * 6, [r.line() for r in results]
    by = {r.target.name: r for r in results}
    quirk = by.pop("ack/failed")
    assert all(r.model == "reached" and r.replay == "held" and r.shown and r.traces for r in by.values())
    assert quirk.model == "outside the model" and not quirk.traces
    assert "ack_fail" in quirk.reason and quirk.line().startswith("declared")


@pytest.mark.tlc
@pytest.mark.parametrize(("target", "script", "old", "new"), [
    # external_call.lua calls whoever holds the guard: the model's stale call is refused.
    ("external_call/refused", "external_call", "if ARGV[5] == '0' or redis.call('GET', KEYS[2]) == ARGV[4] then",
     "if true then"),
    # guard_release.lua deletes the guard whoever owns it: the thrown call's early release frees
    # the guard another attempt took, where the model's compare-and-delete leaves it.
    ("release_lost_after_throw", "guard_release", "if redis.call('GET', KEYS[2]) == ARGV[4] then",
     "if redis.call('EXISTS', KEYS[2]) == 1 then"),
])
def test_a_guard_check_dropped_from_a_command_script_is_a_finding(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, script: str, old: str, new: str) -> None:
    original = scripts.source
    assert original(script).count(old) == 1

    def source(name: str) -> str:
        return original(name).replace(old, new) if name == script else original(name)
    monkeypatch.setattr(scripts, "source", source)
    (r,) = run_guided(ROOT, "command", tmp_path, only=[target])
    assert r.model == "reached"
    assert r.finding is not None, r.line()


@pytest.mark.tlc
def test_a_blind_state_write_is_a_finding(tmp_path: Path) -> None:
    # put_if_owner writes whoever holds the guard: the model's stale write is refused.
    with planted(CommandStore, "put_if_owner", '"1" if checked else "0"])) == "written"', '"0"])) == "written"'):
        (r,) = run_guided(ROOT, "command", tmp_path, only=["put_refused_under_live_guard"])
    assert r.model == "reached"
    assert r.finding is not None and r.finding.startswith("the model can, the code cannot"), r.line()


def test_outside_model_must_name_an_outcome_of_the_spec_with_a_reason() -> None:
    from conformance.guided.targets import outside_model

    table = {"ack": frozenset({"acked", "failed"})}
    with pytest.raises(ValueError, match="'ack/lost', which is no outcome"):
        outside_model({"outside_model": {"ack/lost": "why"}}, table, "b")
    with pytest.raises(ValueError, match="needs the reason"):
        outside_model({"outside_model": {"ack/failed": " "}}, table, "b")


def test_a_missing_or_unreadable_base_model_is_an_error_that_names_it(tmp_path: Path) -> None:
    root = tmp_path / "project"
    for part in ("tla", "traces"):
        shutil.copytree(ROOT / part, root / part)
    with pytest.raises(GuidedError, match=r"no model-guided workloads for 'engine': no base model guided/engine.yaml"):
        run_guided(root, "engine", tmp_path / "out")
    (root / "guided").mkdir()
    (root / "guided" / "engine.yaml").write_text("- a list\n", encoding="utf-8")
    with pytest.raises(GuidedError, match="not a model file"):
        run_guided(root, "engine", tmp_path / "out")


# -- a user's own system: the fixture project's job lease (docs/your-own-system.md) ----------------
PROJECT = ROOT / "tests" / "fixtures" / "project"


@pytest.mark.tlc
def test_a_users_system_is_driven_along_every_outcome_by_its_own_replay(tmp_path: Path) -> None:
    results = run_guided(PROJECT, "joblease", tmp_path)
    assert [(r.target.name, r.finding) for r in results] == [(r.target.name, None) for r in results]
    assert len(results) == 7 and all(r.model == "reached" and r.replay == "held" and r.shown for r in results)


@pytest.mark.tlc
def test_a_users_planted_bug_is_a_step_the_code_cannot_take(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The known-bad trace's bug: a renewal that checks only the expiry. The model's stale
    # renewal is refused while the other worker holds the slot; the planted slot renews it.
    monkeypatch.syspath_prepend(str(PROJECT))
    import joblease

    with planted(joblease.Slot, "renew", "owns = self.owner == worker or not self.check_owner_on_renew", "owns = True"):
        (r,) = run_guided(PROJECT, "joblease", tmp_path, only=["renew_lost_while_other_holds"])
    assert r.replay == "blocked" and r.finding is not None
    assert r.finding.startswith("the model can, the code cannot: step 2 renew(w2)"), r.finding
    assert "answers 'renewed', the model 'lost'" in r.finding


def _own_project(tmp_path: Path, replay_py: str | None) -> Path:
    root = tmp_path / "project"
    shutil.copytree(PROJECT, root)
    if replay_py is None:
        (root / "joblease_guided.py").unlink()
    else:
        (root / "joblease_guided.py").write_text(replay_py, encoding="utf-8")
    return root


def test_a_users_replay_file_that_is_missing_or_has_no_replay_is_an_error(tmp_path: Path) -> None:
    from conformance.guided.own import OwnReplayError

    with pytest.raises(OwnReplayError, match="no file .*joblease_guided.py"):
        run_guided(_own_project(tmp_path / "a", None), "joblease", tmp_path / "out")
    with pytest.raises(OwnReplayError, match="defines no function replay"):
        run_guided(_own_project(tmp_path / "b", "def play(states): pass\n"), "joblease", tmp_path / "out")
    with pytest.raises(OwnReplayError, match="importing .* failed: ZeroDivisionError"):
        run_guided(_own_project(tmp_path / "c", "1 / 0\n"), "joblease", tmp_path / "out")


@pytest.mark.tlc
def test_a_users_replay_that_raises_is_that_targets_error_and_unmapped_is_named(tmp_path: Path) -> None:
    crash = "def replay(states, *, constants, trace_dir):\n    raise KeyError('last')\n"
    (r,) = run_guided(_own_project(tmp_path / "a", crash), "joblease", tmp_path / "out", only=["acquire/busy"])
    assert r.replay == "error" and r.finding is not None and "KeyError" in r.finding
    unmapped = ("from conformance.guided import Unmapped\n"
                "def replay(states, *, constants, trace_dir):\n    raise Unmapped('step 1 Acquiring: no call')\n")
    (r,) = run_guided(_own_project(tmp_path / "b", unmapped), "joblease", tmp_path / "out2", only=["acquire/busy"])
    assert r.replay == "unmapped" and r.finding == "unmapped: step 1 Acquiring: no call"
