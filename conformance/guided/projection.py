"""What a trace shows of one step of a model (pure): the entity and `op/outcome` of each line the
step logs, none for a hidden step (a tick, a fault, a guard expiring).

The step and its outcome come from the system's replay map (`conformance.replay.*_map`), given
the step's two states as a two-state behaviour; the map's step names are the spec's actions,
and each logged action is its trace op (tla/README.md's tables).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from conformance.guided.edges import Projected, StepOf
from conformance.replay import command_map, workqueue_map
from conformance.replay import map as engine_map
from conformance.replay.map import Step, UnreadableCounterexample

# The map's step -> the trace op it logs (those not named log nothing: hidden steps).
WORKQUEUE_OPS = {"Offer": "offer", "ReceiveNew": "receive_new", "Reclaim": "reclaim", "InvokeStart": "invoke_start",
                 "InvokeEnd": "invoke_end", "Renew": "renew", "RenewClaim": "renew", "Ack": "ack", "Release": "release"}
COMMAND_OPS = {"SubmitState": "submit_state", "Offer": "offer", "ReceiveNew": "receive_new", "Reclaim": "reclaim",
               "GuardTake": "guard_take", "GuardRenew": "guard_renew", "PutIfOwner": "put_if_owner",
               "ExternalCall": "external_call", "GuardRelease": "guard_release", "Ack": "ack", "Cancel": "cancel"}
ENGINE_OPS = {"CreateInstance": "create_instance", "Schedule": "schedule", "ScheduleInMemory": "schedule_in_memory",
              "UpdateInstance": "update_instance", "Fetch": "fetch", "RunStart": "run_start", "RunEnd": "run_end",
              "Renew": "renew", "Remove": "remove", "RescheduleRetry": "reschedule_retry", "MarkFailed": "mark_failed"}
# The trace outcome of a step whose map gives none, or gives it another name.
_OUTCOME = {("Offer", None): "added", ("ReceiveNew", None): "delivered", ("Reclaim", None): "claimed",
            ("InvokeEnd", None): "ended", ("Ack", "noop"): "acked", ("RenewClaim", "claimed"): "renewed",
            ("ExternalCall", None): "called", ("Ack", None): "acked"}


def _two(p: Mapping[str, Any], q: Mapping[str, Any]) -> dict[str, Any]:
    return {"counterexample": {"states": [{"index": 1, "action": "Next", "variables": p},
                                          {"index": 2, "action": "Next", "variables": q}]}}


def _logged(step: Step, ops: Mapping[str, str], outcome: str | None) -> Projected:
    if step.action not in ops or step.wf is None:
        return ()
    if step.action == "GuardTake" and outcome == "read":  # the attempt guard off: no guard_take line
        return ()
    return ((str(step.wf), f"{ops[step.action]}/{_OUTCOME.get((step.action, outcome), outcome)}"),)


def _running(p: Mapping[str, Any], c: str) -> set[str]:
    """The entries consumer c's heartbeat renews in state p (WorkQueue.tla's Renewing)."""
    return set(p["active"][c]) | set(p["leaked"][c])


def workqueue_step(constants: Mapping[str, Any]) -> StepOf:
    """A work-queue model's step (WorkQueue.tla, through `workqueue_map`) as a trace shows it.

    One quirk of the code's logging: a self-reclaim (c reclaims an entry it runs) is dropped by
    the node at its poll (node.py poll_and_admit), which logs `invoke_start duplicate_dropped`
    right after the reclaim; the model's InvokeStart that drops it later logs nothing more."""
    def step_of(p: Mapping[str, Any], q: Mapping[str, Any]) -> Projected:
        try:
            (step,) = workqueue_map.schedule_of("edge", _two(p, q), constants).steps
        except UnreadableCounterexample:
            return ()  # no variable changed that names a step (a self-loop)
        if step.action == "InvokeStart" and step.detail.get("outcome") == "duplicate_dropped":
            return ()
        shown = _logged(step, WORKQUEUE_OPS, step.detail.get("outcome"))
        if step.action == "Reclaim" and step.node is not None and step.wf in _running(p, step.node):
            shown += ((str(step.wf), "invoke_start/duplicate_dropped"),)
        return shown
    return step_of


def command_step(constants: Mapping[str, Any]) -> StepOf:
    """A command-layer model's step (CommandQueue.tla, through `command_map`) as a trace shows it."""
    def step_of(p: Mapping[str, Any], q: Mapping[str, Any]) -> Projected:
        try:
            (step,) = command_map.schedule_of("edge", _two(p, q), constants).steps
        except UnreadableCounterexample:
            return ()
        outcome = step.detail.get("outcome")
        if step.action == "GuardRelease":  # compare-and-delete: released, or lost to another attempt
            outcome = "released" if p["guard"][step.wf] == step.node else "lost"
        return _logged(step, COMMAND_OPS, outcome)
    return step_of


def _finish_outcome(p: Mapping[str, Any], step: Step) -> str:
    """Engine.tla's FinishOutcome: how a versioned finish (remove, retry, dead letter) ends."""
    task, held = p["task"][step.wf], p["work"][step.node][step.wf][step.slot]
    if task["status"] == "ABSENT":
        return "gone"
    if task["version"] == held["version"]:
        return "ok"
    if task["status"] in ("PENDING", "RUNNING") and task["run_after"] == held["lease"]:
        return "rerun"
    return "lost"


def _engine_outcome(p: Mapping[str, Any], step: Step) -> str | None:
    """The trace outcome of an engine step (TraceEngine's Outcomes), read off the state before
    it as tla/ReachEngine.tla's Reach_<op>_<outcome> does; None for a step that logs nothing."""
    a, d = step.action, step.detail
    if a == "CreateInstance":
        return "created" if p["instance"][step.wf]["status"] == "ABSENT" else "exists"
    if a in ("Schedule", "ScheduleInMemory", "UpdateInstance"):
        return str(d["outcome"])
    if a in ("Fetch", "RunStart"):
        return "leased" if a == "Fetch" else "started"
    if a == "RunEnd":
        return "saved" if d.get("saved") else "conflict"
    if a == "Renew":
        return "renewed" if d.get("outcome") == "renewed" else "conflict"
    finish = _finish_outcome(p, step)
    if a == "Remove":
        return {"ok": "removed"}.get(finish, finish)
    ok = {"RescheduleRetry": "rescheduled", "MarkFailed": "failed"}.get(a)
    return None if ok is None else (ok if finish == "ok" else "conflict")


def engine_step(constants: Mapping[str, Any]) -> StepOf:
    """An engine model's step (Engine.tla, through the engine's replay map) as a trace shows it."""
    gates = {k: v for k, v in constants.items() if isinstance(v, bool)}
    numbers = engine_map.model_constants(constants)

    def step_of(p: Mapping[str, Any], q: Mapping[str, Any]) -> Projected:
        states = _two(p, q)["counterexample"]["states"]
        try:
            (step,) = engine_map.steps_of(states, numbers, gates)
        except UnreadableCounterexample:
            return ()
        if step.action not in ENGINE_OPS or step.wf is None:
            return ()
        outcome = _engine_outcome(p, step)
        return () if outcome is None else ((str(step.wf), f"{ENGINE_OPS[step.action]}/{outcome}"),)
    return step_of


def no_overlapping_runs(state: Mapping[str, Any]) -> bool:
    """Engine.tla's NoOverlappingRuns: a behaviour through a state with two runs of one workflow
    (a handler that outlived its lease while another node runs it) is one TraceEngine rejects
    at the second run_start, rightly: no generated run follows it."""
    running: dict[str, int] = {}
    for per in state["work"].values():
        for w, slots in per.items():
            running[w] = running.get(w, 0) + sum(1 for held in slots.values() if held["phase"] == "running")
    return all(n <= 1 for n in running.values())


# system -> the states a generated run may pass through (every state, where none is named).
ADMITS: dict[str, Callable[[Mapping[str, Any]], bool]] = {"engine": no_overlapping_runs}

# system -> the projection of its base model's steps.
PROJECTIONS: dict[str, Callable[[Mapping[str, Any]], StepOf]] = {"engine": engine_step, "workqueue": workqueue_step,
                                                                 "command": command_step}
