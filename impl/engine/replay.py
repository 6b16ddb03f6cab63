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
The steps themselves are `replay_steps.py`; this module configures the engine from the model's
gates (`GATES`; `NO_GATE` names the model gates the engine has no switch for) and gives the verdict.
"""

from __future__ import annotations

import tempfile
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from impl.engine import decide
from impl.engine.effects import Call
from impl.engine.errors import ReplayError
from impl.engine.export import write_traces
from impl.engine.fencing import stale_write
from impl.engine.model import ACTIVE_TASK_STATUSES, Gates, Instance, Settings, TaskKey
from impl.engine.replay_steps import TICK_MS, Blocked, Runner, caller_phase, take_step
from impl.engine.urls import node_backends
from impl.replay import Line, Replay

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
    "ResultUnavailable": "a start that queued no copy always fails its future with ResultUnavailable (node.py)",
    "AnswerFromStore": "a run whose save conflicts always answers its node's callers from the store (worker.py)",
    "ArmTimerWithSave": "impl/engine has no timers",
    "SaveChecksVersion": ("a run's save compares the version it read both in decide_run_end and in the UPDATE's "
                          "WHERE (store.py run_end): no swapped decision switches it off"),
}



def _saves_over_version_only(inst: Instance | None, expected_version: int) -> bool:
    return inst is not None and inst.version == expected_version


def _inserts_at_version_one(row: Any, request: Any, now: int, lease_ms: int, *, bump: bool, fence: int = 0) -> Any:
    return decide.decide_schedule(row, request, now, lease_ms, bump=bump, fence=0)


# Model gates with no engine gate that a swapped pure decision (`Store(decisions=...)`, as the
# mutants of `mutants.py` do) switches off: the decision, its replacement, what it does.
SWAPS: dict[str, tuple[str, Callable[..., Any], str]] = {
    "RunEndChecksStatus": ("decide_run_end", _saves_over_version_only,
                           "run_end saves over the version it read, whatever the instance's status"),
    "ContinueVersions": ("decide_schedule", _inserts_at_version_one,
                         "a row inserted again starts at version 1, forgetting the removed row's"),
}
UNMAPPED: dict[str, str] = {
    "ArmTimer": "impl/engine has no timers (TimerRuns)",
    "FetchTimer": "impl/engine has no timers (TimerRuns)",
    "FireTimer": "impl/engine has no timers (TimerRuns)",
    "TickPastWindow": "the clock leaving the model's window is a model-checking device: no clock of the engine has one",
}


def decisions_for(gates: Mapping[str, bool]) -> tuple[Any, list[str]]:
    """The store's pure decisions for a model's gates (None: the engine's own), with notes:
    a model gate of `SWAPS` that is off is switched off by swapping its decision."""
    off = {g: SWAPS[g] for g, v in sorted(gates.items()) if g in SWAPS and not v}
    if not off:
        return None, []
    names = {n: getattr(decide, n) for n in dir(decide) if not n.startswith("_")}
    names.update({name: fn for name, fn, _ in off.values()})
    notes = [f"{g} is off in the model; the engine has no gate for it: its decision {name} is swapped ({what})"
             for g, (name, _, what) in off.items()]
    return types.SimpleNamespace(**names), notes


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


def _broken(r: Runner, prop: str | None) -> str | None:
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
    if prop == "LeaseFenced":
        stale = stale_write(r.backend.read_events())
        if stale:
            return f"LeaseFenced: {stale}"
    if prop == "RunningIsDriven":
        for inst in r.backend.list_instances():
            if inst.status == "RUNNING" and not _driven(r, inst.wf):
                return f"RunningIsDriven: {inst.wf} is RUNNING with no live row, no queued copy, no run and no caller about to schedule it"
    return None


# The finishing writes of a run whose save is done (worker.py run_task, _retry_or_fail).
FINISHING = ("remove", "reschedule_retry", "mark_failed")


def _driven(r: Runner, w: str) -> bool:
    task = r.backend.read_task(TaskKey("workflow", w))
    if task is not None and task.status in ACTIVE_TASK_STATUSES:
        return True
    if any(w in r.sim.nodes[n].queue.ids() for n in r.nodes):
        return True
    for f in r.sim.fibers:
        if f.done:
            continue
        label = f.effect.label if isinstance(f.effect, Call) else ""
        # A run drives the workflow until its save, or while it will run again; one whose save
        # is done and that is about to finish (Engine.tla's phase "ended") drives nothing.
        if f.label == f"run:{w}" and label not in FINISHING:
            return True
        if f.label in (f"start:{w}", f"signal:{w}") and label in ("schedule", "schedule_in_memory"):
            return True
    return False


def _drain(r: Runner, prop: str | None) -> str | None:
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
            phase = caller_phase(f)
            inst = r.backend.read_instance(w)
            if phase in ("awaiting", "created") or (phase == "polling" and not (inst and inst.terminal)):
                return f"CallersAnswered: the start of {w} on {n} is still {phase} after the drain"
    return None


LIVENESS = ("EventuallyDone", "CallersAnswered")


def replay(schedule: Mapping[str, Any], *, store: str = "memory://", workdir: Path | None = None,
           prefix: str | None = None, trace_dir: Path | None = None) -> Replay:
    """Run `schedule` (from `conformance.replay.map.Schedule.to_json`) on the engine.

    `store` is `memory://` (the twin), `sqlite` (a fresh file with one connection per node) or
    any store URL `open_backend` takes (MariaDB: its tables under `prefix`, dropped afterwards).
    With `trace_dir`, the steps the store committed are written there as traces (one per
    workflow), however the replay ended: a held schedule's traces end where it ends (not
    drained: the schedule may end anywhere); a blocked one's go on with the nodes drained from
    the block, so that the trace shows what the code did instead of the model's step.

    >>> replay({"model": "m", "property": "NoOverlappingRuns", "gates": {}, "constants": {},
    ...         "steps": [{"state": 2, "action": "FireTimer", "node": "n1", "wf": "w1", "slot": None,
    ...                    "tick": 0, "detail": {}}]}).verdict
    'unmapped'
    """
    prop = schedule.get("property")
    steps = list(schedule["steps"])
    gates, settings, notes = engine_config(schedule.get("gates", {}), schedule.get("constants", {}))
    decisions, swapped = decisions_for(schedule.get("gates", {}))
    notes = swapped + notes
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
    scratch = None
    if store == "sqlite":
        if workdir is None:
            scratch = tempfile.TemporaryDirectory(prefix="lp-replay-")
            workdir = Path(scratch.name)
        store = f"sqlite:///{workdir}/replay.db"
    nodes = tuple(schedule.get("constants", {}).get("Nodes", ["n1", "n2"]))
    backends = node_backends(store, nodes, prefix)
    try:
        r = Runner(schedule, backends, gates, settings, decisions)
        for i, s in enumerate(steps, 1):
            name = _describe(s)
            try:
                outcome = take_step(r, s)
            except Blocked as b:
                result.verdict, result.step = "blocked", i
                result.reason = f"step {i} {name}: {b}"
                result.lines.append(Line(i, name, "BLOCKED", r.rows()))
                # The trace goes on past the block: what the code does instead is what a trace
                # check can reject (a run that stopped renewing shows as time past its lease).
                _drain(r, None)
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
        if trace_dir is not None:
            trace_dir.mkdir(parents=True, exist_ok=True)
            write_traces(first.read_events(), trace_dir, gates=gates, settings=settings, nodes=list(nodes),
                         run=str(schedule.get("model") or "replay"))
        if not store.startswith("memory"):
            first.drop_schema()
        for b in {id(b): b for b in backends.values()}.values():
            b.close()
        if scratch is not None:
            scratch.cleanup()


def _describe(s: Mapping[str, Any]) -> str:
    args = ", ".join(x for x in (s.get("node"), s.get("wf"), s.get("slot")) if x)
    return f"{s['action']}({args})" if args else s["action"]
