"""A schedule of `tla/Engine.tla` steps, run on the engine as a deterministic simulation.

You give it the schedule `conformance/replay/map.py` reads from a TLC counterexample (plain
data: steps named as the spec's actions, with node, workflow, slot and tick) and it makes each
step happen on the real code, in that order, under a virtual clock that moves only at a `Tick`:

    CreateInstance(n1, w1)    a start fiber on n1; its create_instance commits
    ScheduleInMemory(n1, w1)  that fiber's schedule_in_memory commits (a copy may be queued)
    RunStart(n1, w1, s1)      n1's taker takes the copy; the run's run_start commits
    Tick                      the clock moves one tick (a renew interval)

Each step is checked against what the spec says it did (an outcome, a copy queued or not, a
caller answered or not); a step the implementation cannot take, or takes differently, ends
the replay `blocked`, naming the step and why. After every step the engine's own monitors
check the property the counterexample breaks (`RunMonitor` for NoOverlappingRuns, the stored
rows for TerminalIsStable and RunningIsDriven); a liveness counterexample is replayed, then the
nodes drain (seeded, fetch loops on) and the workflow must be done and every caller answered.
An action with no counterpart here (timers; the clock's model-checking window) is `unmapped`.

Hidden faults need no hook: a node whose lease lapses (OutliveLease, EarlyExpiry) is a node
that does not step, and the replay simply does not step it; a caller that fails between its
writes is its fiber ended (`Simulation.cancel`); a failed finishing write is the run given up.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from impl.engine.backend import Backend
from impl.engine.effects import Call, Sleep
from impl.engine.errors import EngineError, ResultUnavailable
from impl.engine.model import ACTIVE_TASK_STATUSES, Gates, Settings, TaskKey
from impl.engine.node import Handle
from impl.engine.sim import SimFiber, Simulation
from impl.engine.urls import node_backends
from impl.engine.workflows import Complete, Registry, RunContext, Step, Workflow

TICK_MS = 500  # one tick of the models (their renew interval) in virtual milliseconds
DRAIN_STEPS = 20_000

# Model gates and the engine's: the field of `Gates` (or of `Settings`), or None and why.
GATES: dict[str, str] = {
    "HonourCheck": "honour_check",
    "BumpOnHonoredLease": "bump_task_version_on_honored_lease",
    "CreateExistingIsNoop": "create_existing_workflow_is_noop",
    "ForceSignalInScheduler": "force_signal_workflow_exec_in_scheduler",
    "RecoverStrandedStart": "recover_stranded_start",
    "RecoverAfterLease": "recover_after_lease",
    "RenewAdoptsRerun": "renew_adopts_rerun",
    "InMemoryStart": "Settings.in_memory_execution",
}
NO_GATE: dict[str, str] = {
    "RunEndChecksStatus": "store.run_end always requires a RUNNING instance",
    "ResultUnavailable": "a start that queued no copy always fails its future with ResultUnavailable (node.py)",
    "AnswerFromStore": "a run whose save conflicts always answers its node's callers from the store (worker.py)",
    "ArmTimerWithSave": "impl/engine has no timers",
}
UNMAPPED: dict[str, str] = {
    "ArmTimer": "impl/engine has no timers (TimerRuns)",
    "FetchTimer": "impl/engine has no timers (TimerRuns)",
    "FireTimer": "impl/engine has no timers (TimerRuns)",
    "TickPastWindow": "the clock leaving the model's window is a model-checking device: no clock of the engine has one",
}


class ReplayError(EngineError):
    """A schedule that is not a replayable schedule of tla/Engine.tla (a bug in its maker)."""


class _Blocked(Exception):
    """The implementation cannot take a step as the schedule has it (the message says why)."""


@dataclass
class Line:
    """One replayed step: what the implementation did, and the rows it left."""

    number: int
    step: str
    outcome: str
    rows: str


@dataclass
class Replay:
    """How a replay ended: `reproduced`, `blocked`, `unmapped` or `held` (ran to the end, and
    the property held), with the step it ended at, why, and the schedule as replayed."""

    verdict: str
    property: str | None
    reason: str
    step: int | None = None
    lines: list[Line] = field(default_factory=list)
    gates: dict[str, bool] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def table(self) -> str:
        """The replayed steps as a table (number, step, outcome, rows after)."""
        width = max((len(ln.step) for ln in self.lines), default=4)
        out = [f"  {'#':>3}  {'step':<{width}}  {'outcome':<28}  rows after"]
        out += [f"  {ln.number:>3}  {ln.step:<{width}}  {ln.outcome:<28}  {ln.rows}" for ln in self.lines]
        return "\n".join(out)

    def to_json(self) -> dict[str, Any]:
        """The replay as plain data."""
        return {"verdict": self.verdict, "property": self.property, "reason": self.reason, "step": self.step,
                "gates": self.gates, "notes": self.notes,
                "lines": [{"number": ln.number, "step": ln.step, "outcome": ln.outcome, "rows": ln.rows} for ln in self.lines]}


def engine_config(gates: Mapping[str, bool], constants: Mapping[str, Any]) -> tuple[Gates, Settings, list[str]]:
    """The engine's gates and settings for a model's gates and constants, and notes on the
    model gates that have no engine gate (the engine then behaves as if they were on)."""
    kw = {GATES[g]: bool(v) for g, v in gates.items() if g in GATES and not GATES[g].startswith("Settings.")}
    kw["automatic_lease_renewal"] = int(constants.get("MaxRenewals", 1)) > 0
    notes = [f"{g} is off in the model, but the engine has no such gate: {NO_GATE[g]}"
             for g, v in sorted(gates.items()) if g in NO_GATE and not v]
    always = [g for g, v in sorted(gates.items()) if g in NO_GATE and v and g != "ArmTimerWithSave"]
    if always:
        notes.append(f"{', '.join(always)}: no engine gate, always on here as in the model")
    lease = int(constants.get("Lease", 2))
    if lease < 2:
        raise ReplayError(f"Lease {lease}: a replay needs a lease of at least 2 ticks (renewal is one tick ahead)")
    settings = Settings(lease_ms=lease * TICK_MS, renew_interval_ms=TICK_MS, poll_interval_ms=TICK_MS,
                        max_retries=int(constants.get("MaxRetries", 3)),
                        retry_backoff_ms=int(constants.get("Backoff", 1)) * TICK_MS,
                        in_memory_execution=bool(gates.get("InMemoryStart", True)))
    if not gates.get("InMemoryStart", True) and not gates.get("ForceSignalInScheduler", True):
        notes.append("InMemoryStart off with ForceSignalInScheduler off: the engine's in_memory_execution "
                     "setting covers both, so signals go through the scheduler here")
    return Gates(**kw), settings, notes


def _plan(steps: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """Each handler run's result and duration (ms), in the order the runs start on a RUNNING
    instance: a run lasts from its RunStart to its RunEnd (forever if it never ends)."""
    plan = []
    for i, s in enumerate(steps):
        if s["action"] != "RunStart" or s["detail"].get("instance", "RUNNING") != "RUNNING":
            continue
        end = next((e for e in steps[i + 1:] if e["action"] == "RunEnd" and (e["node"], e["wf"], e["slot"])
                    == (s["node"], s["wf"], s["slot"])), None)
        if end is None:
            plan.append(("completed", 10**9))
        else:
            plan.append((end["detail"].get("result", "completed"), (end["tick"] - s["tick"]) * TICK_MS))
    return plan


def _registry(plan: list[tuple[str, int]]) -> Registry:
    """A workflow `replay` whose k-th run ends as the plan's k-th entry says."""
    runs = {"k": 0, "durations": 0}

    def duration(state: dict[str, Any]) -> int:
        k = runs["durations"]
        runs["durations"] += 1
        return plan[k][1] if k < len(plan) else 0

    def run(state: dict[str, Any], ctx: RunContext) -> Step:
        k = runs["k"]
        runs["k"] += 1
        if k < len(plan) and plan[k][0] == "failed":
            raise RuntimeError(f"replayed handler failure (run {k + 1})")
        return Complete(state, {"run": k + 1})

    return Registry(Workflow("replay", run, {"approve": lambda state, payload: {**state, "approved": True}},
                             duration_ms=duration))


class _Runner:
    """The state of one replay: the simulation, and which fiber plays which part of the spec."""

    def __init__(self, schedule: Mapping[str, Any], backends: dict[str, Backend], gates: Gates, settings: Settings) -> None:
        self.c = schedule["constants"]
        self.nodes = tuple(self.c.get("Nodes", ["n1", "n2"]))
        self.steps: list[dict[str, Any]] = list(schedule["steps"])
        self.sim = Simulation(backends[self.nodes[0]], nodes=self.nodes, seed=0, gates=gates, settings=settings,
                              workflows=_registry(_plan(self.steps)), fetch_loops=False, node_backends=backends)
        self.backend = backends[self.nodes[0]]
        self.tick = 0
        self.callers: dict[tuple[str, str, str], SimFiber] = {}  # (node, "start" | "signal", wf)
        self.handles: list[tuple[str, str, SimFiber]] = []  # every start: (node, wf, fiber)
        self.runs: dict[tuple[str, str, str], SimFiber] = {}  # (node, wf, slot)
        self.detached: set[tuple[str, str, str | None]] = set()  # leases the model let lapse
        self.terminal: dict[str, str] = {}
        self.events = 0

    # -- stepping the simulation -------------------------------------------------------------

    def now(self) -> int:
        return self.sim.clock.now_ms()

    def fiber_call(self, f: SimFiber | None, labels: tuple[str, ...], who: str) -> None:
        """Step `f` (waking it if its sleep is over) until a call in `labels` has run."""
        for _ in range(10):
            if f is None or f.done:
                raise _Blocked(f"{who} has no step pending (its fiber has ended)")
            if isinstance(f.effect, Sleep):
                if f.wake_at > self.now():
                    raise _Blocked(f"{who} sleeps until {f.wake_at} ms (now {self.now()} ms): it has nothing to do yet")
                self._step(f)
                continue
            label = f.effect.label if isinstance(f.effect, Call) else "?"
            if label not in labels:
                raise _Blocked(f"{who}'s next step is {label}, not {' or '.join(labels)}")
            self._step(f)
            return
        raise _Blocked(f"{who} keeps waking without reaching {' or '.join(labels)}")

    def _step(self, f: SimFiber) -> None:
        if not self.sim.step_where(lambda kind, what: kind == "fiber" and what is f):
            raise _Blocked(f"{f.node}'s {f.label} cannot step now (its node is paused or crashed)")

    def new_events(self) -> list[Any]:
        evs = self.backend.read_events()
        new, self.events = evs[self.events:], len(evs)
        return new

    def rows(self) -> str:
        parts = []
        for wf in self.c.get("Workflows", ["w1"]):
            inst = self.backend.read_instance(wf)
            task = self.backend.read_task(TaskKey("workflow", wf))
            i = f"{inst.status}/v{inst.version}" if inst else "-"
            t = f"{task.status}/v{task.version}@{task.run_after}" if task else "-"
            parts.append(f"{wf}: instance {i}, task {t}")
        return "; ".join(parts)


def _args(ev: Any) -> dict[str, Any]:
    a = ev.args
    return json.loads(a) if isinstance(a, str) else dict(a or {})


def _outcome(evs: list[Any], op: str) -> tuple[str | None, dict[str, Any]]:
    for ev in reversed(evs):
        if ev.op == op:
            return ev.outcome, _args(ev)
    return None, {}


def _caller_phase(f: SimFiber) -> str:
    """A start's caller as the spec's starter phase: between its writes, awaiting, polling."""
    if not f.done:
        return "created"
    if f.error is not None or not isinstance(f.value, Handle):
        return "failed"
    fut = f.value.future
    if not fut.done():
        return "awaiting"
    return "polling" if isinstance(fut.exception(), ResultUnavailable) else "done"


def _do(r: _Runner, s: dict[str, Any]) -> str:
    """Take one step on the implementation; its outcome, or `_Blocked`."""
    a, n, w, slot, d = s["action"], s["node"], s["wf"], s["slot"], s["detail"]
    if a == "Tick":
        _tick(r)
        return f"+{TICK_MS} ms"
    if a in ("OutliveLease", "EarlyExpiry"):
        r.detached.add((n, w, slot))
        return "the node stalls: its lease may lapse"
    if a in ("RetryStart", "Stutter"):
        return "-"
    if a == "Crash":
        r.sim.crash(n)
        r.callers = {k: f for k, f in r.callers.items() if k[0] != n}
        r.runs = {k: f for k, f in r.runs.items() if k[0] != n}
        return "crashed and restarted empty"
    if a in ("CallerFails", "SignalFails"):
        f = r.callers.pop((n, "start" if a == "CallerFails" else "signal", w), None)
        if f is None or f.done:
            raise _Blocked(f"no caller of {w} on {n} is between its writes")
        r.sim.cancel(f)
        return "the caller fails between its writes"
    if a == "CreateInstance":
        f = r.sim.spawn(n, r.sim.nodes[n].start(w, "replay", {}), f"start:{w}")
        r.callers[(n, "start", w)] = f
        r.handles.append((n, w, f))
        r.fiber_call(f, ("create_instance",), f"{n}'s start of {w}")
        out, _ = _outcome(r.new_events(), "create_instance")
        impl = "created" if not f.done else _caller_phase(f)
        want = "created" if d.get("phase") in ("created", "recovering") else "polling"
        if (impl == "created") != (want == "created"):
            why = ("goes on to schedule it" if impl == "created" else "returns without scheduling")
            raise _Blocked(f"the start finds the instance {out} and {why}; in the model it is {d.get('phase')}")
        return f"{out}, caller {impl}"
    if a == "ReadInstance":
        f = r.callers.get((n, "signal", w))
        if f is None or f.done:
            f = r.sim.spawn(n, r.sim.nodes[n].signal(w, "approve"), f"signal:{w}")
            r.callers[(n, "signal", w)] = f
        r.fiber_call(f, ("read_instance",), f"{n}'s signal of {w}")
        return "read"
    if a == "UpdateInstance":
        r.fiber_call(r.callers.get((n, "signal", w)), ("update_instance",), f"{n}'s signal of {w}")
        out, _ = _outcome(r.new_events(), "update_instance")
        if out != d.get("outcome"):
            raise _Blocked(f"the signal's update_instance is {out}; in the model {d.get('outcome')}")
        return str(out)
    if a in ("Schedule", "ScheduleInMemory", "AlreadyQueued"):
        return _schedule(r, s)
    if a == "Fetch":
        f = r.sim.spawn(n, r.sim.nodes[n].fetch_once(), "fetch")
        r.fiber_call(f, ("due_tasks",), f"{n}'s fetch")
        if f.done or not isinstance(f.effect, Call) or f.effect.label != "fetch":
            raise _Blocked(f"{n}'s fetch finds no due row of {w} (row: {r.rows()})")
        r.fiber_call(f, ("fetch",), f"{n}'s fetch")
        out, _ = _outcome(r.new_events(), "fetch")
        if out != "leased":
            raise _Blocked(f"{n}'s fetch of {w} leased nothing: another node won the row")
        return "leased"
    if a == "RunStart":
        return _run_start(r, s)
    if a in ("RunEnd", "Renew", "Remove", "RescheduleRetry", "MarkFailed"):
        return _run_step(r, s)
    if a == "StoreError":
        f = r.runs.pop((n, w, slot), None)
        if f is None:
            raise _Blocked(f"{n} holds no run of {w} in slot {slot}")
        r.sim.cancel(f)
        return "the finishing write fails: the run gives the task up"
    raise ReplayError(f"no replay for action {a}")


def _tick(r: _Runner) -> None:
    """Move the clock one tick, unless a live holder's lease would lapse under it while it has a
    step due (tla/Engine.tla's timing assumption: Tick waits for a bound holder)."""
    nxt = (r.tick + 1) * TICK_MS
    for (n, w, slot), f in r.runs.items():
        if f.done or (n, w, slot) in r.detached:
            continue
        task = r.backend.read_task(TaskKey("workflow", w))
        due = isinstance(f.effect, Call) or (isinstance(f.effect, Sleep) and f.wake_at <= r.now())
        if due and task is not None and task.status in ACTIVE_TASK_STATUSES and task.run_after <= nxt:
            label = f.effect.label if isinstance(f.effect, Call) else "a wake-up"
            raise _Blocked(f"{n}'s run of {w} has a step due now ({label}) and its lease ends at {task.run_after} ms: "
                           "time does not pass a lease its live holder is about to act on")
    for n in r.nodes:
        for item in r.sim.nodes[n].queue.items():
            w = item.task.task_id
            task = r.backend.read_task(TaskKey("workflow", w))
            if (n, w, None) in r.detached or task is None or task.run_after != item.task.run_after:
                continue
            if task.status in ACTIVE_TASK_STATUSES and task.run_after <= nxt:
                raise _Blocked(f"{n}'s queued copy of {w} holds the lease to {task.run_after} ms: "
                               "its taker takes it before time passes that")
    r.tick += 1
    r.sim.clock.advance(nxt - r.now())


def _schedule(r: _Runner, s: dict[str, Any]) -> str:
    a, n, w, d = s["action"], s["node"], s["wf"], s["detail"]
    who = "start" if d.get("who") == "starter" else "signal"
    f = r.callers.get((n, who, w))
    if a == "AlreadyQueued":
        if f is not None and not f.done:
            raise _Blocked(f"{n}'s {who} of {w} still has a write to make ({f.effect.label if isinstance(f.effect, Call) else '?'})")
        return "nothing written: a copy is queued here already"
    op = "schedule" if a == "Schedule" else "schedule_in_memory"
    r.fiber_call(f, (op,), f"{n}'s {who} of {w}")
    out, args = _outcome(r.new_events(), op)
    if out != d.get("outcome"):
        raise _Blocked(f"{n}'s {op} is {out}; in the model {d.get('outcome')}")
    if a == "ScheduleInMemory" and bool(args.get("queued")) != bool(d.get("queued")):
        if d.get("queued"):
            raise _Blocked(f"{n}'s {op} honoured an active lease ({out}) and queued no copy (the honour check)")
        raise _Blocked(f"{n}'s {op} queued a copy; in the model it queues none")
    phase = _caller_phase(f) if who == "start" and f is not None else None
    if phase == "polling" and d.get("phase") == "awaiting":
        raise _Blocked(f"{n}'s start queued no copy, so its future fails with ResultUnavailable and the caller "
                       "polls the store; in the model it awaits a future nobody completes")
    return f"{out}" + (f", queued {str(args.get('queued')).lower()}" if a == "ScheduleInMemory" else "")


def _run_start(r: _Runner, s: dict[str, Any]) -> str:
    n, w, slot, d = s["node"], s["wf"], s["slot"], s["detail"]
    if d.get("rerun"):
        f = r.runs.get((n, w, slot))
    else:
        before = {id(g) for g in r.sim.fibers}
        if w not in r.sim.nodes[n].queue.ids():
            last = [e for e in r.backend.read_events() if e.node == n]
            tail = f" (its last write: {last[-1].op} {last[-1].outcome} {_args(last[-1])})" if last else ""
            raise _Blocked(f"{n}'s queue holds no copy of {w} to take{tail}")
        r.sim.step_where(lambda kind, what: kind == "take" and what == n)
        f = next(g for g in r.sim.fibers if id(g) not in before and g.label == f"run:{w}")
        r.runs[(n, w, slot)] = f
    r.fiber_call(f, ("run_start",), f"{n}'s run of {w}")
    r.new_events()
    return f"started (runs of {w} at once: {r.sim.monitor.concurrent(w)})"


def _run_step(r: _Runner, s: dict[str, Any]) -> str:
    a, n, w, slot, d = s["action"], s["node"], s["wf"], s["slot"], s["detail"]
    f = r.runs.get((n, w, slot))
    op = {"RunEnd": "run_end", "Renew": "renew", "Remove": "remove",
          "RescheduleRetry": "reschedule_retry", "MarkFailed": "mark_failed"}[a]
    awaiting = [h for (m, v, h) in r.handles if m == n and v == w and _caller_phase(h) == "awaiting"]
    r.fiber_call(f, (op,), f"{n}'s run of {w}")
    if a == "RunEnd" and f is not None and not f.done and isinstance(f.effect, Call) and f.effect.label == "read_instance":
        r.fiber_call(f, ("read_instance",), f"{n}'s run of {w}")  # answering its callers from the store
    out, _ = _outcome(r.new_events(), op)
    if a == "RunEnd":
        if (out == "saved") != bool(d.get("saved")):
            raise _Blocked(f"{n}'s run_end is {out}; in the model it {'saves' if d.get('saved') else 'conflicts'}")
        answered = [h for h in awaiting if _caller_phase(h) != "awaiting"]
        if answered and d.get("answered") is False:
            raise _Blocked(f"{n}'s run answered the caller awaiting {w} on {n} from the store; in the model it "
                           "leaves it waiting")
    want = {"Renew": {"renewed": "renewed", "conflict": "conflict", "adopted": "conflict"},
            "Remove": {"removed": "removed", "rerun": "rerun", "conflict": "gone|lost"},
            "RescheduleRetry": {"ok": "rescheduled", "conflict": "conflict"},
            "MarkFailed": {"ok": "failed", "conflict": "conflict"}}.get(a, {}).get(d.get("outcome", ""))
    if want is not None and out not in want.split("|"):
        raise _Blocked(f"{n}'s {op} is {out}; in the model {d.get('outcome')}")
    if a in ("Remove", "RescheduleRetry", "MarkFailed") and f is not None and f.done:
        r.runs.pop((n, w, slot), None)
    return str(out)


def _broken(r: _Runner, prop: str | None) -> str | None:
    """The property broken now, by the engine's own monitors and rows (None: it holds)."""
    if prop == "NoOverlappingRuns" and r.sim.monitor.overlaps:
        top = max(r.sim.monitor.max_concurrent.values(), default=0)
        return f"NoOverlappingRuns: {top} runs of one workflow at once (RunMonitor)"
    if prop == "TerminalIsStable":
        for inst in r.backend.list_instances():
            was = r.terminal.get(inst.wf)
            if was is not None and inst.status != was:
                return f"TerminalIsStable: {inst.wf} was {was}, is now {inst.status}"
            if was is None and inst.terminal:
                r.terminal[inst.wf] = inst.status
    if prop == "RunningIsDriven":
        for inst in r.backend.list_instances():
            if inst.status == "RUNNING" and not _driven(r, inst.wf):
                return f"RunningIsDriven: {inst.wf} is RUNNING with no live row, no queued copy, no run and no caller about to schedule it"
    return None


def _driven(r: _Runner, w: str) -> bool:
    task = r.backend.read_task(TaskKey("workflow", w))
    if task is not None and task.status in ACTIVE_TASK_STATUSES:
        return True
    if any(w in r.sim.nodes[n].queue.ids() for n in r.nodes):
        return True
    for f in r.sim.fibers:
        if f.done:
            continue
        if f.label == f"run:{w}":
            return True
        label = f.effect.label if isinstance(f.effect, Call) else ""
        if f.label in (f"start:{w}", f"signal:{w}") and label in ("schedule", "schedule_in_memory"):
            return True
    return False


def _drain(r: _Runner, prop: str | None) -> str | None:
    """Faults stop and the nodes run on (seeded, fetch loops on): what is still undone."""
    for n in r.nodes:
        r.sim.spawn(n, r.sim.nodes[n].fetch_loop(), "fetch_loop")
    r.sim.run_until(lambda: all(i.terminal for i in r.backend.list_instances())
                    and not any(f.label.startswith(("run:", "start:", "signal:")) for f in r.sim.fibers),
                    max_steps=DRAIN_STEPS)
    if prop == "EventuallyDone":
        left = [i.wf for i in r.backend.list_instances() if not i.terminal]
        if left:
            return f"EventuallyDone: {', '.join(left)} still RUNNING after the drain ({DRAIN_STEPS} steps at most, fetch loops on)"
    if prop == "CallersAnswered":
        for n, w, f in r.handles:
            phase = _caller_phase(f)
            inst = r.backend.read_instance(w)
            if phase in ("awaiting", "created") or (phase == "polling" and not (inst and inst.terminal)):
                return f"CallersAnswered: the start of {w} on {n} is still {phase} after the drain"
    return None


LIVENESS = ("EventuallyDone", "CallersAnswered")


def replay(schedule: Mapping[str, Any], *, store: str = "memory://", workdir: Path | None = None) -> Replay:
    """Run `schedule` (from `conformance.replay.map.Schedule.to_json`) on the engine.

    `store` is `memory://` (the twin), `sqlite` (a fresh file with one connection per node) or
    any store URL `open_backend` takes.

    >>> replay({"model": "m", "property": "NoOverlappingRuns", "gates": {}, "constants": {},
    ...         "steps": [{"state": 2, "action": "FireTimer", "node": "n1", "wf": "w1", "slot": None,
    ...                    "tick": 0, "detail": {}}]}).verdict
    'unmapped'
    """
    prop = schedule.get("property")
    steps = list(schedule["steps"])
    gates, settings, notes = engine_config(schedule.get("gates", {}), schedule.get("constants", {}))
    result = Replay("held", prop, "", gates=gates.header(), notes=notes)
    for i, s in enumerate(steps, 1):
        if s["action"] in UNMAPPED:
            result.verdict, result.step = "unmapped", i
            result.reason = f"step {i} {s['action']}: {UNMAPPED[s['action']]}"
            return result
        if s["action"] == "RunEnd" and s["detail"].get("result") in ("arming", "waiting", "timer"):
            result.verdict, result.step = "unmapped", i
            result.reason = f"step {i} RunEnd: a run that sleeps on a timer; impl/engine has no timers (TimerRuns)"
            return result
    if store == "sqlite":
        workdir = workdir or Path(tempfile.mkdtemp(prefix="lp-replay-"))
        store = f"sqlite:///{workdir}/replay.db"
    nodes = tuple(schedule.get("constants", {}).get("Nodes", ["n1", "n2"]))
    backends = node_backends(store, nodes)
    try:
        r = _Runner(schedule, backends, gates, settings)
        for i, s in enumerate(steps, 1):
            name = _describe(s)
            try:
                outcome = _do(r, s)
            except _Blocked as b:
                result.verdict, result.step = "blocked", i
                result.reason = f"step {i} {name}: {b}"
                result.lines.append(Line(i, name, "BLOCKED", r.rows()))
                return result
            result.lines.append(Line(i, name, outcome, r.rows()))
            broken = _broken(r, prop)
            if broken:
                result.verdict, result.step, result.reason = "reproduced", i, f"after step {i} {name}: {broken}"
                return result
        if prop in LIVENESS:
            broken = _drain(r, prop)
            if broken:
                result.verdict, result.reason = "reproduced", f"after the schedule and the drain: {broken}"
                return result
        result.reason = f"the schedule ran to its end ({len(steps)} steps) and {prop} held"
        return result
    finally:
        first = backends[nodes[0]]
        if not store.startswith("memory"):
            first.drop_schema()
        for b in {id(b): b for b in backends.values()}.values():
            b.close()


def _describe(s: Mapping[str, Any]) -> str:
    args = ", ".join(x for x in (s.get("node"), s.get("wf"), s.get("slot")) if x)
    return f"{s['action']}({args})" if args else s["action"]
