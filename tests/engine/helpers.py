"""Small builders shared by the engine tests."""

from __future__ import annotations

from impl.clock import VirtualClock
from impl.engine.backend import Backend
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
    """The recorded events as (node, op, outcome)."""
    return [(e.node, e.op, e.outcome) for e in backend.read_events()]
