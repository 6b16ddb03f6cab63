"""Hypothesis state machines over the simulation, one per system: Hypothesis picks each step
(which node polls, steps a handler, heartbeats; the clock; crashes, lags, faults) and the
invariants, named as in the TLA+ specs, are checked after every step."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule, run_state_machine_as_test
import pytest

from impl.workqueue import analysis
from impl.workqueue.config import Gates
from impl.workqueue.sim import SimConfig, Simulation


class _SimMachine(RuleBasedStateMachine):
    system = "workqueue"
    gates = Gates()
    handler_steps = 6

    def __init__(self) -> None:
        super().__init__()
        self.sim: Simulation | None = None
        self._session: Any = None

    @initialize(seed=st.integers(0, 2**16))
    def setup(self, seed: int) -> None:
        config = SimConfig(system=self.system, crashes=1, faults=2, lags=2, closes=1, handler_steps=self.handler_steps,
                           max_steps=10_000, gates=self.gates)
        self.sim = Simulation(config, lambda n: 0, random.Random(seed))
        self._session = self.sim.session()
        self._session.__enter__()

    @precondition(lambda self: self.sim is not None)
    @rule(pick=st.integers(0, 10_000))
    def step(self, pick: int) -> None:
        assert self.sim is not None
        acts = self.sim.enabled()
        self.sim.take(acts[pick % len(acts)])

    @invariant()
    def NoOverlappingInvocations(self) -> None:
        if self.sim is not None:
            assert self.sim.overlaps == 0

    @invariant()
    def TerminalIsStable(self) -> None:
        if self.sim is not None and self.system == "command":
            assert analysis.terminal_changes(self.sim.queue.events()) == []

    def teardown(self) -> None:
        if self._session is not None:
            self._session.__exit__(None, None, None)


class WorkQueueMachine(_SimMachine):
    system = "workqueue"


class CommandQueueMachine(_SimMachine):
    system = "command"


_settings = settings(max_examples=25, stateful_step_count=60, deadline=None)
TestWorkQueue = WorkQueueMachine.TestCase
TestWorkQueue.settings = _settings
TestCommandQueue = CommandQueueMachine.TestCase
TestCommandQueue.settings = _settings


class _CancelIgnoresGuard(CommandQueueMachine):
    gates = Gates().off("cancel_takes_guard")


@pytest.mark.slow
def test_a_broken_machine_fails() -> None:
    """A test of the test: with cancel ignoring the guard, Hypothesis finds a terminal state
    that changed (about three minutes with shrinking; the seeded gate-off tests in
    test_simulation.py are the fast version)."""
    with pytest.raises(AssertionError):
        run_state_machine_as_test(_CancelIgnoresGuard, settings=settings(
            max_examples=200, stateful_step_count=80, deadline=None, database=None))
