"""A failing behaviour as swimlanes: one lane per node and one for the store, one row per step,
in each row only what changed. Pure: a counterexample or a rejected trace in, a `Swimlane` out;
`svg.py` draws it, `table.py` prints it in the terminal.

    step  action              n1                  n2                  store
    1     Initial predicate   seen = 0            seen = 0            x = 0
    2     Step(n1)            seen: 0 -> 1                            x: 0 -> 1
    3  X  Step(n2)                                seen: 1 -> 2        x: 1 -> 2    <- BelowCap broken

A TLC counterexample's lanes: a changed value goes to the lane of the first node key on its path
(`queue[n1][w1]` to n1, shown there as `queue[w1]`), everything else to the store. Nodes are the model's `Nodes` constant,
so this works for any spec that indexes by node, and for one that does not (a store lane only).
A rejected trace's lanes are the header's `nodes`: each event's own fields in its node's lane,
the durable state it left, diffed with the one before, in the store's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from conformance.output.counterexample import Counterexample
from conformance.output.values import FrozenDict, format_value
from conformance.traces.trace import Trace, TraceVerdict

STORE = "store"
_MISSING = object()  # a key absent on one side of a diff
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # whole (fullmatch), not `$`: a final line feed is no field name
# Trace fields every event has, shown as the row's action or not at all (seq is the row's number).
_EVENT_FRAME = ("kind", "seq", "node", "op", "outcome", "state")


@dataclass(frozen=True)
class Change:
    """One value shown in a step: where (`queue[n1][w1]`), before (None: not shown), after, and
    whether it changed in this step (highlighted) or is a first value, an unchanged one (`--full`)
    or an event's own argument."""

    path: str
    before: str | None
    after: str
    changed: bool = True

    def text(self) -> str:
        """`path = after` for a new value, `path: before -> after` for a changed one."""
        if self.before is None:
            return f"{self.path} = {self.after}"
        return f"{self.path}: {self.before} \u2192 {self.after}"


@dataclass(frozen=True)
class Row:
    """One step: its number (a state's index, a trace's seq), the action that took it, and per
    lane what changed (`cells`, in lane order; a lane with nothing is absent). `marked` is the
    step where the property broke or the first trace line no behaviour explains, `note` why."""

    number: int
    action: str
    cells: tuple[tuple[str, tuple[Change, ...]], ...]
    marked: bool = False
    note: str = ""

    def cell(self, lane: str) -> tuple[Change, ...]:
        """What changed in `lane` at this step (empty when nothing did)."""
        return dict(self.cells).get(lane, ())


@dataclass(frozen=True)
class Swimlane:
    """A behaviour as lanes and rows.

    `loop_to` is the row (0-based) a liveness counterexample's lasso goes back to, closed by
    `loop_action` (defined at `loop_location`); `stutters` that it ends by stuttering forever.
    """

    title: str
    lanes: tuple[str, ...]
    rows: tuple[Row, ...]
    loop_to: int | None = None
    loop_action: str | None = None
    stutters: bool = False
    loop_location: str | None = None  # where loop_action is defined (`Spinner.tla:7:9`)

    @property
    def marked(self) -> Row | None:
        """The marked row, if any."""
        return next((r for r in self.rows if r.marked), None)


def _key_text(key: Any) -> str:
    # A record's field reads `.field`; a function's argument `[n1]`.
    if type(key) is str and _IDENT.fullmatch(key):
        return f".{key}"
    return f"[{format_value(key)}]"


def diff_values(before: Any, after: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any, Any]]:
    """Every leaf that differs between two values, as (keys on the way, before, after).

    Records and functions are walked key by key, so that one changed slot of a big function is
    one change, not the whole function; any other value that differs is one leaf. `_MISSING` on
    one side means the key is absent there.

    >>> diff_values(FrozenDict({"n1": 1, "n2": 0}), FrozenDict({"n1": 2, "n2": 0}))
    [(('n1',), 1, 2)]
    """
    if before == after:
        return []
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        out: list[tuple[tuple[Any, ...], Any, Any]] = []
        keys = list(before) + [k for k in after if k not in before]
        for k in keys:
            out += diff_values(before.get(k, _MISSING), after.get(k, _MISSING), path + (k,))
        return out
    return [(path, before, after)]


def _show(v: Any) -> str:
    return "(absent)" if v is _MISSING else format_value(v)


def _lane_of(keys: Iterable[Any], nodes: frozenset[str]) -> str:
    return next((str(k) for k in keys if isinstance(k, str) and str(k) in nodes), STORE)


def _split(value: Any, nodes: frozenset[str]) -> list[tuple[tuple[Any, ...], Any]]:
    # A function over nodes is shown one node at a time, each part in its node's lane.
    if isinstance(value, Mapping) and any(isinstance(k, str) and str(k) in nodes for k in value):
        return [((k,), v) for k, v in value.items()]
    return [((), value)]


def changes_of(before: Mapping[str, Any] | None, after: Mapping[str, Any], nodes: frozenset[str],
               full: bool = False) -> dict[str, list[Change]]:
    """Per lane, the changes from `before` to `after` (a state's variables).

    With no `before` (a first state) every value is new, a function over nodes split into one
    entry per node. With `full`, the unchanged variables are listed too, as plain values (for
    the terminal's `--full`).
    """
    lanes: dict[str, list[Change]] = {}

    def add(keys: tuple[Any, ...], name: str, old: str | None, new: str, changed: bool = True) -> None:
        lane = _lane_of(keys, nodes)
        # In a node's lane its own key goes without saying: `queue[w1]` in n1's, not `queue[n1][w1]`.
        shown = list(keys)
        if lane != STORE:
            shown.remove(next(k for k in keys if isinstance(k, str) and str(k) == lane))
        lanes.setdefault(lane, []).append(Change(name + "".join(_key_text(k) for k in shown), old, new, changed))

    for name, value in after.items():
        diffs = [] if before is None else diff_values(before.get(name, _MISSING), value)
        for keys, old, new in diffs:
            add(keys, name, _show(old), _show(new))
        if before is None or full:
            was = None if before is None else before.get(name, _MISSING)
            for keys, v in _split(value, nodes):
                # With `full`, what did not change is listed as it is (a changed part is above).
                same = was is not None and (was.get(keys[0], _MISSING) if keys and isinstance(was, Mapping) else was) == v
                if before is None or same:
                    add(keys, name, None, _show(v), changed=False)
    return lanes


def _cells(lanes: tuple[str, ...], by_lane: Mapping[str, list[Change]]) -> tuple[tuple[str, tuple[Change, ...]], ...]:
    return tuple((lane, tuple(by_lane[lane])) for lane in lanes if by_lane.get(lane))


# Names each transition from the states on both sides; None where it cannot (the label is used).
ActionNamer = Callable[[Counterexample], dict[int, str] | None]


def counterexample_swimlane(cx: Counterexample, nodes: Iterable[str] = (), *, title: str = "",
                            note: str | None = None, namer: ActionNamer | None = None,
                            full: bool = False) -> Swimlane:
    """The swimlanes of a TLC counterexample.

    `nodes` are the node lanes (the model's `Nodes`), `note` says what broke at the last state
    (which is marked; none is without a note), `namer` may name the actions better than TLC's labels
    (`CallerStep` -> `Schedule(n1, w1)`: `conformance/replay/map.py` does so for our specs).

    >>> from conformance.output.counterexample import State
    >>> cx = Counterexample((State(1, "Initial predicate", None, {"x": 0}), State(2, "Step", None, {"x": 1})))
    >>> [r.cell("store")[0].text() for r in counterexample_swimlane(cx, note="Cap broken").rows]
    ['x = 0', 'x: 0 \u2192 1']
    """
    node_set = frozenset(str(n) for n in nodes)
    lanes = tuple(sorted(node_set)) + (STORE,)
    names = (namer(cx) if namer else None) or {}
    rows: list[Row] = []
    previous: Mapping[str, Any] | None = None
    last = len(cx.states) - 1
    for i, s in enumerate(cx.states):
        by_lane = changes_of(previous, s.variables, node_set, full=full)
        marked = i == last and note is not None
        rows.append(Row(s.index, names.get(s.index, s.action), _cells(lanes, by_lane), marked, note if marked and note else ""))
        previous = s.variables
    loop_to = None
    if cx.back_to is not None:
        loop_to = next((i for i, s in enumerate(cx.states) if s.index == cx.back_to), None)
    where = str(cx.back_location) if cx.back_location else None
    return Swimlane(title, lanes, tuple(rows), loop_to, cx.back_action, cx.stutters, where)


def _event_action(event: Mapping[str, Any]) -> str:
    op = str(event.get("op", "?"))
    return f"{op} \u2192 {event['outcome']}" if event.get("outcome") is not None else op


def trace_swimlane(trace: Trace, verdict: TraceVerdict, *, title: str = "") -> Swimlane:
    """The swimlanes of a rejected trace: its events up to and including the rejected line.

    Lanes are the header's `nodes` and the store; an event's own fields (ids, arguments, its
    time) go to its node's lane, the durable state it left (diffed with the last one) to the
    store's. The rejected line is marked with what disagrees (`verdict.diffs`).
    """
    nodes = tuple(str(n) for n in trace.header.get("nodes") or ())
    lanes = tuple(dict.fromkeys(nodes)) + (STORE,)
    rows: list[Row] = []
    state: Mapping[str, Any] | None = None
    for event in trace.events:
        seq = event.get("seq")
        node = str(event.get("node", STORE))
        lane = node if node in lanes else STORE
        by_lane: dict[str, list[Change]] = {}
        own = [Change(path, None, _trace_value(v), changed=False) for k, value in event.items() if k not in _EVENT_FRAME
               for path, v in _leaves(k, value)]
        if own:
            by_lane[lane] = own
        new_state = event.get("state")
        if isinstance(new_state, Mapping):
            first = state is None  # the first event's state: values, not changes
            for path, old, new in diff_values(state if state is not None else {}, new_state):
                name = "".join(_key_text(k) for k in path).lstrip(".")
                if isinstance(new, Mapping) and not isinstance(old, Mapping):
                    # A record that appears (a task created): one line a field, not one long line.
                    for sub, v in _leaves(name, new):
                        by_lane.setdefault(STORE, []).append(Change(sub, None, _trace_value(v), changed=not first))
                    continue
                shown = Change(name, None if first else _trace_value(old), _trace_value(new), changed=not first)
                by_lane.setdefault(STORE, []).append(shown)
            state = new_state
        marked = verdict.line is not None and seq == verdict.line
        note = ""
        if marked:
            why = [d.describe() for d in verdict.diffs]
            note = f"no behaviour explains line {seq}" + (f": {'; '.join(why)}" if why else "")
        rows.append(Row(int(seq) if isinstance(seq, int) else len(rows) + 1,
                        f"{node}: {_event_action(event)}", _cells(lanes, by_lane), marked, note))
        if marked:
            break
    return Swimlane(title, lanes, tuple(rows))


def _leaves(name: str, value: Any) -> list[tuple[str, Any]]:
    """A JSON value as (path, leaf) pairs: `args.workflow`, `args.version`; a leaf as itself."""
    if isinstance(value, Mapping) and value:
        return [pair for k, v in value.items() for pair in _leaves(f"{name}{_key_text(k)}", v)]
    return [(name, value)]


def _trace_value(v: Any) -> str:
    # Trace fields are JSON: shown as JSON, not as TLA+.
    import json

    if v is _MISSING:
        return "(absent)"
    return json.dumps(v, sort_keys=True, ensure_ascii=False)
