"""Hypothesis explores the interleavings of two nodes sharing one store.

The machine drives a `Simulation`: Hypothesis chooses which node starts or signals which
workflow, which pending step runs next, when time passes, and when a node crashes or pauses
(briefly: `NoLongPauses`). The invariants are named as in `tla/Engine.tla`. A machine with the
seed's fix switched off must fail: that is how we know the invariant can see the bug.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from impl.engine.backend import MemoryBackend
from impl.engine.model import Gates, Settings
from impl.engine.sim import Simulation

LEASE = 1_000
NODES = ("n1", "n2")
WFS = ("w1", "w2")


class EngineMachine(RuleBasedStateMachine):
    """Two nodes, two workflows, one store; Hypothesis picks every step."""

    gates = Gates()

    def __init__(self) -> None:
        super().__init__()
        self.sim = Simulation(
            MemoryBackend(),
            nodes=NODES,
            seed=0,
            gates=self.gates,
            settings=Settings(lease_ms=LEASE, renew_interval_ms=LEASE // 3, poll_interval_ms=100),
        )
        self.terminal: dict[str, str] = {}
        self.started: set[tuple[str, str]] = set()

    @precondition(lambda self: len(self.started) < 4)
    @rule(node=st.sampled_from(NODES), wf=st.sampled_from(WFS), long=st.booleans(), waits=st.booleans())
    def start(self, node, wf, long, waits) -> None:
        state = {"work_ms": 3 * LEASE // 2 if long else 0, "approved": not waits}
        self.started.add((node, wf))
        self.sim.spawn(node, self.sim.nodes[node].start(wf, "approval", state), f"start:{wf}")

    @precondition(lambda self: any(self.sim.backend.read_instance(w) for w in WFS))
    @rule(node=st.sampled_from(NODES), wf=st.sampled_from(WFS))
    def signal(self, node, wf) -> None:
        if self.sim.backend.read_instance(wf) is not None:
            self.sim.spawn(node, self.sim.nodes[node].signal(wf, "approve"), f"signal:{wf}")

    @rule(picks=st.lists(st.integers(0, 20), min_size=1, max_size=12))
    def steps(self, picks) -> None:
        for p in picks:
            self.sim.step(lambda n, p=p: p % n)

    @rule(node=st.sampled_from(NODES), ms=st.integers(1, LEASE // 2))
    def pause(self, node, ms) -> None:
        # NoLongPauses: never back to back, never longer than half a lease.
        if self.sim.paused_until[node] + LEASE <= self.sim.clock.now_ms():
            self.sim.pause(node, ms)

    @rule(node=st.sampled_from(NODES))
    def crash(self, node) -> None:
        self.sim.crash(node)

    @invariant()
    def no_overlapping_runs(self) -> None:
        assert self.sim.monitor.overlaps == 0, "NoOverlappingRuns"

    @invariant()
    def terminal_is_stable(self) -> None:
        for wf in WFS:
            inst = self.sim.backend.read_instance(wf)
            if wf in self.terminal:
                assert inst is not None and inst.status == self.terminal[wf], "TerminalIsStable"
            elif inst is not None and inst.terminal:
                self.terminal[wf] = inst.status

    @invariant()
    def no_fiber_errors(self) -> None:
        assert self.sim.errors == []


TestEngineMachine = EngineMachine.TestCase
TestEngineMachine.settings = settings(
    max_examples=150, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


class NoHonourCheckMachine(EngineMachine):
    """The old behaviour: a copy is queued on an honoured lease, and signals go in memory."""

    gates = Gates(honour_check=False, force_signal_workflow_exec_in_scheduler=False)


def test_the_machine_finds_the_double_run_without_the_fix() -> None:
    with pytest.raises(AssertionError, match="NoOverlappingRuns"):
        run_state_machine_as_test(
            NoHonourCheckMachine,
            # Finding it is the point; shrinking it would only cost time.
            settings=settings(max_examples=300, stateful_step_count=30, deadline=None, database=None,
                              phases=[Phase.generate], suppress_health_check=[HealthCheck.too_slow]),
        )


@pytest.mark.slow
def test_the_engine_machine_at_length() -> None:
    run_state_machine_as_test(
        EngineMachine,
        settings=settings(max_examples=3_000, stateful_step_count=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow]),
    )
