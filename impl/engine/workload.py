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
    # Runs as the `flaky` workflow, whose handler raises on its deliveries up to this count
    # (0: an approval that never fails): a retry per failed delivery, a dead letter once the
    # task's retry_count reaches max_retries. Such a workflow has no signal.
    fail_times: int = 0
    # The start node's taker stalls this long once the start's copy is queued (0: never): past
    # a lease, the copy waits queued while the row is due (its node's own fetch loop must leave
    # it alone; another node may run the workflow to its end before the copy runs).
    stall_take_ms: int = 0
    # The start stalls this long between its two writes (0: never), and `restart_node` starts
    # the workflow again at `restart_at_ms`, meanwhile: it finds the start stranded (an
    # instance, no row) and recovers it with a row due a lease later (scheduleAfterLease).
    stall_start_ms: int = 0
    restart_node: str = ""
    restart_at_ms: int = 0


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
    fail_fraction: float = 0.0,
    max_retries: int = 3,
    grid_ms: int = 0,
    take_stall_fraction: float = 0.0,
    take_stall_ms: int = 0,
    stranded_fraction: float = 0.0,
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

    `fail_fraction` of the workflows are `flaky` instead (`Item.fail_times`, 1 to
    `max_retries`: some are retried and complete, some are dead-lettered); with
    `stale_fraction`, a long one stalls before its first finishing write (a retry or dead
    letter then meets another node's lease). `grid_ms` puts every start and signal on a
    multiple of it (the fetch loops' poll interval): writes then meet at lease boundaries (a
    fetch in the millisecond a lease ends, a schedule in the one a lease was taken: half the
    signals come in their start's own millisecond, where it wrote its backstop lease). Both draw
    from generators of their own, so the plan is otherwise the same whatever they are.

    `take_stall_fraction` of the short workflows that never fail have their start node's taker
    stall `take_stall_ms` once the start's copy is queued (`Item.stall_take_ms`); `stranded_fraction` of the others have
    their start stall `stall_ms` between its two writes while another node starts them again
    half a lease later (`Item.stall_start_ms`). Each from a generator of its own, too.
    """
    stale_rng = random.Random(seed ^ 0x57A1E)
    fail_rng = random.Random(seed ^ 0xFA11)
    take_rng = random.Random(seed ^ 0x7A4E)
    grid_rng = random.Random(seed ^ 0x6A1D)
    strand_rng = random.Random(seed ^ 0x57BA)
    rng = random.Random(seed)
    items = []
    for i in range(n):
        start = rng.randrange(spread_ms + 1)
        long = rng.random() < long_fraction
        work = lease_ms * 3 // 2 if long else short_work_ms
        # Signal early enough to land during the first run now and then (the bumped-lease path).
        signal = start + rng.randrange(max(work, lease_ms // 2) + 1)
        waits = rng.random() < waiting_fraction
        fails = fail_rng.randint(1, max_retries) if fail_fraction > 0 and fail_rng.random() < fail_fraction else 0
        if grid_ms > 1:
            # Rounded after the draws, so that the generator's sequence is unchanged.
            start, signal = start - start % grid_ms, signal - signal % grid_ms
            if grid_rng.random() < 0.5:
                # In the start's own millisecond: the signal's schedule may meet the backstop
                # lease the start just wrote (run_after exactly a lease from now).
                signal = start
        stall = stall_ms if long and (waits or fails) and stale_rng.random() < stale_fraction else 0
        if stall and not fails:
            # The signal comes once the other node's run is under way: the stalled remove must
            # meet that run's lease, not a bump or a finished workflow.
            signal = max(signal, start + work + stall + lease_ms)
        # Only a short handler that never fails: the other node's run is over long before the
        # copy is taken, so the late copy never runs beside a live run (an overlap that a stall
        # past the lease makes possible, as a pause past it does: not the bug this looks for).
        stall_take = (take_stall_ms if take_stall_fraction > 0 and take_rng.random() < take_stall_fraction
                      and not long and not fails else 0)
        stranded = (not stall and not stall_take and stranded_fraction > 0
                    and strand_rng.random() < stranded_fraction)
        start_node = nodes[rng.randrange(len(nodes))]
        # The other node (the next in the list) starts it again, while the first start stalls.
        restart_node = nodes[(nodes.index(start_node) + 1) % len(nodes)] if stranded else ""
        if stranded:
            # The signal waits for the recovered row's run: an earlier one would schedule the
            # workflow itself, and the start would not be stranded when the restart comes.
            signal = max(signal, start + stall_ms + lease_ms)
        items.append(
            Item(
                wf=f"{prefix}{i:05d}",
                start_node=start_node,
                signal_node=nodes[rng.randrange(len(nodes))],
                start_at_ms=start,
                signal_at_ms=signal,
                work_ms=work,
                waits=waits,
                stall_finish_ms=stall,
                fail_times=fails,
                stall_take_ms=stall_take,
                stall_start_ms=stall_ms if stranded else 0,
                restart_node=restart_node,
                restart_at_ms=start + lease_ms // 2 if stranded else 0,
            )
        )
    return items


def take_stall_ms(settings: Settings) -> int:
    """How long a taker stalls with a start's copy queued (`plan`'s `take_stall_ms`): two
    leases, so that the copy's lease ends, another node leases the row and finishes its short
    run, and only then is the copy taken."""
    return 2 * settings.lease_ms


def stale_stall_ms(settings: Settings) -> int:
    """How long a stale finisher stalls (`plan`'s `stall_ms`): past what is left of its lease
    (at most a lease) and three polls, so that another node has leased the row by then."""
    return settings.lease_ms + 3 * settings.poll_interval_ms


def starter(node: Node, item: Item, elapsed: Callable[[], int], *, wait_result: bool = True) -> Fiber[Any]:
    """Start `item` at its time on `node`, then wait for its result (from memory or storage)."""
    delay = item.start_at_ms - elapsed()
    if delay > 0:
        yield Sleep(delay)
    if item.fail_times:
        handle = yield from node.start(item.wf, "flaky", {"work_ms": item.work_ms, "fail_times": item.fail_times})
    else:
        state = {"work_ms": item.work_ms} if item.waits else {"work_ms": item.work_ms, "approved": True}
        handle = yield from node.start(item.wf, "approval", state)
    if not wait_result:
        return None
    return (yield from node.result(handle))


def restarter(node: Node, item: Item, elapsed: Callable[[], int]) -> Fiber[Any]:
    """Start `item` again on `node` at its `restart_at_ms` (a second caller of the same start)."""
    delay = item.restart_at_ms - elapsed()
    if delay > 0:
        yield Sleep(delay)
    handle = yield from node.start(item.wf, "approval", {"work_ms": item.work_ms})
    return handle.wf


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
