"""A schedule of `tla/WorkQueue.tla` steps, run on the work queue's nodes (as `impl/engine/replay.py`).

The consumers are `QueueNode`s over one fakeredis server running the real Lua scripts, on a
virtual clock (`sim_redis.virtual_time`) that moves only at a `Tick` (one tick = `TICK_MS`):

    Offer(e1)              the producer's offer (XADD); e1 is the id it returns
    ReceiveNew(c1, e1)     c1's poll_and_admit delivers e1 as new, and reserves it (the hand-off)
    InvokeStart(c1, e1)    c1 starts the handler (invoke_start started)
    Renew(c1, e1)          c1's heartbeat (c1 must run that one invocation only)
    RenewCheck(c1, e1)     c1's heartbeat with the non-atomic renewal: the steps up to the
    ... RenewClaim(c1, e1) matching RenewClaim run inside its hook between the read and the claim
    InvokeEnd(c1, e1, r)   c1 finishes the call (invoke_end, then ack or release: `finish`)

Close is the threaded `Consumer.close` (consumer.py) as steps: no more polls, and with
`close_waits_for_handlers` off no more heartbeat. Pause and HeartbeatLag need no hook: the node's leases are left to lapse (it is not stepped,
and a `Tick` runs no heartbeat for it). The spec's timing assumption holds otherwise: before a
`Tick` lets a running call's entry idle for the visibility timeout, its node's own heartbeat
runs (and renews, or not, as the gates say); a hand-off that would lapse is `blocked`. NoOverlappingInvocations and PermitBound are checked after every step
from the nodes' own active tables. For EveryEntryAcked and IntakeNeverFreezes the schedule is
followed by a fair drain (faults stop; each tick every live node's handlers return done, its
heartbeat renews, it polls): an entry still not acked (not delivered) reproduces the property,
and a drain that finishes everything means the counterexample's endless end cannot happen
(`blocked`). LaggingLearnsLoss is not replayed (`unmapped`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from impl.clock import VirtualClock
from impl.replay import Line, Replay
from impl.workqueue.config import Gates, Settings
from impl.workqueue.core import Invocation
from impl.workqueue.errors import StoreFault
from impl.workqueue.node import QueueNode
from impl.workqueue.sim_redis import fake_client, virtual_time
from impl.workqueue.store import QueueStore

TICK_MS = 1_000

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
}
UNMAPPED = {
    "UnpaidLag": "a fault the model's budget never paid for is a model-checking device (TypeOK's calibration)",
    "OfferFresh": "an endless producer's re-offer of an acked slot (EndlessSpec) is not replayed",
}
SAFETY = ("NoOverlappingInvocations", "PermitBound")
LIVENESS = ("EveryEntryAcked", "IntakeNeverFreezes")
DRAIN_ROUNDS = 20


class _Blocked(Exception):
    """The queue cannot take a step as the schedule has it (the message says why)."""


class _Runner:
    """One replay: the nodes, the model's entries as stream ids, and what each node holds."""

    def __init__(self, schedule: Mapping[str, Any], gates: Gates, settings: Settings) -> None:
        self.c = schedule["constants"]
        self.steps: list[dict[str, Any]] = list(schedule["steps"])
        self.gates, self.settings = gates, settings
        self.clock = VirtualClock(1_000_000)
        self.client = fake_client()
        self.store = QueueStore(self.client, "replay", explicit_ids=True)
        self.names = tuple(self.c.get("Consumers", ["c1", "c2"]))
        self.nodes = {n: QueueNode(self.store, n, self.clock, settings, gates) for n in self.names}
        self.ids: dict[str, str] = {}  # model entry -> stream id
        self.undelivered: set[str] = set()  # stream ids offered and never delivered
        self.invs: dict[tuple[str, str], Invocation] = {}  # (consumer, entry): delivered, not ended
        self.touched: dict[str, int] = {}  # stream id -> when it was last delivered or renewed (ms)
        self.touched_by: dict[str, str] = {}  # stream id -> what touched it last
        self.start = self.clock.now_ms()
        self.lagging: set[tuple[str, str]] = set()  # (consumer, entry): its lease may lapse unnoticed
        self.paused: set[str] = set()
        self.closing: set[str] = set()  # closed: no more polls; the heartbeat as consumer.py close
        self.tick = 0
        self.events = 0
        self.lines: list[Line] = []  # the replay's lines (the hook of a renewal adds to them)
        self.done: set[int] = set()  # steps already taken (inside a renewal's hook)
        self.claim: str | None = None  # set by a non-atomic renewal's hook: its claim's step

    def now(self) -> int:
        return self.clock.now_ms()

    def new_events(self) -> list[dict[str, Any]]:
        evs = self.store.events()
        new, self.events = evs[self.events:], len(evs)
        return new

    def rows(self) -> str:
        parts = []
        for e, i in sorted(self.ids.items()):
            owner = self.store.pending_owner(i)
            parts.append(f"{e}: {'pending, owner ' + owner if owner else 'not pending'}")
        return "; ".join(parts) or "-"

    def entry(self, e: str) -> str:
        if e not in self.ids:
            raise _Blocked(f"{e} was never offered")
        return self.ids[e]

    def up(self, c: str) -> QueueNode:
        if c in self.paused:
            raise _Blocked(f"{c} is paused")
        return self.nodes[c]


def _outcome(evs: list[dict[str, Any]], op: str) -> str | None:
    for ev in reversed(evs):
        if ev.get("op") == op:
            return str(ev.get("outcome"))
    return None


def _take(r: _Runner, s: dict[str, Any]) -> str:
    a, c, e, d = s["action"], s["node"], s["wf"], s["detail"]
    if a == "Tick":
        beats = _tick(r)
        return f"+{TICK_MS} ms" + (f" ({beats})" if beats else "")
    if a == "Offer":
        r.ids[e] = r.store.offer("producer", r.now(), e)
        r.undelivered.add(r.ids[e])
        return f"offered as {r.ids[e]}"
    if a == "Pause":
        r.paused.add(c)
        r.lagging |= {(c, x) for (n, x) in r.invs if n == c}
        return "paused: its leases may lapse"
    if a == "Close":
        r.closing.add(c)
        waits = r.gates.close_waits_for_handlers
        return "closing: no more polls, " + ("heartbeat on until its calls end" if waits else "heartbeat stopped")
    if a == "Resume":
        r.paused.discard(c)
        return "resumed"
    if a == "HeartbeatLag":
        r.lagging.add((c, e))
        return "its heartbeat runs late"
    if a == "Crash":
        r.nodes[c] = QueueNode(r.store, c, r.clock, r.settings, r.gates)
        r.invs = {k: v for k, v in r.invs.items() if k[0] != c}
        r.paused.discard(c)
        return "crashed: its hand-offs and calls are gone"
    if a in ("ReceiveNew", "Reclaim", "EmptyPoll"):
        return _poll(r, s)
    if a == "InvokeStart":
        inv = r.invs.get((c, e))
        if inv is None:
            raise _Blocked(f"{c} holds no hand-off of {e}")
        node = r.up(c)
        if d.get("outcome") == "rejected":
            node.reject(inv)
            r.invs.pop((c, e))
            return "rejected"
        if d.get("outcome") != "started":
            raise _Blocked(f"{c}'s {e} is {d.get('outcome')} in the model; the node drops a duplicate at its poll")
        node.start(inv)
        return "started"
    if a in ("Renew", "RenewCheck"):
        return _renew(r, s)
    if a == "RenewClaim":
        raise _Blocked(f"{c}'s RenewClaim of {e} has no RenewCheck before it")
    if a == "InvokeEnd":
        inv = r.invs.pop((c, e), None)
        if inv is None or not inv.running:
            raise _Blocked(f"{c} runs no invocation of {e}")
        i = r.steps.index(s)
        ack = next((x for x in r.steps[i + 1:] if x["action"] == "Ack" and (x["node"], x["wf"]) == (c, e)), None)
        if ack is not None and ack["detail"].get("outcome") == "failed":
            r.store.faults.fail("ack", c)
        try:
            r.up(c).finish(inv, d.get("result", "done"))
        except StoreFault:
            pass  # the planned ack failure (the model's Ack failed)
        r.lagging.discard((c, e))
        evs = r.new_events()
        return f"ended {d.get('result')}, then {_outcome(evs, 'ack') or _outcome(evs, 'release') or 'nothing'}"
    if a in ("Ack", "Release"):
        return "done by the node's finish at InvokeEnd"
    raise _Blocked(f"no replay for {a}")


def _poll(r: _Runner, s: dict[str, Any]) -> str:
    a, c, e = s["action"], s["node"], s["wf"]
    if c in r.closing:
        raise _Blocked(f"{c} is closing: it polls no more")
    inv = r.up(c).poll_and_admit()
    if a == "EmptyPoll":
        if inv is not None:
            raise _Blocked(f"{c}'s poll delivers {inv.entry}; in the model it finds nothing")
        return "nothing"
    if inv is None:
        if a == "Reclaim" and e in r.ids and r.ids[e] in r.touched:
            t, who = r.touched[r.ids[e]], r.touched_by.get(r.ids[e], "?")
            raise _Blocked(f"{c}'s poll delivers nothing: {e} has been idle {r.now() - t} ms, under the visibility "
                           f"timeout of {r.settings.visibility_timeout_ms} ms ({who} at {t - r.start} ms)")
        raise _Blocked(f"{c}'s poll delivers nothing (no permit, no new entry, none idle for "
                       f"{r.settings.visibility_timeout_ms} ms){' : ' + r.rows()}")
    want = "new" if a == "ReceiveNew" else "reclaim"
    if want == "new" and inv.source == "new" and inv.entry != r.entry(e) and inv.entry in r.undelivered \
            and r.ids[e] in r.undelivered:
        # Undelivered entries are alike in the model (it picks any), the stream gives the oldest:
        # the model's name goes with the entry delivered.
        other = next(k for k, v in r.ids.items() if v == inv.entry)
        r.ids[e], r.ids[other] = r.ids[other], r.ids[e]
    if inv.entry != r.entry(e) or inv.source != want:
        raise _Blocked(f"{c}'s poll delivers {inv.entry} ({inv.source}); in the model {e} ({want})")
    r.undelivered.discard(inv.entry)
    r.nodes[c].reserve(inv)
    r.invs[(c, e)] = inv
    r.touched[inv.entry] = r.now()
    r.touched_by[inv.entry] = f"delivered to {c}"
    return f"delivered ({inv.source}, delivery {inv.deliveries})"


def _renew(r: _Runner, s: dict[str, Any]) -> str:
    a, c, e, d = s["action"], s["node"], s["wf"], s["detail"]
    node = r.up(c)
    mine = [inv for inv in node.active.all() if inv.running]  # what its heartbeat renews
    if not any(inv.entry == r.entry(e) for inv in mine):
        raise _Blocked(f"{c} runs no call of {e} for its heartbeat to renew")
    if len(mine) > 1:
        raise _Blocked(f"{c}'s heartbeat renews every call it runs ({len(mine)}), not {e} alone")
    inv = mine[0]
    if not r.gates.heartbeat:
        raise _Blocked(f"{c} has no heartbeat (gate heartbeat off): nothing renews {e}")
    if c in r.closing and not r.gates.close_waits_for_handlers:
        raise _Blocked(f"{c}'s close stopped its heartbeat (close_waits_for_handlers off)")
    if a == "RenewCheck":
        i = r.steps.index(s)
        j = next((k for k in range(i + 1, len(r.steps)) if r.steps[k]["action"] == "RenewClaim"
                  and (r.steps[k]["node"], r.steps[k]["wf"]) == (c, e)), None)
        if j is None:
            raise _Blocked(f"{c}'s RenewCheck of {e} has no RenewClaim after it")
        between = r.steps[i + 1:j]
        if any(b["node"] == c and b["action"] in ("Renew", "RenewCheck", "InvokeEnd") for b in between):
            raise _Blocked(f"{c} acts on {e} between the read and the claim of its renewal")
        r.done.add(id(r.steps[j]))  # the heartbeat's claim is the RenewClaim (or an atomic renewal's)

        def hook(entry: str) -> None:
            r.lines.append(Line(len(r.lines) + 1, _describe(s), f"read: owner {r.store.pending_owner(entry)}", r.rows()))
            r.claim = _describe(r.steps[j])
            _run_between(r, between)

        node.between_renew_check_and_claim = hook
    lost = inv.lost
    try:
        node.heartbeat()
    finally:
        node.between_renew_check_and_claim = None
    refused = inv.lost and not lost
    if not refused:
        r.touched[inv.entry] = r.now()
        r.touched_by[inv.entry] = f"renewed by {c}"
        r.lagging.discard((c, e))
    want = d.get("outcome")
    if want == "renewed" and refused:
        raise _Blocked(f"{c}'s renewal of {e} is refused: a peer owns it (the owner check)")
    if want == "refused" and not refused:
        raise _Blocked(f"{c}'s renewal of {e} succeeds; in the model it is refused")
    return "refused" if refused else "renewed"


def _run_between(r: _Runner, steps: list[dict[str, Any]]) -> None:
    """The steps the schedule puts between a non-atomic renewal's read and its claim."""
    for s in steps:
        try:
            outcome = _take(r, s)
        except _Blocked as b:
            raise _Blocked(f"between the read and the claim of the renewal, {_describe(s)}: {b}") from None
        r.lines.append(Line(len(r.lines) + 1, _describe(s), outcome, r.rows()))
        r.done.add(id(s))


def _tick(r: _Runner) -> str:
    """One tick. Before it lets a running call's entry idle for the visibility timeout, the
    node's own heartbeat runs (the spec's timing assumption: a heartbeat that is on renews in
    time), unless the node is paused, the call lags or is lost, or its consumer is closing
    without waiting (consumer.py close stops the heartbeat). A hand-off that would lapse
    before its handler starts is `blocked` (the spec's prompt hand-off)."""
    vt, nxt = r.settings.visibility_timeout_ms, r.now() + TICK_MS
    beats = []
    for (c, e), inv in sorted(r.invs.items()):
        if c in r.paused or (c, e) in r.lagging or inv.lost or nxt - r.touched.get(inv.entry, r.now()) < vt:
            continue
        if not inv.running:
            raise _Blocked(f"time would let {e} idle for the visibility timeout in {c}'s hand-off, "
                           "which starts its handler before that")
        if c in r.closing and not r.gates.close_waits_for_handlers:
            continue
        if r.now() < nxt - 1:
            # At the last ms before the lapse: a call's age then is past MaxProc ticks exactly
            # when the spec's elapsed has reached MaxProc (Heartbeats: elapsed < MaxProc).
            r.clock.advance(nxt - 1 - r.now())
        r.nodes[c].heartbeat()
        renewed = _outcome(r.new_events(), "renew")
        if renewed == "renewed":
            r.touched[inv.entry] = r.now()
            r.touched_by[inv.entry] = f"renewed by {c}'s heartbeat"
        beats.append(f"{c}'s heartbeat first: {e} {renewed or 'not renewed'}")
    r.tick += 1
    r.clock.advance(nxt - r.now())
    return "; ".join(beats)


def _broken(r: _Runner, prop: str | None) -> str | None:
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


def _drain(r: _Runner, prop: str | None) -> str:
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
        r.clock.advance(TICK_MS)
    if prop == "IntakeNeverFreezes":
        left = sorted(e for e, i in r.ids.items() if i in r.undelivered)
        return f"{', '.join(left)} never delivered ({DRAIN_ROUNDS} ticks of a fair drain)" if left else ""
    left = sorted(e for e, i in r.ids.items() if _present(r, i))
    return f"{', '.join(left)} never acked ({DRAIN_ROUNDS} ticks of a fair drain)" if left else ""


def _present(r: _Runner, entry: str) -> bool:
    """Whether `entry` is still in the stream (acked entries are deleted: XACK + XDEL)."""
    return bool(r.client.xrange(r.store.stream, min=entry, max=entry))


def _describe(s: Mapping[str, Any]) -> str:
    args = ", ".join(x for x in (s.get("node"), s.get("wf")) if x)
    return f"{s['action']}({args})" if args else s["action"]


def queue_config(gates: Mapping[str, bool], constants: Mapping[str, Any]) -> tuple[Gates, Settings, list[str]]:
    """The queue's gates and settings for a model's, and notes on model gates with no queue gate."""
    off = [GATES[g] for g, v in gates.items() if g in GATES and not v]
    notes = [f"{g} is off in the model, but the queue has no such gate: {NO_GATE[g]}"
             for g, v in sorted(gates.items()) if g in NO_GATE and not v]
    vt = int(constants.get("VT", 2)) * TICK_MS
    settings = Settings(visibility_timeout_ms=vt, max_processing_ms=int(constants.get("MaxProc", 1)) * TICK_MS,
                        concurrency=int(constants.get("Permits", 1)), heartbeat_ms=max(1, vt // 3))
    return Gates().off(*off), settings, notes


def replay(schedule: Mapping[str, Any], *, store: str = "memory://", prefix: str | None = None) -> Replay:
    """Run `schedule` (from `conformance.replay.workqueue_map`) on the queue's nodes (fakeredis only:
    its idle times follow the virtual clock)."""
    prop = schedule.get("property")
    gates, settings, notes = queue_config(schedule.get("gates", {}), schedule.get("constants", {}))
    result = Replay("held", prop, "", gates=gates.as_dict(), notes=notes)
    steps = list(schedule["steps"])
    for i, s in enumerate(steps, 1):
        if s["action"] in UNMAPPED:
            result.verdict, result.step, result.reason = "unmapped", i, f"step {i} {s['action']}: {UNMAPPED[s['action']]}"
            return result
    for i, s in enumerate(steps, 1):
        if s["action"] != "InvokeEnd":
            continue
        key = (s["node"], s["wf"])
        j = next((k for k in range(i, len(steps)) if steps[k]["action"] in ("Ack", "Release")
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

        between = [_describe(x) for x in steps[i:j] if not commutes(x)]
        if between:
            result.verdict, result.step = "unmapped", i
            result.reason = (f"step {i} InvokeEnd{key}: QueueNode.finish ends a call and acks (or releases) it in "
                             f"one call; the model puts {', '.join(between)} between the two")
            return result
    if prop not in SAFETY + LIVENESS:
        result.verdict = "unmapped"
        result.reason = f"{prop}: the queue's replay does not follow a lagging invocation to its next heartbeat yet"
        return result
    if not store.startswith("memory"):
        notes.append(f"store {store}: the queue replays on fakeredis only (its idle times need the virtual clock)")
    r = _Runner(schedule, gates, settings)
    r.lines = result.lines
    with virtual_time(r.clock):
        for i, s in enumerate(steps, 1):
            if id(s) in r.done:
                continue
            name = _describe(s)
            try:
                outcome = _take(r, s)
            except _Blocked as b:
                result.verdict, result.step, result.reason = "blocked", i, f"step {i} {name}: {b}"
                result.lines.append(Line(len(result.lines) + 1, name, "BLOCKED", r.rows()))
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
