"""Deterministic simulation: the real queue and command steps over fakeredis on a virtual clock,
with a chooser (a seeded `random.Random`, or Hypothesis) picking which node takes the next step.

Each step is one of: a producer offers (or submits) the next message; a node polls; a node
advances one running handler by one store step; a node heartbeats; the clock ticks; a node
crashes. Time only moves by ticks, and a tick never passes a live node's heartbeat deadline
(a node is never paused past a VT/3 renewal: the fairness assumption `NoLongPauses`); with the
`heartbeat` or `renew_past_max_processing` gate off, entries lapse under running handlers.
The same config and the same choices give byte-identical traces.

The store is the in-memory twin (fakeredis, the same Lua) unless a `Server` is given: then the
same steps run on a real Redis server under the server's own key prefix, with time moved forward
by `sim_redis.RedisTimeWarp`; use `for_real_server(config)` there, whose durations are far
above the real milliseconds a step takes, so the run decides as the twin would.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from impl.clock import VirtualClock
from impl.workqueue import analysis, recording
from impl.workqueue.command_store import CommandStore
from impl.workqueue.commands import CommandClient, CommandProcessor, counter_ids
from impl.workqueue.config import Gates, Settings
from impl.workqueue.consumer import heartbeat_period_ms
from impl.workqueue.core import Invocation
from impl.workqueue.errors import StoreFault, UnknownCommand
from impl.workqueue.node import QueueNode
from impl.workqueue.sim_redis import RedisTimeWarp, fake_client, virtual_time
from impl.workqueue.store import GROUP, QueueStore

Chooser = Callable[[int], int]
START_MS = 1_000_000

SIM_SETTINGS = Settings(visibility_timeout_ms=300, max_processing_ms=400, concurrency=2, fairness_ratio=3,
                        guard_ttl_ms=300, state_ttl_ms=3_600_000, poll_interval_ms=10, heartbeat_ms=100)


@dataclass(frozen=True)
class SimConfig:
    """What to simulate. `system`: `workqueue` (plain messages) or `command` (commands)."""

    system: str = "workqueue"
    nodes: tuple[str, ...] = ("n1", "n2")
    messages: int = 3
    duplicate_submits: int = 1     # commands submitted twice (two entries, one command)
    lost_offers: int = 1           # commands whose first offer fails, repaired by resubmission
    cancels: int = 1               # commands a client tries to cancel
    crashes: int = 0               # nodes that may crash (at most this many)
    faults: int = 0                # injected ack failures and executor rejections (at most)
    lags: int = 0                  # heartbeat lags / pauses past the VT (at most)
    closes: int = 0                # nodes that may close (stop polling, finish their handlers)
    settings: Settings = SIM_SETTINGS
    gates: Gates = field(default_factory=Gates)
    max_steps: int = 600
    handler_steps: int = 3         # a plain handler yields up to this many times (time may pass)
    ticks: tuple[int, ...] = (10, 60, 150)


# A simulation on a real server scales every duration by this: a decision flips only if real
# time between two steps of one example passed the smallest duration (10 s instead of 10 ms).
REAL_SERVER_SCALE = 1_000


def for_real_server(config: SimConfig) -> SimConfig:
    """`config` with its durations (settings and ticks) scaled for a real server (see
    `REAL_SERVER_SCALE`)."""
    k = REAL_SERVER_SCALE
    return replace(config, settings=scaled_for_real_server(config.settings), ticks=tuple(t * k for t in config.ticks))


def scaled_for_real_server(st: Settings) -> Settings:
    """`st` with every duration scaled by `REAL_SERVER_SCALE`. The state TTL stays below 2^31
    ms, the integers of TLC."""
    k = REAL_SERVER_SCALE
    return replace(st, visibility_timeout_ms=st.visibility_timeout_ms * k, max_processing_ms=st.max_processing_ms * k,
                   guard_ttl_ms=st.guard_ttl_ms * k, poll_interval_ms=st.poll_interval_ms * k,
                   heartbeat_ms=st.heartbeat_interval_ms * k, state_ttl_ms=min(st.state_ttl_ms * k, 1_000_000_000))


@dataclass(frozen=True)
class Server:
    """A real Redis server for a simulation: a client, and the key prefix the run owns (its
    caller deletes the keys after reading the trace: `sim.queue.delete_keys()`)."""

    client: Any
    prefix: str
    url: str = "redis"  # for error messages


class SimApp:
    """A simulated external system: answers drawn from the simulation's seeded rng."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def call(self, cmd: str, payload: str) -> str:
        r = self.rng.random()
        if r < 0.1:
            raise RuntimeError(f"external system error on {cmd}")
        return "failed" if r < 0.2 else "succeeded"

    def check(self, cmd: str, payload: str) -> str:
        return "failed" if self.rng.random() < 0.1 else "succeeded"


def _plain_handler(rng: random.Random, max_steps: int) -> Generator[None, None, bool | str]:
    for _ in range(rng.randrange(0, max_steps + 1)):
        yield
    return rng.choice(["done", "done", "done", "not_done", "threw"])


@dataclass
class _Running:
    inv: Invocation
    gen: Generator[None, None, Any]


class Simulation:
    """One simulated run. `run()` returns its summary; `write_trace()` writes its trace."""

    def __init__(self, config: SimConfig, chooser: Chooser, rng: random.Random, server: Server | None = None) -> None:
        self.config = config
        self.server = server
        self.warp: RedisTimeWarp | None = None
        self.choose = chooser
        self.rng = rng
        self.clock = VirtualClock(START_MS)
        self.steps_taken = 0
        self.dead: list[str] = []
        self.faults_used = 0
        self.lags_used = 0
        self.lagging: set[str] = set()
        self.closing: set[str] = set()
        # Invocations whose lease lapsed under a lagging heartbeat: they no longer hold it, so a
        # peer's call on the same entry is the known limit of leases, not an overlap (the
        # spec's `Holds`). Identified by id() of the invocation.
        self.lapsed: set[int] = set()
        self.overlaps = 0
        self.on_time_beats: list[str] = []  # every heartbeat `elapse` ran, in order
        self._graveyard: list[Any] = []  # a crashed node's handlers: kept, never resumed or closed

    # -- setup --------------------------------------------------------------------------------
    def _setup(self) -> None:
        cfg = self.config
        self.client = fake_client() if self.server is None else self.server.client
        prefix = "sim" if self.server is None else self.server.prefix
        url = "fakeredis" if self.server is None else self.server.url
        self.queue = QueueStore(self.client, prefix, url=url, explicit_ids=True)
        self.cstore = CommandStore(self.client, prefix, url=url, faults=self.queue.faults)
        if self.server is not None:
            self.warp = RedisTimeWarp(self.client, prefix, self.queue.stream, GROUP)
            self.warp.start(self.clock.now_ms())
        self.nodes = {n: QueueNode(self.queue, n, self.clock, cfg.settings, cfg.gates) for n in cfg.nodes}
        self.procs = {n: CommandProcessor(self.cstore, n, self.clock, cfg.settings, cfg.gates, SimApp(self.rng),
                                          counter_ids(f"{n}-a")) for n in cfg.nodes}
        self.client_api = CommandClient(self.queue, self.cstore, "client", self.clock, cfg.settings, cfg.gates,
                                        counter_ids("client-c"))
        self.running: dict[str, list[_Running]] = {n: [] for n in cfg.nodes}
        self.last_hb = {n: self.clock.now_ms() for n in cfg.nodes}
        self.plan = self._producer_plan()

    def _producer_plan(self) -> list[tuple[str, str]]:
        cfg = self.config
        if cfg.system == "workqueue":
            return [("offer", f"m{i}") for i in range(cfg.messages)]
        plan: list[tuple[str, str]] = []
        cmds = [f"c{i}" for i in range(cfg.messages)]
        for i, c in enumerate(cmds):
            plan.append(("submit_lost" if i < cfg.lost_offers else "submit", c))
        for c in cmds[: cfg.lost_offers]:
            plan.append(("submit", c))  # the repair: resubmit the same id
        for c in cmds[cfg.lost_offers: cfg.lost_offers + cfg.duplicate_submits]:
            plan.append(("submit", c))
        for c in cmds[-cfg.cancels:] if cfg.cancels else []:
            plan.append(("cancel", c))
        return plan

    # -- actions ------------------------------------------------------------------------------
    def _live(self) -> list[str]:
        return [n for n in self.config.nodes if n not in self.dead]

    def live(self) -> list[str]:
        """The nodes that have not crashed, in config order."""
        return self._live()

    def finished(self) -> bool:
        """Whether nothing is left to do: the plan is spent, no handler runs, the stream is empty."""
        return self._finished()

    def _tick_room(self) -> int:
        hb = heartbeat_period_ms(self.config.settings)  # the real consumer's heartbeat schedule
        deadlines = [self.last_hb[n] + hb for n in self._live() if n not in self.lagging and self._heartbeats(n)]
        return (min(deadlines) - self.clock.now_ms()) if deadlines else max(self.config.ticks)

    def _heartbeats(self, n: str) -> bool:
        # A closing node keeps renewing its running handlers until they return, unless the
        # `close_waits_for_handlers` gate is off (the old close stopped the heartbeat at once).
        return n not in self.closing or self.config.gates.close_waits_for_handlers

    def _lag_over(self, n: str) -> bool:
        # A lagging heartbeat stays away until its entries could have been reclaimed.
        return self.clock.now_ms() - self.last_hb[n] > self.config.settings.visibility_timeout_ms

    def enabled(self) -> list[tuple[Any, ...]]:
        """The actions that may run now, in a fixed order (so a chooser's index is stable)."""
        acts: list[tuple[Any, ...]] = []
        if self.plan:
            acts.append(("produce",))
        for n in self._live():
            if n not in self.closing:
                acts.append(("poll", n))
            for i in range(len(self.running[n])):
                acts.append(("step", n, i))
            if (n not in self.lagging or self._lag_over(n)) and self._heartbeats(n):
                acts.append(("heartbeat", n))
        if self._tick_room() > 0:
            acts.append(("tick",))
        if len(self.dead) < self.config.crashes and len(self._live()) > 1:
            acts.append(("crash", self._live()[-1]))
        if self.faults_used < self.config.faults:
            for n in self._live():
                acts.append(("ack_fault", n))   # n's next ack aborts
                if n not in self.closing:       # a closing node polls no more
                    acts.append(("reject", n))  # n polls, and its executor rejects the entry
        open_nodes = [n for n in self._live() if n not in self.closing]
        if len(self.closing) < self.config.closes and len(open_nodes) > 1:
            acts.append(("close", open_nodes[-1]))
        if self.lags_used < self.config.lags:
            for n in self._live():
                if n not in self.lagging and self.running[n]:
                    acts.append(("lag", n))     # n pauses past its leases (see `take`)
        return acts

    def _produce(self) -> None:
        self.produce(*self.plan.pop(0))

    def produce(self, kind: str, name: str) -> None:
        """The producer's step `kind` on `name`: `offer` a message; `submit` a command,
        `submit_lost` one whose offer fails (the crash between its state write and its offer),
        or `cancel` it. A caller that decides these itself (a state machine) calls this."""
        now = self.clock.now_ms()
        if kind == "offer":
            self.queue.offer("producer", now, name)
        elif kind == "cancel":
            with contextlib.suppress(UnknownCommand):  # cancelled before it was submitted
                self.client_api.cancel(name)
        else:
            if kind == "submit_lost":
                self.queue.faults.fail("offer", "client")  # the crash between state write and offer
            try:
                self.client_api.submit(name, f"payload-{name}")
            except StoreFault:
                pass

    def _poll(self, n: str, reject: bool = False) -> None:
        node = self.nodes[n]
        inv = node.poll_and_admit()
        if inv is None:
            return
        node.reserve(inv)
        if reject:
            self.faults_used += 1
            self.queue.line(n, "reject", "injected")  # the executor's refusal, logged where it is made
            node.reject(inv)
            return
        self.overlaps += sum(1 for _, other in self.holders() if other.inv.entry == inv.entry)
        node.start(inv)
        if self.config.system == "command":
            gen = self.procs[n].steps(inv)
        else:
            gen = _plain_handler(self.rng, self.config.handler_steps)
        self.running[n].append(_Running(inv, gen))

    def _step(self, n: str, i: int) -> None:
        run = self.running[n][i]
        try:
            next(run.gen)
            return
        except StopIteration as stop:
            value = stop.value
            result = value if isinstance(value, str) else ("done" if value else "not_done")
        except Exception:
            result = "threw"
        self.running[n].pop(i)
        try:
            self.nodes[n].finish(run.inv, result)
        except StoreFault:
            pass

    def _tick(self) -> None:
        self.pass_time(self.config.ticks[self.choose(len(self.config.ticks))])

    def pause_past_lease(self, n: str, *, takeover: bool) -> None:
        """`n` pauses, its heartbeat too, while its leases and guards run out; its peers
        heartbeat on time meanwhile and, with `takeover`, poll while they have permits (as they
        would many times over such a pause) and start what they get, so that a peer may take
        over what `n` runs. What the stale
        node does next (a late heartbeat, a handler step, an ack) is up to the chooser."""
        self.lags_used += 1
        self.lagging.add(n)
        # The fault line: n's heartbeat lags from here until it runs again (`take`, heartbeat).
        self.queue.line(n, "heartbeat_lag", "start")
        st = self.config.settings
        self.elapse(max(st.visibility_timeout_ms, st.guard_ttl_ms) + st.heartbeat_interval_ms)
        if not takeover:
            return
        for m in self._live():
            if m == n or m in self.closing:
                continue
            for _ in range(st.concurrency):  # a peer with free permits polls, and starts what it gets
                before = len(self.running[m])
                self.take(("poll", m))
                if len(self.running[m]) == before:
                    break
                if self.config.system == "command":
                    self.take(("step", m, len(self.running[m]) - 1))

    def elapse(self, ms: int) -> list[str]:
        """`ms` pass, and the heartbeat of every node that is not lagging runs on time (at each
        of its deadlines, as the real consumer's heartbeat thread would); returns the nodes whose
        heartbeats ran, in order."""
        end, beats = self.clock.now_ms() + ms, []
        hb = heartbeat_period_ms(self.config.settings)
        while True:
            for n in self._live():
                if n not in self.lagging and self._heartbeats(n) and self.clock.now_ms() >= self.last_hb[n] + hb:
                    self.take(("heartbeat", n))
                    beats.append(n)
                    self.on_time_beats.append(n)
            if self.clock.now_ms() >= end:
                return beats
            self.pass_time(end - self.clock.now_ms())

    def pass_time(self, ms: int) -> None:
        """The clock moves by `ms`, or less: never past a live node's next heartbeat."""
        step = max(1, min(ms, self._tick_room()))
        self.clock.advance(step)
        if self.warp is not None:
            self.warp.advance(step)
        now, vt = self.clock.now_ms(), self.config.settings.visibility_timeout_ms
        for n in self.lagging:
            if now - self.last_hb[n] >= vt:
                self.lapsed.update(id(r.inv) for r in self.running[n])

    def _crash(self, n: str) -> None:
        self.dead.append(n)
        self.queue.line(n, "crash", "injected")
        self._graveyard.extend(self.running[n])
        self.running[n] = []

    def holders(self) -> list[tuple[str, _Running]]:
        """The running invocations that hold their entry now (the spec's `Holds`): on a live
        node, never refused a renewal, and not lapsed under a late heartbeat (or renewed since)."""
        return [(n, r) for n in self._live() for r in self.running[n]
                if not r.inv.lost and id(r.inv) not in self.lapsed]

    def end_handler(self, n: str, i: int, result: str) -> None:
        """Node `n`'s `i`-th running handler returns `result` now (a plain message's handler,
        for a caller that decides the results itself: a Hypothesis state machine)."""
        run = self.running[n].pop(i)
        try:
            self.nodes[n].finish(run.inv, result)
        except StoreFault:
            pass

    def _finished(self) -> bool:
        if self.plan or any(self.running[n] for n in self._live()):
            return False
        if self.queue.stream_length() > 0:
            return False
        return True

    def take(self, act: tuple[Any, ...]) -> None:
        """Take one enabled action (inside `virtual_time`, after `_setup`)."""
        self.steps_taken += 1
        kind = act[0]
        if kind == "produce":
            self._produce()
        elif kind == "poll":
            self._poll(act[1])
        elif kind == "step":
            self._step(act[1], act[2])
        elif kind == "heartbeat":
            if act[1] in self.lagging:
                self.queue.line(act[1], "heartbeat_lag", "end")  # the lag's window closes here
            self.nodes[act[1]].heartbeat()
            self.last_hb[act[1]] = self.clock.now_ms()
            for r in self.running[act[1]]:
                if r.inv.renewed_ms == self.clock.now_ms():
                    self.lapsed.discard(id(r.inv))  # renewed: it holds its entry again
            self.lagging.discard(act[1])
        elif kind == "tick":
            self._tick()
        elif kind == "crash":
            self._crash(act[1])
        elif kind == "reject":
            self._poll(act[1], reject=True)
        elif kind == "close":
            self.closing.add(act[1])
            self.queue.line(act[1], "close", "injected")
        elif kind == "lag":
            self.pause_past_lease(act[1], takeover=True)
        elif kind == "ack_fault":
            self.faults_used += 1
            self.queue.faults.fail("ack", act[1])
        else:
            raise ValueError(f"unknown simulation action {act!r}")

    def done(self) -> bool:
        """Whether the run is over: everything acked, or the step budget spent."""
        return self.steps_taken >= self.config.max_steps or self._finished()

    @contextlib.contextmanager
    def session(self) -> Iterator["Simulation"]:
        """Set up the run and hold the virtual clock for a caller that takes steps itself (a
        Hypothesis state machine); `summary()` afterwards."""
        with virtual_time(self.clock) if self.server is None else contextlib.nullcontext():
            self._setup()
            try:
                yield self
            finally:
                self._collect()

    def _collect(self) -> None:
        # Every live consumer's end, with the permits it still holds: a drained run must have
        # given every one back (TraceWorkQueue, EveryPermitReturned).
        for n in self._live():
            self.queue.line(n, "stop", "stopped", args={"permits_in_use": self.nodes[n].permits.in_use})
        self.events = self.queue.events()
        self.statuses = self.cstore.statuses() if self.config.system == "command" else None
        self.external = ({c: self.cstore.external_calls(c) for c in self.statuses} if self.statuses else None)
        self.leftover = self.queue.stream_length()

    def run(self) -> dict[str, Any]:
        """Run until every message is acked (or `max_steps`); returns the summary."""
        with self.session():
            while not self.done():
                acts = self.enabled()
                self.take(acts[self.choose(len(acts))])
        return self.summary()

    def summary(self) -> dict[str, Any]:
        """The run's figures (after `run()` or a `session()`)."""
        out = analysis.summary(self.events, self.statuses, self.external)
        # Overlaps of invocations that hold their lease (must be 0); the trace-only count also
        # includes calls whose lease lapsed under an injected lag.
        out["overlaps_after_lapse"] = analysis.duplicate_invocations(self.events, self.dead)
        out["duplicate_invocations"] = self.overlaps
        out["finished"] = self.leftover == 0 and not self.plan
        # Permits still taken once no handler runs: a leak (the consumer takes less and less work).
        out["permits_leaked"] = {n: self.nodes[n].permits.in_use for n in self._live()
                                 if self.nodes[n].permits.in_use and not self.running[n]}
        out["steps"] = self.steps_taken
        out["virtual_ms"] = self.clock.now_ms() - START_MS
        return out

    def write_trace(self, path: Path, run: str | None = None, view: str | None = None) -> Path:
        """Write the run's trace (after `run()`): the `view` (`workqueue` or `command`, see
        `recording`), by default the simulated system's own."""
        cfg = self.config
        view = view or cfg.system
        feats = ["crash"] if self.dead else []
        if self.faults_used:
            feats.append("faults")
        if self.lags_used:
            feats.append("heartbeat_lag")
        if self.closing:
            feats.append("close")
        if cfg.system == "command" and cfg.cancels:
            feats.append("cancellation")
        # A throw mid-attempt is outside CommandQueue.tla's attempts (the queue spec has it).
        if view == "command" and any(ev["op"] == "invoke_end" and (ev.get("args") or {}).get("result") == "threw"
                                     for ev in self.events):
            feats.append("handler_throws")
        return recording.export(path, self.queue, system=view, settings=cfg.settings, gates=cfg.gates,
                                nodes=["producer" if cfg.system == "workqueue" else "client", *cfg.nodes],
                                run=run, features=feats)


def run_ok(summary: dict[str, Any]) -> bool:
    """The simulation's own monitors on a run's `summary`: no overlapping invocation, no terminal
    state changed, every message finished, and no permit left taken once no handler runs."""
    return (summary["duplicate_invocations"] == 0 and summary["terminal_changes"] == 0 and summary["finished"]
            and not summary["permits_leaked"])


def seeded(config: SimConfig, seed: int, server: Server | None = None) -> Simulation:
    """A simulation whose every choice comes from `random.Random(seed)` (on `server`, or the twin)."""
    rng = random.Random(seed)
    return Simulation(config, lambda n: rng.randrange(n), random.Random(seed + 1_000_003), server)
