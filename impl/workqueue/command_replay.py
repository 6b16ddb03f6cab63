"""A schedule of `tla/CommandQueue.tla` steps, run on the command layer (as `replay.py` for the queue).

Each worker's attempt is a real `CommandProcessor.steps` generator, which yields after each of
its store steps, so one step of the spec's attempt is one `next()` of the generator:

    GuardTake(w1, k1)     guard_take (with the attempt guard; without it the read is done
                          by the next step, as in the code)
    PutIfOwner(w1, k1)    read the status, write SUBMITTING       (one next())
    ExternalCall(w1, k1)  external_call with the command id as the key (refused: the attempt
                          ends there, nothing called)
    PutIfOwner(w1, k1)    the app's answer, write PROCESSING; then the terminal write
    CallThrows(w1, k1)    nothing yet: the app's call will throw at the attempt's next step
    GuardRelease(w1, k1)  the attempt returns (its `finally` releases the guard); after
                          CallThrows, the app's call throws and the attempt ends not done
    Ack(w1, k1)           XACK + XDEL of the delivery

The queue below is the spec's abstract one: ReceiveNew is XREADGROUP, Reclaim an XAUTOCLAIM with
no idle time (any pending message may come again); GuardExpire and StateExpire move the virtual
clock past the guard's or the record's TTL (fakeredis on `virtual_time`). A crash keeps its
attempt's generator suspended (closing it would run its `finally` and release the guard).
After every step the property is checked on the store: the status history (TerminalIsStable,
NoRestart), the guard's owner at each write (NoStaleWrite), the external call counter
(ExternalOnce; one side effect per key with a cooperative remote, `ExternalIdempotent`).
EveryCommandDone is judged after a fair drain (every attempt runs to its end, free workers take
any pending message): a command still not done reproduces it; a drain that finishes every
command means the counterexample's endless end cannot happen (`blocked`). OneLiveAttempt is not
replayed yet.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from impl.clock import VirtualClock
from impl.replay import Line, Replay
from impl.workqueue import recording
from impl.workqueue.command_store import TERMINAL, CommandStore
from impl.workqueue.commands import CommandClient, CommandProcessor
from impl.workqueue.config import Gates, Settings
from impl.workqueue.core import Invocation
from impl.workqueue.errors import BadSettings
from impl.workqueue.sim_redis import RedisTimeWarp, fake_client, virtual_time
from impl.workqueue.store import GROUP, QueueStore

TICK_MS = 1_000
GUARD_TTL_MS = 3 * TICK_MS
STATE_TTL_MS = 100 * TICK_MS

GATES = {
    "AtomicPutIfOwner": "atomic_put_if_owner",
    "RepairOnResubmit": "submit_always_offers",
    "AttemptGuard": "attempt_guard",
    "TerminalCheck": "terminal_check",
    "CancelTakesGuard": "cancel_takes_guard",
}
NO_GATE = {
    "CallChecksGuard": "external_call.lua checks the guard's owner whenever the attempt guard is on",
    "ReleaseChecksOwner": "guard_release.lua deletes the guard only for its owner (a compare-and-delete)",
}
UNMAPPED = {"OfferRetry": "a retried offer that the budget never paid for is TypeOK's calibration device"}
SAFETY = ("TerminalIsStable", "NoRestart", "NoStaleWrite", "ExternalOnce", "NoStaleCall", "CallOnlySubmitting",
          "FinishedAfterCall")
LIVENESS = ("EveryCommandDone",)
# Any other property (TypeOK, a reach target's Never_<op>_<outcome>): the schedule runs to its end.
NOT_REPLAYED = {"OneLiveAttempt": "the command replay does not check OneLiveAttempt yet"}
DRAIN_ROUNDS = 20


class _Blocked(Exception):
    """The command layer cannot take a step as the schedule has it (the message says why)."""


class _Threw(Exception):
    """The external system's call failed (the schedule's CallThrows)."""


class _App:
    """The external system as the replay needs it: answers as the schedule's terminal write says,
    or throws when the schedule's CallThrows says so."""

    def __init__(self) -> None:
        self.answer = "succeeded"
        self.throw = False

    def call(self, cmd: str, payload: str) -> str:
        if self.throw:
            raise _Threw(f"the external system threw on {cmd}")
        return self.answer

    def check(self, cmd: str, payload: str) -> str:
        return self.answer


@dataclass
class _Attempt:
    """A worker's current attempt: its delivery, generator and attempt id."""

    inv: Invocation
    gen: Generator[None, None, bool]
    attempt: str | None = None
    ended: bool = False
    done: bool | None = None  # the generator's value (True: ack the delivery)
    steps: int = 0
    throws: bool = False  # the schedule's CallThrows: the app's call throws at the next step


@dataclass
class _Runner:
    schedule: Mapping[str, Any]
    gates: Gates
    settings: Settings
    clock: VirtualClock = field(default_factory=lambda: VirtualClock(1_000_000))
    app: _App = field(default_factory=_App)
    client: Any = None  # a real Redis server's client (keys under `prefix`); None: fakeredis
    prefix: str = "replay"

    def __post_init__(self) -> None:
        self.warp: RedisTimeWarp | None = None
        if self.client is None:
            self.client = fake_client()
        self.queue = QueueStore(self.client, self.prefix, explicit_ids=True)
        self.store = CommandStore(self.client, self.prefix)
        if self.client is not None and not type(self.client).__module__.startswith("fakeredis"):
            # A real server: the scripts' clock and every TTL under the prefix move with ours.
            self.warp = RedisTimeWarp(self.client, self.prefix, self.queue.stream, GROUP)
            self.warp.start(self.clock.now_ms())
        self.workers = tuple(self.schedule["constants"].get("Workers", ["w1", "w2"]))
        self.attempt_of: dict[str, str] = {}
        self.procs = {w: CommandProcessor(self.store, w, self.clock, self.settings, self.gates, self.app,
                                          attempt_ids=self._ids(w)) for w in self.workers}
        self.client_api = CommandClient(self.queue, self.store, "client", self.clock, self.settings, self.gates)
        self.attempts: dict[str, _Attempt] = {}
        self.crashed: list[_Attempt] = []  # kept suspended: a crash runs no `finally`
        self.paused: set[str] = set()
        self.first_terminal: dict[str, str] = {}
        self.restarted = False
        self.stale_write = False
        self.stale_call = False
        self.late_call = False
        self.offered: dict[str, list[str]] = {}
        self.late_offers: list[str] = []  # the client's offers the schedule leaves for after its end
        self.seen = 0  # trace events already looked at

    def _ids(self, w: str) -> Any:
        n = [0]

        def next_id() -> str:
            n[0] += 1
            self.attempt_of[w] = f"{w}-{n[0]}"
            return self.attempt_of[w]

        return next_id

    def now(self) -> int:
        return self.clock.now_ms()

    def advance(self, ms: int) -> None:
        """Move the virtual clock (and a real server's warped clock and TTLs with it)."""
        self.clock.advance(ms)
        if self.warp is not None:
            self.warp.advance(ms)

    def rows(self) -> str:
        parts = []
        for k in self.schedule["constants"].get("Commands", ["k1"]):
            parts.append(f"{k}: {self.store.status(k) or 'no record'}, guard {self.store.guard_owner(k) or '-'}, "
                         f"calls {self.store.external_calls(k)}")
        return "; ".join(parts)


def _advance(r: _Runner, a: _Attempt, w: str) -> None:
    """One `next()` of `w`'s attempt: its next store step (the app's call throws in it if the
    schedule said so; the attempt then ends, not done, as the consumer sees a handler fail)."""
    if a.ended:
        raise _Blocked(f"{w}'s attempt has ended")
    r.app.throw = a.throws
    try:
        next(a.gen)
        a.steps += 1
    except StopIteration as stop:
        a.ended, a.done = True, bool(stop.value)
    except _Threw:
        a.ended, a.done = True, False
    finally:
        r.app.throw = False


def _answer_for(r: _Runner, i: int, w: str) -> None:
    """The app answers as the schedule's next terminal write of `w` (from step `i` on) says."""
    for s in r.schedule["steps"][i - 1:]:
        if s["node"] == w and s["action"] == "PutIfOwner" and s["detail"].get("status") in ("SUCCEEDED", "FAILED"):
            r.app.answer = "succeeded" if s["detail"]["status"] == "SUCCEEDED" else "failed"
            return


def _write(r: _Runner, w: str, k: str, a: _Attempt) -> str:
    """One next() that should end in a state write; check it against the guard's owner."""
    owner = r.store.guard_owner(k)
    r.seen = len(r.store.events())
    _advance(r, a, w)
    after = r.store.status(k)
    puts = [ev.get("outcome") for ev in r.store.events(r.seen) if ev.get("op") == "put_if_owner" and ev.get("node") == w]
    written = "written" in puts
    r.seen = len(r.store.events())
    if not written and a.ended:
        st = r.store.status(k)
        if "refused" in puts:
            return f"wrote nothing: put_if_owner refused, {k}'s guard is {owner or 'free'}, not this attempt's"
        why = " (the terminal check)" if r.gates.terminal_check and (st is None or st in TERMINAL) else ""
        return (f"wrote nothing: the attempt reads the status ({st or 'no record'}) only in the step of its first "
                f"write, not at GuardTake as the model does, and ends there{why}")
    if written and after is not None:
        if owner != r.attempt_of.get(w):
            r.stale_write = True  # committed while the guard was not this attempt's
        if after == "SUBMITTING" and k in r.first_terminal:
            r.restarted = True
        if after in TERMINAL:
            r.first_terminal.setdefault(k, after)
        return f"wrote {after}"
    return "wrote nothing"


def _take(r: _Runner, i: int, s: dict[str, Any]) -> str:
    act, w, k, d = s["action"], s["node"], s["wf"], s["detail"]
    a = r.attempts.get(w) if w else None
    if act == "SubmitState":
        nxt = next((x for x in r.schedule["steps"][i:] if x["wf"] == k and x["action"] in ("Offer", "ClientCrash",
                                                                                                  "SubmitState")), None)
        if nxt is None and i < len(r.schedule["steps"]):
            # The model's client has not offered by the schedule's end: the submit's state write
            # now, its offer (if the code makes one) once the schedule's steps are done.
            created = r.store.submit_state("client", r.now(), k, STATE_TTL_MS)
            if created != (d.get("outcome") == "created"):
                raise _Blocked(f"the submit {'created' if created else 'found'} the record; in the model {d.get('outcome')}")
            if created or r.gates.submit_always_offers:
                r.late_offers.append(k)
            return ("created" if created else "exists") + ", its offer after the schedule"
        if nxt is None or nxt["action"] == "SubmitState":
            # The whole submit, as the client calls it: the state write, then the offer it decides.
            before = r.queue.stream_length()
            created = r.client_api.submit(k)
            offered = r.queue.stream_length() > before
            if created != (d.get("outcome") == "created"):
                raise _Blocked(f"the submit {'created' if created else 'found'} the record; in the model {d.get('outcome')}")
            if offered and nxt is None:
                return ("created" if created else "exists") + ", and offered (the submit always offers: the repair)"
            return ("created" if created else "exists") + (", offered" if offered else ", nothing offered")
        # The schedule splits the submit (an Offer or a client crash follows): its first call.
        created = r.store.submit_state("client", r.now(), k, STATE_TTL_MS)
        if created != (d.get("outcome") == "created"):
            raise _Blocked(f"the submit {'created' if created else 'found'} the record; in the model it is {d.get('outcome')}")
        if nxt["action"] == "Offer" and not (created or r.gates.submit_always_offers):
            raise _Blocked("the resubmit offers nothing: the record exists (submit_always_offers off)")
        return "created" if created else "exists"
    if act == "Offer":
        r.offered.setdefault(k, []).append(r.queue.offer("client", r.now(), "", cmd=k))
        return "offered"
    if act == "ClientCrash":
        r.queue.line("client", "offer_fail", "injected")
        return "the client fails before its offer"
    if act == "Cancel":
        out, want = r.client_api.cancel(k), d.get("outcome", "cancelled")
        if out != want:
            raise _Blocked(f"the cancel is {out}; in the model {want}")
        if out == "cancelled":
            r.first_terminal.setdefault(k, "CANCELLED")
        return out
    if act == "GuardExpire":
        r.advance(GUARD_TTL_MS + 1)
        if r.store.guard_owner(k) is not None:
            raise _Blocked(f"{k}'s guard is still held after its TTL (renewed)")
        return f"+{GUARD_TTL_MS + 1} ms: the guard expired"
    if act == "StateExpire":
        r.advance(STATE_TTL_MS + 1)
        return f"+{STATE_TTL_MS + 1} ms: the record expired"
    if act in ("Pause", "Resume"):
        (r.paused.add if act == "Pause" else r.paused.discard)(w)
        r.queue.line(w, "pause", "start" if act == "Pause" else "end")
        return "paused" if act == "Pause" else "resumed"
    if act == "Crash":
        r.queue.line(w, "crash", "injected")
        if a is not None:
            r.crashed.append(r.attempts.pop(w))
        return "crashed: its attempt stops where it is"
    if w in r.paused:
        raise _Blocked(f"{w} is paused")
    if act in ("ReceiveNew", "Reclaim"):
        if a is not None and not a.ended:
            raise _Blocked(f"{w} still runs an attempt")
        got = r.queue.receive_new(w, r.now()) if act == "ReceiveNew" else r.queue.reclaim(w, r.now(), 0)
        if got is None or got.cmd != k:
            raise _Blocked(f"{w}'s {act} delivers {'nothing' if got is None else got.cmd}")
        inv = Invocation(got.entry, got.payload, got.deliveries, got.source, got.cmd)
        r.attempts[w] = _Attempt(inv, r.procs[w].steps(inv))
        return f"delivered ({got.source})"
    if a is None:
        raise _Blocked(f"{w} runs no attempt")
    if act == "GuardTake":
        if not r.gates.attempt_guard:
            return "no guard (attempt_guard off): the read comes with the next step"
        _advance(r, a, w)
        taken = not a.ended
        if not taken and d.get("outcome") != "busy":
            raise _Blocked(f"{w}'s guard_take is busy: {r.store.guard_owner(k)} holds {k}'s attempt guard")
        if taken and d.get("outcome") == "busy":
            raise _Blocked(f"{w}'s guard_take takes the guard; in the model it is busy")
        return "taken" if taken else "busy: the attempt ends"
    if act in ("PutIfOwner", "PutCheck"):
        _answer_for(r, i, w)
        if act == "PutCheck":
            if r.gates.atomic_put_if_owner:
                return "no separate check (atomic_put_if_owner): the owner is checked by the write"
            _advance(r, a, w)
            if a.ended and d.get("outcome") == "checked":
                st = r.store.status(k)
                raise _Blocked(f"{w}'s attempt reads the status ({st or 'no record'}) only now, not at GuardTake as the "
                               f"model does, and ends before its check{' (the terminal check)' if st in TERMINAL else ''}")
            return "read the guard's owner" if not a.ended else "the attempt ended"
        out = _write(r, w, k, a)
        want = d.get("outcome")
        if want == "written" and out.startswith("wrote nothing"):
            raise _Blocked(f"{w} {out}")
        if want == "written" and out != f"wrote {d.get('status')}":
            raise _Blocked(f"{w}'s write is '{out}'; in the model {d.get('status')}")
        if want == "refused" and not (out.startswith("wrote nothing") and a.ended):
            raise _Blocked(f"{w}'s put_if_owner {out}; in the model refused")
        return out
    if act == "ExternalCall":
        before, status, owner = r.store.external_calls(k), r.store.status(k), r.store.guard_owner(k)
        _answer_for(r, i, w)
        _advance(r, a, w)
        called = r.store.external_calls(k) > before
        if called:
            r.stale_call = r.stale_call or (r.gates.attempt_guard and owner != r.attempt_of.get(w))
            r.late_call = r.late_call or status != "SUBMITTING"
        if d.get("outcome") == "refused":
            if called or not a.ended:
                raise _Blocked(f"{w}'s external_call {'calls' if called else 'goes on'}; in the model it is refused")
            return f"refused: {k}'s guard is {r.store.guard_owner(k) or 'free'}, not this attempt's"
        if not called:
            raise _Blocked(f"{w}'s external_call is refused: its attempt no longer owns the guard")
        return f"called ({r.store.external_calls(k)} call(s) with key {k})"
    if act == "CallThrows":
        a.throws = True
        return "the external system throws (at the attempt's next step: nothing committed yet)"
    if act == "GuardRenew":
        for renew in list(a.inv.renewers):
            renew()
        if d.get("outcome") == "lost":
            _advance(r, a, w)
            if not a.ended:
                raise _Blocked(f"{w}'s guard renewal finds its guard; in the model it is lost")
        return d.get("outcome", "renewed")
    if act == "GuardRelease":
        _advance(r, a, w)
        if not a.ended:
            raise _Blocked(f"{w}'s attempt goes on; in the model it releases the guard")
        if d.get("after_throw") and a.done:
            raise _Blocked(f"{w}'s attempt ends done after its call threw; in the model it is not acked")
        return ("released after the call threw" if a.throws else "released") + ("" if a.done else " (not done)")
    if act == "Ack":
        if not a.done:
            raise _Blocked(f"{w}'s attempt ended not done: its delivery is not acked")
        ok = r.queue.ack(w, r.now(), a.inv.entry, k)
        r.attempts.pop(w, None)
        return "acked" if ok else "acked nothing (already acked)"
    raise _Blocked(f"no replay for {act}")


def _broken(r: _Runner, prop: str | None, idempotent: bool) -> str | None:
    for k in r.schedule["constants"].get("Commands", ["k1"]):
        status = r.store.status(k)
        first = r.first_terminal.get(k)
        if prop == "TerminalIsStable" and first is not None and status not in (first, None):
            return f"TerminalIsStable: {k} was {first}, is now {status}"
        calls = r.store.external_calls(k)
        if prop == "ExternalOnce" and (calls if not idempotent else min(calls, 1)) > 1:
            return f"ExternalOnce: {k}'s remote was called {calls} times (an uncooperative remote acts on each)"
        if prop == "FinishedAfterCall" and status in ("SUCCEEDED", "FAILED") and calls == 0:
            return f"FinishedAfterCall: {k} is {status} and its remote was never called"
    if prop == "NoRestart" and r.restarted:
        return "NoRestart: SUBMITTING written to a command that had reached a terminal status"
    if prop == "NoStaleWrite" and r.stale_write:
        return "NoStaleWrite: a state write committed by an attempt that did not own the guard"
    if prop == "NoStaleCall" and r.stale_call:
        return "NoStaleCall: the remote called by an attempt that did not own the guard"
    if prop == "CallOnlySubmitting" and r.late_call:
        return "CallOnlySubmitting: the remote called while the command was not SUBMITTING"
    return None


def command_config(gates: Mapping[str, bool]) -> tuple[Gates, Settings]:
    """The command layer's gates and settings for a model's gates."""
    off = [GATES[g] for g, v in gates.items() if g in GATES and not v]
    settings = Settings(visibility_timeout_ms=30 * TICK_MS, guard_ttl_ms=GUARD_TTL_MS, state_ttl_ms=STATE_TTL_MS,
                        heartbeat_ms=TICK_MS)
    return Gates().off(*off), settings


def replay(schedule: Mapping[str, Any], *, store: str = "memory://", trace_dir: Path | None = None) -> Replay:
    """Run `schedule` (from `conformance.replay.command_map`) on the command layer (fakeredis).

    With `trace_dir`, the steps the store committed, with the fault lines of the schedule's
    faults, are written there as one `command` trace, however the replay ended."""
    prop = schedule.get("property")
    gates, settings = command_config(schedule.get("gates", {}))
    result = Replay("held", prop, "", gates=gates.as_dict())
    steps = list(schedule["steps"])
    for i, s in enumerate(steps, 1):
        if s["action"] in UNMAPPED:
            result.verdict, result.step, result.reason = "unmapped", i, f"step {i} {s['action']}: {UNMAPPED[s['action']]}"
            return result
    if prop in NOT_REPLAYED:
        result.verdict, result.reason = "unmapped", f"{prop}: {NOT_REPLAYED[prop]}"
        return result
    client, prefix = None, "replay"
    if store.startswith(("redis://", "rediss://")):
        import redis

        client = redis.Redis.from_url(store)
        prefix = f"lp-replay-{uuid.uuid4().hex[:10]}"
    elif not store.startswith("memory"):
        raise BadSettings(f"store {store!r}: the command replay runs on memory:// (fakeredis) or a redis:// URL")
    idempotent = bool(schedule.get("gates", {}).get("ExternalIdempotent", True))
    r = _Runner(schedule, gates, settings, client=client, prefix=prefix)
    try:
        with (virtual_time(r.clock) if client is None else contextlib.nullcontext()):
            try:
                return _run(r, result, steps, prop, idempotent)
            finally:
                if trace_dir is not None:
                    trace_dir.mkdir(parents=True, exist_ok=True)
                    run = str(schedule.get("model") or "replay")
                    recording.export(trace_dir / f"{run}.ndjson", r.queue, system="command", settings=settings,
                                     gates=gates, nodes=["client", *r.workers], run=run)
    finally:
        if client is not None:
            # A suspended attempt (a crash keeps it so) runs its `finally` when it is closed,
            # and releases its guard: closed here, before the keys go, not when collected.
            for a in [*r.attempts.values(), *r.crashed]:
                a.gen.close()
            r.queue.delete_keys()
            client.close()


def _offer_late(r: _Runner) -> None:
    """The client's offers that came after the schedule's last step (its submit was split)."""
    for k in r.late_offers:
        r.offered.setdefault(k, []).append(r.queue.offer("client", r.now(), "", cmd=k))
    r.late_offers.clear()


def _run(r: _Runner, result: Replay, steps: list[dict[str, Any]], prop: str | None, idempotent: bool) -> Replay:
    try:
        return _steps(r, result, steps, prop, idempotent)
    finally:
        _offer_late(r)


def _steps(r: _Runner, result: Replay, steps: list[dict[str, Any]], prop: str | None, idempotent: bool) -> Replay:
    for i, s in enumerate(steps, 1):
        name = _describe(s)
        try:
            outcome = _take(r, i, s)
        except _Blocked as b:
            result.verdict, result.step, result.reason = "blocked", i, f"step {i} {name}: {b}"
            result.lines.append(Line(i, name, "BLOCKED", r.rows()))
            return result
        result.lines.append(Line(i, name, outcome, r.rows()))
        broken = _broken(r, prop, idempotent)
        if broken:
            result.verdict, result.step, result.reason = "reproduced", i, f"after step {i} {name}: {broken}"
            return result
    if prop in LIVENESS:
        _offer_late(r)
        left = _drain(r)
        if left:
            result.verdict, result.reason = "reproduced", f"after the schedule and the drain: EveryCommandDone: {left}"
        else:
            result.verdict = "blocked"
            result.reason = (f"the counterexample's endless end cannot happen here: after its {len(steps)} steps, a "
                             f"fair drain ({DRAIN_ROUNDS} rounds: deliveries run to their end, acked) finishes every command")
        return result
    result.reason = f"the schedule ran to its end ({len(steps)} steps) and {prop} held"
    return result


def _drain(r: _Runner) -> str:
    """Faults stop: paused workers resume, every live attempt runs to its end, and each round a
    free worker takes any pending message (new first) and runs it to the end. What is not done."""
    r.paused.clear()
    for _ in range(DRAIN_ROUNDS):
        for w in r.workers:
            a = r.attempts.get(w)
            if a is None or a.ended:
                got = r.queue.receive_new(w, r.now()) or r.queue.reclaim(w, r.now(), 0)
                if got is None:
                    continue
                inv = Invocation(got.entry, got.payload, got.deliveries, got.source, got.cmd)
                a = r.attempts[w] = _Attempt(inv, r.procs[w].steps(inv))
            while not a.ended:
                _advance(r, a, w)
            if a.done:
                r.queue.ack(w, r.now(), a.inv.entry, a.inv.cmd)
            r.attempts.pop(w, None)
        r.advance(TICK_MS)
    left = []
    for k in r.schedule["constants"].get("Commands", ["k1"]):
        st = r.store.status(k)
        if st is not None and st not in TERMINAL:
            left.append(f"{k} still {st}")
    if r.queue.pending_count() or r.queue.stream_length():
        left.append(f"{r.queue.stream_length()} message(s) not acked")
    return "; ".join(left)


def _describe(s: Mapping[str, Any]) -> str:
    args = ", ".join(x for x in (s.get("node"), s.get("wf")) if x)
    return f"{s['action']}({args})" if args else s["action"]
