"""The steps of a queue replay (`replay.py`): each action of tla/WorkQueue.tla as calls on
`QueueNode`s. A `Runner` holds the nodes, the model's entries as stream ids and what each node
holds; `take_step` makes one step happen and raises `Blocked`, saying why, when the queue cannot
take it as the schedule has it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from impl.clock import VirtualClock
from impl.replay import Line
from impl.workqueue.config import Gates, Settings
from impl.workqueue.core import Invocation
from impl.workqueue.errors import StoreFault
from impl.workqueue.node import QueueNode
from impl.workqueue.sim_redis import RedisTimeWarp, fake_client
from impl.workqueue.store import GROUP, QueueStore

TICK_MS = 1_000


class Blocked(Exception):
    """The queue cannot take a step as the schedule has it (the message says why)."""


class Runner:
    """One replay: the nodes, the model's entries as stream ids, and what each node holds."""

    def __init__(self, schedule: Mapping[str, Any], gates: Gates, settings: Settings,
                 client: Any = None, prefix: str = "replay") -> None:
        self.c = schedule["constants"]
        self.steps: list[dict[str, Any]] = list(schedule["steps"])
        self.gates, self.settings = gates, settings
        self.clock = VirtualClock(1_000_000)
        # fakeredis (its clock patched by `virtual_time`), or a real server whose clock is
        # warped for this prefix's keys (`RedisTimeWarp`).
        self.client = client if client is not None else fake_client()
        self.store = QueueStore(self.client, prefix, explicit_ids=True)
        self.warp: RedisTimeWarp | None = None
        if client is not None:
            self.warp = RedisTimeWarp(self.client, prefix, self.store.stream, GROUP)
            self.warp.start(self.clock.now_ms())
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
        self.crashed: set[str] = set()
        self.tick = 0
        self.events = 0
        self.lines: list[Line] = []  # the replay's lines (the hook of a renewal adds to them)
        self.done: set[int] = set()  # steps already taken (inside a renewal's hook)
        self.claim: str | None = None  # set by a non-atomic renewal's hook: its claim's step
        self.lag_windows: set[str] = set()  # consumers with a heartbeat_lag window open in the trace
        self.dropped: set[tuple[str, str]] = set()  # (consumer, entry): a poll's self-reclaim, dropped
        # An InvokeEnd's step index -> the steps the model puts before its ack or release that do
        # not commute with them: taken while the call is held between its invoke_end and its
        # settle (replay.py; `settling`).
        self.settle_between: dict[int, list[int]] = {}
        # Calls held between their end and their settle, by (consumer, entry, "Ack" or "Release").
        self.settling: dict[tuple[str, str, str], _Settling] = {}

    def now(self) -> int:
        return self.clock.now_ms()

    def advance(self, ms: int) -> None:
        """Move the virtual clock (and a real server's warped clock with it)."""
        self.clock.advance(ms)
        if self.warp is not None:
            self.warp.advance(ms)

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
            raise Blocked(f"{e} was never offered")
        return self.ids[e]

    def close_lag(self, c: str) -> None:
        """End c's heartbeat_lag window in the trace (its heartbeat is on time again)."""
        if c in self.lag_windows:
            self.lag_windows.discard(c)
            self.store.line(c, "heartbeat_lag", "end")

    def open_lag(self, c: str) -> None:
        """Open a heartbeat_lag window of c in the trace: a lapse of what c holds is its doing."""
        if c not in self.lag_windows:
            self.lag_windows.add(c)
            self.store.line(c, "heartbeat_lag", "start")

    def up(self, c: str) -> QueueNode:
        if c in self.paused:
            raise Blocked(f"{c} is paused")
        return self.nodes[c]


def _outcome(evs: list[dict[str, Any]], op: str) -> str | None:
    for ev in reversed(evs):
        if ev.get("op") == op:
            return str(ev.get("outcome"))
    return None


_held = threading.local()  # on a settling thread: its _Settling


def _hold_if_settling(entry: str) -> None:
    """`QueueNode.between_end_and_settle` while a replay holds calls: it holds the call only on
    the thread `_Settling` started for it; another call's finish on the same node goes through."""
    held: _Settling | None = getattr(_held, "call", None)
    if held is None:
        return
    held.ended.set()
    if not held.go.wait(held.WAIT_S):
        raise RuntimeError(f"{threading.current_thread().name}: never told to settle")


class _Settling:
    """A call's `QueueNode.finish` on a thread of its own, held between its invoke_end and its
    ack or release (the node's `between_end_and_settle` hook) until `settle`. The replay's
    thread and this one never run at once: each waits for the other's event."""

    WAIT_S = 30.0  # a bound on a hand-off that should take microseconds: a hang is an error, not a wait

    def __init__(self) -> None:
        self.ended = threading.Event()
        self.go = threading.Event()
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None

    @classmethod
    def start(cls, node: QueueNode, inv: Invocation, result: str) -> _Settling:
        held = cls()

        def run() -> None:
            _held.call = held
            try:
                node.finish(inv, result)
            except StoreFault:
                pass  # the planned ack failure (the model's Ack failed)
            except BaseException as exc:  # handed to the replay's thread by settle
                held.error = exc
            finally:
                held.ended.set()

        # Left in place for the node's other calls: the hook holds only a settling thread's call.
        node.between_end_and_settle = _hold_if_settling
        held.thread = threading.Thread(target=run, name=f"settle-{node.name}-{inv.entry}", daemon=True)
        held.thread.start()
        if not held.ended.wait(cls.WAIT_S):
            raise RuntimeError(f"{node.name}'s finish of {inv.entry} never reached its invoke_end")
        return held

    def settle(self) -> None:
        """Let the call ack or release, and wait for it."""
        self.go.set()
        assert self.thread is not None
        self.thread.join(self.WAIT_S)
        if self.thread.is_alive():
            raise RuntimeError(f"{self.thread.name}: the settle did not return")
        if self.error is not None:
            raise self.error


def _settle_kind(detail: Mapping[str, Any]) -> str:
    """The step that settles a call: a done call is acked, any other released."""
    return "Ack" if detail.get("result", "done") == "done" else "Release"


def settle_all(r: Runner) -> None:
    """Let every call still held between its end and its settle finish (the schedule ended);
    each one is let go even when an earlier one failed, whose error is then raised."""
    errors = []
    for key in sorted(r.settling):
        try:
            r.settling.pop(key).settle()
        except Exception as exc:  # raised below, once every held call is let go
            errors.append(exc)
    if errors:
        raise errors[0]


def take_step(r: Runner, s: dict[str, Any]) -> str:
    a, c, e, d = s["action"], s["node"], s["wf"], s["detail"]
    if a == "Tick":
        beats = _tick(r)
        return f"+{TICK_MS} ms" + (f" ({beats})" if beats else "")
    if a == "Offer":
        r.ids[e] = r.store.offer("producer", r.now(), e)
        r.undelivered.add(r.ids[e])
        return f"offered as {r.ids[e]}"
    if a == "Pause":
        r.close_lag(c)  # the pause's window covers what the lag's did
        r.store.line(c, "pause", "start")
        r.paused.add(c)
        r.lagging |= {(c, x) for (n, x) in r.invs if n == c}
        return "paused: its leases may lapse"
    if a == "Close":
        r.store.line(c, "close", "injected")
        r.closing.add(c)
        waits = r.gates.close_waits_for_handlers
        return "closing: no more polls, " + ("heartbeat on until its calls end" if waits else "heartbeat stopped")
    if a == "Resume":
        r.paused.discard(c)
        r.store.line(c, "pause", "end")
        if any(n == c for n, _ in r.lagging):
            r.open_lag(c)  # what the pause left lagging stays late until its next renewal
        return "resumed"
    if a == "HeartbeatLag":
        r.lagging.add((c, e))
        r.open_lag(c)
        return "its heartbeat runs late"
    if a == "Crash":
        r.close_lag(c)
        r.store.line(c, "crash", "injected")
        r.nodes[c] = QueueNode(r.store, c, r.clock, r.settings, r.gates)
        r.crashed.add(c)
        r.invs = {k: v for k, v in r.invs.items() if k[0] != c}
        r.paused.discard(c)
        return "crashed: its hand-offs and calls are gone"
    if a in ("ReceiveNew", "Reclaim", "EmptyPoll"):
        return _poll(r, s)
    if a == "InvokeStart":
        if (c, e) in r.dropped and d.get("outcome") == "duplicate_dropped":
            r.dropped.discard((c, e))
            return "duplicate_dropped (logged by the node at its poll)"
        inv = r.invs.get((c, e))
        if inv is None:
            raise Blocked(f"{c} holds no hand-off of {e}")
        node = r.up(c)
        if d.get("outcome") == "rejected":
            r.store.line(c, "reject", "injected")
            node.reject(inv)
            r.invs.pop((c, e))
            return "rejected"
        if d.get("outcome") == "duplicate_dropped":
            raise Blocked(f"{c} runs no second hand-off of {e}: the node drops a duplicate at its poll")
        if d.get("outcome") != "started":
            raise Blocked(f"{c}'s {e} is {d.get('outcome')} in the model")
        node.start(inv)
        return "started"
    if a in ("Renew", "RenewCheck"):
        return _renew(r, s)
    if a == "RenewClaim":
        raise Blocked(f"{c}'s RenewClaim of {e} has no RenewCheck before it")
    if a == "InvokeEnd":
        inv = r.invs.pop((c, e), None)
        if inv is None or not inv.running:
            raise Blocked(f"{c} runs no invocation of {e}")
        i = r.steps.index(s)
        ack = next((x for x in r.steps[i + 1:] if x["action"] == "Ack" and (x["node"], x["wf"]) == (c, e)), None)
        if ack is not None and ack["detail"].get("outcome") == "failed":
            r.store.faults.fail("ack", c)
        node = r.up(c)
        if i in r.settle_between:
            # The model puts steps between the end and the settle: the call's finish runs on a
            # thread of its own, held between its two store steps until the schedule's Ack or
            # Release; the steps between are taken in the model's order meanwhile.
            r.settling[(c, e, _settle_kind(d))] = _Settling.start(node, inv, d.get("result", "done"))
            outcome = f"ended {d.get('result')}; it settles at its Ack or Release"
        else:
            try:
                node.finish(inv, d.get("result", "done"))
            except StoreFault:
                pass  # the planned ack failure (the model's Ack failed)
            evs = r.new_events()
            outcome = f"ended {d.get('result')}, then {_outcome(evs, 'ack') or _outcome(evs, 'release') or 'nothing'}"
        r.lagging.discard((c, e))
        if not any(n == c for n, _ in r.lagging):
            r.close_lag(c)
        return outcome
    if a in ("Ack", "Release"):
        held = r.settling.pop((c, e, a), None)
        if held is None:
            return "done by the node's finish at InvokeEnd"
        r.new_events()
        held.settle()
        evs = r.new_events()
        return f"{_outcome(evs, 'ack') or _outcome(evs, 'release') or 'nothing'} (the call's settle)"
    raise Blocked(f"no replay for {a}")


def _poll(r: Runner, s: dict[str, Any]) -> str:
    a, c, e = s["action"], s["node"], s["wf"]
    if c in r.closing:
        raise Blocked(f"{c} is closing: it polls no more")
    r.new_events()  # what came before is not this poll's
    inv = r.up(c).poll_and_admit()
    if inv is None and a == "Reclaim" and e in r.ids:
        dropped = [ev for ev in r.new_events() if ev.get("op") == "invoke_start"
                   and ev.get("outcome") == "duplicate_dropped" and ev.get("node") == c]
        if dropped:  # a self-reclaim of the entry c runs: the node drops it at once
            r.dropped.add((c, e))
            r.touched[r.ids[e]] = r.now()
            r.touched_by[r.ids[e]] = f"reclaimed by {c} (its own)"
            return "delivered (reclaim) and dropped: the node runs it already"
    if a == "EmptyPoll":
        if inv is not None:
            raise Blocked(f"{c}'s poll delivers {inv.entry}; in the model it finds nothing")
        return "nothing"
    if inv is None:
        permits = r.nodes[c].permits
        if permits.bounded and permits.in_use >= permits.capacity:
            raise Blocked(f"{c} has no free permit ({permits.in_use} of {permits.capacity} in use: a call's permit "
                          "comes back once its ack or release is done, where the model gives it back at InvokeEnd)")
        if a == "Reclaim" and e in r.ids and r.ids[e] in r.touched:
            t, who = r.touched[r.ids[e]], r.touched_by.get(r.ids[e], "?")
            raise Blocked(f"{c}'s poll delivers nothing: {e} has been idle {r.now() - t} ms, under the visibility "
                           f"timeout of {r.settings.visibility_timeout_ms} ms ({who} at {t - r.start} ms)")
        raise Blocked(f"{c}'s poll delivers nothing (no permit, no new entry, none idle for "
                       f"{r.settings.visibility_timeout_ms} ms){' : ' + r.rows()}")
    want = "new" if a == "ReceiveNew" else "reclaim"
    if want == "new" and inv.source == "new" and inv.entry != r.entry(e) and inv.entry in r.undelivered \
            and r.ids[e] in r.undelivered:
        # Undelivered entries are alike in the model (it picks any), the stream gives the oldest:
        # the model's name goes with the entry delivered.
        other = next(k for k, v in r.ids.items() if v == inv.entry)
        r.ids[e], r.ids[other] = r.ids[other], r.ids[e]
    if inv.entry != r.entry(e) or inv.source != want:
        raise Blocked(f"{c}'s poll delivers {inv.entry} ({inv.source}); in the model {e} ({want})")
    r.undelivered.discard(inv.entry)
    r.nodes[c].reserve(inv)
    r.invs[(c, e)] = inv
    r.touched[inv.entry] = r.now()
    r.touched_by[inv.entry] = f"delivered to {c}"
    return f"delivered ({inv.source}, delivery {inv.deliveries})"


def _renew(r: Runner, s: dict[str, Any]) -> str:
    a, c, e, d = s["action"], s["node"], s["wf"], s["detail"]
    node = r.up(c)
    mine = [inv for inv in node.active.all() if inv.running]  # what its heartbeat renews
    if not any(inv.entry == r.entry(e) for inv in mine):
        raise Blocked(f"{c} runs no call of {e} for its heartbeat to renew")
    if len(mine) > 1:
        raise Blocked(f"{c}'s heartbeat renews every call it runs ({len(mine)}), not {e} alone")
    inv = mine[0]
    if not r.gates.heartbeat:
        raise Blocked(f"{c} has no heartbeat (gate heartbeat off): nothing renews {e}")
    if c in r.closing and not r.gates.close_waits_for_handlers:
        raise Blocked(f"{c}'s close stopped its heartbeat (close_waits_for_handlers off)")
    if a == "RenewCheck":
        i = r.steps.index(s)
        j = next((k for k in range(i + 1, len(r.steps)) if r.steps[k]["action"] == "RenewClaim"
                  and (r.steps[k]["node"], r.steps[k]["wf"]) == (c, e)), None)
        if j is None:
            raise Blocked(f"{c}'s RenewCheck of {e} has no RenewClaim after it")
        between = r.steps[i + 1:j]
        if any(b["node"] == c and b["action"] in ("Renew", "RenewCheck", "InvokeEnd") for b in between):
            raise Blocked(f"{c} acts on {e} between the read and the claim of its renewal")
        r.done.add(id(r.steps[j]))  # the heartbeat's claim is the RenewClaim (or an atomic renewal's)

        def hook(entry: str) -> None:
            r.lines.append(Line(len(r.lines) + 1, describe(s), f"read: owner {r.store.pending_owner(entry)}", r.rows()))
            r.claim = describe(r.steps[j])
            _run_between(r, between)

        node.between_renew_check_and_claim = hook
    lost = inv.lost
    r.close_lag(c)  # a renewal by c: its lag, if any, is over
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
        raise Blocked(f"{c}'s renewal of {e} is refused: a peer owns it (the owner check)")
    if want == "refused" and not refused:
        raise Blocked(f"{c}'s renewal of {e} succeeds; in the model it is refused")
    return "refused" if refused else "renewed"


def _run_between(r: Runner, steps: list[dict[str, Any]], where: str = "the read and the claim of the renewal") -> None:
    """The steps the schedule puts between two store steps of one call (a non-atomic renewal's
    read and claim, a call's end and its settle), taken inside the node's hook."""
    for s in steps:
        try:
            outcome = take_step(r, s)
        except Blocked as b:
            raise Blocked(f"between {where}, {describe(s)}: {b}") from None
        r.lines.append(Line(len(r.lines) + 1, describe(s), outcome, r.rows()))
        r.done.add(id(s))


def _tick(r: Runner) -> str:
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
            raise Blocked(f"time would let {e} idle for the visibility timeout in {c}'s hand-off, "
                           "which starts its handler before that")
        if c in r.closing and not r.gates.close_waits_for_handlers:
            continue
        if r.now() < nxt - 1:
            # At the last ms before the lapse: a call's age then is past MaxProc ticks exactly
            # when the spec's elapsed has reached MaxProc (Heartbeats: elapsed < MaxProc).
            r.advance(nxt - 1 - r.now())
        r.new_events()  # what came before is not this heartbeat's
        r.close_lag(c)
        r.nodes[c].heartbeat()
        renewed = _outcome(r.new_events(), "renew")
        if renewed == "renewed":
            r.touched[inv.entry] = r.now()
            r.touched_by[inv.entry] = f"renewed by {c}'s heartbeat"
        beats.append(f"{c}'s heartbeat first: {e} {renewed or 'not renewed'}")
    r.tick += 1
    r.advance(nxt - r.now())
    return "; ".join(beats)


def describe(s: Mapping[str, Any]) -> str:
    args = ", ".join(x for x in (s.get("node"), s.get("wf")) if x)
    return f"{s['action']}({args})" if args else s["action"]
