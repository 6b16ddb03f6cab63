"""The engine's store transactions: one method per trace op, each one atomic step.

Every method here is one store transaction that reads the rows it needs, asks a pure decision
(`decide.py`), writes with a version guard, and records one trace event in the same
transaction, with the workflow's instance and task rows as they are after it. The method names
are the ops of `tla/README.md` (`create_instance`, `schedule`, `fetch`, `run_start`, ...).

    node --call--> Store.op --BEGIN--> lock wf --read--> decide --write--> record --COMMIT-->

A transaction that decides to change nothing (a fetch that lost its race) rolls back and
records nothing: it is not a step.
"""

from __future__ import annotations

import json
from dataclasses import replace
from collections.abc import Callable
from typing import Any, TypeVar, Union

from impl.engine import decide
from impl.engine.backend import Backend, Txn
from impl.engine.errors import EngineBug
from impl.engine.model import (
    FAILED,
    RUNNING,
    WORKFLOW_OWNER,
    Instance,
    ScheduleOutcome,
    ScheduleRequest,
    Task,
    TaskKey,
)

T = TypeVar("T")
_MAX_TXN_ATTEMPTS = 20


class _NoCommit(Exception):
    """Raised inside a transaction to roll it back on purpose, carrying the value to return."""

    def __init__(self, value: Any) -> None:
        super().__init__("no commit")
        self.value = value


def _key(wf: str) -> TaskKey:
    return TaskKey(WORKFLOW_OWNER, wf)


Now = Union[int, Callable[[], int]]


def _at(now: Now) -> int:
    """The time of a transaction: read once its workflow lock is held, if given as a clock.

    A transaction can wait for the lock; reading the clock after the wait keeps `now` in commit
    order, as the trace's `now` promises, and keeps lease decisions from using a stale time.
    """
    return now() if callable(now) else now


# One encoder for every event: `json.dumps` with options builds a new encoder per call.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"))


def _json(value: Any) -> str:
    return _ENCODER.encode(value)


class Store:
    """The named transactions of the protocol over one backend (SQLite, MySQL or memory).

    Every node of a run shares one `Store` backend (several processes share the database).
    `lease_ms` and the bump gate are fixed per store, as they are per engine.
    """

    def __init__(self, backend: Backend, *, lease_ms: int, bump: bool = True, decisions: Any = decide) -> None:
        self.backend = backend
        self.lease_ms = lease_ms
        self.bump = bump
        # The pure decisions, as a namespace: `mutants.py` swaps one for a broken one.
        self.decide = decisions

    # -- plumbing -------------------------------------------------------------------------

    def _txn(self, body: Callable[[Txn], T]) -> T:
        """Run `body` in a transaction, again on a transient conflict (deadlock, busy)."""
        for attempt in range(_MAX_TXN_ATTEMPTS):
            try:
                with self.backend.transaction() as tx:
                    return body(tx)
            except _NoCommit as nc:
                return nc.value  # type: ignore[no-any-return]
            except Exception as exc:
                if not self.backend.is_retryable(exc) or attempt == _MAX_TXN_ATTEMPTS - 1:
                    raise
        raise EngineBug("unreachable: transaction retry loop ended")

    def _record(
        self, tx: Txn, wf: str, wf_seq: int, node: str, now: int, op: str, args: dict[str, Any], outcome: str
    ) -> None:
        inst, task = tx.read_state(wf)  # read back after the write, as committed
        state = {
            "instance": inst.trace_state() if inst else None,
            "task": task.trace_state() if task else None,
        }
        tx.record_event(
            {
                "wf": wf,
                "wf_seq": wf_seq,
                "node": node,
                "op": op,
                "now": now,
                "args": _json(args),
                "outcome": outcome,
                "state": _json(state),
            }
        )

    def line(self, node: str, now: Now, wf: str, op: str, outcome: str, args: dict[str, Any] | None = None) -> None:
        """Record a trace line that is no store step, in commit order with the workflow's steps (a
        transaction of its own that writes nothing else): a fault where it happened, by the node it
        hit (`crash`, `pause`, `stall`, `lapse`, `store_error`), or what a caller was told
        (`answer`). Its state is empty: it changes none."""

        def body(tx: Txn) -> None:
            n = tx.lock_workflow(wf)
            tx.record_event({"wf": wf, "wf_seq": n, "node": node, "op": op, "now": _at(now),
                             "args": _json(args or {}), "outcome": outcome, "state": _json({})})

        self._txn(body)

    @staticmethod
    def _must(changed: int, what: str) -> None:
        # Writes are guarded by the version read under the workflow lock (the decision has
        # compared it with the version the caller holds), so a miss means the lock is broken.
        if changed != 1:
            raise EngineBug(f"{what} changed {changed} rows while holding the workflow lock")

    # -- start and signal ------------------------------------------------------------------

    def create_instance(
        self, node: str, now: Now, wf: str, workflow: str, state: str
    ) -> tuple[str, Instance, Task | None]:
        """Start, write 1: insert the instance RUNNING at version 1 unless it exists.

        Also returns the workflow's task row as this transaction saw it, so that a start of a
        RUNNING instance can tell a stranded start (no live row) from a running workflow.
        """

        def body(tx: Txn) -> tuple[str, Instance, Task | None]:
            n = tx.lock_workflow(wf)
            t = _at(now)
            inst = tx.read_instance(wf)
            if inst is not None:
                outcome = "exists"
            else:
                inst = Instance(wf=wf, workflow=workflow, status=RUNNING, version=1, state=state)
                tx.insert_instance(inst)
                outcome = "created"
            self._record(tx, wf, n, node, t, "create_instance", {"workflow": workflow}, outcome)
            return outcome, inst, tx.read_task(_key(wf))

        return self._txn(body)

    def update_instance(
        self, node: str, now: Now, wf: str, expected_version: int, state: str
    ) -> tuple[str, Instance | None]:
        """Signal, write 1: the versioned update of the instance's state."""

        def body(tx: Txn) -> tuple[str, Instance | None]:
            n = tx.lock_workflow(wf)
            t = _at(now)
            inst = tx.read_instance(wf)
            if inst is None:
                raise _NoCommit(("missing", None))
            outcome = self.decide.decide_update_instance(inst, expected_version)
            if outcome == "updated":
                inst = inst.with_(state=state, version=inst.version + 1)
                self._must(tx.update_instance(inst, expected_version), "update_instance")
            self._record(tx, wf, n, node, t, "update_instance", {"version": expected_version}, outcome)
            return outcome, inst

        return self._txn(body)

    # -- the scheduler ---------------------------------------------------------------------

    def schedule(
        self,
        node: str,
        now: Now,
        request: ScheduleRequest,
        *,
        in_memory: bool = False,
        honour_check: bool = True,
    ) -> ScheduleOutcome:
        """`schedule_with_outcome`: read the row, then insert / honour / bump / overwrite.

        With `in_memory`, this is the execution queue's backstop write (op
        `schedule_in_memory`) and the outcome also says whether a copy may be queued.
        """
        wf = request.task_id

        def body(tx: Txn) -> ScheduleOutcome:
            n = tx.lock_workflow(wf)
            t = _at(now)
            req = request if request.delay_ms is None else replace(request, run_after=t + request.delay_ms, delay_ms=None)
            row = tx.read_task(req.key)
            fence = tx.read_fence(req.key) if row is None else 0
            d = self.decide.decide_schedule(row, req, t, self.lease_ms, bump=self.bump, fence=fence)
            if d.outcome == "inserted":
                assert d.write is not None
                tx.insert_task(d.write)
            elif d.write is not None:
                assert row is not None
                self._must(tx.update_task(d.write, row.version), "schedule")
            task = d.write or row
            assert task is not None
            args: dict[str, Any] = {"run_after": req.run_after, "honour_leases": req.honour_leases}
            queued = False
            if in_memory:
                queued = self.decide.decide_queue_copy(d.outcome, honour_check=honour_check)
                args["queued"] = queued
            op = "schedule_in_memory" if in_memory else "schedule"
            self._record(tx, wf, n, node, t, op, args, d.outcome)
            return ScheduleOutcome(task=task, outcome=d.outcome, queued=queued)

        return self._txn(body)

    def fetch(self, node: str, now: Now, seen: Task) -> Task | None:
        """Lease one due row seen by `due_tasks`; `None` (no step) when another node won."""
        wf = seen.task_id

        def body(tx: Txn) -> Task | None:
            n = tx.lock_workflow(wf)
            t = _at(now)
            row = tx.read_task(seen.key)
            leased = self.decide.decide_fetch(row, seen.version, t, self.lease_ms)
            if leased is None:
                raise _NoCommit(None)
            self._must(tx.update_task(leased, row.version), "fetch")  # type: ignore[union-attr]
            self._record(tx, wf, n, node, t, "fetch", {"task_version": seen.version}, "leased")
            return leased

        return self._txn(body)

    def due_tasks(self, now: int, limit: int) -> list[Task]:
        """Rows a fetch may lease at `now` (a plain read, not a step)."""
        return self.backend.due_tasks(now, limit)

    def renew(
        self, node: str, now: Now, key: TaskKey, version: int, held_run_after: int
    ) -> tuple[str, Task | None]:
        """`renew_lease`: `run_after = now + lease`, version+1, if the row still has `version`.

        `held_run_after` is the lease the caller holds (logged: a trace check compares it with
        the lease it gave). Returns the outcome and the row after the transaction (on a
        conflict, the row as it is).
        """
        wf = key.task_id

        def body(tx: Txn) -> tuple[str, Task | None]:
            n = tx.lock_workflow(wf)
            t = _at(now)
            row = tx.read_task(key)
            new = self.decide.decide_renew(row, version, t, self.lease_ms)
            if new is not None:
                self._must(tx.update_task(new, row.version), "renew")  # type: ignore[union-attr]
                outcome, after = "renewed", new
            else:
                outcome, after = "conflict", row
            args = {"task_version": version, "held_run_after": held_run_after}
            self._record(tx, wf, n, node, t, "renew", args, outcome)
            return outcome, after

        return self._txn(body)

    def remove(
        self, node: str, now: Now, key: TaskKey, version: int, held_run_after: int
    ) -> tuple[str, Task | None]:
        """Finish: `DELETE ... WHERE version = v`; on a miss, say why (`gone`, `rerun`, `lost`)."""
        wf = key.task_id

        def body(tx: Txn) -> tuple[str, Task | None]:
            n = tx.lock_workflow(wf)
            t = _at(now)
            if tx.delete_task(key, self.decide.remove_guard(tx.read_task(key), version)) == 1:
                # The next row inserted under this key continues from here (decide_schedule).
                tx.write_fence(key, version)
                outcome, row = "removed", None
            else:
                row = tx.read_task(key)
                outcome = self.decide.classify_failed_remove(row, held_run_after)
            args = {"task_version": version, "held_run_after": held_run_after}
            self._record(tx, wf, n, node, t, "remove", args, outcome)
            return outcome, row

        return self._txn(body)

    def reschedule_retry(
        self, node: str, now: Now, key: TaskKey, version: int, run_after: int | None = None,
        *, delay_ms: int | None = None, held_run_after: int,
    ) -> tuple[str, Task | None]:
        """Finish after a failed run: PENDING at a later `run_after`, version+1.

        Give `delay_ms` instead of `run_after` for a row due that long after the transaction's
        own time (read under the lock, as for `schedule`). `held_run_after`: the lease held.
        """
        wf = key.task_id
        if (run_after is None) == (delay_ms is None):
            raise EngineBug("reschedule_retry needs exactly one of run_after and delay_ms")

        def body(tx: Txn) -> tuple[str, Task | None]:
            n = tx.lock_workflow(wf)
            t = _at(now)
            due = t + delay_ms if delay_ms is not None else run_after
            assert due is not None
            row = tx.read_task(key)
            new = self.decide.decide_retry(row, version, due)
            if new is not None:
                self._must(tx.update_task(new, row.version), "reschedule_retry")  # type: ignore[union-attr]
                outcome, after = "rescheduled", new
            else:
                outcome, after = "conflict", row
            args = {"task_version": version, "run_after": due, "held_run_after": held_run_after}
            self._record(tx, wf, n, node, t, "reschedule_retry", args, outcome)
            return outcome, after

        return self._txn(body)

    def mark_failed(
        self, node: str, now: Now, key: TaskKey, version: int, held_run_after: int
    ) -> tuple[str, Task | None]:
        """Past `max_retries`: the row becomes FAILED (dead letter) and so does the instance.

        `held_run_after`: the lease held (logged, as on every finishing write)."""
        wf = key.task_id

        def body(tx: Txn) -> tuple[str, Task | None]:
            n = tx.lock_workflow(wf)
            t = _at(now)
            row = tx.read_task(key)
            new = self.decide.decide_mark_failed(row, version)
            if new is not None:
                self._must(tx.update_task(new, row.version), "mark_failed")  # type: ignore[union-attr]
                inst = tx.read_instance(wf)
                if inst is not None and not inst.terminal:
                    failed = inst.with_(status=FAILED, version=inst.version + 1)
                    self._must(tx.update_instance(failed, inst.version), "mark_failed instance")
                outcome, after = "failed", new
            else:
                outcome, after = "conflict", row
            args = {"task_version": version, "held_run_after": held_run_after}
            self._record(tx, wf, n, node, t, "mark_failed", args, outcome)
            return outcome, after

        return self._txn(body)

    # -- runs ------------------------------------------------------------------------------

    def run_start(self, node: str, now: Now, wf: str, source: str, task_version: int) -> Instance | None:
        """A handler run begins: read the instance it will run on."""

        def body(tx: Txn) -> Instance | None:
            n = tx.lock_workflow(wf)
            t = _at(now)
            inst = tx.read_instance(wf)
            args = {"source": source, "task_version": task_version}
            self._record(tx, wf, n, node, t, "run_start", args, "started")
            return inst

        return self._txn(body)

    def run_end(
        self,
        node: str,
        now: Now,
        wf: str,
        expected_version: int,
        result: str,
        state: str,
        value: str | None,
    ) -> str:
        """A handler run ends: the versioned write of the instance (`saved` or `conflict`).

        `result` is `completed` (the instance becomes COMPLETED with `value`), `waiting` (it
        stays RUNNING with the new `state`) or `failed` (the state is kept; a retry follows).
        """

        def body(tx: Txn) -> str:
            n = tx.lock_workflow(wf)
            t = _at(now)
            inst = tx.read_instance(wf)
            if inst is None or not self.decide.decide_run_end(inst, expected_version):
                # Saves only over the version the run read, and only on a RUNNING instance:
                # a stale run of a finished workflow writes nothing.
                outcome = "conflict"
            else:
                if result == "completed":
                    new = inst.with_(status="COMPLETED", state=state, result=value, version=inst.version + 1)
                elif result == "waiting":
                    new = inst.with_(state=state, version=inst.version + 1)
                else:
                    new = inst.with_(version=inst.version + 1)
                self._must(tx.update_instance(new, expected_version), "run_end")
                outcome = "saved"
            self._record(tx, wf, n, node, t, "run_end", {"result": result}, outcome)
            return outcome

        return self._txn(body)

    # -- reads (not steps) -----------------------------------------------------------------

    def get_task(self, key: TaskKey) -> Task | None:
        """The task row as it is now."""
        return self.backend.read_task(key)

    def get_instance(self, wf: str) -> Instance | None:
        """The workflow instance as it is now."""
        return self.backend.read_instance(wf)
