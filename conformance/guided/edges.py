"""Edge coverage of a small model's state graph, projected onto what a trace shows (pure).

TLC dumps the state graph of a base model (`-dump dot`: one node per distinct state, labelled
with its variables, one edge per step). A trace does not show states: it shows each entity's
logged steps with their outcomes, so an edge is projected onto what a trace can show of it,
the pair (the entity's previous logged step, this step), both as `op/outcome`. A hidden step
(a tick, a pause, a guard expiring) projects onto nothing, and the pair spans it. The
projected edges of the graph are every such pair some path of the model takes; the generated
runs cover those their traces show (`count_steps` in `conformance.traces.spec_coverage`).

Which step an edge is, and its outcome, comes from the system's replay map (the one that turns
counterexamples into schedules: `projection.py`), applied to the edge's two states.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from conformance.errors import ValueSyntaxError
from conformance.output.counterexample import parse_variables
from conformance.output.values import parse_value, to_json

# What a trace shows of one step: its lines, each (entity, "op/outcome"); none for a hidden step,
# two where the implementation logs two lines for one step of the model.
Projected = tuple[tuple[str, str], ...]
StepOf = Callable[[Mapping[str, Any], Mapping[str, Any]], Projected]

_NODE = re.compile(r'^(-?\d+) \[label="(.*)"(?:,style = filled)?\];?$')
_ESCAPE = re.compile(r"\\(.)")  # a dot label's escapes: \n, \", \\
_EDGE = re.compile(r"^(-?\d+) -> (-?\d+)(?: \[.*\])?;?$")


class GraphError(ValueError):
    """The dump is not a state graph TLC wrote (the message says where)."""


@dataclass(frozen=True)
class StateGraph:
    """A model's state graph: each state's variables (plain JSON values, as in counterexamples),
    its edges, and its initial states (those TLC wrote before its first edge)."""

    states: dict[str, dict[str, Any]]
    edges: list[tuple[str, str]]
    initial: list[str]


@cache
def _value(text: str) -> Any:
    # Memoized by text: across a graph, each variable takes few distinct values.
    return to_json(parse_value(text))


def _variables(label: str) -> dict[str, Any]:
    """A dot label's state (TLC escapes quotes, backslashes and line ends in it)."""
    return parse_variables(_ESCAPE.sub(lambda m: "\n" if m.group(1) == "n" else m.group(1), label), _value)


def parse_dot(lines: Iterable[str]) -> StateGraph:
    """The state graph of TLC's `-dump dot` output.

    >>> g = parse_dot(['strict digraph DiskGraph {', '1 [label="/\\\\\\\\ x = 0",style = filled]',
    ...                '1 -> 2 [label="Next"];', '2 [label="/\\\\\\\\ x = 1"];', '2 -> 1;', '}'])
    >>> g.states, g.edges, g.initial
    ({'1': {'x': 0}, '2': {'x': 1}}, [('1', '2'), ('2', '1')], ['1'])
    """
    states: dict[str, dict[str, Any]] = {}
    edges: list[tuple[str, str]] = []
    initial: list[str] = []
    for n, line in enumerate(lines, 1):
        line = line.strip()
        m = _NODE.match(line)
        if m:
            try:
                states[m.group(1)] = _variables(m.group(2))
            except (ValueError, ValueSyntaxError) as exc:
                raise GraphError(f"line {n}: a state TLC's value syntax does not read: {exc}") from None
            if not edges:
                initial.append(m.group(1))
            continue
        m = _EDGE.match(line)
        if m:
            edges.append((m.group(1), m.group(2)))
    if not states:
        raise GraphError("no state in the dump (not TLC's -dump dot output?)")
    missing = {x for e in edges for x in e if x not in states}
    if missing:
        raise GraphError(f"{len(missing)} edge end(s) name no state of the dump (truncated?)")
    return StateGraph(states, edges, initial)


@dataclass
class EdgeCoverage:
    """The projected edges of one model's graph, and those the generated runs' traces show."""

    model: str
    projected: set[tuple[str, str]]
    shown: set[tuple[str, str]] = field(default_factory=set)
    states: int = 0
    edges: int = 0

    @property
    def covered(self) -> set[tuple[str, str]]:
        return self.projected & self.shown

    @property
    def missing(self) -> list[tuple[str, str]]:
        return sorted(self.projected - self.shown)

    @property
    def beyond(self) -> list[tuple[str, str]]:
        """Pairs the traces show that no path of the model takes (the code's own order of
        logging, say; printed, for a reader to judge)."""
        return sorted(self.shown - self.projected)

    def summary(self) -> str:
        n, c = len(self.projected), len(self.covered)
        pct = f"{100 * c / n:.1f}%" if n else "-"
        line = (f"edges ({self.model}: {self.states} states, {self.edges} edges): {c} of {n} projected edges "
                f"covered ({pct})")
        if self.missing:
            line += "; not covered: " + ", ".join(f"{a} -> {b}" for a, b in self.missing)
        if self.beyond:
            line += "; shown, not in the model: " + ", ".join(f"{a} -> {b}" for a, b in self.beyond)
        return line

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "states": self.states, "edges": self.edges, "projected": len(self.projected),
                "covered": len(self.covered), "missing": [f"{a} -> {b}" for a, b in self.missing],
                "beyond": [f"{a} -> {b}" for a, b in self.beyond]}


def edge_paths(graph: StateGraph, step_of: StepOf,
               admits: Callable[[Mapping[str, Any]], bool] | None = None) -> dict[tuple[str, str], list[str]]:
    """The projected edges of `graph` (every pair of an entity's consecutive logged steps that
    some path takes), each with a shortest path of states from an initial state that takes it
    (the behaviour a generated run follows): one breadth-first search over (state, each
    entity's last logged step), finite since both are. With `admits`, only paths through
    states it admits count (a state the trace spec rejects outright, such as two runs of one
    workflow at once, is no behaviour the code should follow).

    >>> g = StateGraph({"a": {"x": 0}, "b": {"x": 1}, "c": {"x": 2}}, [("a", "b"), ("b", "c"), ("c", "b")], ["a"])
    >>> steps = {0: (("e", "put/ok"),), 1: (), 2: (("e", "put/again"),)}
    >>> edge_paths(g, lambda p, q: steps[p["x"]])
    {('put/ok', 'put/again'): ['a', 'b', 'c', 'b'], ('put/again', 'put/again'): ['a', 'b', 'c', 'b', 'c', 'b']}
    """
    out_edges: dict[str, list[tuple[str, Projected]]] = {s: [] for s in graph.states}
    for src, dst in graph.edges:
        if admits is None or admits(graph.states[dst]):
            out_edges[src].append((dst, step_of(graph.states[src], graph.states[dst])))
    Key = tuple[str, tuple[tuple[str, str], ...]]  # a state, and each entity's last logged step
    parent: dict[Key, Key | None] = {}
    frontier: list[Key] = []
    for s in graph.initial:
        key: Key = (s, ())
        parent[key] = None
        frontier.append(key)
    found: dict[tuple[str, str], list[str]] = {}

    def path_to(key: Key) -> list[str]:
        out = []
        k: Key | None = key
        while k is not None:
            out.append(k[0])
            k = parent[k]
        return out[::-1]

    while frontier:
        nxt: list[Key] = []
        for key in frontier:
            src, last = key
            for dst, step in out_edges[src]:
                now = last
                for entity, shown in step:
                    before = dict(now).get(entity)
                    if before is not None and (before, shown) not in found:
                        found[(before, shown)] = [*path_to(key), dst]
                    now = tuple(sorted({**dict(now), entity: shown}.items()))
                child: Key = (dst, now)
                if child not in parent:
                    parent[child] = key
                    nxt.append(child)
        frontier = nxt
    return found
