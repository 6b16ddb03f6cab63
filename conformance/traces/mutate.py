"""Mutation operators: small corruptions of an accepted trace that the checker must reject.

Pure. Each operator makes at most one mutant per trace (per field, for the field operators),
at an event near the middle, and keeps the mutant well formed (`seq` renumbered, the end count
right), so that it is the spec, not the linter, that must reject it. A mutant identical to its
trace (two equal events swapped, say) is not a mutant: it is listed as excluded, with why.

| operator    | what changes                                                     |
|-------------|------------------------------------------------------------------|
| version     | a version field in an event's state, +1                          |
| status      | a status field, to another value of its vocabulary               |
| drop        | a middle event that changes the state is removed                 |
| swap        | two adjacent events that change one entity's state trade places  |
| duplicate   | a middle event that changes the state is committed twice         |
| node        | such an event, of an op done by a node, is given to another node |
| lease_time  | a lease time in an event's state moves by `lease_shift` ms       |
| fault       | a fault line the trace's acceptance needed is taken out (a       |
|             | window's start with its end): what it excused has no excuse left |

Lines that log no state (fault lines, a consumer's stop) change no entity's state: the
structural operators pass them by. The `fault` operator aims at them instead, and only at the
fault lines the acceptance named (`TraceVerdict.excused`): a fault line that excused nothing
may be taken out of a valid trace and leave a valid trace.

A system file may declare, per operator and op, mutants that are valid behaviours by
construction (`mutations.equivalent`, with why). Those are still made and checked: one the spec
rejects counts as rejected; one it accepts is excluded, listed with the declared reason, never
dropped quietly (`conformance/traces/selftest.py`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from conformance.traces.system import System, lookup
from conformance.traces.trace import Trace

OPERATORS = ("version", "status", "drop", "swap", "duplicate", "node", "lease_time", "fault")
DEFAULT_LEASE_SHIFT = 1


@dataclass(frozen=True)
class Mutant:
    """A corrupted copy of a trace, with the operator and what it changed."""

    trace: Trace
    operator: str
    change: str
    original: str
    ops: tuple[str, ...] = ()  # the ops of the events it changed, moved or copied
    next_op: str | None = None  # drop, duplicate, node: the op of the entity's next event after it
    gap_ms: int | None = None  # drop, duplicate: ms since the entity's previous event (None: none)
    outcomes: tuple[str, ...] = ()  # the outcomes of the events it changed, moved or copied


@dataclass(frozen=True)
class Excluded:
    """A mutation left out, with why: not made (its result would equal the trace, or no event
    fits the operator), or made, accepted, and declared a valid behaviour by its system file."""

    original: str
    operator: str
    why: str
    declared: bool = False


def _renumber(events: list[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    return tuple({**e, "seq": i} for i, e in enumerate(events, start=1))


def _middle_first(n: int) -> list[int]:
    """Event indices ordered from the middle outwards, so mutants hit the middle of a trace."""
    mid = n // 2
    order = sorted(range(n), key=lambda i: (abs(i - mid), i))
    return order


def _set(event: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(event)
    node = out
    parts = path.split(".")
    for p in parts[:-1]:
        node = node[p]
    node[parts[-1]] = value
    return out


def _get(event: dict[str, Any], path: str) -> Any:
    try:
        return lookup(event, path)
    except (KeyError, TypeError):
        return None


def _mutant(trace: Trace, events: list[dict[str, Any]], operator: str, change: str, *targets: dict[str, Any],
            next_op: str | None = None, gap_ms: int | None = None) -> Mutant:
    source = f"{trace.source}#{operator}:{change}"
    ops = tuple(dict.fromkeys(str(t.get("op")) for t in targets))
    outcomes = tuple(dict.fromkeys(str(t.get("outcome")) for t in targets))
    return Mutant(Trace(source, trace.header, _renumber(events)), operator, change, trace.source, ops, next_op, gap_ms,
                  outcomes)


def _gap(ev: list[dict[str, Any]], i: int, entity: str | None) -> int | None:
    """How many ms event i came after the previous event of its entity, or None: what a step
    dropped or repeated there moves in the next idle read (a real server's reads jitter by its
    clock slack)."""
    key = ev[i].get(entity) if entity else None
    prev = next((e for e in reversed(ev[:i]) if (e.get(entity) if entity else None) == key and e.get("state")), None)
    if prev is None or not isinstance(prev.get("now"), int) or not isinstance(ev[i].get("now"), int):
        return None
    return int(ev[i]["now"]) - int(prev["now"])


def _next_op(ev: list[dict[str, Any]], i: int, entity: str | None) -> str | None:
    """The op of the first event after event i that acts on its entity, or None."""
    key = ev[i].get(entity) if entity else None
    return next((str(e["op"]) for e in ev[i + 1 :] if (e.get(entity) if entity else None) == key), None)


def _field_mutants(trace: Trace, system: System) -> list[Mutant]:
    out = []
    ev = list(trace.events)
    m = system.mutations
    for path in m.get("version", ()):
        for i in _middle_first(len(ev)):
            v = _get(ev[i], path)
            if isinstance(v, int) and not isinstance(v, bool):
                out.append(_mutant(trace, ev[:i] + [_set(ev[i], path, v + 1)] + ev[i + 1 :], "version", f"event {i + 1} {path} {v}->{v + 1}", ev[i]))
                break
    for path, vocab in m.get("status", {}).items():
        for i in _middle_first(len(ev)):
            v = _get(ev[i], path)
            if isinstance(v, str) and v in vocab:
                new = vocab[(vocab.index(v) + 1) % len(vocab)]
                out.append(_mutant(trace, ev[:i] + [_set(ev[i], path, new)] + ev[i + 1 :], "status", f"event {i + 1} {path} {v}->{new}", ev[i]))
                break
    shift = m.get("lease_shift", DEFAULT_LEASE_SHIFT)
    for path in m.get("lease_time", ()):
        for i in _middle_first(len(ev)):
            v = _get(ev[i], path)
            if isinstance(v, int) and not isinstance(v, bool):
                out.append(_mutant(trace, ev[:i] + [_set(ev[i], path, v + shift)] + ev[i + 1 :], "lease_time", f"event {i + 1} {path} +{shift}", ev[i]))
                break
    return out


def _body(e: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in e.items() if k != "seq"}


def _facet(e: dict[str, Any], state_of: dict[str, str]) -> tuple[Any, ...]:
    """Which state an event logs: the names of its `state` fields and, for a field that logs
    another thing than the entity (the system's `state_of`: a command's delivery logs its
    stream entry), the name of that thing."""
    state = e.get("state")
    names = tuple(sorted(state)) if isinstance(state, dict) else ()
    return names + tuple(e.get(state_of[f]) for f in names if f in state_of)


def _changes_state(events: list[dict[str, Any]], entity: str | None, state_of: dict[str, str] | None = None) -> list[bool]:
    """For each event: does it change the logged state it shows (against the last event that
    showed that state), and is it not repeated as is by the entity's next event? (Once or
    twice, a repeated step leaves the same state.)"""
    last: dict[Any, Any] = {}
    out = []
    for e in events:
        key = (e.get(entity) if entity else None, _facet(e, state_of or {}))
        out.append(bool(e.get("state")) and e.get("state") != last.get(key))  # a line with no state changes none
        last[key] = e.get("state")
    following: dict[Any, dict[str, Any]] = {}
    for i in range(len(events) - 1, -1, -1):
        key = events[i].get(entity) if entity else None
        if key in following and following[key] == _body(events[i]):
            out[i] = False
        following[key] = _body(events[i])
    return out


def _node_mutant(trace: Trace, ev: list[dict[str, Any]], targets: list[int], system: System) -> tuple[Mutant | None, str]:
    """The node operator's mutant, at the first target done by a node; else None and why.

    Ops in the system's `mutations.node_free_ops` are actions the spec takes for no node (a
    client's offer or cancel): whoever logs them, the spec explains them alike, so the operator
    aims past them rather than make a mutant that no spec could reject.
    """
    nodes = list(trace.header.get("nodes", ()))
    if len(nodes) < 2:
        return None, "the trace has a single node"
    free = set(system.mutations.get("node_free_ops", ()))
    bound = [i for i in targets if ev[i]["op"] not in free and ev[i].get("node") in nodes]
    if not bound:
        return None, f"every event that changes the state is of an op the spec takes for no node ({', '.join(sorted(free))})"
    i = bound[0]
    other = nodes[(nodes.index(ev[i]["node"]) + 1) % len(nodes)]
    return _mutant(trace, ev[:i] + [{**ev[i], "node": other}] + ev[i + 1 :], "node",
                   f"event {i + 1} ({ev[i]['op']}) by {other} instead of {ev[i]['node']}", ev[i],
                   next_op=_next_op(ev, i, system.entity)), ""


def mutants(trace: Trace, system: System) -> tuple[list[Mutant], list[Excluded]]:
    """Every mutant of `trace` under `system`'s operators, and the mutations excluded (with why).

    The structural operators aim at events that change their entity's state (the entity is the
    system's `entity` field: a workflow, an entry, a command). An event that changes nothing
    may be one the spec allows to happen any number of times (a start that finds its workflow
    already created); and events of different entities are independent in the specs, so
    swapping them is a valid behaviour by construction; and a step repeated as is (a renewal
    twice in one millisecond) leaves the same state once or three times. All are left out, and
    said.
    """
    ev = list(trace.events)
    n = len(ev)
    made = _field_mutants(trace, system)
    excluded: list[Excluded] = []
    changing = _changes_state(ev, system.entity, system.mutations.get("state_of"))
    targets = [i for i in _middle_first(n) if changing[i]]
    what = system.entity or "trace"
    if not targets:
        for op in ("drop", "duplicate", "node"):
            excluded.append(Excluded(trace.source, op, "no event changes the logged state"))
    else:
        i = targets[0]
        # Dropping the last event leaves a prefix, which a trace spec accepts by construction.
        inner = [j for j in targets if j < n - 1]
        if inner:
            j = inner[0]
            made.append(_mutant(trace, ev[:j] + ev[j + 1 :], "drop", f"event {j + 1} ({ev[j]['op']}) dropped", ev[j],
                                next_op=_next_op(ev, j, system.entity), gap_ms=_gap(ev, j, system.entity)))
        else:
            excluded.append(Excluded(trace.source, "drop", "only the last event changes the state; without it the trace is a prefix"))
        made.append(_mutant(trace, ev[: i + 1] + [ev[i]] + ev[i + 1 :], "duplicate", f"event {i + 1} ({ev[i]['op']}) twice", ev[i],
                            next_op=_next_op(ev, i, system.entity), gap_ms=_gap(ev, i, system.entity)))
        made_node, why = _node_mutant(trace, ev, targets, system)
        if made_node is not None:
            made.append(made_node)
        else:
            excluded.append(Excluded(trace.source, "node", why))
    pair = next((i for i in _middle_first(n - 1) if n >= 2 and changing[i] and changing[i + 1]
                 and (system.entity is None or ev[i].get(system.entity) == ev[i + 1].get(system.entity))
                 and _body(ev[i]) != _body(ev[i + 1])), None)
    if pair is None:
        excluded.append(Excluded(trace.source, "swap", f"no two adjacent events of one {what} both change its state"))
    else:
        made.append(_mutant(trace, ev[:pair] + [ev[pair + 1], ev[pair]] + ev[pair + 2 :], "swap", f"events {pair + 1} and {pair + 2} swapped",
                            ev[pair], ev[pair + 1]))
    kept = []
    for m in made:
        if m.trace.events == trace.events:
            excluded.append(Excluded(trace.source, m.operator, f"{m.change} leaves the trace unchanged"))
        else:
            kept.append(m)
    return kept, excluded


def fault_mutants(trace: Trace, excused: tuple[int, ...], faults: frozenset[str]) -> list[Mutant]:
    """Where an acceptance of `trace` needed fault lines (`excused`: their `seq`), the trace
    with every fault line taken out (each line whose op is one of the system's `faults`, window
    ends too): a mutant the checker must reject, since what those lines excused has no excuse
    left. All of them at once: two lines may excuse the same step (a stall window, and the lapse
    its node saw in it), and the acceptance names one."""
    ev = list(trace.events)
    gone = [k for k, e in enumerate(ev) if e.get("op") in faults]
    named = [k for k, e in enumerate(ev) if e.get("seq") in excused]
    if not excused or not named or not gone:
        return []
    first = ev[named[0]]
    return [_mutant(trace, [x for k, x in enumerate(ev) if k not in set(gone)], "fault",
                    f"every fault line taken out ({len(gone)}; the acceptance named {len(named)}, the first "
                    f"event {named[0] + 1}, {first['op']} {first.get('outcome')} by {first['node']})", first)]
