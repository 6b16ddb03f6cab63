"""A TLC counterexample of `tla/Engine.tla` as a schedule: one named step per transition.

TLC labels each state by the disjunct of `Next` that led to it (`CallerStep`, `WorkerStep`,
`Fault`, `Tick`), not by the action inside it nor by its parameters. You get both back by
diffing the two states: which node, workflow and slot changed, and how.

    state i --(CallerStep)--> state i+1      starter[n1][w1]: "created" -> "awaiting",
                                             queue[n1][w1]: none -> queued
                                  =>  Step(ScheduleInMemory, n1, w1, who=starter, queued=True)

Everything here is pure: a counterexample (the `states` of `leaseproof check --json`) and the
model's constants in, a `Schedule` out. The schedule is plain data (`to_json`), which an
adapter beside the implementation (`impl/engine/replay.py`) turns into calls on the real code.

>>> s0 = {"clock": 0, "starter": {"n1": {"w1": "idle"}}}
>>> s1 = {"clock": 0, "starter": {"n1": {"w1": "created"}}}
>>> [st.action for st in steps_of([_st(1, "Initial predicate", s0), _st(2, "CallerStep", s1)], {})]
['CreateInstance']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from conformance.errors import LeaseproofError


class UnreadableCounterexample(LeaseproofError):
    """A counterexample's transition matches no action of `tla/Engine.tla` (the message names it)."""


# The steps a store transaction commits (a trace op); every other action is hidden.
STORE_ACTIONS = frozenset({
    "CreateInstance", "UpdateInstance", "Schedule", "ScheduleInMemory", "Fetch", "RunStart",
    "RunEnd", "Renew", "Remove", "RescheduleRetry", "MarkFailed", "ArmTimer", "FetchTimer", "FireTimer",
})

# Gates that are guards (a calibration switches one off to show what it prevents), in the
# order they are named; the rest (CreateExistingIsNoop, ForceSignalInScheduler,
# InMemoryStart, RecoverAfterLease) choose a path and are part of the scenario.
GUARDS = ("HonourCheck", "BumpOnHonoredLease", "RenewAdoptsRerun", "RecoverStrandedStart",
          "RunEndChecksStatus", "ResultUnavailable", "AnswerFromStore", "ArmTimerWithSave",
          "SaveChecksVersion", "ContinueVersions")

_NUMBERS = ("Lease", "Backoff", "MaxRetries", "MaxRenewals", "MaxClock")
_SETS = ("Nodes", "Workflows", "Slots", "StartNodes", "SignalNodes")


@dataclass(frozen=True)
class Step:
    """One transition of the counterexample, named as the action of `tla/Engine.tla` it takes.

    `state` is the 1-based number of the state it leads to; `tick` the absolute time (ticks
    since the start: a `Tick` at MaxClock shifts the stored times instead of moving `clock`,
    and still counts here); `detail` what the diff says about it (`who` for a caller's
    schedule, `result` of a run, `outcome` of a write, `queued` for an in-memory schedule).
    """

    state: int
    action: str
    node: str | None = None
    wf: str | None = None
    slot: str | None = None
    tick: int = 0
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def hidden(self) -> bool:
        """Whether the step commits no store transaction (time, a fault, a caller's own step)."""
        return self.action not in STORE_ACTIONS

    def describe(self) -> str:
        """`RunStart(n2, w1, s1)`: the action with its parameters."""
        args = ", ".join(a for a in (self.node, self.wf, self.slot) if a)
        return f"{self.action}({args})" if args else self.action


@dataclass(frozen=True)
class Schedule:
    """A counterexample as steps, with what the replay needs of its model.

    `loop_from` is the index into `steps` where a lasso's loop begins (`None` for a finite
    counterexample); `stutters` says the behaviour ends stuttering.
    """

    model: str
    property: str | None
    constants: dict[str, Any]
    gates: dict[str, bool]
    steps: tuple[Step, ...]
    loop_from: int | None = None
    stutters: bool = False
    guards: tuple[str, ...] = GUARDS  # the gates of this spec that are guards

    @property
    def guards_off(self) -> tuple[str, ...]:
        """The guards this model switches off (`guards`), which `--guard-on` switches back on."""
        return tuple(g for g in self.guards if self.gates.get(g) is False)

    def with_guards_on(self) -> Schedule:
        """The same steps with every guard of `guards_off` on again."""
        gates = {**self.gates, **{g: True for g in self.guards_off}}
        return replace(self, gates=gates)

    def to_json(self) -> dict[str, Any]:
        """The schedule as plain data: what an implementation's adapter reads."""
        return {"model": self.model, "property": self.property, "constants": self.constants, "gates": self.gates,
                "loop_from": self.loop_from, "stutters": self.stutters,
                "steps": [asdict(s) for s in self.steps]}


def _st(index: int, action: str, variables: dict[str, Any]) -> dict[str, Any]:
    return {"index": index, "action": action, "variables": variables}


def _get(v: Mapping[str, Any], name: str, *keys: str) -> Any:
    x: Any = v.get(name)
    for k in keys:
        if not isinstance(x, Mapping):
            return None
        x = x.get(k)
    return x


def _pairs(v: Mapping[str, Any], name: str) -> list[tuple[str, str]]:
    return [(n, w) for n, per in (v.get(name) or {}).items() for w in per]


def _slots(v: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    return [(n, w, s) for n, per in (v.get("work") or {}).items() for w, slots in per.items() for s in slots]


def _phase(item: Any) -> str:
    return item.get("phase", "none") if isinstance(item, Mapping) else "none"


def _budget_used(p: Mapping[str, Any], q: Mapping[str, Any], kind: str) -> bool:
    a, b = _get(p, "budget", kind), _get(q, "budget", kind)
    return a is not None and b is not None and b < a


def _caller(p: Mapping[str, Any], q: Mapping[str, Any], gates: Mapping[str, bool], tick: int, index: int) -> Step | None:
    """The caller action of this transition, if a starter or a signaller changed."""
    for n, w in _pairs(q, "starter"):
        a, b = _get(p, "starter", n, w), _get(q, "starter", n, w)
        if a == b:
            continue
        if a == "idle":
            return Step(index, "CreateInstance", n, w, tick=tick, detail={"phase": b})
        if a == "failed" and b == "idle":
            return Step(index, "RetryStart", n, w, tick=tick)
        if a in ("created", "recovering") and b == "failed":
            return Step(index, "CallerFails", n, w, tick=tick)
        if a in ("created", "recovering"):
            return _schedule_step(p, q, gates, n, w, "starter", a, tick, index)
    for n, w in _pairs(q, "signaller"):
        a, b = _get(p, "signaller", n, w), _get(q, "signaller", n, w)
        if a == b:
            continue
        if a == "idle" and b == "read":
            return Step(index, "ReadInstance", n, w, tick=tick)
        if a == "read":
            outcome = {"updated": "updated", "idle": "conflict", "polling": "terminal"}.get(b, b)
            return Step(index, "UpdateInstance", n, w, tick=tick, detail={"outcome": outcome})
        if a == "updated" and b == "failed":
            return Step(index, "SignalFails", n, w, tick=tick)
        if a == "updated":
            return _schedule_step(p, q, gates, n, w, "signaller", a, tick, index)
    return None


def _schedule_step(p: Mapping[str, Any], q: Mapping[str, Any], gates: Mapping[str, bool], n: str, w: str,
                   who: str, phase: str, tick: int, index: int) -> Step:
    """A caller's second write: straight to the scheduler, through the queue, or nothing (queued already)."""
    if who == "starter":
        in_memory = gates.get("InMemoryStart", False) and (phase == "created" or not gates.get("RecoverAfterLease", True))
    else:
        in_memory = not gates.get("ForceSignalInScheduler", True)
    detail: dict[str, Any] = {"who": who}
    if not in_memory:
        return Step(index, "Schedule", n, w, tick=tick, detail=detail | {"outcome": _write_outcome(p, q, w)})
    if _phase(_get(p, "queue", n, w)) != "none":
        return Step(index, "AlreadyQueued", n, w, tick=tick, detail=detail)
    queued = _phase(_get(q, "queue", n, w)) == "queued"
    return Step(index, "ScheduleInMemory", n, w, tick=tick,
                detail=detail | {"outcome": _write_outcome(p, q, w), "queued": queued, "phase": _get(q, who, n, w)})


def _write_outcome(p: Mapping[str, Any], q: Mapping[str, Any], w: str) -> str:
    a, b = _get(p, "task", w) or {}, _get(q, "task", w) or {}
    if a.get("status") == "ABSENT":
        return "inserted"
    if a == b:
        return "honoured"
    if b.get("version") == a.get("version", 0) + 1 and b.get("run_after") == a.get("run_after") \
            and b.get("status") == a.get("status"):
        return "bumped"
    return "overwritten"


def _fault(p: Mapping[str, Any], q: Mapping[str, Any], tick: int, index: int) -> Step | None:
    """The fault of this transition, if a fault budget went down."""
    if _budget_used(p, q, "crash"):
        for n in q.get("queue") or {}:
            held = any(_phase(_get(p, "queue", n, w)) != "none" for w in q["queue"][n]) or any(
                _phase(_get(p, "work", n, w, s)) != "none" for (m, w, s) in _slots(p) if m == n
            ) or any(n in (_get(p, "timer", w, "heldBy") or ()) for w in (p.get("timer") or {}))
            cleared = q["queue"][n] != p["queue"][n] or q.get("work", {}).get(n) != p.get("work", {}).get(n) \
                or q.get("timer") != p.get("timer")
            if held and cleared:
                return Step(index, "Crash", n, tick=tick)
    if _budget_used(p, q, "outlive"):
        for n, w, s in _slots(q):
            if _get(p, "work", n, w, s, "bound") and not _get(q, "work", n, w, s, "bound"):
                return Step(index, "OutliveLease", n, w, s, tick=tick)
    if _budget_used(p, q, "expiry"):
        for n, w in _pairs(q, "queue"):
            if _get(p, "queue", n, w, "bound") and not _get(q, "queue", n, w, "bound"):
                return Step(index, "EarlyExpiry", n, w, tick=tick)
    if _budget_used(p, q, "storeError"):
        for n, w, s in _slots(q):
            if _phase(_get(p, "work", n, w, s)) == "ended" and _phase(_get(q, "work", n, w, s)) == "none":
                return Step(index, "StoreError", n, w, s, tick=tick)
    return None


def _worker(p: Mapping[str, Any], q: Mapping[str, Any], constants: Mapping[str, Any], tick: int, index: int) -> Step | None:
    """The worker action of this transition (fetch, a run's steps, renewals, timers)."""
    for n, w in _pairs(q, "queue"):
        a, b = _get(p, "queue", n, w), _get(q, "queue", n, w)
        if _phase(a) == "none" and _phase(b) == "queued" and b.get("source") == "store":
            return Step(index, "Fetch", n, w, tick=tick)
    for n, w, s in _slots(q):
        a, b = _get(p, "work", n, w, s), _get(q, "work", n, w, s)
        if a == b:
            continue
        pa, pb = _phase(a), _phase(b)
        if pb == "running" and pa in ("none", "rerun"):
            return Step(index, "RunStart", n, w, s, tick=tick,
                        detail={"rerun": pa == "rerun", "instance": _get(p, "instance", w, "status")})
        if pa == "running" and pb == "running":
            return Step(index, "Renew", n, w, s, tick=tick, detail={"outcome": _renew_outcome(a, b)})
        if pa == "running" and pb in ("ended", "rerun"):
            result = b.get("result") if pb == "ended" else "completed"
            return Step(index, "RunEnd", n, w, s, tick=tick,
                        detail={"result": result, "saved": _get(p, "instance", w) != _get(q, "instance", w),
                                "rerun": pb == "rerun", "answered": _answered(p, q, n, w)})
        if pa == "ended" and a.get("result") == "arming":
            return Step(index, "ArmTimer", n, w, s, tick=tick)
        if pa == "ended" and a.get("result") in ("completed", "waiting"):
            outcome = "removed" if _get(q, "task", w, "status") == "ABSENT" and _get(p, "task", w, "status") != "ABSENT" \
                else ("rerun" if pb == "rerun" else "conflict")
            return Step(index, "Remove", n, w, s, tick=tick, detail={"outcome": outcome})
        if pa == "ended" and a.get("result") == "failed":
            action = "RescheduleRetry" if a.get("retry", 0) < constants.get("MaxRetries", 0) else "MarkFailed"
            return Step(index, action, n, w, s, tick=tick,
                        detail={"outcome": "conflict" if _get(p, "task", w) == _get(q, "task", w) else "ok"})
    for w in q.get("timer") or {}:
        a, b = _get(p, "timer", w), _get(q, "timer", w)
        if a != b:
            action = "FireTimer" if b.get("entry") == "fired" and a.get("entry") != "fired" else "FetchTimer"
            node = next(iter(sorted(set(b.get("heldBy") or ()) | set(a.get("heldBy") or ()))), None)
            return Step(index, action, node, w, tick=tick)
    return None


def _answered(p: Mapping[str, Any], q: Mapping[str, Any], n: str, w: str) -> bool | None:
    """Whether a run answered n's callers of w that awaited their future (None: none awaited)."""
    waiting = [r for r in ("starter", "signaller") if _get(p, r, n, w) == "awaiting"]
    if not waiting:
        return None
    return any(_get(q, r, n, w) != "awaiting" for r in waiting)


def _renew_outcome(a: Mapping[str, Any], b: Mapping[str, Any]) -> str:
    if b.get("owed") and not a.get("owed"):
        return "adopted"
    if b.get("lease") != a.get("lease") and b.get("version") == a.get("version", 0) + 1:
        return "renewed"
    return "conflict"


def _is_tick(p: Mapping[str, Any], q: Mapping[str, Any], label: str, max_clock: int | None) -> bool:
    if label in ("Tick", "TickPastWindow"):
        return True
    if isinstance(p.get("clock"), int) and isinstance(q.get("clock"), int) and q["clock"] == p["clock"] + 1:
        return True
    return _is_shift(p, q, max_clock)


def _is_shift(p: Mapping[str, Any], q: Mapping[str, Any], max_clock: int | None) -> bool:
    """Tick at MaxClock, told from the states alone (a path of the state graph has no action
    labels): the clock stays, every stored time moves down one (Engine.tla's Shift), and no
    caller, instance or budget changes."""
    if max_clock is None or p.get("clock") != max_clock or q.get("clock") != max_clock or p == q:
        return False
    tasks_p, tasks_q = p.get("task") or {}, q.get("task") or {}
    if not tasks_p or tasks_p.keys() != tasks_q.keys():
        return False
    shifted = all(tasks_q[w] == {**tasks_p[w], "run_after": max(tasks_p[w]["run_after"] - 1, 0)} for w in tasks_p)
    kept = ("instance", "starter", "signaller", "budget", "sigRead")
    return shifted and all(q.get(k) == p.get(k) for k in kept)


def steps_of(states: Sequence[Mapping[str, Any]], constants: Mapping[str, Any],
             gates: Mapping[str, bool] | None = None) -> list[Step]:
    """The steps between consecutive `states` (each `{"index", "action", "variables"}`)."""
    gates = gates or {k: v for k, v in constants.items() if isinstance(v, bool)}
    steps: list[Step] = []
    tick = 0
    for prev, cur in zip(states, states[1:]):
        p, q, label, index = prev["variables"], cur["variables"], cur["action"], cur["index"]
        if _is_tick(p, q, label, constants.get("MaxClock")):
            tick += 1
            name = "TickPastWindow" if label == "TickPastWindow" or (
                q.get("clock") == p.get("clock", 0) + 1 and p.get("clock") == constants.get("MaxClock")) else "Tick"
            steps.append(Step(index, name, tick=tick))
            continue
        step = _fault(p, q, tick, index) or _caller(p, q, gates, tick, index) or _worker(p, q, constants, tick, index)
        if step is None:
            if p == q:
                steps.append(Step(index, "Stutter", tick=tick))
                continue
            changed = sorted(k for k in q if q.get(k) != p.get(k))
            raise UnreadableCounterexample(
                f"state {index} ({label}): no action of tla/Engine.tla explains the change of {', '.join(changed)}")
        steps.append(step)
    return steps


def model_constants(constants: Mapping[str, Any]) -> dict[str, Any]:
    """The numbers and sets of a model's constants that a replay needs (sets as sorted lists)."""
    out: dict[str, Any] = {}
    for k in _NUMBERS:
        if k in constants:
            out[k] = constants[k]
    for k in _SETS:
        if k in constants:
            out[k] = sorted(constants[k])
    return out


def schedule_of(model: str, verdict: Mapping[str, Any], constants: Mapping[str, Any]) -> Schedule:
    """The schedule of a `check --json` verdict (`verdict["counterexample"]`) and its model's constants.

    `constants` maps each constant and gate to its value (a set as a list or tuple of names).
    """
    cx = verdict.get("counterexample")
    if not cx or not cx.get("states"):
        raise UnreadableCounterexample(f"{model}: the verdict has no counterexample to replay ({verdict.get('kind')})")
    gates = {k: v for k, v in constants.items() if isinstance(v, bool)}
    numbers = model_constants(constants)
    steps = steps_of(cx["states"], numbers, gates)
    loop_from = None
    if cx.get("back_to") is not None:
        # back_to is a state number; the loop's first step leads out of that state.
        loop_from = next((i for i, s in enumerate(steps) if s.state > int(cx["back_to"])), len(steps))
    return Schedule(model, verdict.get("property"), numbers, gates, tuple(steps), loop_from, bool(cx.get("stutters")))
