"""Small builders shared by the engine tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from impl.clock import VirtualClock
from impl.engine.backend import Backend
from impl.engine.faults import LINE_OPS
from impl.engine.model import Gates, Settings
from impl.engine.monitor import RunMonitor
from impl.engine.node import Node
from impl.engine.store import Store

LEASE = 1_000


def two_nodes(backend: Backend, gates: Gates | None = None) -> tuple[VirtualClock, Node, Node]:
    """Two nodes sharing one store and one run monitor, on a virtual clock."""
    gates = gates or Gates()
    clock = VirtualClock(100_000)
    settings = Settings(lease_ms=LEASE, renew_interval_ms=LEASE // 3)
    store = Store(backend, lease_ms=LEASE, bump=gates.bump_task_version_on_honored_lease)
    monitor = RunMonitor()
    n1 = Node("n1", store, clock, gates=gates, settings=settings, monitor=monitor)
    n2 = Node("n2", store, clock, gates=gates, settings=settings, monitor=monitor)
    return clock, n1, n2


def ops(backend: Backend) -> list[tuple[str, str, str]]:
    """The recorded store steps as (node, op, outcome) (not the fault and answer lines)."""
    return [(e.node, e.op, e.outcome) for e in backend.read_events() if e.op not in LINE_OPS]


def lines(backend: Backend) -> list[tuple[str, str, str]]:
    """The recorded fault and answer lines as (node, op, outcome)."""
    return [(e.node, e.op, e.outcome) for e in backend.read_events() if e.op in LINE_OPS]


def fault_lines(backend: Backend, wf: str) -> dict[str, int]:
    """How many fault lines of each kind `wf`'s trace has, counting a window once (its start)."""
    out: dict[str, int] = {}
    for e in backend.read_events():
        if e.wf == wf and e.op in LINE_OPS and e.op != "answer" and e.outcome != "end":
            out[e.op] = out.get(e.op, 0) + 1
    return out


def edited(text: str, header: Callable[[dict], Any] | None = None, event: Callable[[dict], Any] | None = None,
           drop: Callable[[dict], bool] | None = None) -> str:
    """`text` with `header(h)` applied to its header and `event(e)` to each event (in place),
    the events `drop(e)` accepts taken out, and the rest numbered again."""
    out, seq = [], 0
    for raw in text.splitlines():
        line = json.loads(raw)
        if line["kind"] == "header" and header:
            header(line)
        if line["kind"] == "event":
            if drop and drop(line):
                continue
            if event:
                event(line)
            seq += 1
            line["seq"] = seq
        if line["kind"] == "end":
            line["count"] = seq
        out.append(json.dumps(line, sort_keys=True))
    return "\n".join(out) + "\n"
