"""The third path to the double run: a start stalls between its two writes for longer than a
lease while another start recovers it (seed 000; models start_race*)."""

from __future__ import annotations

import pytest

from impl.engine.backend import Backend
from impl.engine.effects import Sleep
from impl.engine.model import Gates, Settings
from impl.engine.sim import Simulation

from .helpers import LEASE, ops


def stalled_start(backend: Backend, gates: Gates, seed: int = 0) -> Simulation:
    sim = Simulation(backend, seed=seed, gates=gates, settings=Settings(lease_ms=LEASE, renew_interval_ms=LEASE // 3))
    n1, n2 = sim.nodes["n1"], sim.nodes["n2"]
    sim.spawn("n1", n1.start("wf", "approval", {"approved": True, "work_ms": 2 * LEASE}), "start:n1")
    assert sim.run_until(lambda: ops(backend)[-1:] == [("n1", "create_instance", "created")])
    sim.pause("n1", 2 * LEASE)  # stalls between its two writes, longer than a lease

    def recover():
        yield Sleep(LEASE + 1)
        yield from n2.start("wf", "approval", {"approved": True, "work_ms": 2 * LEASE})

    sim.spawn("n2", recover(), "start:n2")
    sim.run_until(lambda: backend.read_instance("wf").status == "COMPLETED", max_steps=50_000)
    sim.run_until(lambda: not any(f.label.startswith("run:") for f in sim.fibers), max_steps=50_000)
    return sim


@pytest.mark.parametrize("after_lease", [True, False], ids=["after-lease", "in-memory"])
def test_a_stalled_start_recovered_by_another_runs_once_at_a_time(backend: Backend, after_lease: bool) -> None:
    sim = stalled_start(backend, Gates(recover_after_lease=after_lease))
    assert backend.read_instance("wf").status == "COMPLETED"
    assert sim.monitor.overlaps == 0
    recovered = ("n2", "schedule", "inserted") if after_lease else ("n2", "schedule_in_memory", "inserted")
    assert recovered in ops(backend)
    assert ("n1", "schedule_in_memory", "bumped") in ops(backend)  # the stalled write honoured it


def test_without_the_honour_check_the_stalled_start_runs_a_second_copy(backend: Backend) -> None:
    # start_race_unguarded: recovery in memory and the copy queued on an honoured lease.
    sim = stalled_start(backend, Gates(recover_after_lease=False, honour_check=False))
    assert sim.monitor.max_concurrent["wf"] == 2
