"""A whole simulated run: a seeded workload on simulated nodes, with optional faults.

`simulate(seed=...)` plans a workload (`workload.py`), runs it in a `Simulation` until every
workflow is terminal (or the step budget ends), injecting crashes and pauses drawn from the
same seed (and, with `stale_fraction`, a thread's stall before its first finishing write:
`faults.Stalls`), and returns the run with its traces. The same arguments give the same traces,
byte for byte.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any
from dataclasses import dataclass, field

from impl.engine.backend import Backend, MemoryBackend
from impl.engine.faults import Stalls
from impl.engine.export import RunFigures, by_workflow, figures, render_workflow
from impl.engine.model import Gates, Settings
from impl.engine.sim import Simulation
from impl.engine.workload import Item, plan, restarter, signaller, stale_stall_ms, starter, take_stall_ms


@dataclass(frozen=True)
class Faults:
    """Per-step chances of a node crash (it restarts empty) and of a pause (< `max_pause_ms`).

    Keep `max_pause_ms` under `lease_ms - renew_interval_ms`: a longer pause breaks the
    model's `NoLongPauses` assumption, and then overlapping runs are expected, not a bug.
    """

    crash: float = 0.0
    pause: float = 0.0
    max_pause_ms: int = 300


@dataclass
class SimRun:
    """A finished simulated run."""

    sim: Simulation
    items: list[Item]
    completed: int
    crashes: int
    pauses: int
    traces: dict[str, str] = field(default_factory=dict)
    dead_lettered: int = 0  # flaky workflows that ended FAILED (out of retries)
    drained: bool = False  # nothing left to do (Simulation.quiescent): the traces say so

    @property
    def figures(self) -> RunFigures:
        """Counts read from the trace."""
        return figures(self.sim.backend.read_events())


def simulate(
    *,
    seed: int,
    workflows: int = 10,
    nodes: tuple[str, ...] = ("n1", "n2"),
    gates: Gates | None = None,
    settings: Settings | None = None,
    backend: Backend | None = None,
    node_backends: Mapping[str, Backend] | None = None,
    faults: Faults = Faults(),
    long_fraction: float = 0.3,
    waiting_fraction: float = 0.5,
    stale_fraction: float = 0.0,
    fail_fraction: float = 0.0,
    grid_ms: int = 0,
    take_stall_fraction: float = 0.0,
    stranded_fraction: float = 0.0,
    max_steps: int = 200_000,
    decisions: Any = None,
) -> SimRun:
    """Run `workflows` approvals on `nodes` under `seed`; see the module docstring.

    `node_backends` gives each node its own connection to one store (as separate processes
    would have); `backend` is then one of them, used for reads. `fail_fraction`, `grid_ms`,
    `take_stall_fraction` and `stranded_fraction` shape the plan (`workload.plan`): failing
    handlers, times on the poll grid, a start's copy held queued for two leases, and a start
    stalled between its writes while the other node recovers it.
    """
    settings = settings or Settings()
    items = plan(workflows, list(nodes), seed=seed, lease_ms=settings.lease_ms, spread_ms=2 * settings.lease_ms, long_fraction=long_fraction,
                 waiting_fraction=waiting_fraction, stale_fraction=stale_fraction, stall_ms=stale_stall_ms(settings),
                 fail_fraction=fail_fraction, max_retries=settings.max_retries, grid_ms=grid_ms,
                 take_stall_fraction=take_stall_fraction, take_stall_ms=take_stall_ms(settings), stranded_fraction=stranded_fraction)
    stalls = _stalls(items, settings) if stale_fraction > 0 or stranded_fraction > 0 else None
    sim = Simulation(
        backend or MemoryBackend(), nodes=nodes, seed=seed, gates=gates, settings=settings, decisions=decisions, stalls=stalls,
        node_backends=node_backends, take_stalls={i.wf: i.stall_take_ms for i in items if i.stall_take_ms},
    )
    fault_rng = random.Random(seed ^ 0x5EED)

    def elapsed() -> int:
        return sim.clock.now_ms()

    for item in items:
        sim.spawn(item.start_node, starter(sim.nodes[item.start_node], item, elapsed, wait_result=False), f"start:{item.wf}")
        if item.restart_node:
            sim.spawn(item.restart_node, restarter(sim.nodes[item.restart_node], item, elapsed), f"restart:{item.wf}")
        if not item.fail_times:  # a flaky workflow has no signal
            sim.spawn(item.signal_node, signaller(sim.nodes[item.signal_node], item, elapsed, poll_ms=settings.poll_interval_ms), f"signal:{item.wf}")
    wanted = {i.wf for i in items}
    crashes = pauses = 0

    def done() -> bool:
        return wanted <= {i.wf for i in sim.backend.list_instances() if i.terminal}

    steps = 0
    for steps in range(max_steps):
        if done():
            break
        r = fault_rng.random()
        if r < faults.crash:
            sim.crash(nodes[fault_rng.randrange(len(nodes))])
            crashes += 1
        elif r < faults.crash + faults.pause:
            node = nodes[fault_rng.randrange(len(nodes))]
            ms = fault_rng.randrange(1, faults.max_pause_ms + 1)
            # NoLongPauses: pauses back to back would add up to one long pause, which loses any
            # lease; a node pauses again only a lease after its last pause ended.
            if sim.paused_until[node] + settings.lease_ms <= sim.clock.now_ms():
                sim.pause(node, ms)
                pauses += 1
        if not sim.step():
            break
    # Faults stop; the run goes on until nothing is left to do (the last finishing writes, the
    # callers' answers, a late signal's schedule), so that each trace may end drained: where
    # TraceEngine requires the work done (every caller answered, no signal left unscheduled).
    # A run that never finished its workflows may still have drained (a signal that updated the
    # instance and returned without scheduling it leaves nothing to do): its traces then end
    # where TraceEngine requires the work done, and the checker names what was left.
    if done():
        for _ in range(max_steps - steps):
            if sim.quiescent() or not sim.step():
                break
    drained = sim.quiescent()
    traces = {
        wf: render_workflow(evs, sim.gates, sim.settings, nodes, f"sim-seed{seed}/{wf}", drained)
        for wf, evs in by_workflow(sim.backend.read_events()).items()
    }
    completed = sum(1 for i in sim.backend.list_instances() if i.status == "COMPLETED")
    flaky = {i.wf for i in items if i.fail_times}  # only these may end FAILED: an approval never fails
    dead = sum(1 for i in sim.backend.list_instances() if i.status == "FAILED" and i.wf in flaky)
    return SimRun(sim, items, completed, crashes, pauses, traces, dead_lettered=dead, drained=drained)


def _stalls(items: list[Item], settings: Settings) -> Stalls:
    """The planned stalls of calls: a finishing write (a remove, or a failing workflow's retry or
    dead letter: the one its last failing delivery makes) or the second write of a start."""
    plan: dict[str, int] = {}
    ops: dict[str, tuple[str, ...]] = {}
    for i in items:
        if i.stall_start_ms:
            plan[i.wf], ops[i.wf] = i.stall_start_ms, ("schedule_in_memory",)
        elif i.stall_finish_ms and i.fail_times:
            last = "mark_failed" if i.fail_times >= settings.max_retries else "reschedule_retry"
            plan[i.wf], ops[i.wf] = i.stall_finish_ms, (last,)
        elif i.stall_finish_ms:
            plan[i.wf] = i.stall_finish_ms
    return Stalls(plan, ops)
