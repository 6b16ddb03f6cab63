"""The queue's and the command layer's stateful machines: two consumers share one Redis, and
Hypothesis picks who does what next.

Every rule is one thing a producer, a client or a node does, chosen by name (node, command,
result), never an index into a list of what is enabled: a shrunk failure is a short schedule of
named steps, each of which matters. The store is a parameter (`machine_for`): fakeredis running
the same Lua on a virtual clock (the twin), or a real Redis server under a key prefix per
example, its time moved by `sim_redis.RedisTimeWarp`.

Time passes by `time_passes`: the heartbeats of nodes that are not lagging run on time meanwhile
(the spec's `NoLongPauses`). A stale actor is made by `lag`: that node's heartbeat stays away
while time passes its visibility timeout and its guard TTL, a peer takes over, and then the
stale node steps its handler, renews, releases or acks. In the command machine three rules
(`stale_write_meets_live`, `stale_release_meets_live`, `stale_renewal_meets_live`) build such a
meeting at once: an attempt holding its guard pauses, a peer's or its own node's next attempt
takes the guard, and the stale one writes, calls, releases or heartbeats late; so the default
examples reach each guarded step of a stale attempt.

Invariants, after every step, are named as the properties of `tla/WorkQueue.tla` and
`tla/CommandQueue.tla`:

- `NoOverlappingInvocations`: no entry held by two running invocations at once (`Holds`);
- `PermitBound`: no node runs more handlers at once than its concurrency;
- `NoStaleWrite`, `NoStaleCall` (TraceCommandQueue.tla): no state write commits, and no external
  call is made, unless its attempt owns the guard (attempt guard on);
- `TerminalIsStable`, `NoRestart`: a terminal command stays so and never starts again;
- `OneLiveAttempt`: at most one attempt of a command in its call window holds its entry (and,
  with the attempt guard on, the guard);
- `ExternalOnce`: no external call repeated after an earlier call of that command had its answer.

At the end of each example (`teardown`) faults stop and the run drains (seeded, logged), then
`EveryEntryAcked` / `EveryCommandDone`: nothing is left in the stream, every command is terminal.
Each example's trace is kept, to be validated against the trace spec in one batch after the run.
"""

from __future__ import annotations

import random
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis import target
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from impl.workqueue import analysis
from impl.workqueue.command_store import TERMINAL
from impl.workqueue.config import Gates
from impl.workqueue.sim import REAL_SERVER_SCALE, Server, SimConfig, Simulation, for_real_server
from impl.workqueue.sim_redis import real_client

NODES = ("n1", "n2")
COMMANDS = ("c0", "c1")
RESULTS = ("done", "not_done", "threw")
DRAIN_ROUNDS = 200
MAX_OFFERS = 3
# How long `time_passes` lets pass: the spans that matter to leases (scaled on a real server).
SPANS = ("a lease", "past max processing", "a heartbeat", "a moment")
# The simulation's fault actions, as a schedule names them (`fault`), and all that stop in the drain.
FAULTS = {"crash": "crash", "close": "close", "ack_fault": "next ack fails", "reject": "poll, rejected"}
FAULT_ACTIONS = {*FAULTS, "lag"}


def config(system: str, gates: Gates) -> SimConfig:
    """The twin's settings (VT 300 ms, heartbeat 100 ms, guard TTL 300 ms) and budgets."""
    return SimConfig(system=system, nodes=NODES, messages=0, duplicate_submits=0, lost_offers=0, cancels=0,
                     crashes=1, faults=2, lags=4, closes=1, gates=gates, max_steps=1_000_000, ticks=(10, 100, 350))


@dataclass
class Example:
    """One example's schedule (each rule with what it did and the store after it), its trace."""

    number: int
    steps: list[tuple[str, str, str, str]] = field(default_factory=list)  # (node, step, outcome, store after)
    drain: list[tuple[str, str]] = field(default_factory=list)  # (node, step) of the seeded drain
    trace: str = ""

    def schedule(self) -> str:
        """The schedule as a table: one line per rule, then how many drain steps followed."""
        w = max((len(s) for _, s, _, _ in self.steps), default=4)
        o = max((len(x) for _, _, x, _ in self.steps), default=7)
        lines = [f"  {'#':>3}  node      {'step':<{w}}  {'outcome':<{o}}  store after"]
        lines += [f"  {i:>3}  {n:<8}  {s:<{w}}  {x:<{o}}  {r}" for i, (n, s, x, r) in enumerate(self.steps, 1)]
        if self.drain:
            lines.append(f"  then {len(self.drain)} drain steps: " + ", ".join(f"{n} {s}" for n, s in self.drain[:12])
                         + (" ..." if len(self.drain) > 12 else ""))
        return "\n".join(lines)


class Examples:
    """The examples of one test run, for the trace check after it."""

    def __init__(self) -> None:
        self.all: list[Example] = []

    def new(self) -> Example:
        ex = Example(len(self.all) + 1)
        self.all.append(ex)
        return ex


class Stores:
    """Where each example runs: the twin, or a real Redis server (a fresh key prefix each)."""

    def __init__(self, kind: str, redis_url: str | None = None, prefix: str = "lp-sm") -> None:
        self.kind, self.redis_url, self.prefix = kind, redis_url, prefix
        self.client = real_client(redis_url) if kind == "redis" and redis_url else None
        self.dir = Path(tempfile.mkdtemp(prefix="lp-queue-machine-"))

    def server(self, number: int) -> Server | None:
        """The example's server, or None for the twin."""
        if self.kind == "twin":
            return None
        return Server(self.client, f"{self.prefix}-{number}-{uuid.uuid4().hex[:6]}")


class QueueMachine(RuleBasedStateMachine):
    """Two consumers, one queue (see the module docstring). `system`: workqueue or command."""

    system = "workqueue"
    gates = Gates()
    stores: Stores = Stores("twin")
    examples: Examples = Examples()

    def __init__(self) -> None:
        super().__init__()
        self.example = self.examples.new()
        self.sim: Simulation | None = None
        self._session: Any = None
        self.submitted: set[str] = set()
        self.unsent: set[str] = set()  # commands whose client saw its submit fail (lost offer)
        self.offers = 0
        self._seen: list[dict[str, Any]] = []
        self.longest_call = 0  # ms: how long the oldest running call has run, at most (a target)

    # -- setup and helpers -----------------------------------------------------------------

    @initialize(seed=st.integers(0, 7))
    def setup(self, seed: int) -> None:
        """The simulated external system's answers come from `seed`."""
        cfg = config(self.system, self.gates)
        server = self.stores.server(self.example.number)
        if server is not None:
            cfg = for_real_server(cfg)
        self.scale = 1 if server is None else REAL_SERVER_SCALE  # "a moment" on a real server
        self.sim = Simulation(cfg, lambda n: 0, random.Random(seed), server=server)
        self._session = self.sim.session()
        self._session.__enter__()

    @property
    def s(self) -> Simulation:
        assert self.sim is not None
        return self.sim

    def _log(self, node: str, step: str, outcome: str = "") -> None:
        self.example.steps.append((node, step, outcome, self._rows()))
        now = self.s.clock.now_ms()
        ages = [now - r.inv.started_ms for n in self.s.live() for r in self.s.running[n]]
        self.longest_call = max([self.longest_call, *ages])

    def _rows(self) -> str:
        """The store after a step, briefly: each pending entry's owner and delivery count, each
        command's status and guard owner."""
        q = self.s.queue
        rows = [f"{r['message_id'].decode()}:{r['consumer'].decode()}/{r['times_delivered']}"
                for r in q.client.xpending_range(q.stream, "workers", min="-", max="+", count=100)]
        if self.system == "command":
            for cmd in sorted(self.submitted):
                rows.append(f"{cmd}={self.s.cstore.status(cmd)}@{self.s.cstore.guard_owner(cmd)}")
        return " ".join(rows) or "-"

    def events(self) -> list[dict[str, Any]]:
        """The example's trace events so far (read from the store once each)."""
        self._seen.extend(self.s.queue.events(len(self._seen)))
        return self._seen

    def _new_events(self, before: int) -> list[dict[str, Any]]:
        return self.events()[before:]

    def _did(self, before: int, node: str) -> str:
        evs = [e for e in self._new_events(before) if e["node"] == node]
        return ", ".join(f"{e['op']} {e['outcome']}" for e in evs) or "nothing"

    def _act(self, node: str, step: str, *act: Any) -> None:
        before = len(self.events())
        self.s.take(tuple(act))
        self._log(node, step, self._did(before, node))

    # -- rules: producer and client ---------------------------------------------------------

    @precondition(lambda self: self.sim is not None and self.system == "workqueue" and self.offers < MAX_OFFERS)
    @rule()
    def offer(self) -> None:
        before = len(self.events())
        self.offers += 1
        self.s.produce("offer", f"m{self.offers}")
        self._log("producer", "offer", self._did(before, "producer"))

    @precondition(lambda self: self.sim is not None and self.system == "command")
    @rule(cmd=st.sampled_from(COMMANDS))
    def submit(self, cmd: str) -> None:
        self._submit(cmd, lose_offer=False)

    def _submit(self, cmd: str, *, lose_offer: bool) -> None:
        before = len(self.events())
        self.s.produce("submit_lost" if lose_offer else "submit", cmd)
        self.submitted.add(cmd)
        if lose_offer:
            self.unsent.add(cmd)
        else:
            self.unsent.discard(cmd)
        self._log("client", f"submit {cmd}" + (" (offer lost)" if lose_offer else ""), self._did(before, "client"))

    @precondition(lambda self: self.sim is not None and self.system == "command" and bool(self.submitted))
    @rule(cmd=st.sampled_from(COMMANDS))
    def cancel(self, cmd: str) -> None:
        before = len(self.events())
        self.s.produce("cancel", cmd)
        self._log("client", f"cancel {cmd}", self._did(before, "client"))

    # -- rules: a node ----------------------------------------------------------------------
    # A rule runs only when some node can take it (its precondition), and draws the node among
    # those that can: no step of a schedule is a no-op, and shrinking swaps nodes by name.

    def _nodes(self, kind: str) -> list[str]:
        if self.sim is None:
            return []
        return [a[1] for a in self.sim.enabled() if a[0] == kind]

    def _node(self, data: st.DataObject, kind: str) -> str:
        return self._node_of(data, self._nodes(kind))

    def _node_of(self, data: st.DataObject, nodes: list[str]) -> str:
        return data.draw(st.sampled_from(nodes), label="node")

    @precondition(lambda self: bool(self._nodes("poll")))
    @rule(data=st.data())
    def poll(self, data: st.DataObject) -> None:
        node = self._node(data, "poll")
        self._act(node, "poll", "poll", node)

    def _handler(self, data: st.DataObject) -> tuple[str, int]:
        node = data.draw(st.sampled_from([n for n in self.s.live() if self.s.running[n]]), label="node")
        return node, data.draw(st.integers(0, len(self.s.running[node]) - 1), label="handler")

    def _handlers_run(self) -> bool:
        return self.sim is not None and any(self.sim.running[n] for n in self.sim.live())

    @precondition(lambda self: self.system == "command" and self._handlers_run())
    @rule(data=st.data())
    def handler_step(self, data: st.DataObject) -> None:
        """A command delivery takes its next store step."""
        node, i = self._handler(data)
        self._act(node, f"step {self.s.running[node][i].inv.cmd}", "step", node, i)

    @precondition(lambda self: self.system == "workqueue" and self._handlers_run())
    @rule(data=st.data(), result=st.sampled_from(RESULTS))
    def handler_returns(self, data: st.DataObject, result: str) -> None:
        """A plain handler returns `result`: the node records its end and acks or releases."""
        node, i = self._handler(data)
        entry = self.s.running[node][i].inv.entry
        before = len(self.events())
        self.s.end_handler(node, i, result)
        self._log(node, f"return {result} {entry}", self._did(before, node))

    def _beating(self) -> list[str]:
        return [n for n in self._nodes("heartbeat") if n in self.s.lagging]

    @precondition(lambda self: bool(self._beating()))
    @rule(data=st.data())
    def heartbeat(self, data: st.DataObject) -> None:
        """A paused node's late heartbeat: a stale actor resuming (on-time heartbeats come
        with `time_passes`)."""
        node = data.draw(st.sampled_from(self._beating()), label="node")
        self._act(node, "heartbeat", "heartbeat", node)

    @precondition(lambda self: self.sim is not None)
    @rule(span=st.sampled_from(SPANS))
    def time_passes(self, span: str) -> None:
        """Time passes; every node that is not paused heartbeats on time meanwhile."""
        st_ = self.s.config.settings
        ms = {"a moment": 10 * self.scale, "a heartbeat": st_.heartbeat_interval_ms,
              "a lease": st_.visibility_timeout_ms + st_.heartbeat_interval_ms,
              "past max processing": st_.max_processing_ms + st_.visibility_timeout_ms + st_.heartbeat_interval_ms}[span]
        self._log("-", f"{span} (+{ms} ms)", _beats(self.s.elapse(ms)))

    @precondition(lambda self: bool(self._nodes("lag")))
    @rule(data=st.data(), takeover=st.booleans())
    def pause_past_lease(self, data: st.DataObject, takeover: bool) -> None:
        """A node running a handler pauses (its heartbeat too) while time passes its visibility
        timeout and guard TTL: a stale actor. Its peers heartbeat on time meanwhile and, with
        `takeover`, poll and start what they get (its first store step), as they would over
        such a pause; else a peer's takeover is a rule of its own. The paused node's next
        steps (a late heartbeat, a handler step, an ack) are rules of their own."""
        node = self._node(data, "lag")
        before = len(self.events())
        k = len(self.s.on_time_beats)
        self.s.pause_past_lease(node, takeover=takeover)
        peers = [e for e in self._new_events(before) if e["node"] != node]
        took = ", ".join(f"{e['node']} {e['op']} {e['outcome']}" for e in peers if e["op"] != "renew")
        self._log(node, "pause past lease" + (", a peer takes over" if takeover else ""),
                  "; ".join(x for x in (_beats(self.s.on_time_beats[k:]), took) if x))

    def _holds_guard(self, r: Any) -> bool:
        return r.inv.attempt is not None and self.s.cstore.guard_owner(r.inv.cmd) == r.inv.attempt

    def _stallable(self) -> list[str]:
        """The nodes that may run a command delivery (or poll for one) and then pause (`lag`)."""
        if self.sim is None or self.system != "command" or not self.submitted or self.s.lags_used >= self.s.config.lags:
            return []
        return [n for n in self.s.live() if n not in self.s.lagging
                and (self.s.running[n] or ("poll", n) in self.s.enabled())]

    @precondition(lambda self: bool(self._stallable()))
    @rule(data=st.data())
    def stale_write_meets_live(self, data: st.DataObject) -> None:
        """An attempt goes stale after 0 to 3 steps of its own (`_goes_stale`), and takes its
        next step, a put or the external call, while another attempt holds the guard."""
        self._goes_stale(data, "its next write or call", runs=data.draw(st.sampled_from(range(4)), label="runs"))

    @precondition(lambda self: bool(self._stallable()))
    @rule(data=st.data())
    def stale_release_meets_live(self, data: st.DataObject) -> None:
        """An attempt runs until its command is terminal (its last write, or a duplicate
        delivery that found it so), goes stale (`_goes_stale`), and takes its next step, its
        guard release, while another attempt holds the guard."""
        self._goes_stale(data, "its release", runs=None)

    @precondition(lambda self: bool(self._stallable()))
    @rule(data=st.data())
    def stale_renewal_meets_live(self, data: st.DataObject) -> None:
        """An attempt goes stale after 0 to 4 steps of its own (`_goes_stale`), and its node's
        late heartbeat renews its guard, which another attempt holds."""
        self._goes_stale(data, "its late heartbeat", runs=data.draw(st.sampled_from(range(5)), label="runs"))

    def _goes_stale(self, data: st.DataObject, then: str, runs: int | None) -> None:
        """An attempt that holds its guard pauses past the guard's TTL, and another attempt takes
        the guard meanwhile: a peer's (it reclaims the entry, as in `pause_past_lease`) or the
        same node's (its heartbeat lags but its poller runs on, and takes a second entry of the
        command, which the client resubmits). Then, as `then` says, the stale attempt takes its
        next step or its node's late heartbeat runs: a stale put, call, release or renewal meets
        a live attempt. Before the pause the node polls (if it runs nothing), the attempt takes
        its guard (if it has not yet) and `runs` more steps on time (None: until its command is
        terminal, where its next step is the release). The other rules can build these
        schedules too, but too rarely for the default examples; one rule for each of the
        attempt's guarded steps makes each common there."""
        node = self._node_of(data, self._stallable())
        before, k = len(self.events()), len(self.s.on_time_beats)
        if not self.s.running[node]:
            self.s.take(("poll", node))  # a delivery to go stale
            if not self.s.running[node]:
                self._log(node, "poll (to pause)", self._did(before, node))
                return
        stale = self.s.running[node][data.draw(st.integers(0, len(self.s.running[node]) - 1), label="handler")]
        cmd = stale.inv.cmd

        def runs_on() -> bool:
            return any(r is stale for r in self.s.running[node]) and self._holds_guard(stale)

        def step() -> None:
            self.s.take(("step", node, next(i for i, r in enumerate(self.s.running[node]) if r is stale)))

        if stale.inv.attempt is None:
            step()  # its guard_take
        for _ in range(5 if runs is None else runs):
            if not runs_on() or (runs is None and self.s.cstore.status(cmd) in TERMINAL):
                break
            step()
        if not runs_on() or node not in self._nodes("lag"):
            self._log(node, f"{stale.inv.attempt} ({cmd}) runs on, holds no guard", self._did(before, node))
            return  # it ended, or another attempt holds the guard already: nothing stale to pause
        takers = ["a peer"] + (["the same node"] if len(self.s.running[node]) < self.s.config.settings.concurrency else [])
        taker = data.draw(st.sampled_from(takers), label="taker")
        if taker == "the same node":
            self.s.produce("submit", cmd)  # the client resubmits: a second entry of the command
            self.unsent.discard(cmd)
            self.s.pause_past_lease(node, takeover=False)
            for _ in range(2):  # a reclaim-first turn may find the node's own entry and drop it
                running = len(self.s.running[node])
                self.s.take(("poll", node))
                if len(self.s.running[node]) > running:
                    self.s.take(("step", node, running))  # the new attempt's guard_take
                    break
        else:
            self.s.pause_past_lease(node, takeover=True)
        if then != "its late heartbeat" and any(r is stale for r in self.s.running[node]):
            step()
        if then == "its late heartbeat" and ("heartbeat", node) in self.s.enabled():
            # The late renewal that meets the live attempt. After a stale step instead, the
            # node's heartbeat stays late until a rule of its own runs it: its poller may take
            # new deliveries meanwhile, and their guards lapse too.
            self.s.take(("heartbeat", node))
        did = ", ".join(f"{e['node']} {e['op']} {e['outcome']}" for e in self._new_events(before) if e["op"] != "renew")
        self._log(node, f"{stale.inv.attempt} ({cmd}) stale, {taker} takes over, then {then}",
                  "; ".join(x for x in (_beats(self.s.on_time_beats[k:]), did) if x))

    def _faulty(self) -> list[tuple[str, str]]:
        if self.sim is None:
            return []
        faults = [(a[0], a[1]) for a in self.sim.enabled() if a[0] in FAULTS]
        if self.system == "command" and self.sim.faults_used < self.sim.config.faults:
            faults += [("submit_lost", c) for c in COMMANDS]  # the client's offer fails after its state write
        return faults

    @precondition(lambda self: bool(self._faulty()))
    @rule(data=st.data())
    def fault(self, data: st.DataObject) -> None:
        """A fault, within the run's budget: a node crashes, closes, its next ack aborts in the
        store, or it polls and its executor rejects what it got; a client's submit loses its
        offer (one rule, so that faults do not crowd out the steps that meet them)."""
        kind, who = data.draw(st.sampled_from(self._faulty()), label="fault")
        if kind == "submit_lost":
            self.s.faults_used += 1
            self._submit(who, lose_offer=True)
        else:
            self._act(who, FAULTS[kind], kind, who)

    # -- invariants -------------------------------------------------------------------------

    def _fail(self, name: str, detail: Any) -> None:
        raise AssertionError(f"{name}: {detail}, after\n{self.example.schedule()}")

    @invariant()
    def no_overlapping_invocations(self) -> None:
        if self.sim is None:
            return
        held: dict[str, list[str]] = {}
        for n, r in self.s.holders():
            held.setdefault(r.inv.entry, []).append(n)
        both = {e: ns for e, ns in held.items() if len(ns) > 1}
        if both or self.s.overlaps:
            self._fail("NoOverlappingInvocations", both or f"{self.s.overlaps} overlapping start(s)")

    @invariant()
    def permit_bound(self) -> None:
        if self.sim is None:
            return
        over = {n: len(self.s.running[n]) for n in self.s.live() if len(self.s.running[n]) > self.s.config.settings.concurrency}
        if over:
            self._fail("PermitBound", over)

    @invariant()
    def command_properties(self) -> None:
        if self.sim is None or self.system != "command":
            return
        events = self.events()
        if self.gates.attempt_guard and (bad := analysis.stale_writes(events)):
            self._fail("NoStaleWrite", bad)
        if self.gates.attempt_guard and (bad := analysis.stale_calls(events)):
            self._fail("NoStaleCall", bad)
        if bad := analysis.terminal_changes(events):
            self._fail("TerminalIsStable", bad)
        if bad := analysis.restarts(events):
            self._fail("NoRestart", bad)
        if bad := analysis.unexplained_calls(events):
            self._fail("ExternalOnce", bad)
        windows = analysis.call_windows(events)
        live: dict[str, list[str]] = {}
        for _, r in self.s.holders():
            a = r.inv.attempt
            if a in windows and (not self.gates.attempt_guard or self.s.cstore.guard_owner(windows[a]) == a):
                live.setdefault(windows[a], []).append(a)
        if many := {k: v for k, v in live.items() if len(v) > 1}:
            self._fail("OneLiveAttempt", many)

    # -- the end of an example --------------------------------------------------------------

    def _drain(self) -> None:
        """Faults stop: each client whose submit failed submits again, and the nodes work in
        fair rounds (a paused node's late heartbeat, each handler's next step, each node's poll,
        then a heartbeat's worth of time, heartbeats on time) until the stream is empty."""
        for cmd in sorted(self.unsent):  # a client whose submit failed submits again (the repair)
            self.s.produce("submit", cmd)
            self.example.drain.append(("client", f"submit {cmd}"))
        order = {"heartbeat": 0, "step": 1, "poll": 2}
        for _ in range(DRAIN_ROUNDS):
            if self.s.finished():
                return
            acts = [a for a in self.s.enabled() if a[0] in order and (a[0] != "heartbeat" or a[1] in self.s.lagging)]
            for act in sorted(acts, key=lambda a: order[a[0]]):
                if act in self.s.enabled():  # an earlier step of the round may have changed that
                    self.example.drain.append((act[1], act[0]))
                    self.s.take(act)
                    self.no_overlapping_invocations()
                    self.command_properties()
            self.s.elapse(self.s.config.settings.heartbeat_interval_ms)
            self.example.drain.append(("-", "time"))

    def teardown(self) -> None:
        if self.sim is None:
            return
        # Steer the search (Hypothesis' targeted phase) toward stale actors meeting live ones.
        target(float(stale_meets_live(self.events())), label="stale actors meeting live ones")
        target(self.longest_call / self.s.config.settings.visibility_timeout_ms, label="the longest call, in leases")
        try:
            self._drain()
            left = self.s.queue.stream_length()
            if self.system == "workqueue" and left:
                self._fail("EveryEntryAcked", f"{left} entries left once faults stopped")
            if self.system == "command":
                statuses = self.s.cstore.statuses()
                open_ = {c: statuses.get(c) for c in self.submitted if statuses.get(c) not in TERMINAL}
                if open_ or left:
                    self._fail("EveryCommandDone", f"{open_ or ''} {left} entries left once faults stopped")
        finally:
            self._session.__exit__(None, None, None)
            if self.events():  # an example in which nothing committed has no trace
                path = self.stores.dir / f"example{self.example.number}.ndjson"
                self.s.write_trace(path, run=f"machine-{self.stores.kind}-{self.example.number}")
                self.example.trace = path.read_text(encoding="utf-8")
            if self.s.server is not None:
                self.s.queue.delete_keys()


def stale_meets_live(events: list[dict[str, Any]]) -> int:
    """How many steps a stale actor took while a live one held what it acted on: a command step
    by an attempt whose guard another attempt holds, a renewal, release or ack of an entry
    another consumer owns."""
    n = 0
    for e in events:
        state, attempt = e.get("state") or {}, (e.get("args") or {}).get("attempt")
        owner = (state.get("guard") or {}).get("owner")
        if attempt is not None and owner not in (None, attempt) and e["op"] != "guard_take":
            n += 1
        entry = state.get("entry") or {}
        if e["op"] in ("renew", "release", "ack") and entry.get("owner") not in (None, e["node"]):
            n += 1
    return n


def _beats(nodes: list[str]) -> str:
    """Heartbeats that ran on time, briefly: `heartbeats n1 x3, n2 x3`."""
    if not nodes:
        return ""
    return "heartbeats " + ", ".join(f"{n} x{nodes.count(n)}" for n in sorted(set(nodes)))


def machine_for(system: str, kind: str = "twin", gates: Gates = Gates(), redis_url: str | None = None,
                prefix: str = "lp-sm") -> type[QueueMachine]:
    """The machine of `system` (`workqueue`, `command`) on `kind` of store (`twin`, `redis`),
    with its own examples."""
    return type(f"QueueMachine_{system}_{kind}", (QueueMachine,),
                {"system": system, "gates": gates, "stores": Stores(kind, redis_url, prefix), "examples": Examples()})


def rules_of(message: str) -> list[str]:
    """The rule lines of a failure's schedule table (for tests that bound its length)."""
    table = message.split("after\n", 1)[1]
    return [ln for ln in table.splitlines()[1:] if ln.strip() and not ln.lstrip().startswith("then ")]

