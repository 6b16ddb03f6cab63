"""Workflows as Python functions with state, and the registry a node runs them from.

A workflow is a pure function from its state to a `Step`: `Complete(value)` or `Wait()` (for a
signal), possibly with new state. Signal methods are pure functions from (state, payload) to
new state. `duration_ms` says how long a handler run takes: the engine spends that time in
`Sleep`s, renewing its lease, so a handler can outlive a lease without real work.

>>> APPROVAL.run({"approved": True}, RunContext(attempt=0)).value
{'approved': True}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from impl.engine.errors import UnknownWorkflow


@dataclass(frozen=True)
class RunContext:
    """What a workflow function may know about its run: the delivery count of its task."""

    attempt: int


@dataclass(frozen=True)
class Step:
    """The result of one run: `waiting` or `completed`, with the state (and value) to save."""

    result: str
    state: dict[str, Any]
    value: Any = None


def Complete(state: dict[str, Any], value: Any) -> Step:  # noqa: N802 - reads as a constructor
    """The workflow is done; `value` is its result."""
    return Step("completed", state, value)


def Wait(state: dict[str, Any]) -> Step:  # noqa: N802
    """The workflow waits for a signal."""
    return Step("waiting", state)


@dataclass(frozen=True)
class Workflow:
    """A workflow type: its function, its signal methods and its handler duration."""

    name: str
    run: Callable[[dict[str, Any], RunContext], Step]
    signals: Mapping[str, Callable[[dict[str, Any], Any], dict[str, Any]]] = field(default_factory=dict)
    duration_ms: Callable[[dict[str, Any]], int] = lambda state: int(state.get("work_ms", 0))


def _approval(state: dict[str, Any], ctx: RunContext) -> Step:
    state = {**state, "runs": int(state.get("runs", 0)) + 1}
    if state.get("approved"):
        return Complete(state, {"approved": True})
    return Wait(state)


def _approve(state: dict[str, Any], payload: Any) -> dict[str, Any]:
    approvals = int(state.get("approvals", 0)) + 1
    return {**state, "approvals": approvals, "approved": approvals >= int(state.get("needs", 1))}


APPROVAL = Workflow("approval", _approval, {"approve": _approve})
"""Waits for an `approve` signal (`needs` of them, if its input says so), then completes.
`work_ms` in its input sets the run time."""


def _flaky(state: dict[str, Any], ctx: RunContext) -> Step:
    if ctx.attempt <= int(state.get("fail_times", 1)):
        raise RuntimeError(f"flaky workflow fails on delivery {ctx.attempt}")
    return Complete(state, {"attempt": ctx.attempt})


FLAKY = Workflow("flaky", _flaky)
"""Raises on its first `fail_times` deliveries, then completes: exercises retries."""


def _poison(state: dict[str, Any], ctx: RunContext) -> Step:
    raise RuntimeError("poison workflow always fails")


POISON = Workflow("poison", _poison)
"""Always raises: ends in the dead-letter state after `max_retries`."""


class Registry:
    """The workflow types a node can run, by name."""

    def __init__(self, *workflows: Workflow) -> None:
        self._by_name = {w.name: w for w in workflows}

    def get(self, name: str) -> Workflow:
        """The workflow called `name`; `UnknownWorkflow` if it is not registered."""
        try:
            return self._by_name[name]
        except KeyError:
            raise UnknownWorkflow(
                f"no workflow type {name!r}; registered: {sorted(self._by_name)}"
            ) from None


DEFAULT_REGISTRY = Registry(APPROVAL, FLAKY, POISON)
