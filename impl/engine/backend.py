"""The narrow interface every engine store implements, and its in-memory twin.

A backend offers transactions whose operations are the named queries of `sql/queries.sql`
(`read_task`, `update_task`, `record_event`, ...): the SQL backends run the query of that name,
`MemoryBackend` answers with a method of the same name. The protocol's logic lives once, in
`store.py`, on top of this interface.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from impl.engine.model import WORKFLOW_OWNER, Event, Instance, Task, TaskKey


class Txn(Protocol):
    """The operations available inside one store transaction."""

    def lock_workflow(self, wf: str) -> int:
        """Lock the workflow's row until commit; return its next event number (1, 2, ...)."""
        ...

    def read_task(self, key: TaskKey) -> Task | None:
        """The task row, or `None`."""
        ...

    def insert_task(self, task: Task) -> None:
        """Insert a new task row."""
        ...

    def update_task(self, task: Task, expected_version: int) -> int:
        """Write `task` if the row's version is `expected_version`; the number of rows changed."""
        ...

    def delete_task(self, key: TaskKey, expected_version: int) -> int:
        """Delete the row if its version is `expected_version`; the number of rows deleted."""
        ...

    def read_fence(self, key: TaskKey) -> int:
        """The version of the last row removed under `key` (0: none was)."""
        ...

    def write_fence(self, key: TaskKey, version: int) -> None:
        """Remember `version` as the last removed under `key` (with the delete, in its txn)."""
        ...

    def read_instance(self, wf: str) -> Instance | None:
        """The workflow instance, or `None`."""
        ...

    def read_state(self, wf: str) -> tuple[Instance | None, Task | None]:
        """The workflow's instance and its task row (each `None` if missing), in one read."""
        ...

    def insert_instance(self, inst: Instance) -> None:
        """Insert a new workflow instance."""
        ...

    def update_instance(self, inst: Instance, expected_version: int) -> int:
        """Write `inst` if its version is `expected_version`; the number of rows changed."""
        ...

    def record_event(self, event: dict[str, Any]) -> None:
        """Append one trace event (in this transaction, so it commits with it)."""
        ...


class Backend(Protocol):
    """A store: transactions, plus the reads that need none."""

    url: str

    def transaction(self) -> Any:
        """A context manager yielding a `Txn`; commits on exit, rolls back on an exception."""
        ...

    def is_retryable(self, exc: BaseException) -> bool:
        """Whether `exc` is a transient conflict (deadlock, busy) worth running the txn again."""
        ...

    def due_tasks(self, now: int, limit: int) -> list[Task]:
        """Up to `limit` rows a fetch may lease at `now`, earliest first (no locks taken)."""
        ...

    def read_task(self, key: TaskKey) -> Task | None:
        """The task row, read outside any transaction."""
        ...

    def read_instance(self, wf: str) -> Instance | None:
        """The workflow instance, read outside any transaction."""
        ...

    def list_instances(self) -> list[Instance]:
        """Every workflow instance, by id."""
        ...

    def read_events(self) -> list[Event]:
        """Every recorded event, in commit order."""
        ...

    def create_schema(self) -> None:
        """Create the tables if they do not exist."""
        ...

    def drop_schema(self) -> None:
        """Drop the tables (tests clean up with this)."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


class _MemoryTables:
    def __init__(self) -> None:
        self.tasks: dict[TaskKey, Task] = {}
        self.fences: dict[TaskKey, int] = {}
        self.instances: dict[str, Instance] = {}
        self.locks: dict[str, int] = {}
        self.events: list[Event] = []


class MemoryTxn:
    """One transaction of `MemoryBackend`: each method is the named query of the same name."""

    def __init__(self, tables: _MemoryTables) -> None:
        self._t = tables

    def lock_workflow(self, wf: str) -> int:
        self._t.locks[wf] = self._t.locks.get(wf, 0) + 1
        return self._t.locks[wf]

    def read_task(self, key: TaskKey) -> Task | None:
        return self._t.tasks.get(key)

    def insert_task(self, task: Task) -> None:
        if task.key in self._t.tasks:
            raise KeyError(f"duplicate task {task.key}")
        self._t.tasks[task.key] = task

    def update_task(self, task: Task, expected_version: int) -> int:
        row = self._t.tasks.get(task.key)
        if row is None or row.version != expected_version:
            return 0
        self._t.tasks[task.key] = task
        return 1

    def delete_task(self, key: TaskKey, expected_version: int) -> int:
        row = self._t.tasks.get(key)
        if row is None or row.version != expected_version:
            return 0
        del self._t.tasks[key]
        return 1

    def read_fence(self, key: TaskKey) -> int:
        return self._t.fences.get(key, 0)

    def write_fence(self, key: TaskKey, version: int) -> None:
        self._t.fences[key] = version

    def read_instance(self, wf: str) -> Instance | None:
        return self._t.instances.get(wf)

    def read_state(self, wf: str) -> tuple[Instance | None, Task | None]:
        return self._t.instances.get(wf), self._t.tasks.get(TaskKey(WORKFLOW_OWNER, wf))

    def insert_instance(self, inst: Instance) -> None:
        if inst.wf in self._t.instances:
            raise KeyError(f"duplicate instance {inst.wf}")
        self._t.instances[inst.wf] = inst

    def update_instance(self, inst: Instance, expected_version: int) -> int:
        row = self._t.instances.get(inst.wf)
        if row is None or row.version != expected_version:
            return 0
        self._t.instances[inst.wf] = inst
        return 1

    def record_event(self, event: dict[str, Any]) -> None:
        # Round-trip through JSON, as the SQL stores do, so both give identical events.
        self._t.events.append(
            Event(
                seq=len(self._t.events) + 1,
                wf=event["wf"],
                wf_seq=event["wf_seq"],
                node=event["node"],
                op=event["op"],
                now=event["now"],
                args=json.loads(event["args"]),
                outcome=event["outcome"],
                state=json.loads(event["state"]),
            )
        )


class MemoryBackend:
    """The in-memory twin of the SQL stores: same operations, one lock, rollback by snapshot.

    Share one instance between the nodes of a simulation (or threads of one process).
    """

    url = "memory://"

    def __init__(self) -> None:
        self._tables = _MemoryTables()
        self._lock = threading.RLock()

    @contextmanager
    def transaction(self) -> Iterator[MemoryTxn]:
        with self._lock:
            # Rows are immutable, so shallow copies of the dicts are a full snapshot; the event
            # log only grows, so its length is enough to roll it back.
            t = self._tables
            saved = (dict(t.tasks), dict(t.instances), dict(t.locks), len(t.events))
            try:
                yield MemoryTxn(t)
            except BaseException:
                t.tasks, t.instances, t.locks = saved[0], saved[1], saved[2]
                del t.events[saved[3]:]
                raise

    def is_retryable(self, exc: BaseException) -> bool:
        return False

    def due_tasks(self, now: int, limit: int) -> list[Task]:
        with self._lock:
            # Task.is_due is the one lease comparison of a fetch, here and in decide_fetch.
            due = [t for t in self._tables.tasks.values() if t.is_due(now)]
        return sorted(due, key=lambda t: (t.run_after, t.task_id))[:limit]

    def read_task(self, key: TaskKey) -> Task | None:
        with self._lock:
            return self._tables.tasks.get(key)

    def read_instance(self, wf: str) -> Instance | None:
        with self._lock:
            return self._tables.instances.get(wf)

    def list_instances(self) -> list[Instance]:
        with self._lock:
            return [self._tables.instances[k] for k in sorted(self._tables.instances)]

    def read_events(self) -> list[Event]:
        with self._lock:
            return list(self._tables.events)

    def create_schema(self) -> None:
        pass

    def drop_schema(self) -> None:
        with self._lock:
            self._tables = _MemoryTables()

    def close(self) -> None:
        pass
