"""The engine's stateful machine: two nodes share one store, Hypothesis picks who steps next.

Every rule is one thing a node or a caller does, chosen by node (and workflow), never an index
into a list of what is enabled: so a shrunk failure is a short schedule of named steps, each of
which matters. The store is a parameter (`machine_for`): the in-memory twin, a SQLite file with
one connection per node (as two processes would have), or MariaDB under a table prefix.

Invariants, after every step, are named as the properties of `tla/Engine.tla`:

- `NoOverlappingRuns`: never two runs of one workflow at once, on any nodes (or one node);
- `RunningIsDriven`: a RUNNING instance that has a run to come (never run, or signalled since
  its last run ended waiting) has a live lease row, a queued copy, a run in progress, or a
  caller between its write and its schedule; one waiting for a signal is WaitingIsDriven's,
  which the drain checks (it signals them all); a workflow whose caller died between its two
  writes is left out, as the design leaves it to that caller's retry;
- `TerminalIsStable`: a COMPLETED or FAILED instance stays so;
- `NoFiberErrors`: no node or caller raised an error the engine does not document;
- `FetchSeesDue`: a fetch loop that read the due rows goes on to lease one when some row is
  due (`run_after <= now`, Engine's Fetch guard) and no copy of it waits in its own queue (a
  lease comparison off by one leaves a row due exactly now for a later poll).

A started workflow's handler may fail (`fails`): on its first delivery, or on every one, so that
its task is retried (`reschedule_retry`) and then dead-lettered (`mark_failed`, the workflow
FAILED). Time passes in three ways, each under Engine's Tick guard (no lease a node holds
lapses): when nothing can step (to the next wake-up, a pause's end among them: a pause ends
before any held lease does), while work is ready (`busy`: a slow node, a copy waiting in its
queue, a handler that renews late but within its lease), and exactly to the next due row that
no node holds (a retry's backoff, a lease whose holder crashed).

At the end of each example (`teardown`) faults stop and the run drains: every waiting workflow
is approved (one that can fail, while a run of it is in progress), time passes, and then

- `EventuallyDone`: every started workflow is terminal (nothing stranded);
- `CallersAnswered`: every start's caller gets an answer (its own copy's result, or
  ResultUnavailable and then the stored result), and that answer equals the stored result.

Each example's traces are kept (`Examples`), to be validated against `tla/TraceEngine.tla` in
one batch after the run; a rejection names the example's schedule.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from impl.engine.backend import Backend, MemoryBackend
from impl.engine.effects import Call
from impl.engine.errors import UnknownWorkflow
from impl.engine.export import by_workflow, render_workflow
from impl.engine.model import ACTIVE_TASK_STATUSES, Gates, Instance, Settings, Task, TaskKey
from impl.engine.node import Handle, ResultUnavailable, WorkflowFailed
from impl.engine.sim import Simulation
from impl.engine.queue import QueuedTask
from impl.engine.urls import node_backends
from impl.engine.workflows import APPROVAL, Registry, RunContext, Step, Workflow

LEASE = 1_000
NODES = ("n1", "n2")
WFS = ("w1", "w2")
# One retry (two deliveries) before the dead letter: a failing workflow reaches it early in an
# example, and the drain's approval, sent during a run (`_signal_deferred`), meets its last
# delivery often enough that a stale dead letter shows, as a stale retry does on the first.
SETTINGS = Settings(lease_ms=LEASE, renew_interval_ms=LEASE // 3, poll_interval_ms=100, max_retries=1)
DRAIN_STEPS = 20_000
# `fails` of a start: its handler raises on deliveries below this (a copy is delivery 0, the
# n-th fetch delivery n): never, on the first delivery only, or always (the dead letter).
FAILS = {"never": 0, "once": 1, "always": 1_000}
# A handler's run time: none; half a lease, which ends before its first renewal (so a signal's
# bump during the run is still unseen when it ends: a stale finish); one and a half leases,
# which renews.
LENGTHS = {"short": 0, "half": LEASE // 2, "long": 3 * LEASE // 2}


def _failing_approval(state: dict[str, Any], ctx: RunContext) -> Step:
    """APPROVAL, whose handler raises on deliveries below `fail_below` (its task is retried)."""
    if ctx.attempt < int(state.get("fail_below", 0)):
        raise RuntimeError(f"the handler fails on delivery {ctx.attempt}")
    return APPROVAL.run(state, ctx)


# An approval that can fail: it takes signals, so a signal's bump may meet a failing run.
FAILING_APPROVAL = Workflow("failing_approval", _failing_approval, APPROVAL.signals, APPROVAL.duration_ms)
WORKFLOWS = Registry(APPROVAL, FAILING_APPROVAL)


@dataclass
class Example:
    """One example's schedule (the rules that ran, with what they did) and its traces."""

    number: int
    steps: list[tuple[str, str, str]] = field(default_factory=list)  # (node, step, outcome): the rules
    drain: list[tuple[str, str, str]] = field(default_factory=list)  # what the seeded drain did after them
    traces: dict[str, str] = field(default_factory=dict)

    def schedule(self) -> str:
        """The schedule as a table: one line per rule, then the drain's steps (marked d)."""
        width = max((len(s) for _, s, _ in self.steps + self.drain), default=4)
        lines = [f"  {'#':>4}  node  {'step':<{width}}  outcome"]
        lines += [f"  {i:>4}  {n:<4}  {s:<{width}}  {o}" for i, (n, s, o) in enumerate(self.steps, 1)]
        lines += [f"  d{i:>3}  {n:<4}  {s:<{width}}  {o}" for i, (n, s, o) in enumerate(self.drain, 1)]
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
    """Opens each example's store: one backend per node over the same data.

    SQLite: one file for all the examples of a machine, its node connections kept open, the
    tables dropped and made again for each example. Opening a connection (WAL mode) and
    closing the last one (a checkpoint) cost ~6 ms each, far more than an example's
    transactions: a file per example spent most of a run opening and closing it.
    """

    def __init__(self, kind: str, mysql_url: str | None = None, prefix: str = "lp_sm") -> None:
        self.kind, self.mysql_url, self.prefix = kind, mysql_url, prefix
        self.dir = Path(tempfile.mkdtemp(prefix="lp-engine-machine-"))
        self.count = 0
        self._sqlite: dict[str, Backend] | None = None

    def open(self) -> dict[str, Backend]:
        """Fresh, empty tables; a backend per node (the twin: one, shared)."""
        self.count += 1
        if self.kind == "twin":
            shared = MemoryBackend()
            return {n: shared for n in NODES}
        if self.kind == "sqlite":
            if self._sqlite is None:
                self._sqlite = node_backends(f"sqlite:///{self.dir}/examples.db", NODES)
            else:
                self._sqlite[NODES[0]].drop_schema()
                self._sqlite[NODES[0]].create_schema()
            return self._sqlite
        assert self.mysql_url is not None
        return node_backends(self.mysql_url, NODES, f"{self.prefix}{self.count}_")

    def close(self, backends: dict[str, Backend]) -> None:
        """Drop the example's tables and close every connection (SQLite's stay open for the
        next example, which begins with fresh tables)."""
        first = backends[NODES[0]]
        if self.kind == "sqlite":
            return
        if self.kind != "twin":
            first.drop_schema()
        for b in {id(b): b for b in backends.values()}.values():
            b.close()


class EngineMachine(RuleBasedStateMachine):
    """Two nodes, two workflows, one store (see the module docstring)."""

    gates = Gates()
    decisions: Any = None
    stores: Stores = Stores("twin")
    examples: Examples = Examples()

    def __init__(self) -> None:
        super().__init__()
        self.backends = self.stores.open()
        self.sim = Simulation(self.backends[NODES[0]], nodes=NODES, seed=0, gates=self.gates, settings=SETTINGS,
                              node_backends=self.backends, decisions=self.decisions, workflows=WORKFLOWS)
        self.example = self.examples.new()
        self.terminal: dict[str, str] = {}
        self.handles: dict[tuple[str, str], Any] = {}  # (node, wf) -> the start's fiber
        self.dead_callers: set[tuple[str, str, str]] = set()  # (node, "start" | "signal", wf)
        self.unapproved: set[str] = set()  # waiting workflows the drain could not signal
        self.answers: list[tuple[str, str, Any]] = []  # (node, wf, result fiber)
        # Copies queued on a node before it crashed: Engine's Crash drops them, so whatever the
        # implementation kept, no node holds a lease by them (see `_held`).
        self.crashed_copies: list[QueuedTask] = []
        self.lost_futures: set[tuple[str, str]] = set()  # (node, wf): a start's future its node's crash lost
        self.deferred: list[tuple[str, str]] = []  # (node, wf): the drain's approvals sent during a run

    # -- helpers ---------------------------------------------------------------------------

    def _log(self, node: str, step: str, outcome: str = "") -> None:
        self.example.steps.append((node, step, outcome))

    def _runnable(self, node: str) -> list[Any]:
        """`node`'s fibers that can step now (a pending call, or a sleep that is over)."""
        return [what for kind, what in self.sim.choices() if kind == "fiber" and what.node == node]

    def _pick(self, want: Callable[[str, Any], bool]) -> bool:
        """Take the first of the simulation's current choices that `want` accepts."""
        return self.sim.step_where(want)

    def _live_rows(self) -> list[Task]:
        """Every PENDING or RUNNING task row (a read, no trace event)."""
        return self.sim.backend.due_tasks(2**62, len(WFS) + 1)

    def _held(self) -> set[str]:
        """The workflows some node may hold a lease of, as Engine's HoldsLease counts them: a
        copy in a queue (queued since the node last restarted) or a run in progress or finishing.
        A superset: a run that lost its lease is counted too, which only holds time back."""
        lost = {id(c) for c in self.crashed_copies}
        held = {c.task.task_id for n in NODES for c in self.sim.nodes[n].queue.items() if id(c) not in lost}
        return held | {f.label.removeprefix("run:") for f in self.sim.fibers if not f.done and f.label.startswith("run:")}

    def _work_ready(self) -> bool:
        """Whether a caller, a run or a queued copy could step now (not only a fetch loop's poll)."""
        return any(kind == "take" or what.label != "fetch_loop" for kind, what in self.sim.choices())

    def _time_limit(self, rows: list[Task]) -> int | None:
        """The latest time the clock may move to (Engine's Tick: a lease a node holds does not
        lapse), or None if no held lease is ahead."""
        held, now = self._held(), self.sim.clock.now_ms()
        ends = [r.run_after for r in rows if r.task_id in held and r.run_after > now]
        return min(ends) - 1 if ends else None

    def _advance(self, to: int, why: str) -> None:
        before = self.sim.clock.now_ms()
        self.sim.clock.advance(to - before)
        self._log("-", why, f"+{to - before} ms")

    # -- callers ---------------------------------------------------------------------------

    @precondition(lambda self: len(self.handles) < 3)
    @rule(node=st.sampled_from(NODES), wf=st.sampled_from(WFS), length=st.sampled_from(tuple(LENGTHS)),
          waits=st.booleans(), fails=st.sampled_from(tuple(FAILS)))
    def start(self, node: str, wf: str, length: str, waits: bool, fails: str = "never") -> None:
        """A caller on `node` starts `wf` in process (its handler short, half a lease or one and a
        half, waiting or not, failing never, on its first delivery, or always)."""
        if (node, wf) in self.handles or (node, "start", wf) in self.dead_callers:
            return
        state: dict[str, Any] = {"work_ms": LENGTHS[length], "approved": not waits}
        workflow = "approval"
        if FAILS[fails]:
            state["fail_below"], workflow = FAILS[fails], FAILING_APPROVAL.name
        self.handles[(node, wf)] = self.sim.spawn(node, self.sim.nodes[node].start(wf, workflow, state), f"start:{wf}")
        self._log(node, f"start {wf}", ", ".join([length] + ["waits"] * waits
                                                   + [f"fails {fails}"] * bool(FAILS[fails])))

    @precondition(lambda self: bool(self.handles))
    @rule(node=st.sampled_from(NODES), wf=st.sampled_from(WFS))
    def signal(self, node: str, wf: str) -> None:
        """A caller on `node` signals `wf` in process (the engine's own path for the gates).

        One signal of a workflow at a time per node, as `tla/Engine.tla` has one signaller per
        (node, workflow): a trace of two at once (which the trace cannot tell apart) would be
        rejected for a reason that is not a bug."""
        busy = any(f.node == node and f.label == f"signal:{wf}" and not f.done for f in self.sim.fibers)
        if busy or (node, "signal", wf) in self.dead_callers or self.sim.backend.read_instance(wf) is None:
            return
        self.sim.spawn(node, self.sim.nodes[node].signal(wf, "approve"), f"signal:{wf}")
        self._log(node, f"signal {wf}")

    # -- nodes -----------------------------------------------------------------------------

    @precondition(lambda self: any(kind == "fiber" and what.label != "fetch_loop" for kind, what in self.sim.choices()))
    @rule(node=st.sampled_from(NODES))
    def store_step(self, node: str) -> None:
        """`node`'s next pending store transaction (or a sleep that is over) of a caller or a run."""
        self._step_fiber(node, [f for f in self._runnable(node) if f.label != "fetch_loop"])

    @precondition(lambda self: any(kind == "fiber" and what.label == "fetch_loop" for kind, what in self.sim.choices()))
    @rule(node=st.sampled_from(NODES))
    def poll(self, node: str) -> None:
        """`node`'s fetch loop takes its next step (a wake-up, its read of the due rows, a fetch).

        A rule of its own: the loop is runnable after every move of the clock, and a rule that
        stepped it first starved the callers and runs of the schedule's rules."""
        self._step_fiber(node, [f for f in self._runnable(node) if f.label == "fetch_loop"])

    def _step_fiber(self, node: str, fibers: list[Any]) -> None:
        if not fibers:
            return
        f = fibers[0]
        label = f.effect.label if isinstance(f.effect, Call) else "wake"
        self._pick(lambda kind, what: kind == "fiber" and what is f)
        self._log(node, f"{f.label}: {label}")
        if f.label == "fetch_loop" and label == "due_tasks":
            self._fetch_sees_due(node, f)

    def _fetch_sees_due(self, node: str, f: Any) -> None:
        """FetchSeesDue: having read the due rows now, the fetch loop goes on to lease one if a
        row is due that no copy in its own queue stands for (Engine's Fetch is enabled then)."""
        now, queued = self.sim.clock.now_ms(), self.sim.nodes[node].queue.ids()
        due = [r.task_id for r in self._live_rows() if r.run_after <= now and r.task_id not in queued]
        leases = not f.done and isinstance(f.effect, Call) and f.effect.label == "fetch"
        assert leases or not due, (f"FetchSeesDue: {node}'s fetch at {now} leased none of {due}, due by then, after\n"
                                   f"{self.example.schedule()}")

    @precondition(lambda self: any(kind == "take" for kind, _ in self.sim.choices()))
    @rule(node=st.sampled_from(NODES))
    def take(self, node: str) -> None:
        """`node`'s taker hands its next queued task to a worker."""
        if self._pick(lambda kind, what: kind == "take" and what == node):
            self._log(node, "take")

    @precondition(lambda self: not self.sim.choices())
    @rule()
    def time_passes(self) -> None:
        """When nothing can happen now, the clock moves to the next wake-up (no step is late)."""
        if not self.sim.choices():
            before = self.sim.clock.now_ms()
            self.sim.step()
            self._log("-", "time", f"+{self.sim.clock.now_ms() - before} ms")

    @precondition(lambda self: self._work_ready())
    @rule(ms=st.integers(1, LEASE))
    def busy(self, ms: int) -> None:
        """Time passes while work is ready (slow nodes: a copy waits in its queue, a renewal
        or a fetch comes late), up to `ms` but never to the end of a lease a node holds, as
        Engine's Tick: a busy node is late, not at fault."""
        rows = self._live_rows()
        limit = self._time_limit(rows)
        now = self.sim.clock.now_ms()
        to = now + ms if limit is None else min(now + ms, limit)
        if to > now:
            self._advance(to, "busy")

    @rule()
    def due_time_comes(self) -> None:
        """The clock moves exactly to the next time a row no node holds falls due (a retry's
        backoff, a lease whose holder crashed), if no held lease ends first: so a fetch may
        poll at the very millisecond a row falls due, where a lease comparison off by one shows."""
        rows = self._live_rows()
        held, now, limit = self._held(), self.sim.clock.now_ms(), self._time_limit(rows)
        due = [r.run_after for r in rows if r.task_id not in held and r.run_after > now]
        if due and (limit is None or min(due) <= limit):
            self._advance(min(due), "due time")

    @rule(node=st.sampled_from(NODES), ms=st.integers(1, LEASE // 2))
    def pause(self, node: str, ms: int) -> None:
        """`node` stalls for `ms` (NoLongPauses: never back to back, under half a lease), and
        never to the end of a lease a node holds, as Engine's Tick: a paused node is late, not
        at fault. (A copy that had waited most of its lease, paused to its end, started on the
        lapsed lease beside its own node's fetch of the row: finding 3, a fault's overlap.)"""
        now = self.sim.clock.now_ms()
        limit = self._time_limit(self._live_rows())
        ms = ms if limit is None else min(ms, limit - now)
        if ms > 0 and self.sim.paused_until[node] + LEASE <= now:
            self.sim.pause(node, ms)
            self._log(node, "pause", f"{ms} ms")

    # Engine's Crash: a node that holds something (a copy or a run) of some workflow.
    @precondition(lambda self: any(len(self.sim.nodes[n].queue) for n in NODES)
                  or any(f.label.startswith("run:") for f in self.sim.fibers))
    @rule(node=st.sampled_from(NODES))
    def crash(self, node: str) -> None:
        """`node` crashes and restarts empty: its queue, runs and callers' futures are gone."""
        # A caller in the crashed process dies with it; one that had returned keeps its handle.
        # Its (node, workflow) gets no new caller: tla/Engine.tla has one starter and one
        # signaller per (node, workflow), and a trace cannot tell a dead one from a new one.
        self.handles = {k: v for k, v in self.handles.items() if k[0] != node or v.done}
        self.lost_futures |= {k for k in self.handles if k[0] == node}  # their futures were in its memory
        for f in self.sim.fibers:
            if f.node == node and not f.done and f.label.startswith(("start:", "signal:")):
                self.dead_callers.add((node, f.label.split(":", 1)[0], f.label.split(":", 1)[1]))
        self.crashed_copies += self.sim.nodes[node].queue.items()
        self.sim.crash(node)
        self._log(node, "crash")

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def no_overlapping_runs(self) -> None:
        assert self.sim.monitor.overlaps == 0, \
            f"NoOverlappingRuns: two runs of one workflow at once, after\n{self.example.schedule()}"

    @invariant()
    def running_is_driven(self) -> None:
        died = {wf for _, _, wf in self.dead_callers}
        for inst in self.sim.backend.list_instances():
            if inst.wf not in died and _run_to_come(inst) and not self._driven(inst.wf):
                raise AssertionError(f"RunningIsDriven: {inst.wf} has a run to come ({inst.state}) but no live row, "
                                     f"no queued copy, no run and no caller about to schedule it, after\n"
                                     f"{self.example.schedule()}")

    def _driven(self, wf: str) -> bool:
        """tla/Engine.tla's Driven(w): something will run `wf` without anyone's help."""
        task = self.sim.backend.read_task(TaskKey("workflow", wf))
        if task is not None and task.status in ACTIVE_TASK_STATUSES:
            return True
        if any(wf in self.sim.nodes[n].queue.ids() for n in NODES):
            return True
        for f in self.sim.fibers:
            effect = f.effect.label if isinstance(f.effect, Call) else ""
            if not f.done and (f.label == f"run:{wf}" or f.label in (f"start:{wf}", f"signal:{wf}")
                               and effect in ("schedule", "schedule_in_memory")):
                return True
        return False

    @invariant()
    def terminal_is_stable(self) -> None:
        for wf in WFS:
            inst = self.sim.backend.read_instance(wf)
            if wf in self.terminal:
                assert inst is not None and inst.status == self.terminal[wf], f"TerminalIsStable: {wf}"
            elif inst is not None and inst.terminal:
                self.terminal[wf] = inst.status

    @invariant()
    def no_fiber_errors(self) -> None:
        errors = [(label, e) for label, e in self.sim.errors if not isinstance(e, UnknownWorkflow)]
        assert errors == [], f"NoFiberErrors: {errors}"

    # -- the end of an example -------------------------------------------------------------

    def _step_logged(self) -> bool:
        """One step of the seeded scheduler, logged as a drain step of the schedule."""
        choices = self.sim.choices()
        if not choices:
            before = self.sim.clock.now_ms()
            more = self.sim.step()
            if more:
                self.example.drain.append(("-", "time", f"+{self.sim.clock.now_ms() - before} ms"))
            return more
        index = self.sim.rng.randrange(len(choices))
        kind, what = choices[index]
        if kind == "take":
            self.example.drain.append((what, "take", ""))
            return self.sim.step(lambda n: index)
        label = what.effect.label if isinstance(what.effect, Call) else "wake"
        self.example.drain.append((what.node, f"{what.label}: {label}", ""))
        more = self.sim.step(lambda n: index)
        if what.label == "fetch_loop" and label == "due_tasks":
            # The drain's clock lands on due times by itself (a retry due a backoff after a
            # step at a poll's time is due at a later poll's): the fetch must see the row then.
            self._fetch_sees_due(what.node, what)
        return more

    def _run_logged(self, done: Callable[[], bool]) -> None:
        for _ in range(DRAIN_STEPS):
            self._signal_deferred()
            if done() or not self._step_logged():
                return
            self.no_overlapping_runs()
            self.running_is_driven()

    def _drain(self) -> None:
        """Faults stop: the callers finish, every waiting workflow is approved, and the nodes
        step (seeded, logged as the schedule's drain) until nothing is left to do."""
        def callers_done() -> bool:
            return not any(f.label.startswith(("signal:", "start:")) for f in self.sim.fibers)

        self._run_logged(callers_done)
        for inst in self.sim.backend.list_instances():
            fit = [n for n in NODES if (n, "signal", inst.wf) not in self.dead_callers]
            if not inst.terminal and fit and inst.workflow == FAILING_APPROVAL.name:
                # A failing workflow is approved while a run of it is in progress, so that the
                # signal's bump meets a failing run: its retry or dead letter is then stale.
                self.deferred.append((fit[0], inst.wf))
            elif not inst.terminal and fit:
                self._approve(fit[0], inst.wf)
            elif not inst.terminal:
                self.unapproved.add(inst.wf)  # no node may send it one more signal (see `crash`)
        # The store is read last: the drain asks after every step, and the fibers say no for free.
        self._run_logged(lambda: callers_done() and not any(f.label.startswith("run:") for f in self.sim.fibers)
                         and all(i.terminal for i in self.sim.backend.list_instances()))

    def _approve(self, node: str, wf: str) -> None:
        self.sim.spawn(node, self.sim.nodes[node].signal(wf, "approve"), f"signal:{wf}")
        self.example.drain.append((node, f"signal {wf}", "approve"))

    def _signal_deferred(self) -> None:
        """Send the drain's deferred approvals whose workflow now runs, or waits undriven."""
        for node, wf in list(self.deferred):
            if self.sim.monitor.concurrent(wf) or not self._driven(wf):
                self.deferred.remove((node, wf))
                self._approve(node, wf)

    def teardown(self) -> None:
        try:
            self._drain()
            self.no_overlapping_runs()
            stranded = [i.wf for i in self.sim.backend.list_instances() if not i.terminal and i.wf not in self.unapproved]
            assert stranded == [], f"EventuallyDone: {stranded} not terminal once faults stopped, after\n{self.example.schedule()}"
            self._callers_answered()
        finally:
            # Drained when every workflow is terminal and nothing is left to do: the traces then
            # must end where the work is done (TraceEngine: every caller answered, no signal left).
            drained = all(i.terminal for i in self.sim.backend.list_instances()) and self.sim.quiescent()
            self.example.traces = {
                wf: render_workflow(evs, self.sim.gates, self.sim.settings, NODES,
                                    f"machine-{self.stores.kind}-{self.example.number}/{wf}", drained)
                for wf, evs in by_workflow(self.sim.backend.read_events()).items()
            }
            self.stores.close(self.backends)

    def _callers_answered(self) -> None:
        """CallersAnswered: every start still in its process gets the stored result."""
        try:
            self._check_answers()
        except AssertionError as e:
            raise AssertionError(f"{e}, after\n{self.example.schedule()}") from None

    def _check_answers(self) -> None:
        for (node, wf), fiber in self.handles.items():
            if wf in self.unapproved:
                continue  # it waits for a signal no node may send any more (see `crash`): no answer to expect
            assert fiber.done and fiber.error is None, f"CallersAnswered: the start of {wf} on {node} never returned"
            handle: Handle = fiber.value
            reader = self.sim.spawn(node, self.sim.nodes[node].result(handle), f"result:{wf}")
            self.sim.run_until(lambda: reader.done, max_steps=DRAIN_STEPS)
            inst = self.sim.backend.read_instance(wf)
            assert inst is not None and reader.done, f"CallersAnswered: the caller of {wf} on {node} waits forever"
            if isinstance(reader.error, WorkflowFailed):
                assert inst.status == "FAILED", f"CallersAnswered: {wf} reported failed but is {inst.status}"
                continue
            assert reader.error is None, f"CallersAnswered: {wf} on {node}: {reader.error!r}"
            stored = json.loads(inst.result) if inst.result is not None else None
            assert reader.value == stored, f"CallersAnswered: {wf} on {node} got {reader.value!r}, stored {stored!r}"
            fut = handle.future
            # The future itself: answered by the time the workflow is terminal and nothing is left
            # to do (a start that queued no copy fails it with ResultUnavailable at once), unless
            # its node crashed since (the future was in the node's memory), or another node's run
            # finished the workflow (a retry or a signal's run fetched elsewhere: only a run on
            # its node answers a future, as in Engine's RunEnd; `result` reads storage meanwhile).
            assert fut.done() or (node, wf) in self.lost_futures or self._finisher(wf) != node, \
                f"CallersAnswered: the future of {wf}'s start on {node} was never answered"
            if fut.done() and fut.exception() is None:
                assert fut.result() == stored, f"CallersAnswered: {wf}'s future says {fut.result()!r}, stored {stored!r}"
            elif fut.done():
                assert isinstance(fut.exception(), ResultUnavailable), f"{wf}: {fut.exception()!r}"


    def _finisher(self, wf: str) -> str | None:
        """The node whose step made `wf` terminal (its save or its dead letter), if any."""
        for e in self.sim.backend.read_events():
            inst = e.line()["state"].get("instance") if e.wf == wf else None
            if inst and inst["status"] in ("COMPLETED", "FAILED"):
                return e.node
        return None


def _run_to_come(inst: Instance) -> bool:
    """Whether a RUNNING approval workflow is owed a run (Engine.tla's waitsOn = "none"): it
    never ran, or a signal approved it since its last run saved it waiting."""
    if inst.terminal:
        return False
    state = json.loads(inst.state)
    return int(state.get("runs", 0)) == 0 or bool(state.get("approved"))


def machine_for(kind: str, gates: Gates = Gates(), mysql_url: str | None = None, prefix: str = "lp_sm",
                decisions: Any = None) -> type[EngineMachine]:
    """The machine on one kind of store (`twin`, `sqlite`, `mysql`), with its own examples;
    `decisions` swaps the store's pure decisions (`impl/engine/mutants.py`)."""
    return type(f"EngineMachine_{kind}", (EngineMachine,),
                {"gates": gates, "decisions": decisions, "stores": Stores(kind, mysql_url, prefix), "examples": Examples()})
