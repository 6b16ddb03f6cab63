"""The engine's records: task rows, workflow instances, requests and outcomes, gates, settings.

Rows are immutable values; a store transaction reads a row, a pure decision (`decide.py`)
computes the row to write, and the store writes it with a version guard. Times are integer
milliseconds from an injected clock (`impl.clock`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

# Task statuses. PENDING and RUNNING rows can be leased; FAILED is the dead-letter state.
PENDING = "PENDING"
RUNNING = "RUNNING"
COMPLETED = "COMPLETED"
FAILED = "FAILED"
ACTIVE_TASK_STATUSES = frozenset({PENDING, RUNNING})

# Instance statuses: RUNNING until the workflow completes or fails for good.
TERMINAL_INSTANCE_STATUSES = frozenset({COMPLETED, FAILED})

WORKFLOW_OWNER = "workflow"
WORKFLOW_TYPE = "WORKFLOW"


@dataclass(frozen=True)
class TaskKey:
    """The primary key of a scheduler task: `(owner, task_id)`."""

    owner: str
    task_id: str


@dataclass(frozen=True)
class Task:
    """One scheduler row. The lease is `run_after` itself; there is no lease column."""

    owner: str
    task_id: str
    status: str
    run_after: int
    version: int
    retry_count: int = 0
    payload: str | None = None
    type: str = WORKFLOW_TYPE

    @property
    def key(self) -> TaskKey:
        """This row's primary key."""
        return TaskKey(self.owner, self.task_id)

    def has_active_lease(self, now: int, lease_ms: int) -> bool:
        """Whether the row counts as leased: active and due no later than one lease from now.

        A row that is only *due within a lease* (a short retry backoff) counts too, as in the
        reference engine's `Task.hasActiveLease`.
        """
        return self.status in ACTIVE_TASK_STATUSES and self.run_after <= now + lease_ms

    def is_due(self, now: int) -> bool:
        """Whether a fetch may lease this row now (pending and due, or a lapsed lease)."""
        return self.status in ACTIVE_TASK_STATUSES and self.run_after <= now

    def trace_state(self) -> dict[str, Any]:
        """The row as it appears in a trace event's `state.task`."""
        return {
            "status": self.status,
            "run_after": self.run_after,
            "version": self.version,
            "retry_count": self.retry_count,
        }

    def with_(self, **changes: Any) -> Task:
        """A copy with `changes` applied."""
        return replace(self, **changes)


@dataclass(frozen=True)
class Instance:
    """A workflow instance: its status, version, JSON state and (once completed) result."""

    wf: str
    workflow: str
    status: str
    version: int
    state: str
    result: str | None = None

    @property
    def terminal(self) -> bool:
        """Whether the instance is COMPLETED or FAILED (and so never changes again)."""
        return self.status in TERMINAL_INSTANCE_STATUSES

    def trace_state(self) -> dict[str, Any]:
        """The instance as it appears in a trace event's `state.instance`."""
        return {"status": self.status, "version": self.version}

    def with_(self, **changes: Any) -> Instance:
        """A copy with `changes` applied."""
        return replace(self, **changes)


@dataclass(frozen=True)
class ScheduleRequest:
    """A request to schedule a task: when it should run, and whether to honour a lease.

    With `delay_ms` set, the row is due `delay_ms` after the transaction's own time (read under
    the workflow lock), and `run_after` is ignored: a caller that means "now" or "a lease from
    now" gets the time its write commits at, as the spec's `clock`, not the time it asked.
    """

    task_id: str
    run_after: int
    payload: str | None = None
    honour_leases: bool = True
    owner: str = WORKFLOW_OWNER
    type: str = WORKFLOW_TYPE
    delay_ms: int | None = None

    @property
    def key(self) -> TaskKey:
        """The key of the row this request writes."""
        return TaskKey(self.owner, self.task_id)


@dataclass(frozen=True)
class ScheduleOutcome:
    """What `schedule_with_outcome` did: the row after it, and whether a lease was honoured.

    `outcome` is the trace outcome (`inserted`, `honoured`, `bumped`, `overwritten`); `queued`
    says whether the execution queue may keep an in-memory copy (only for the backstop write).
    """

    task: Task
    outcome: str
    queued: bool = False

    @property
    def lease_honoured(self) -> bool:
        """Whether the row had an active lease that this write honoured."""
        return self.outcome in ("honoured", "bumped")


@dataclass(frozen=True)
class Scheduled:
    """What the execution queue did: the row, and whether a copy with your payload runs here."""

    task: Task | None
    queued_in_memory: bool


@dataclass(frozen=True)
class Gates:
    """The feature gates of the reference engine (all default on), plus the seed's honour check.

    `honour_check` is the seed's fix: no in-memory copy on an honoured lease. Turn it off to
    show the double run. `renew_adopts_rerun` is this engine's answer to a renewal that finds
    its lease bumped by an honoured schedule (see `worker.py`); off, such a run loses its lease.
    `recover_stranded_start` (#46): a start that finds a RUNNING instance with no live row
    schedules it, with a row due after a lease (`recover_after_lease`, scheduleAfterLease) or
    like any start.
    """

    automatic_lease_renewal: bool = True
    force_signal_workflow_exec_in_scheduler: bool = True
    create_existing_workflow_is_noop: bool = True
    bump_task_version_on_honored_lease: bool = True
    honour_check: bool = True
    renew_adopts_rerun: bool = True
    recover_stranded_start: bool = True
    recover_after_lease: bool = True

    def header(self) -> dict[str, bool]:
        """The gates as a trace header's `gates` object (the reference engine's names)."""
        return {
            "AUTOMATIC_LEASE_RENEWAL": self.automatic_lease_renewal,
            "FORCE_SIGNAL_WORKFLOW_EXEC_IN_SCHEDULER": self.force_signal_workflow_exec_in_scheduler,
            "CREATE_EXISTING_WORKFLOW_IS_NOOP": self.create_existing_workflow_is_noop,
            "BUMP_TASK_VERSION_ON_HONORED_LEASE": self.bump_task_version_on_honored_lease,
            "HONOUR_CHECK": self.honour_check,
            "RENEW_ADOPTS_RERUN": self.renew_adopts_rerun,
            "RECOVER_STRANDED_START": self.recover_stranded_start,
            "RECOVER_AFTER_LEASE": self.recover_after_lease,
        }

    @classmethod
    def from_header(cls, gates: dict[str, bool]) -> Gates:
        """The inverse of `header` (missing gates keep their defaults)."""
        names = {v: k for k, v in _GATE_NAMES.items()}
        return cls(**{names[k]: bool(v) for k, v in gates.items() if k in names})


_GATE_NAMES = {
    "automatic_lease_renewal": "AUTOMATIC_LEASE_RENEWAL",
    "force_signal_workflow_exec_in_scheduler": "FORCE_SIGNAL_WORKFLOW_EXEC_IN_SCHEDULER",
    "create_existing_workflow_is_noop": "CREATE_EXISTING_WORKFLOW_IS_NOOP",
    "bump_task_version_on_honored_lease": "BUMP_TASK_VERSION_ON_HONORED_LEASE",
    "honour_check": "HONOUR_CHECK",
    "renew_adopts_rerun": "RENEW_ADOPTS_RERUN",
    "recover_stranded_start": "RECOVER_STRANDED_START",
    "recover_after_lease": "RECOVER_AFTER_LEASE",
}


@dataclass(frozen=True)
class Settings:
    """Lease, polling and retry settings, in milliseconds where they are times."""

    lease_ms: int = 1_000
    renew_interval_ms: int = 300
    poll_interval_ms: int = 50
    fetch_limit: int = 10
    max_retries: int = 3
    retry_backoff_ms: int = 200
    max_finish_attempts: int = 3
    result_polling_time_limit_ms: int = 30_000
    result_poll_interval_ms: int = 100
    in_memory_execution: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.renew_interval_ms < self.lease_ms:
            from impl.engine.errors import EngineError

            raise EngineError(
                f"renew_interval_ms ({self.renew_interval_ms}) must be above 0 and below lease_ms "
                f"({self.lease_ms}): a handler renews when its lease would lapse within that interval"
            )

    def header(self) -> dict[str, Any]:
        """The settings as a trace header's `settings` object."""
        return {
            "lease_ms": self.lease_ms,
            "renew_interval_ms": self.renew_interval_ms,
            "poll_interval_ms": self.poll_interval_ms,
            "max_retries": self.max_retries,
            "retry_backoff_ms": self.retry_backoff_ms,
            "max_finish_attempts": self.max_finish_attempts,
            "result_polling_time_limit_ms": self.result_polling_time_limit_ms,
            "result_poll_interval_ms": self.result_poll_interval_ms,
            "in_memory_execution": self.in_memory_execution,
        }


@dataclass
class Event:
    """One committed store transaction, as the store recorded it (before export renumbers it)."""

    seq: int
    wf: str
    wf_seq: int
    node: str
    op: str
    now: int
    args: dict[str, Any] = field(default_factory=dict)
    outcome: str = ""
    state: dict[str, Any] = field(default_factory=dict)

    def line(self) -> dict[str, Any]:
        """The event's fields for `impl.trace.render` (with `store_seq`: a workflow's trace is
        numbered by `wf_seq`, the workflow lock's count of its committed transactions, so an event
        missing from its transaction shows as a gap)."""
        return {
            "seq": self.wf_seq,
            "node": self.node,
            "op": self.op,
            "now": self.now,
            "wf": self.wf,
            "args": self.args,
            "outcome": self.outcome,
            "state": self.state,
        }
