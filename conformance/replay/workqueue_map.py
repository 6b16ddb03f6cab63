"""A TLC counterexample of `tla/WorkQueue.tla` as a schedule of named steps (as `map.py` for the engine).

TLC labels a work-queue state `Poll` or `Next` (the other disjuncts of `Next` sit under one
conjunction): the action, its consumer and entry are read from the diff of the two states.

    mode[c]: running -> paused           Pause(c)
    status[e]: new -> pending, owner c    ReceiveNew(c, e)
    inbox[c] loses e, active[c] gains e   InvokeStart(c, e) started
    lost[c] gains e                       Renew(c, e) refused

`Step.node` is the consumer, `Step.wf` the entry. Pure, like `map.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from conformance.replay.map import Schedule, Step, UnreadableCounterexample

# The gates of WorkQueue.tla that are guards; the *Fault gates choose which faults may happen.
GUARDS = ("RenewOwnerCheck", "RenewPastMaxProc", "InvocationScopedPermits", "AtomicRenew", "HeartbeatOn",
          "CleanupOnAckFailure", "ReclaimRetries", "CloseWaitsForHandlers", "PermitCheck", "ReclaimTurn",
          "PollFallback", "DropDuplicateStart")
# The numbers and sets a schedule names, and the model constants that give them (WorkQueue
# declares VTTicks, EntryIds, ... and defines VT, Entries, ... as them).
_NUMBERS = {"VT": "VTTicks", "MaxProc": "MaxProcTicks", "MaxDeliveries": "MaxDeliveries", "MaxFaults": "MaxFaults",
            "Permits": "PermitCount"}
_SETS = {"Consumers": "ConsumerIds", "Entries": "EntryIds"}


def _set(v: Mapping[str, Any], name: str, c: str) -> set[str]:
    return set((v.get(name) or {}).get(c) or ())


def _gained(p: Mapping[str, Any], q: Mapping[str, Any], name: str, c: str) -> set[str]:
    return _set(q, name, c) - _set(p, name, c)


def _lost(p: Mapping[str, Any], q: Mapping[str, Any], name: str, c: str) -> set[str]:
    return _set(p, name, c) - _set(q, name, c)


def _one(xs: set[str]) -> str:
    return sorted(xs)[0]


def _step(p: Mapping[str, Any], q: Mapping[str, Any], index: int, tick: int) -> Step | None:
    consumers = sorted(q.get("mode") or {})
    entries = sorted(q.get("status") or {})
    faulted = q.get("faults", 0) > p.get("faults", 0)
    for c in consumers:
        a, b = p["mode"][c], q["mode"][c]
        if a != b:
            name = {("crashed"): "Crash", ("paused"): "Pause", ("closing"): "Close"}.get(b, "Resume")
            return Step(index, name, c, tick=tick)
    for e in entries:
        a, b = p["status"][e], q["status"][e]
        if a in ("unsent", "gone") and b == "new":
            return Step(index, "Offer" if a == "unsent" else "OfferFresh", None, e, tick=tick)
        if a == "new" and b == "pending":
            return Step(index, "ReceiveNew", q["owner"][e], e, tick=tick)
    for c in consumers:
        for e in sorted(_gained(p, q, "inbox", c)):
            return Step(index, "Reclaim", c, e, tick=tick)
        for e in sorted(_lost(p, q, "inbox", c)):
            outcome = "started" if e in _gained(p, q, "active", c) else "rejected" if faulted else "duplicate_dropped"
            return Step(index, "InvokeStart", c, e, tick=tick, detail={"outcome": outcome})
        for e in sorted(_lost(p, q, "active", c)):
            result = "done" if e in _gained(p, q, "toAck", c) else "not_done"
            return Step(index, "InvokeEnd", c, e, tick=tick, detail={"result": result})
        for e in sorted(_lost(p, q, "toAck", c)):
            outcome = "failed" if faulted else "acked" if p["status"][e] == "pending" else "noop"
            return Step(index, "Ack", c, e, tick=tick, detail={"outcome": outcome})
        for e in sorted(_lost(p, q, "toRelease", c)):
            # Touched: pending, now owned by c and idle 0 (refused: left as it was).
            touched = p["status"][e] == "pending" and q["owner"][e] == c and q["idle"][e] == 0
            return Step(index, "Release", c, e, tick=tick, detail={"outcome": "touched" if touched else "refused"})
        for e in sorted(_gained(p, q, "checked", c)):
            return Step(index, "RenewCheck", c, e, tick=tick, detail={"outcome": "checked"})
        for e in sorted(_lost(p, q, "checked", c)):
            return Step(index, "RenewClaim", c, e, tick=tick,
                        detail={"outcome": "refused" if e in _gained(p, q, "lost", c) else "claimed"})
        for e in sorted(_gained(p, q, "lost", c)):
            return Step(index, "Renew", c, e, tick=tick, detail={"outcome": "refused"})
        if faulted and _gained(p, q, "lagging", c):
            return Step(index, "HeartbeatLag", c, _one(_gained(p, q, "lagging", c)), tick=tick)
    for e in entries:
        if q["idle"][e] == 0 and (p["idle"][e] != 0 or p["owner"][e] != q["owner"][e]):
            return Step(index, "Renew", q["owner"][e], e, tick=tick, detail={"outcome": "renewed"})
    for c in consumers:
        if _lost(p, q, "lagging", c):
            return Step(index, "Renew", c, _one(_lost(p, q, "lagging", c)), tick=tick, detail={"outcome": "renewed"})
    if (q.get("polls") or {}) != (p.get("polls") or {}):
        c = next(c for c in consumers if q["polls"][c] != p["polls"][c])
        return Step(index, "EmptyPoll", c, tick=tick)
    return None


def _is_tick(p: Mapping[str, Any], q: Mapping[str, Any]) -> bool:
    """Only idle times and invocation ages moved (up): time passed."""
    same = all(q.get(k) == p.get(k) for k in q if k not in ("idle", "elapsed"))
    grew = any(q["idle"][e] > p["idle"][e] for e in q.get("idle") or {}) or q.get("elapsed") != p.get("elapsed")
    return same and grew


def schedule_of(model: str, verdict: Mapping[str, Any], constants: Mapping[str, Any]) -> Schedule:
    """The schedule of a `check --json` verdict of a work-queue model (see `map.schedule_of`)."""
    cx = verdict.get("counterexample")
    if not cx or not cx.get("states"):
        raise UnreadableCounterexample(f"{model}: the verdict has no counterexample to replay ({verdict.get('kind')})")
    states: Sequence[Mapping[str, Any]] = cx["states"]
    steps: list[Step] = []
    tick = 0
    for prev, cur in zip(states, states[1:]):
        p, q, index = prev["variables"], cur["variables"], cur["index"]
        if _is_tick(p, q):
            tick += 1
            steps.append(Step(index, "Tick", tick=tick))
            continue
        step = _step(p, q, index, tick)
        if step is None:
            changed = sorted(k for k in q if q.get(k) != p.get(k))
            raise UnreadableCounterexample(
                f"state {index} ({cur['action']}): no action of tla/WorkQueue.tla explains the change of {', '.join(changed)}")
        if cur["action"] in ("UnpaidLag",) or (step.action == "HeartbeatLag" and cur["action"] != "Next"
                                                and cur["action"] not in ("ConsumerStep", "HeartbeatLag")):
            step = Step(step.state, "UnpaidLag", step.node, step.wf, tick=tick)
        steps.append(step)
    gates = {k: v for k, v in constants.items() if isinstance(v, bool)}
    numbers = {k: constants[c] for k, c in _NUMBERS.items() if c in constants}
    numbers |= {k: sorted(constants[c]) for k, c in _SETS.items() if c in constants}
    loop_from = None
    if cx.get("back_to") is not None:
        loop_from = next((i for i, s in enumerate(steps) if s.state > int(cx["back_to"])), len(steps))
    return Schedule(model, verdict.get("property"), numbers, gates, tuple(steps), loop_from,
                    bool(cx.get("stutters")), GUARDS)
