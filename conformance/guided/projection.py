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
from conformance.replay.map import Step, UnreadableCounterexample

# The map's step -> the trace op it logs (those not named log nothing: hidden steps).
WORKQUEUE_OPS = {"Offer": "offer", "ReceiveNew": "receive_new", "Reclaim": "reclaim", "InvokeStart": "invoke_start",
                 "InvokeEnd": "invoke_end", "Renew": "renew", "RenewClaim": "renew", "Ack": "ack", "Release": "release"}
COMMAND_OPS = {"SubmitState": "submit_state", "Offer": "offer", "ReceiveNew": "receive_new", "Reclaim": "reclaim",
               "GuardTake": "guard_take", "GuardRenew": "guard_renew", "PutIfOwner": "put_if_owner",
               "ExternalCall": "external_call", "GuardRelease": "guard_release", "Ack": "ack", "Cancel": "cancel"}
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


# system -> the projection of its base model's steps (the engine's graph is too large to dump:
# its base model runs for minutes, not seconds).
PROJECTIONS: dict[str, Callable[[Mapping[str, Any]], StepOf]] = {"workqueue": workqueue_step,
                                                                 "command": command_step}
