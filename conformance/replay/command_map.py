"""A TLC counterexample of `tla/CommandQueue.tla` as a schedule of named steps (as `map.py`).

A worker's attempt is a program counter (`pc`): the diff of two states says which worker moved
and from where to where, which names the action (`GuardTake`, `PutIfOwner`, `ExternalCall`,
`CallThrows`, ...); the client's and the store's changes name the rest (`SubmitState`, `Offer`,
`Cancel`, `GuardExpire`, `StateExpire`). `Step.node` is the worker, `Step.wf` the command. Where
two actions leave the same change (a refused external call and a lost guard renewal both end the
attempt), TLC's action name, or a reach model's `lastStep`, tells them apart. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from conformance.replay.map import Schedule, Step, UnreadableCounterexample

GUARDS = ("AtomicPutIfOwner", "RepairOnResubmit", "AttemptGuard", "TerminalCheck", "CancelTakesGuard",
          "CallChecksGuard", "ReleaseChecksOwner")
_NUMBERS = ("MaxSubmits", "MaxFaults")
# The sets a schedule names, and the model constants that give them (CommandQueue declares
# WorkerIds and CommandIds, and defines Workers and Commands as them).
_SETS = {"Workers": "WorkerIds", "Commands": "CommandIds"}
_WRITES = {"submit": "call", "process": "finish", "finish": "release"}


def _worker(p: Mapping[str, Any], q: Mapping[str, Any], w: str, gates: Mapping[str, bool],
            index: int, action: str | None = None) -> Step | None:
    a, b = p["pc"][w], q["pc"][w]
    k = p["cmdOf"][w] if p["cmdOf"][w] in (p.get("status") or {}) else q["cmdOf"][w]
    ma, mb = p["wmode"][w], q["wmode"][w]
    if ma != mb:
        name = {"crashed": "Crash", "paused": "Pause"}.get(mb, "Resume")
        return Step(index, name, w, k if k in (q.get("status") or {}) else None)
    if a == "idle" and b == "take":
        k = q["cmdOf"][w]
        return Step(index, "ReceiveNew" if q["fresh"][k] < p["fresh"][k] else "Reclaim", w, k)
    if a == "take":
        outcome = "busy" if b == "idle" else "read" if not gates.get("AttemptGuard", True) else "taken"
        return Step(index, "GuardTake", w, k, detail={"outcome": outcome, "next": b})
    if a in _WRITES and not p["checked"][w] and q["checked"][w]:
        return Step(index, "PutCheck", w, k, detail={"outcome": "checked"})
    if a in _WRITES and b == _WRITES[a]:
        return Step(index, "PutIfOwner", w, k, detail={"outcome": "written", "status": q["status"][k], "pc": a})
    if a in _WRITES and b == "idle":
        if not gates.get("AtomicPutIfOwner", True) and not p["checked"][w]:
            return Step(index, "PutCheck", w, k, detail={"outcome": "refused"})
        return Step(index, "PutIfOwner", w, k, detail={"outcome": "refused", "pc": a})
    if a == "call" and b == "process":
        return Step(index, "ExternalCall", w, k, detail={"outcome": "called"})
    if a == "call" and b == "idle" and action == "ExternalCall":
        return Step(index, "ExternalCall", w, k, detail={"outcome": "refused"})
    if a == "process" and b == "drop":
        return Step(index, "CallThrows", w, k)
    if (a, b) in (("release", "ack"), ("drop", "idle")):
        return Step(index, "GuardRelease", w, k, detail={"after_throw": a == "drop"})
    if a == "ack" and b == "idle":
        return Step(index, "Ack", w, k)
    if a not in ("idle", "take", "ack") and b == "idle":
        return Step(index, "GuardRenew", w, k, detail={"outcome": "lost"})
    if p["stale"][w] and not q["stale"][w] and a == b:
        return Step(index, "GuardRenew", w, k, detail={"outcome": "renewed"})
    return None


def _named(p: Mapping[str, Any], q: Mapping[str, Any], gates: Mapping[str, bool], index: int) -> Step | None:
    """The step a behaviour of tla/ReachCommandQueue.tla names in `lastStep`, where the states
    alone do not tell it (a lost guard renewal ends the attempt as a refused write does; a
    refused cancel changes nothing): None where they do."""
    named = q.get("lastStep")
    if not isinstance(named, Mapping):
        return None
    name, of = named.get("step"), named.get("of")
    if name == "GuardRenew" and of in (q.get("pc") or {}):
        lost = p["pc"][of] != "idle" and q["pc"][of] == "idle"
        return Step(index, "GuardRenew", of, p["cmdOf"][of], detail={"outcome": "lost" if lost else "renewed"})
    if name == "ExternalCall" and of in (q.get("pc") or {}) and q["pc"][of] == "idle":
        return Step(index, "ExternalCall", of, p["cmdOf"][of], detail={"outcome": "refused"})
    if name == "Cancel" and of in (q.get("status") or {}) and p["status"][of] == q["status"][of]:
        return Step(index, "Cancel", None, of,
                    detail={"outcome": "terminal" if p["status"][of] in ("SUCCEEDED", "FAILED", "CANCELLED") else "busy"})
    return None


def _step(p: Mapping[str, Any], q: Mapping[str, Any], gates: Mapping[str, bool], index: int,
          action: str | None = None) -> Step | None:
    named = _named(p, q, gates, index)
    if named is not None:
        return named
    for w in sorted(q.get("pc") or {}):
        if (p["pc"][w], p["wmode"][w], p["stale"][w], p["checked"][w]) != \
                (q["pc"][w], q["wmode"][w], q["stale"][w], q["checked"][w]):
            step = _worker(p, q, w, gates, index, action)
            if step is not None:
                return step
    for k in sorted(q.get("status") or {}):
        if q["submits"][k] > p["submits"][k]:
            return Step(index, "SubmitState", None, k,
                        detail={"outcome": "created" if p["status"][k] == "NONE" else "exists"})
        if p["client"][k] == "offer" and q["client"][k] == "done":
            return Step(index, "Offer", None, k)
        if p["client"][k] == "offer" and q["client"][k] == "idle":
            return Step(index, "ClientCrash", None, k)
        if p["status"][k] != q["status"][k] and q["status"][k] == "CANCELLED":
            return Step(index, "Cancel", None, k, detail={"outcome": "cancelled"})
        if p["status"][k] != q["status"][k] and q["status"][k] == "NONE":
            return Step(index, "StateExpire", None, k)
        if p["guard"][k] != q["guard"][k] and q["guard"][k] not in (q.get("pc") or {}):
            return Step(index, "GuardExpire", p["guard"][k], k)
    return None


def schedule_of(model: str, verdict: Mapping[str, Any], constants: Mapping[str, Any]) -> Schedule:
    """The schedule of a `check --json` verdict of a command model (see `map.schedule_of`)."""
    cx = verdict.get("counterexample")
    if not cx or not cx.get("states"):
        raise UnreadableCounterexample(f"{model}: the verdict has no counterexample to replay ({verdict.get('kind')})")
    states: Sequence[Mapping[str, Any]] = cx["states"]
    gates = {k: v for k, v in constants.items() if isinstance(v, bool)}
    steps: list[Step] = []
    for prev, cur in zip(states, states[1:]):
        p, q = prev["variables"], cur["variables"]
        if cur["action"] == "OfferRetry":  # MCCommandQueue's unpaid retry (TypeOK's calibration)
            steps.append(Step(cur["index"], "OfferRetry"))
            continue
        step = _step(p, q, gates, cur["index"], cur.get("action"))
        if step is None:
            changed = sorted(k for k in q if q.get(k) != p.get(k))
            raise UnreadableCounterexample(
                f"state {cur['index']} ({cur['action']}): no action of tla/CommandQueue.tla explains the change of "
                f"{', '.join(changed)}")
        steps.append(step)
    numbers = {k: constants[k] for k in _NUMBERS if k in constants}
    numbers |= {k: sorted(constants[c]) for k, c in _SETS.items() if c in constants}
    loop_from = None
    if cx.get("back_to") is not None:
        loop_from = next((i for i, s in enumerate(steps) if s.state > int(cx["back_to"])), len(steps))
    return Schedule(model, verdict.get("property"), numbers, gates, tuple(steps), loop_from,
                    bool(cx.get("stutters")), GUARDS)
