"""The engine's exceptions. User-facing ones derive from `impl.errors.ImplError`."""

from __future__ import annotations

from impl.errors import ImplError


class EngineError(ImplError):
    """Something went wrong in the reference engine that you can act on."""


class UnknownWorkflow(EngineError):
    """A signal or result names a workflow instance, or a workflow type, that does not exist."""


class OptimisticLockError(EngineError):
    """A versioned write changed zero rows: another node changed the row first.

    Raised by the scheduler interface (`Scheduler.remove`, `renew_lease`, ...) when you pass a
    version that is no longer the row's; re-read the row with `get_task` and decide again.
    """


class ResultUnavailable(EngineError):
    """No in-memory copy of the workflow was queued by your call, so no result arrives here.

    The workflow is being run elsewhere (another node, or a copy already queued). Poll storage
    for the result instead (`Node.result` does, up to `result_polling_time_limit_ms`).
    """


class ResultTimeout(EngineError):
    """The workflow did not reach a terminal state within the result polling time limit."""


class SignalConflict(EngineError):
    """A signal's versioned instance update kept losing to concurrent writes; send it again."""


class WorkloadFailed(EngineError):
    """`leaseproof engine run` finished with workflows not completed or runs that overlapped."""


class ReplayError(EngineError):
    """A schedule that `impl/engine/replay.py` cannot run: not a schedule of tla/Engine.tla's
    actions, or one with settings it cannot express (a lease under two ticks)."""


class EngineBug(Exception):
    """An internal inconsistency in leaseproof's engine: a bug, not your input."""
