"""The workload of a run: which workflows start where and when, and who signals them.

A plan is data, drawn from a seed, so the simulation, the multi-process run and the benchmark
run the same kind of workload. Each workflow is an `approval`: started on one node, signalled
`approve` from a node chosen at random (often another), and some handlers outlive a lease.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable

from impl.engine.effects import Fiber, Sleep
from impl.engine.errors import UnknownWorkflow
from impl.engine.model import Settings
from impl.engine.node import Node


@dataclass(frozen=True)
class Item:
    """One workflow of a workload."""

    wf: str
    start_node: str
    signal_node: str
    start_at_ms: int
    signal_at_ms: int
    work_ms: int
    waits: bool = True  # waits for its signal; else it completes on its first fresh run
    # The thread that makes its first finishing write stalls this long before it (0: never):
    # past the lease, another node leases the row meanwhile (a stale actor meets a live one).
    stall_finish_ms: int = 0


def plan(
    n: int,
    nodes: Sequence[str],
    *,
    seed: int,
    lease_ms: int,
    spread_ms: int = 2_000,
    long_fraction: float = 0.25,
    short_work_ms: int = 0,
    prefix: str = "wf",
    waiting_fraction: float = 1.0,
    stale_fraction: float = 0.0,
    stall_ms: int = 0,
) -> list[Item]:
    """`n` workflows over `nodes`, starting within `spread_ms`; `long_fraction` of them have a
    handler that runs 1.5 leases (so it must renew), the others `short_work_ms`.

    `waiting_fraction` of them wait for their signal; the others complete on their first run
    that is not overtaken by the signal (the only kind `tla/Engine.tla` models).

    `stale_fraction` of the long handlers that wait for their signal stall `stall_ms` before
    their first finishing write (`Item.stall_finish_ms`), and their signal comes only after
    that: with `stall_ms` past a lease and a poll, the other node leases the row and runs
    the handler again (it waits again, for a long handler's time), so the stalled node's remove
    meets a live holder. Drawn from a generator of its own: the rest of the plan is the same
    whatever `stale_fraction` is.
    """
    stale_rng = random.Random(seed ^ 0x57A1E)
    rng = random.Random(seed)
    items = []
    for i in range(n):
        start = rng.randrange(spread_ms + 1)
        long = rng.random() < long_fraction
        work = lease_ms * 3 // 2 if long else short_work_ms
        # Signal early enough to land during the first run now and then (the bumped-lease path).
        signal = start + rng.randrange(max(work, lease_ms // 2) + 1)
        waits = rng.random() < waiting_fraction
        stall = stall_ms if long and waits and stale_rng.random() < stale_fraction else 0
        if stall:
            # The signal comes once the other node's run is under way: the stalled remove must
            # meet that run's lease, not a bump or a finished workflow.
            signal = max(signal, start + work + stall + lease_ms)
        items.append(
            Item(
                wf=f"{prefix}{i:05d}",
                start_node=nodes[rng.randrange(len(nodes))],
                signal_node=nodes[rng.randrange(len(nodes))],
                start_at_ms=start,
                signal_at_ms=signal,
                work_ms=work,
                waits=waits,
                stall_finish_ms=stall,
            )
        )
    return items


def stale_stall_ms(settings: Settings) -> int:
    """How long a stale finisher stalls (`plan`'s `stall_ms`): past what is left of its lease
    (at most a lease) and three polls, so that another node has leased the row by then."""
    return settings.lease_ms + 3 * settings.poll_interval_ms


def starter(node: Node, item: Item, elapsed: Callable[[], int], *, wait_result: bool = True) -> Fiber[Any]:
    """Start `item` at its time on `node`, then wait for its result (from memory or storage)."""
    delay = item.start_at_ms - elapsed()
    if delay > 0:
        yield Sleep(delay)
    state = {"work_ms": item.work_ms} if item.waits else {"work_ms": item.work_ms, "approved": True}
    handle = yield from node.start(item.wf, "approval", state)
    if not wait_result:
        return None
    return (yield from node.result(handle))


def signaller(node: Node, item: Item, elapsed: Callable[[], int], *, poll_ms: int = 50) -> Fiber[Any]:
    """Signal `approve` to `item` at its time on `node` (waiting for the instance to exist)."""
    delay = item.signal_at_ms - elapsed()
    if delay > 0:
        yield Sleep(delay)
    while True:
        try:
            return (yield from node.signal(item.wf, "approve"))
        except UnknownWorkflow:
            yield Sleep(poll_ms)  # the start has not committed its first write yet
