"""TraceCommandQueue cannot be talked out of a rejection (TLC).

- The known-bad corpus traces are what the real code records with a protecting behaviour
  broken in it (the simulated ones re-recorded here byte for byte), and each is rejected at
  its line (for a real-Redis one, the line that shows the bug, found in the trace), naming the
  property or field; a header edited to hide the bug only moves the rejection.
- No hidden step is free: in a small hand-made command trace a guard lapses only once its TTL
  has passed since its last take or renewal, with no heartbeat of its node since, and inside a
  fault window of its holder's node (an injected lag, or one the node observed); a renewal
  inside its node's lag, or later than twice the header's heartbeat outside one, is rejected; a
  failed ack or offer needs its fault line; a guard line without the TTL it wrote is malformed,
  naming the field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.check.runner import Tlc
from conformance.traces.check import check_traces
from conformance.traces.read import parse_trace, read_trace_file
from conformance.traces.system import load_systems
from conformance.traces.trace import Trace, TraceKind, TraceVerdict
from impl import trace as trace_file
from impl.workqueue.config import Gates
from impl.workqueue.sim import SIM_SETTINGS

from . import known_bad_commands as kb

ROOT = Path(__file__).resolve().parents[2]
REJECTED = ROOT / "traces" / "corpus" / "command" / "rejected"
SCHEMAS = ROOT / "traces" / "schema"  # this checkout's (command-event.schema.json)

pytestmark = pytest.mark.tlc

# The known-bad corpus traces: where each is rejected, and the names the rejection must carry.
KNOWN_BAD = {
    "sim-guard-taken-without-nx.ndjson": (29, {"guard_expires", "fault_line"}),
    "sim-guard-ttl-below-heartbeat.ndjson": (6, {"GuardOutlivesRenewal"}),
    "sim-stale-attempt-calls-remote.ndjson": (20, {"NoStaleCall"}),
}


def events(path: Path) -> list[dict[str, Any]]:
    return [e for e in map(json.loads, path.read_text().splitlines()) if e["kind"] == "event"]


def taken_over(path: Path) -> int:
    """The seq of the first guard_take `taken` while the guard was held (by the command's
    previous line)."""
    held: dict[str, Any] = {}
    for e in events(path):
        if e["op"] == "guard_take" and e["outcome"] == "taken" and held.get(e["cmd"]):
            return int(e["seq"])
        if "guard" in e["state"]:
            held[e["cmd"]] = e["state"]["guard"]["owner"]
    raise AssertionError(f"{path}: no guard taken over")


def first_take(path: Path) -> int:
    return next(int(e["seq"]) for e in events(path) if e["op"] == "guard_take")


def stale_call(path: Path) -> int:
    """The seq of the first external call recorded while its attempt did not own the guard."""
    return next(int(e["seq"]) for e in events(path) if e["op"] == "external_call" and e["outcome"] == "called"
                and e["state"]["guard"]["owner"] != e["args"]["attempt"])


# The real-Redis known-bad traces: their line is found in the trace itself (runs differ).
KNOWN_BAD_REAL = {
    "real-redis-guard-taken-without-nx.ndjson": (taken_over, {"guard_expires"}),
    "real-redis-guard-ttl-below-heartbeat.ndjson": (first_take, {"GuardOutlivesRenewal"}),
    "real-redis-stale-attempt-calls-remote.ndjson": (stale_call, {"NoStaleCall"}),
}


def edited(path: Path, name: str, **settings: Any) -> Trace:
    """The trace at `path` with its header's settings edited (a header that lies)."""
    t = read_trace_file(path, SCHEMAS)
    assert isinstance(t, Trace), t
    return Trace(f"{path}#{name}", {**t.header, "settings": {**t.header["settings"], **settings}}, t.events)


# -- a hand-made trace: one command, two deliveries of it, the first attempt's guard lapses ----

TTL = SIM_SETTINGS.guard_ttl_ms  # 300; heartbeat 100


class Builder:
    """Command trace events with the state each step leaves (one command c1, entries e1, e2)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.status: dict[str, str | None] = {}
        self.owner: dict[str, str | None] = {}
        self.calls: dict[str, int] = {}
        self.pel: dict[str, dict[str, Any] | None] = {}

    def _cmd(self, node: str, now: int, cmd: str, op: str, outcome: str, **args: Any) -> None:
        ev: dict[str, Any] = {"node": node, "now": now, "cmd": cmd, "op": op, "outcome": outcome,
                              "state": {"command": None if self.status.get(cmd) is None else {"status": self.status[cmd]},
                                        "guard": {"owner": self.owner.get(cmd)},
                                        "external_calls": self.calls.get(cmd, 0)}}
        if args:
            ev["args"] = args
        self.events.append(ev)

    def _entry(self, node: str, now: int, cmd: str, entry: str, op: str, outcome: str, **args: Any) -> None:
        ev = {"node": node, "now": now, "cmd": cmd, "entry": entry, "op": op, "outcome": outcome,
              "state": {"entry": self.pel[entry]}}
        if op == "ack":
            ev["args"] = args
        self.events.append(ev)

    def line(self, node: str, now: int, op: str, outcome: str, **args: Any) -> None:
        """A fault line: no command, an empty state."""
        ev: dict[str, Any] = {"node": node, "now": now, "op": op, "outcome": outcome, "state": {}}
        if args:
            ev["args"] = args
        self.events.append(ev)

    def submit(self, now: int, cmd: str, offer: bool = True) -> None:
        created = self.status.get(cmd) is None
        if created:
            self.status[cmd] = "PENDING"
        self._cmd("client", now, cmd, "submit_state", "created" if created else "exists")
        if offer:
            entry = f"{1000 + len(self.pel)}-1"
            self.pel[entry] = {"pending": False, "owner": None, "last_touched": now, "deliveries": 0}
            self._entry("client", now, cmd, entry, "offer", "added")

    def deliver(self, node: str, now: int, cmd: str, entry: str) -> None:
        self.pel[entry] = {"pending": True, "owner": node, "last_touched": now, "deliveries": 1}
        self._entry(node, now, cmd, entry, "receive_new", "delivered")

    def take(self, node: str, now: int, cmd: str, attempt: str) -> None:
        taken = self.owner.get(cmd) is None
        if taken:
            self.owner[cmd] = attempt
        self._cmd(node, now, cmd, "guard_take", "taken" if taken else "busy", attempt=attempt, ttl_ms=TTL)

    def renew(self, node: str, now: int, cmd: str, attempt: str) -> None:
        ok = self.owner.get(cmd) == attempt
        self._cmd(node, now, cmd, "guard_renew", "renewed" if ok else "lost", attempt=attempt, ttl_ms=TTL)

    def put(self, node: str, now: int, cmd: str, attempt: str, status: str) -> None:
        ok = self.owner.get(cmd) == attempt
        if ok:
            self.status[cmd] = status
        self._cmd(node, now, cmd, "put_if_owner", "written" if ok else "refused", attempt=attempt, status=status)

    def call(self, node: str, now: int, cmd: str, attempt: str) -> None:
        ok = self.owner.get(cmd) == attempt
        if ok:
            self.calls[cmd] = self.calls.get(cmd, 0) + 1
        self._cmd(node, now, cmd, "external_call", "called" if ok else "refused", attempt=attempt, key=cmd)

    def release(self, node: str, now: int, cmd: str, attempt: str) -> None:
        ok = self.owner.get(cmd) == attempt
        if ok:
            self.owner[cmd] = None
        self._cmd(node, now, cmd, "guard_release", "released" if ok else "lost", attempt=attempt)

    def ack(self, node: str, now: int, cmd: str, entry: str, fail: bool = False) -> None:
        idle = now - self.pel[entry]["last_touched"]
        if not fail:
            self.pel[entry] = None
        self._entry(node, now, cmd, entry, "ack", "failed" if fail else "acked", idle_ms=idle)


def lapse_trace(name: str, take_at: int, *, lag: tuple[int, int] | list[tuple[int, int]] | None = None, observed: tuple[int, int] | None = None,
                renew_at: int | None = None, other_renewed_at: int | None = None, ack_fails: bool = False,
                ack_fault_line: bool = True, submit_fails: bool = False, offer_fault_line: bool = True) -> Trace:
    """Attempt a1 on n1 takes c1's guard at 0 and stalls; a second delivery's attempt a2 on n2
    takes it at `take_at` and finishes the command; a1 comes back and its call is refused.

    `lag`: n1's heartbeat lags from..to (an injected window: its start and end lines; or a list
    of such windows);
    `observed`: n1 logs an observed lag, since..at, just before a1 comes back. `renew_at`: a1
    renews once first. `other_renewed_at`: n1 also holds c2's guard and its heartbeat renews
    that one then (not a1's). `ack_fails`: a2's ack fails (its entry stays pending: the trace
    ends before a later delivery), after its injected ack_fail line unless not
    `ack_fault_line`. `submit_fails`: the client's first submit fails before its offer (it
    submits again), its offer_fail line logged unless not `offer_fault_line`."""
    b = Builder()
    b.submit(0, "c1", offer=not submit_fails)
    if submit_fails:
        if offer_fault_line:
            b.line("client", 0, "offer_fail", "injected")
        b.submit(0, "c1")
    b.submit(0, "c1")  # a duplicate: a second entry of c1
    e1, e2 = list(b.pel)
    if other_renewed_at is not None:
        b.submit(0, "c2")
        b.deliver("n1", 0, "c2", list(b.pel)[-1])
        b.take("n1", 0, "c2", "b1")
    b.deliver("n1", 0, "c1", e1)
    b.take("n1", 0, "c1", "a1")
    b.put("n1", 10, "c1", "a1", "SUBMITTING")
    timed: list[tuple[int, Any]] = []  # the lines from here on, by time (stable)
    for start, end in ([lag] if isinstance(lag, tuple) else lag or []):
        timed.append((start, lambda start=start: b.line("n1", start, "heartbeat_lag", "start")))
        timed.append((end, lambda end=end: b.line("n1", end, "heartbeat_lag", "end")))
    if renew_at is not None:
        timed.append((renew_at, lambda: b.renew("n1", renew_at, "c1", "a1")))
    if other_renewed_at is not None:
        timed.append((other_renewed_at, lambda: b.renew("n1", other_renewed_at, "c2", "b1")))

    def second_attempt() -> None:
        b.deliver("n2", 20, "c1", e2)
        b.owner["c1"] = None  # the guard lapsed (what the lines after it show)
        b.take("n2", take_at, "c1", "a2")
        b.call("n2", take_at, "c1", "a2")
        b.put("n2", take_at, "c1", "a2", "PROCESSING")
        b.put("n2", take_at, "c1", "a2", "SUCCEEDED")
        b.release("n2", take_at, "c1", "a2")
        if ack_fails and ack_fault_line:
            b.line("n2", take_at + 1, "ack_fail", "injected")
        b.ack("n2", take_at + 1, "c1", e2, fail=ack_fails)

    timed.append((take_at, second_attempt))
    if observed is not None:
        timed.append((observed[1], lambda: b.line("n1", observed[1], "heartbeat_lag", "observed", since=observed[0])))
    timed.append((take_at + 10, lambda: b.call("n1", take_at + 10, "c1", "a1")))  # a1 comes back: refused, it ends
    for _, write in sorted(timed, key=lambda x: x[0]):
        write()
    settings = {**SIM_SETTINGS.as_dict(), "clock_slack_ms": 0, "drained": False}
    head = trace_file.header("command", gates=Gates().as_dict(), settings=settings, nodes=["client", "n1", "n2"],
                             run=name, features=["heartbeat_lag"])
    parsed = parse_trace(trace_file.render(head, b.events), name, SCHEMAS)
    assert isinstance(parsed, Trace), parsed.describe()
    return parsed


def at(op: str, node: str) -> Any:
    """The line of a trace's first `op` by `node` (where a hand-made trace's rejection falls)."""
    return lambda t: next(int(e["seq"]) for e in t.events if e["op"] == op and e["node"] == node)


LAG = (10, TTL + 20)  # n1's heartbeat lags around the moment its guard lapses (TTL after its take)
# name: (trace, None when accepted, else (where it is rejected, a name the rejection carries))
HAND_MADE = {
    "lapse after the TTL, inside a lag": (lambda n: lapse_trace(n, TTL + 30, lag=LAG), None),
    # On the expiry's own ms either may be seen (Redis keeps the key until its expiry is past;
    # fakeredis keeps expiry times as float seconds and may drop it then); a ms earlier, no.
    "lapse on the TTL's last ms": (lambda n: lapse_trace(n, TTL, lag=(10, TTL)), None),
    "lapse 1 ms before the TTL": (lambda n: lapse_trace(n, TTL - 1, lag=LAG), (at("guard_take", "n2"), "guard_expires")),
    "lapse before the TTL": (lambda n: lapse_trace(n, TTL - 50, lag=LAG), (at("guard_take", "n2"), "guard_expires")),
    "lapse before the renewed TTL": (lambda n: lapse_trace(n, TTL + 30, lag=(110, TTL + 120), renew_at=100),
                                     (at("guard_take", "n2"), "guard_expires")),
    "lapse after the renewed TTL": (lambda n: lapse_trace(n, TTL + 130, lag=(110, TTL + 120), renew_at=100), None),
    # A renewal that found the guard after its expiry: Redis had deleted it.
    "renewed after its TTL": (lambda n: lapse_trace(n, TTL + 200, lag=(10, TTL + 40), renew_at=TTL + 50),
                              (at("guard_renew", "n1"), "guard_expires")),
    "lapse with no fault line": (lambda n: lapse_trace(n, TTL + 30), (at("guard_take", "n2"), "fault_line")),
    # An overlap outside a logged lag's window: the lag ended before the guard lapsed.
    "lapse after its lag window closed": (lambda n: lapse_trace(n, TTL + 30, lag=(10, 100)),
                                          (at("guard_take", "n2"), "fault_line")),
    "lapse before its lag window opened": (lambda n: lapse_trace(n, TTL + 30, lag=(TTL + 5, TTL + 20)),
                                           (at("guard_take", "n2"), "fault_line")),
    "lapse inside an observed lag": (lambda n: lapse_trace(n, TTL + 30, observed=(TTL - 100, TTL + 35)), None),
    "lapse outside an observed lag": (lambda n: lapse_trace(n, TTL + 30, observed=(TTL + 10, TTL + 35)),
                                      (at("guard_take", "n2"), "fault_line")),
    # A recorder that logs a lag its heartbeat did not have: a renewal inside the window.
    "a renewal inside its node's lag": (lambda n: lapse_trace(n, TTL + 30, lag=LAG, renew_at=100),
                                        (at("guard_renew", "n1"), "HeartbeatLagged")),
    # A heartbeat slower than the header says: the renewal comes more than two periods late.
    "a renewal later than the heartbeat says": (lambda n: lapse_trace(n, 580, lag=(260, 570), renew_at=250),
                                                (at("guard_renew", "n1"), "HeartbeatAsClaimed")),
    "a late renewal after a lag": (lambda n: lapse_trace(n, 580, lag=[(150, 240), (260, 570)], renew_at=250), None),
    "lapse after its node's heartbeat ran": (lambda n: lapse_trace(n, TTL + 30, lag=(210, TTL + 20), other_renewed_at=200),
                                             (at("guard_take", "n2"), "heartbeat_before_expiry")),
    "failed ack without its fault line": (lambda n: lapse_trace(n, TTL + 30, lag=LAG, ack_fails=True, ack_fault_line=False),
                                          (at("ack", "n2"), "fault_line.ack_fail")),
    "failed ack after its fault line": (lambda n: lapse_trace(n, TTL + 30, lag=LAG, ack_fails=True), None),
    "failed offer without its fault line": (lambda n: lapse_trace(n, TTL + 30, lag=LAG, submit_fails=True, offer_fault_line=False),
                                            (lambda t: 2, "fault_line.offer_fail")),
    "failed offer after its fault line": (lambda n: lapse_trace(n, TTL + 30, lag=LAG, submit_fails=True), None),
}


# A designed corpus trace (seed 1: a failed offer, a failed ack, a guard lapsed under a lag)
# with the fault lines of a kind taken out: rejected where the step they excused is needed.
REPAIR = ROOT / "traces" / "corpus" / "command" / "accepted" / "sim-resubmit-repair-and-call-again.ndjson"
WITHOUT = {
    "heartbeat_lag": "fault_line",          # the lapse of a lagging attempt's guard
    "ack_fail": "fault_line.ack_fail",      # the failed ack
    "offer_fail": "fault_line.offer_fail",  # the repeated submit
}


def without(kind: str) -> Trace:
    """REPAIR with its `kind` fault lines taken out (and the rest numbered again)."""
    t = read_trace_file(REPAIR, SCHEMAS)
    assert isinstance(t, Trace), t
    kept = [e for e in t.events if e["op"] != kind]
    assert len(kept) < len(t.events), f"{REPAIR} has no {kind} line"
    return Trace(f"{REPAIR}#without {kind}", t.header, tuple({**e, "seq": i} for i, e in enumerate(kept, 1)))


def needed_at(kind: str) -> tuple[int, int]:
    """Where REPAIR without its `kind` lines may be rejected (lines of the trace without them):
    for a failed ack or offer, at the line that needed its fault line (the failed ack, the
    submit again); for a lag, after the first lag began and by the end of the first lag window
    (a line that shows the lagging node's guard gone)."""
    t = read_trace_file(REPAIR, SCHEMAS)
    assert isinstance(t, Trace), t
    ev = list(t.events)
    first = next(i for i, e in enumerate(ev) if e["op"] == kind)

    def kept(i: int) -> int:  # line i + 1 of the original, numbered without the `kind` lines
        return i + 1 - sum(1 for e in ev[:i] if e["op"] == kind)

    if kind == "ack_fail":
        i = next(j for j in range(first, len(ev)) if ev[j]["op"] == "ack" and ev[j]["outcome"] == "failed")
        return kept(i), kept(i)
    if kind == "offer_fail":
        i = next(j for j in range(first, len(ev)) if ev[j]["op"] == "submit_state" and ev[j]["outcome"] == "exists")
        return kept(i), kept(i)
    end = next(j for j in range(first, len(ev)) if ev[j]["op"] == kind and ev[j]["outcome"] == "end")
    return kept(first), kept(end) + 3


@pytest.fixture(scope="module")
def verdicts() -> dict[str, TraceVerdict]:
    """The known-bad corpus, two lying headers and the hand-made traces, checked in one call."""
    items: list[Trace | TraceVerdict] = [read_trace_file(REJECTED / name, SCHEMAS) for name in [*KNOWN_BAD, *KNOWN_BAD_REAL]]
    short = REJECTED / "sim-guard-ttl-below-heartbeat.ndjson"
    items += [edited(short, "heartbeat 50", heartbeat_ms=50), edited(short, "ttl 300", guard_ttl_ms=300)]
    items += [make(name) for name, (make, _) in HAND_MADE.items()]
    items += [without(kind) for kind in WITHOUT]
    return {v.source: v for v in check_traces(items, load_systems(ROOT), Tlc.locate())}


def test_known_bad_traces_are_what_the_code_records_with_the_bug(tmp_path: Path) -> None:
    for name, plant, seed in kb.CORPUS:
        again = kb.simulate(plant, seed, tmp_path, name)
        assert again.read_text() == (REJECTED / name).read_text(), f"{name}: re-recording differs"


def test_known_bad_traces_are_rejected_at_their_line_naming_it(verdicts) -> None:
    for name, (line, names) in KNOWN_BAD.items():
        v = verdicts[str(REJECTED / name)]
        assert v.kind is TraceKind.REJECTED and v.line == line, f"{name}: {v.describe()}"
        assert names <= {d.field for d in v.diffs}, f"{name}: {v.describe()}"


def test_known_bad_real_redis_traces_are_rejected_at_the_line_that_shows_the_bug(verdicts) -> None:
    for name, (find, names) in KNOWN_BAD_REAL.items():
        v = verdicts[str(REJECTED / name)]
        line = find(REJECTED / name)
        assert v.kind is TraceKind.REJECTED and v.line == line, f"{name}: expected at event {line}, {v.describe()}"
        assert names <= {d.field for d in v.diffs}, f"{name}: {v.describe()}"


def test_a_header_that_hides_the_short_ttl_only_moves_the_rejection(verdicts) -> None:
    short = REJECTED / "sim-guard-ttl-below-heartbeat.ndjson"
    v = verdicts[f"{short}#heartbeat 50"]  # the TTL now looks long enough: the lapse shows it
    assert v.kind is TraceKind.REJECTED and v.line == 18 and "fault_line" in {d.field for d in v.diffs}, v.describe()
    v = verdicts[f"{short}#ttl 300"]  # the header's TTL is not the one the code wrote
    assert v.kind is TraceKind.REJECTED and v.line == 6 and "ttl_ms" in {d.field for d in v.diffs}, v.describe()


@pytest.mark.parametrize("kind", list(WITHOUT))
def test_a_designed_trace_without_a_fault_line_is_rejected_where_it_was_needed(verdicts, kind: str) -> None:
    v = verdicts[f"{REPAIR}#without {kind}"]
    low, high = needed_at(kind)
    assert v.kind is TraceKind.REJECTED and low <= v.line <= high, (low, high, v.describe())
    assert WITHOUT[kind] in {d.field for d in v.diffs}, v.describe()


def test_the_designed_trace_is_accepted_excused_by_its_fault_lines(verdicts) -> None:
    """The acceptance names the fault lines it needed: every kind WITHOUT takes out."""
    v = check_traces([read_trace_file(REPAIR, SCHEMAS)], load_systems(ROOT), Tlc.locate())[0]
    assert v.kind is TraceKind.ACCEPTED, v.describe()
    assert {x.op for x in v.excused} >= {"heartbeat_lag"}, v.describe()


@pytest.mark.parametrize("name", list(HAND_MADE))
def test_every_hidden_step_is_paid_for(verdicts, name: str) -> None:
    v = verdicts[name]
    want = HAND_MADE[name][1]
    if want is None:
        assert v.kind is TraceKind.ACCEPTED, v.describe()
    else:
        line = want[0](HAND_MADE[name][0](name))
        assert v.kind is TraceKind.REJECTED and v.line == line, v.describe()
        assert want[1] in {d.field for d in v.diffs}, v.describe()


def test_a_guard_line_without_its_ttl_is_malformed_naming_the_field(tmp_path: Path) -> None:
    good = lapse_trace("good", TTL + 30, lag=LAG)
    lines = [{**e, "kind": "event"} for e in good.events]
    take = next(i for i, e in enumerate(lines) if e["op"] == "guard_take")
    del lines[take]["args"]["ttl_ms"]
    text = "\n".join(json.dumps(x) for x in [good.header, *lines, {"kind": "end", "count": len(lines)}]) + "\n"
    v = parse_trace(text, "no ttl", SCHEMAS)
    assert isinstance(v, TraceVerdict) and v.kind is TraceKind.MALFORMED, v
    assert f"line {take + 2}" in v.reason and "ttl_ms" in v.reason, v.reason


@pytest.mark.redis
def test_each_plant_recorded_anew_on_a_real_redis_is_rejected_naming_it(redis_url: str, tmp_path: Path) -> None:
    """The same plants on the real server, recorded now: whatever the run's timing, the line
    that shows the bug is where the trace is rejected, with the same name."""
    paths = {name: kb.record_real(plant, tmp_path, redis_url, name) for name, plant in kb.REAL_CORPUS}
    got = {v.source: v for v in check_traces([read_trace_file(p, SCHEMAS) for p in paths.values()],
                                             load_systems(ROOT), Tlc.locate())}
    for name, path in paths.items():
        find, names = KNOWN_BAD_REAL[name]
        v = got[str(path)]
        assert v.kind is TraceKind.REJECTED and v.line == find(path), f"{name}: {v.describe()}"
        assert names <= {d.field for d in v.diffs}, f"{name}: {v.describe()}"
