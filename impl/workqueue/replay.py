"""A schedule of `tla/WorkQueue.tla` steps, run on the work queue's nodes (as `impl/engine/replay.py`).

The consumers are `QueueNode`s over one Redis (fakeredis or a real server) running the real Lua
scripts, on a virtual clock that moves only at a `Tick` (one tick = `TICK_MS`):

    Offer(e1)              the producer's offer (XADD); e1 is the id it returns
    ReceiveNew(c1, e1)     c1's poll_and_admit delivers e1 as new, and reserves it (the hand-off)
    InvokeStart(c1, e1)    c1 starts the handler (invoke_start started)
    Renew(c1, e1)          c1's heartbeat (c1 must run that one invocation only)
    RenewCheck(c1, e1)     c1's heartbeat with the non-atomic renewal: the steps up to the
    ... RenewClaim(c1, e1) matching RenewClaim run inside its hook between the read and the claim
    InvokeEnd(c1, e1, r)   c1 finishes the call (invoke_end, then ack or release: `finish`)

Close is the threaded `Consumer.close` (consumer.py) as steps: no more polls, and with
`close_waits_for_handlers` off no more heartbeat. Pause and HeartbeatLag need no hook: the
node's leases are left to lapse (it is not stepped, and a `Tick` runs no heartbeat for it).
The spec's timing assumption holds otherwise: before a `Tick` lets a running call's entry idle
for the visibility timeout, its node's own heartbeat runs (and renews, or not, as the gates
say); a hand-off that would lapse is `blocked`. NoOverlappingInvocations and PermitBound are
checked after every step from the nodes' own active tables. For EveryEntryAcked and
IntakeNeverFreezes the schedule is followed by a fair drain (faults stop; each tick every live
node's handlers return done, its heartbeat renews, it polls): an entry still not acked (not
delivered) reproduces the property, and a drain that finishes everything means the
counterexample's endless end cannot happen (`blocked`). LaggingLearnsLoss is not replayed.
On fakeredis (`memory://`, its clock patched by `virtual_time`) or on a real Redis server
(`redis://...`, keys under a fresh prefix, deleted after, whose clock `RedisTimeWarp` moves
with the virtual one). The steps themselves are
`replay_steps.py`; this module configures the queue from the model's gates and gives the verdict.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from impl.replay import Line, Replay
from impl.workqueue import recording
from impl.workqueue.config import Gates, Settings
from impl.workqueue.errors import BadSettings, StoreFault
from impl.workqueue.replay_steps import TICK_MS, Blocked, Runner, describe, settle_all, take_step
from impl.workqueue.sim_redis import virtual_time

GATES = {
    "RenewOwnerCheck": "renew_owner_check",
    "RenewPastMaxProc": "renew_past_max_processing",
    "InvocationScopedPermits": "invocation_scoped_permits",
    "AtomicRenew": "atomic_renew",
    "HeartbeatOn": "heartbeat",
    "CleanupOnAckFailure": "cleanup_on_ack_failure",
    "ReclaimRetries": "reclaim_retries",
    "CloseWaitsForHandlers": "close_waits_for_handlers",
    "PermitCheck": "permit_bound",
}
NO_GATE = {
    "ReclaimTurn": "the poll order is impl/workqueue/core.py Fairness (one reclaim-first poll in ratio + 1)",
    "PollFallback": "a poll always falls back to the other source (node.py poll)",
    "DropDuplicateStart": "the executor always drops a hand-off of an entry this node already runs (node.py)",
}
UNMAPPED = {
    "UnpaidLag": "a fault the model's budget never paid for is a model-checking device (TypeOK's calibration)",
    "OfferFresh": "an endless producer's re-offer of an acked slot (EndlessSpec) is not replayed",
}
SAFETY = ("NoOverlappingInvocations", "PermitBound")
LIVENESS = ("EveryEntryAcked", "IntakeNeverFreezes")
# Any other property (TypeOK, a reach target's Never_<op>_<outcome>): the schedule runs to its end.
NOT_REPLAYED = {"LaggingLearnsLoss": "the queue's replay does not follow a lagging invocation to its next heartbeat yet"}
DRAIN_ROUNDS = 20


def _broken(r: Runner, prop: str | None) -> str | None:
    if prop == "NoOverlappingInvocations":
        holders: dict[str, list[str]] = {}
        for (c, e), inv in r.invs.items():
            if inv.running and not inv.lost and (c, e) not in r.lagging:
                holders.setdefault(e, []).append(c)
        for e, cs in holders.items():
            if len(cs) > 1:
                return f"NoOverlappingInvocations: {e} runs on {' and '.join(cs)}, each holding its lease"
    if prop == "PermitBound":
        for c, node in r.nodes.items():
            n = sum(1 for (m, _), inv in r.invs.items() if m == c and inv.running)
            if n > r.settings.concurrency:
                return f"PermitBound: {c} runs {n} calls with {r.settings.concurrency} permit(s)"
    return None


def _drain(r: Runner, prop: str | None) -> str:
    """Faults stop (paused nodes resume) and every live node keeps working, one tick a round:
    its handlers return done, its heartbeat renews, it polls and starts what it gets. What is
    still not acked at the end ("" when every offered entry is)."""
    r.paused.clear()
    for _ in range(DRAIN_ROUNDS):
        for c in r.names:
            node = r.nodes[c]
            for (m, e), inv in sorted(r.invs.items()):
                if m != c:
                    continue
                if not inv.running:
                    node.start(inv)
                try:
                    node.finish(inv, "done")
                except StoreFault:
                    pass  # the ack failed: the entry stays pending
                r.invs.pop((m, e))
            node.heartbeat()
            while c not in r.closing:
                inv = node.poll_and_admit()
                if inv is None:
                    break
                r.undelivered.discard(inv.entry)
                node.reserve(inv)
                node.start(inv)
                e = next((k for k, v in r.ids.items() if v == inv.entry), inv.entry)
                r.invs[(c, e)] = inv
        r.advance(TICK_MS)
    if prop == "IntakeNeverFreezes":
        left = sorted(e for e, i in r.ids.items() if i in r.undelivered)
        return f"{', '.join(left)} never delivered ({DRAIN_ROUNDS} ticks of a fair drain)" if left else ""
    left = sorted(e for e, i in r.ids.items() if _present(r, i))
    return f"{', '.join(left)} never acked ({DRAIN_ROUNDS} ticks of a fair drain)" if left else ""


def _present(r: Runner, entry: str) -> bool:
    """Whether `entry` is still in the stream (acked entries are deleted: XACK + XDEL)."""
    return bool(r.client.xrange(r.store.stream, min=entry, max=entry))


def queue_config(gates: Mapping[str, bool], constants: Mapping[str, Any]) -> tuple[Gates, Settings, list[str]]:
    """The queue's gates and settings for a model's, and notes on model gates with no queue gate."""
    off = [GATES[g] for g, v in gates.items() if g in GATES and not v]
    notes = [f"{g} is off in the model, but the queue has no such gate: {NO_GATE[g]}"
             for g, v in sorted(gates.items()) if g in NO_GATE and not v]
    vt = int(constants.get("VT", 2)) * TICK_MS
    settings = Settings(visibility_timeout_ms=vt, max_processing_ms=int(constants.get("MaxProc", 1)) * TICK_MS,
                        concurrency=int(constants.get("Permits", 1)), heartbeat_ms=max(1, vt // 3))
    return Gates().off(*off), settings, notes


def replay(schedule: Mapping[str, Any], *, store: str = "memory://", trace_dir: Path | None = None) -> Replay:
    """Run `schedule` (from `conformance.replay.workqueue_map`) on the queue's nodes, on fakeredis
    (`memory://`, its idle times following the virtual clock) or a real server (`redis://`).

    With `trace_dir`, the steps the store committed, with the fault lines the schedule's faults
    logged and each consumer's `stop`, are written there as one `workqueue` trace, however the
    replay ended."""
    prop = schedule.get("property")
    gates, settings, notes = queue_config(schedule.get("gates", {}), schedule.get("constants", {}))
    result = Replay("held", prop, "", gates=gates.as_dict(), notes=notes)
    steps = list(schedule["steps"])
    for i, s in enumerate(steps, 1):
        if s["action"] in UNMAPPED:
            result.verdict, result.step, result.reason = "unmapped", i, f"step {i} {s['action']}: {UNMAPPED[s['action']]}"
            return result
    settle_between: dict[int, list[int]] = {}  # an InvokeEnd's index -> the steps before its settle
    for i, s in enumerate(steps, 1):
        if s["action"] != "InvokeEnd":
            continue
        key = (s["node"], s["wf"])
        kind = "Ack" if s["detail"].get("result", "done") == "done" else "Release"  # a done call is acked
        j = next((k for k in range(i, len(steps)) if steps[k]["action"] == kind
                  and (steps[k]["node"], steps[k]["wf"]) == key), len(steps))
        settle = steps[j]["action"] if j < len(steps) else "Ack"
        scoped = schedule.get("gates", {}).get("InvocationScopedPermits", True)

        def commutes(x: Mapping[str, Any]) -> bool:
            # Done early, the ack or release changes nothing a step on another entry reads, but
            # a release changes its entry's idle time, so not a Tick; nor, with permits held for
            # a message's life, a poll by the same consumer (its permit comes back with the ack).
            if x["action"] == "Tick":
                return settle == "Ack"
            if x["action"] in ("ReceiveNew", "Reclaim", "EmptyPoll") and x["node"] == key[0] and not scoped:
                return False
            return x.get("wf") != key[1]

        if any(not commutes(x) for x in steps[i:j]):
            # The model puts steps between the end and its ack or release that do not commute
            # with them: they are taken, in the model's order, while the call's finish is held
            # between its two store steps (replay_steps.py _Settling).
            settle_between[i - 1] = list(range(i, j))
    if prop in NOT_REPLAYED:
        result.verdict, result.reason = "unmapped", f"{prop}: {NOT_REPLAYED[prop]}"
        return result
    client, prefix = None, "replay"
    if store.startswith(("redis://", "rediss://")):
        import redis

        client = redis.Redis.from_url(store)
        prefix = f"lp-replay-{uuid.uuid4().hex[:10]}"
    elif not store.startswith("memory"):
        raise BadSettings(f"store {store!r}: the queue replays on memory:// (fakeredis) or a redis:// URL")
    r = Runner(schedule, gates, settings, client, prefix)
    r.lines = result.lines
    r.settle_between = settle_between
    try:
        with (virtual_time(r.clock) if client is None else contextlib.nullcontext()):
            try:
                return _run(r, result, steps, prop)
            finally:
                try:
                    settle_all(r)
                finally:
                    if trace_dir is not None:
                        _export(r, trace_dir, str(schedule.get("model") or "replay"))
    finally:
        if client is not None:
            r.store.delete_keys()
            client.close()


def _close(r: Runner) -> None:
    """Close every consumer that did not crash, as `Consumer.close` does once the schedule is
    over: a paused one resumes, its hand-offs run and its calls return (done: ack), its
    heartbeat's lag ends, and it logs its stop with the permits it still holds."""
    for c in r.names:
        if c in r.crashed:
            continue
        if c in r.paused:
            r.paused.discard(c)
            r.store.line(c, "pause", "end")
        node = r.nodes[c]
        for (m, e), inv in sorted(r.invs.items()):
            if m != c:
                continue
            if not inv.running:
                node.start(inv)
            try:
                node.finish(inv, "done")
            except StoreFault:
                pass  # the ack failed: the entry stays pending
            r.invs.pop((m, e))
        r.close_lag(c)
        r.store.line(c, "stop", "stopped", args={"permits_in_use": node.permits.in_use})


def _export(r: Runner, trace_dir: Path, run: str) -> Path:
    """Close the consumers (`_close`) and write the replay's `workqueue` trace."""
    _close(r)
    trace_dir.mkdir(parents=True, exist_ok=True)
    return recording.export(trace_dir / f"{run}.ndjson", r.store, system="workqueue", settings=r.settings,
                            gates=r.gates, nodes=r.names, run=run)


def _run(r: Runner, result: Replay, steps: list[dict[str, Any]], prop: str | None) -> Replay:
    for i, s in enumerate(steps, 1):
        if id(s) in r.done:
            continue
        name = describe(s)
        try:
            outcome = take_step(r, s)
        except Blocked as b:
            result.verdict, result.step, result.reason = "blocked", i, f"step {i} {name}: {b}"
            result.lines.append(Line(len(result.lines) + 1, name, "BLOCKED", r.rows()))
            # Not drained from here, unlike the engine's replay (impl/engine/replay.py): this one
            # composes the nodes' operations, so at a block it may hold what the nodes' own loops
            # never do (two calls of one entry on one consumer), and a drain would record that.
            return result
        if r.claim is not None:  # the hook has logged the read and the steps between
            name, r.claim = r.claim, None
        elif s["action"] == "RenewCheck":
            outcome += " (atomic: the owner check and the claim in one script)"
        result.lines.append(Line(len(result.lines) + 1, name, outcome, r.rows()))
        broken = _broken(r, prop)
        if broken:
            result.verdict, result.step, result.reason = "reproduced", i, f"after step {i} {name}: {broken}"
            return result
    settle_all(r)  # the calls the schedule left between their end and their settle
    if prop in LIVENESS:
        left = _drain(r, prop)
        if left:
            result.verdict, result.reason = "reproduced", f"after the schedule and the drain: {prop}: {left}"
        else:
            result.verdict = "blocked"
            result.reason = (f"the counterexample's endless end cannot happen here: after its {len(steps)} steps, "
                             f"a fair drain ({DRAIN_ROUNDS} ticks: polls, handlers done, heartbeats) "
                             f"{'delivers' if prop == 'IntakeNeverFreezes' else 'acks'} every entry")
        return result
    result.reason = f"the schedule ran to its end ({len(steps)} steps) and {prop} held"
    return result
