"""The steps of a replay (`replay.py`): each action of tla/Engine.tla as calls on the engine.

A `Runner` holds one replay's simulation and which fiber plays which part of the spec (a
start's caller, a signal's, the run in a worker slot). `take_step` makes one schedule step
happen, checks it did what the spec says (an outcome, a copy queued or not, a caller answered
or not) and raises `Blocked`, saying why, when the engine cannot take it or takes it otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from impl.engine.backend import Backend
from impl.engine.effects import Call, Sleep
from impl.engine.errors import ReplayError, ResultUnavailable
from impl.engine.model import ACTIVE_TASK_STATUSES, Gates, Settings, TaskKey
from impl.engine.node import Handle
from impl.engine.sim import SimFiber, Simulation
from impl.engine.workflows import Complete, Registry, RunContext, Step, Workflow

TICK_MS = 500  # one tick of the models (their renew interval) in virtual milliseconds


class Blocked(Exception):
    """The implementation cannot take a step as the schedule has it (the message says why)."""


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
            continue
        # A renewal in the tick the run ends needs the handler to outlast it: one ms more.
        key = (s["node"], s["wf"], s["slot"])
        renews_last = any(r["action"] == "Renew" and (r["node"], r["wf"], r["slot"]) == key and r["tick"] == end["tick"]
                          and s["state"] < r["state"] < end["state"] for r in steps)
        plan.append((end["detail"].get("result", "completed"), (end["tick"] - s["tick"]) * TICK_MS + int(renews_last)))
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


class Runner:
    """The state of one replay: the simulation, and which fiber plays which part of the spec."""

    def __init__(self, schedule: Mapping[str, Any], backends: dict[str, Backend], gates: Gates, settings: Settings,
                 decisions: Any = None) -> None:
        self.c = schedule["constants"]
        self.nodes = tuple(self.c.get("Nodes", ["n1", "n2"]))
        self.steps: list[dict[str, Any]] = list(schedule["steps"])
        self.sim = Simulation(backends[self.nodes[0]], nodes=self.nodes, seed=0, gates=gates, settings=settings,
                              workflows=_registry(_plan(self.steps)), fetch_loops=False, node_backends=backends,
                              decisions=decisions)
        self.backend = backends[self.nodes[0]]
        self.tick = 0
        self.callers: dict[tuple[str, str, str], SimFiber] = {}  # (node, "start" | "signal", wf)
        self.handles: list[tuple[str, str, SimFiber]] = []  # every start: (node, wf, fiber)
        self.runs: dict[tuple[str, str, str], SimFiber] = {}  # (node, wf, slot)
        self.detached: set[tuple[str, str, str | None]] = set()  # leases the model let lapse
        self.windows: set[tuple[str, str, str | None]] = set()  # stall windows logged and not yet ended
        self.terminal: dict[str, str] = {}
        self.events = 0

    # -- stepping the simulation -------------------------------------------------------------

    def now(self) -> int:
        return self.sim.clock.now_ms()

    def fiber_call(self, f: SimFiber | None, labels: tuple[str, ...], who: str) -> None:
        """Step `f` (waking it if its sleep is over) until a call in `labels` has run."""
        for _ in range(10):
            if f is None or f.done:
                raise Blocked(f"{who} has no step pending (its fiber has ended)")
            if isinstance(f.effect, Sleep):
                if self.now() < f.wake_at < (self.tick + 1) * TICK_MS:
                    self.sim.clock.advance(f.wake_at - self.now())  # later within this tick
                if f.wake_at > self.now():
                    raise Blocked(f"{who} sleeps until {f.wake_at} ms (now {self.now()} ms): it has nothing to do yet")
                self._step(f)
                continue
            label = f.effect.label if isinstance(f.effect, Call) else "?"
            if label not in labels:
                raise Blocked(f"{who}'s next step is {label}, not {' or '.join(labels)}")
            self._step(f)
            return
        raise Blocked(f"{who} keeps waking without reaching {' or '.join(labels)}")

    def _step(self, f: SimFiber) -> None:
        if not self.sim.step_where(lambda kind, what: kind == "fiber" and what is f):
            raise Blocked(f"{f.node}'s {f.label} cannot step now (its node is paused or crashed)")

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


def _outcome(evs: list[Any], op: str, wf: str) -> tuple[str | None, dict[str, Any]]:
    """The outcome and arguments of the last `op` event of `wf` among `evs` (None: no such event)."""
    for ev in reversed(evs):
        if ev.op == op and ev.wf == wf:
            return ev.outcome, _args(ev)
    return None, {}


def caller_phase(f: SimFiber) -> str:
    """A start's caller as the spec's starter phase: between its writes, awaiting, polling."""
    if not f.done:
        return "created"
    if f.error is not None or not isinstance(f.value, Handle):
        return "failed"
    fut = f.value.future
    if not fut.done():
        return "awaiting"
    return "polling" if isinstance(fut.exception(), ResultUnavailable) else "done"


def take_step(r: Runner, s: dict[str, Any]) -> str:
    """Take one step on the implementation; its outcome, or `Blocked`."""
    a, n, w, slot, d = s["action"], s["node"], s["wf"], s["slot"], s["detail"]
    if a == "Tick":
        _tick(r)
        return f"+{TICK_MS} ms"
    if a in ("OutliveLease", "EarlyExpiry"):
        # The holder (its run, or the taker of its queued copy) is held up: the window is logged
        # as an injector logs it (faults.py `stall`), so that the lease lapsing under it is
        # excused where another node takes the row, before the holder steps again and logs
        # its own `lapse` line.
        r.detached.add((n, w, slot))
        r.sim.nodes[n].store.line(n, r.now(), w, "stall", "start")
        r.windows.add((n, w, slot))
        r.new_events()
        return "the node stalls (a stall window opens): its lease may lapse"
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
            raise Blocked(f"no caller of {w} on {n} is between its writes")
        r.sim.cancel(f)
        return "the caller fails between its writes"
    if a == "CreateInstance":
        f = r.sim.spawn(n, r.sim.nodes[n].start(w, "replay", {}), f"start:{w}")
        r.callers[(n, "start", w)] = f
        r.handles.append((n, w, f))
        r.fiber_call(f, ("create_instance",), f"{n}'s start of {w}")
        out, _ = _outcome(r.new_events(), "create_instance", w)
        impl = "created" if not f.done else caller_phase(f)
        want = "created" if d.get("phase") in ("created", "recovering") else "polling"
        if (impl == "created") != (want == "created"):
            why = ("goes on to schedule it (a RUNNING instance with no live row: the stranded-start recovery)"
                   if impl == "created" and out == "exists" else
                   "goes on to schedule it" if impl == "created" else "returns without scheduling")
            raise Blocked(f"the start finds the instance {out} and {why}; in the model it is {d.get('phase')}")
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
        out, _ = _outcome(r.new_events(), "update_instance", w)
        if out != d.get("outcome"):
            raise Blocked(f"the signal's update_instance is {out}; in the model {d.get('outcome')}")
        return str(out)
    if a in ("Schedule", "ScheduleInMemory", "AlreadyQueued"):
        return _schedule(r, s)
    if a == "Fetch":
        f = r.sim.spawn(n, r.sim.nodes[n].fetch_once(), "fetch")
        r.fiber_call(f, ("due_tasks",), f"{n}'s fetch")
        if f.done or not isinstance(f.effect, Call) or f.effect.label != "fetch":
            raise Blocked(f"{n}'s fetch finds no due row of {w} (row: {r.rows()})")
        r.fiber_call(f, ("fetch",), f"{n}'s fetch")
        evs = r.new_events()
        if not f.done or any(e.wf != w for e in evs):
            raise Blocked(f"{n}'s fetch leases more due rows than {w}'s: the model's Fetch takes one row, "
                          "the engine's every due row")
        out, _ = _outcome(evs, "fetch", w)
        if out != "leased":
            raise Blocked(f"{n}'s fetch of {w} leased nothing: another node won the row")
        return "leased"
    if a == "RunStart":
        return _run_start(r, s)
    if a in ("RunEnd", "Renew", "Remove", "RescheduleRetry", "MarkFailed"):
        return _run_step(r, s)
    if a == "StoreError":
        f = r.runs.pop((n, w, slot), None)
        if f is None:
            raise Blocked(f"{n} holds no run of {w} in slot {slot}")
        r.sim.cancel(f)
        return "the finishing write fails: the run gives the task up"
    raise ReplayError(f"no replay for action {a}")


def _tick(r: Runner) -> None:
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
            raise Blocked(f"{n}'s run of {w} has a step due now ({label}) and its lease ends at {task.run_after} ms: "
                           "time does not pass a lease its live holder is about to act on")
    for n in r.nodes:
        for item in r.sim.nodes[n].queue.items():
            w = item.task.task_id
            task = r.backend.read_task(TaskKey("workflow", w))
            if (n, w, None) in r.detached or task is None or task.run_after != item.task.run_after:
                continue
            if task.status in ACTIVE_TASK_STATUSES and task.run_after <= nxt:
                raise Blocked(f"{n}'s queued copy of {w} holds the lease to {task.run_after} ms: "
                               "its taker takes it before time passes that")
    r.tick += 1
    r.sim.clock.advance(nxt - r.now())


def _schedule(r: Runner, s: dict[str, Any]) -> str:
    a, n, w, d = s["action"], s["node"], s["wf"], s["detail"]
    who = "start" if d.get("who") == "starter" else "signal"
    f = r.callers.get((n, who, w))
    if a == "AlreadyQueued":
        if f is not None and not f.done:
            raise Blocked(f"{n}'s {who} of {w} still has a write to make ({f.effect.label if isinstance(f.effect, Call) else '?'})")
        return "nothing written: a copy is queued here already"
    op = "schedule" if a == "Schedule" else "schedule_in_memory"
    r.fiber_call(f, (op,), f"{n}'s {who} of {w}")
    out, args = _outcome(r.new_events(), op, w)
    if out == "bumped" and d.get("outcome") == "honoured":
        raise Blocked(f"{n}'s {op} honoured the active lease and bumped the row's version (the bump on an honoured "
                      "lease: its holder's remove will find the rerun recorded); in the model it leaves the row as it is")
    if out != d.get("outcome"):
        raise Blocked(f"{n}'s {op} is {out}; in the model {d.get('outcome')}")
    if a == "ScheduleInMemory" and bool(args.get("queued")) != bool(d.get("queued")):
        if d.get("queued"):
            raise Blocked(f"{n}'s {op} honoured an active lease ({out}) and queued no copy (the honour check)")
        raise Blocked(f"{n}'s {op} queued a copy; in the model it queues none")
    phase = caller_phase(f) if who == "start" and f is not None else None
    if phase == "polling" and d.get("phase") == "awaiting":
        raise Blocked(f"{n}'s start queued no copy, so its future fails with ResultUnavailable and the caller "
                       "polls the store; in the model it awaits a future nobody completes")
    return f"{out}" + (f", queued {str(args.get('queued')).lower()}" if a == "ScheduleInMemory" else "")


def _run_start(r: Runner, s: dict[str, Any]) -> str:
    n, w, slot, d = s["node"], s["wf"], s["slot"], s["detail"]
    _end_window(r, n, w, slot if d.get("rerun") else None)
    if d.get("rerun"):
        f = r.runs.get((n, w, slot))
    else:
        before = {id(g) for g in r.sim.fibers}
        if w not in r.sim.nodes[n].queue.ids():
            last = [e for e in r.backend.read_events() if e.node == n]
            tail = f" (its last write: {last[-1].op} {last[-1].outcome} {_args(last[-1])})" if last else ""
            raise Blocked(f"{n}'s queue holds no copy of {w} to take{tail}")
        r.sim.step_where(lambda kind, what: kind == "take" and what == n)
        f = next(g for g in r.sim.fibers if id(g) not in before and g.label == f"run:{w}")
        r.runs[(n, w, slot)] = f
    r.fiber_call(f, ("run_start",), f"{n}'s run of {w}")
    r.new_events()
    return f"started (runs of {w} at once: {r.sim.monitor.concurrent(w)})"


def _end_window(r: Runner, n: str, w: str, slot: str | None) -> bool:
    """The held-up holder steps again: its stall window ends (logged before the step). Whether
    there was one."""
    if (n, w, slot) not in r.windows:
        return False
    r.windows.discard((n, w, slot))
    r.sim.nodes[n].store.line(n, r.now(), w, "stall", "end")
    r.new_events()
    return True


def _reopen_window(r: Runner, n: str, w: str, slot: str) -> None:
    """A run whose lease the model let lapse steps and is held up again: Engine.tla keeps its
    lease unbound until a renewal takes it back or the run finishes."""
    r.sim.nodes[n].store.line(n, r.now(), w, "stall", "start")
    r.windows.add((n, w, slot))
    r.new_events()


def _run_step(r: Runner, s: dict[str, Any]) -> str:
    a, n, w, slot, d = s["action"], s["node"], s["wf"], s["slot"], s["detail"]
    held_up = _end_window(r, n, w, slot)
    f = r.runs.get((n, w, slot))
    op = {"RunEnd": "run_end", "Renew": "renew", "Remove": "remove",
          "RescheduleRetry": "reschedule_retry", "MarkFailed": "mark_failed"}[a]
    awaiting = [h for (m, v, h) in r.handles if m == n and v == w and caller_phase(h) == "awaiting"]
    inst = r.backend.read_instance(w)
    if a == "Renew" and f is not None and isinstance(f.effect, Call) and f.effect.label == "run_end" \
            and inst is not None and inst.terminal:
        return "no renewal: a run of a finished workflow has no handler to keep a lease for"
    r.fiber_call(f, (op,), f"{n}'s run of {w}")
    if a == "RunEnd" and f is not None and not f.done and isinstance(f.effect, Call) and f.effect.label == "read_instance":
        r.fiber_call(f, ("read_instance",), f"{n}'s run of {w}")  # answering its callers from the store
    out, _ = _outcome(r.new_events(), op, w)
    if a == "RunEnd":
        if (out == "saved") != bool(d.get("saved")):
            raise Blocked(f"{n}'s run_end is {out}; in the model it {'saves' if d.get('saved') else 'conflicts'}")
        answered = [h for h in awaiting if caller_phase(h) != "awaiting"]
        if answered and d.get("answered") is False:
            raise Blocked(f"{n}'s run answered the caller awaiting {w} on {n} from the store; in the model it "
                           "leaves it waiting")
    want = {"Renew": {"renewed": "renewed", "conflict": "conflict", "adopted": "conflict"},
            "Remove": {"removed": "removed", "rerun": "rerun", "conflict": "gone|lost"},
            "RescheduleRetry": {"ok": "rescheduled", "conflict": "conflict"},
            "MarkFailed": {"ok": "failed", "conflict": "conflict"}}.get(a, {}).get(d.get("outcome", ""))
    if want is not None and out not in want.split("|"):
        raise Blocked(f"{n}'s {op} is {out}; in the model {d.get('outcome')}")
    if a in ("Remove", "RescheduleRetry", "MarkFailed") and f is not None and f.done:
        r.runs.pop((n, w, slot), None)
    if held_up and (a == "RunEnd" or (a == "Renew" and out != "renewed") or (a == "Remove" and out == "rerun")):
        _reopen_window(r, n, w, slot)
    return str(out)


