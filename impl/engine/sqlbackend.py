"""The SQL stores: SQLite (one file shared by several processes) and MySQL/MariaDB.

Both run the named queries of `sql/`; they differ in connections, transactions and which
errors are worth a retry. Each thread gets its own connection, so the threads of a node (fetch
loop, runs, callers) never share one.

    SQLite: WAL journal; BEGIN IMMEDIATE takes the write lock at the start, so transactions
            are serial and the trace's AUTOINCREMENT order is the commit order; writers wait
            for it on a lock and an flock, not by polling (`SqliteBackend.transaction`).
    MySQL:  READ COMMITTED; each transaction first locks its workflow's `wf_lock` row, so the
            transactions of one workflow are serial and numbered in commit order (`wf_seq`).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from impl.engine.errors import EngineBug
from impl.engine.model import WORKFLOW_OWNER, Event, Instance, Task, TaskKey
from impl.engine.queries import DROP_NAMES, queries, schema_names
from impl.errors import StoreUnavailable

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: threads still queue; processes poll as before
    fcntl = None  # type: ignore[assignment]

_TASK_COLS = ("owner", "task_id", "status", "run_after", "version", "retry_count", "payload", "type")
_INST_COLS = ("wf", "workflow", "status", "version", "state", "result")


def _task(row: Any) -> Task | None:
    if row is None:
        return None
    d = dict(zip(_TASK_COLS, row))
    return Task(**{k: (int(v) if k in ("run_after", "version", "retry_count") else v) for k, v in d.items()})


def _instance(row: Any) -> Instance | None:
    if row is None:
        return None
    d = dict(zip(_INST_COLS, row))
    d["version"] = int(d["version"])
    return Instance(**d)


def _task_params(task: Task) -> dict[str, Any]:
    return {c: getattr(task, c) for c in _TASK_COLS}


def _inst_params(inst: Instance) -> dict[str, Any]:
    return {c: getattr(inst, c) for c in _INST_COLS}


class SqlTxn:
    """One SQL transaction: each method runs the named query of the same name."""

    def __init__(self, cursor: Any, q: dict[str, str], returning: bool) -> None:
        self._c = cursor
        self._q = q
        self._returning = returning  # SQLite's UPDATE ... RETURNING; MySQL's LAST_INSERT_ID

    def _run(self, name: str, params: dict[str, Any]) -> int:
        self._c.execute(self._q[name], params)
        return int(self._c.rowcount)

    def lock_workflow(self, wf: str) -> int:
        n = self._bump_lock(wf)
        if n is None:  # the workflow's first transaction: create its lock row, then take it
            self._run("ensure_lock_row", {"wf": wf})
            n = self._bump_lock(wf)
        if n is None:
            raise EngineBug(f"cannot lock workflow {wf!r}: its wf_lock row is missing")
        return n

    def _bump_lock(self, wf: str) -> int | None:
        self._c.execute(self._q["lock_workflow"], {"wf": wf})
        if self._returning:
            row = self._c.fetchone()
            return int(row[0]) if row else None
        return int(self._c.lastrowid) if self._c.rowcount == 1 else None

    def read_task(self, key: TaskKey) -> Task | None:
        self._c.execute(self._q["read_task"], {"owner": key.owner, "task_id": key.task_id})
        return _task(self._c.fetchone())

    def insert_task(self, task: Task) -> None:
        self._run("insert_task", _task_params(task))

    def update_task(self, task: Task, expected_version: int) -> int:
        return self._run("update_task", {**_task_params(task), "expected_version": expected_version})

    def delete_task(self, key: TaskKey, expected_version: int) -> int:
        return self._run(
            "delete_task",
            {"owner": key.owner, "task_id": key.task_id, "expected_version": expected_version},
        )

    def read_fence(self, key: TaskKey) -> int:
        self._c.execute(self._q["read_fence"], {"owner": key.owner, "task_id": key.task_id})
        row = self._c.fetchone()
        return int(row[0]) if row else 0

    def write_fence(self, key: TaskKey, version: int) -> None:
        self._run("write_fence", {"owner": key.owner, "task_id": key.task_id, "version": version})

    def read_instance(self, wf: str) -> Instance | None:
        self._c.execute(self._q["read_instance"], {"wf": wf})
        return _instance(self._c.fetchone())

    def read_state(self, wf: str) -> tuple[Instance | None, Task | None]:
        self._c.execute(self._q["read_state"], {"wf": wf, "owner": WORKFLOW_OWNER})
        row = self._c.fetchone()
        n = len(_INST_COLS)
        # A missing row's columns are all NULL; its key column is never NULL in a real row.
        inst = _instance(row[:n]) if row is not None and row[0] is not None else None
        task = _task(row[n:]) if row is not None and row[n] is not None else None
        return inst, task

    def insert_instance(self, inst: Instance) -> None:
        self._run("insert_instance", _inst_params(inst))

    def update_instance(self, inst: Instance, expected_version: int) -> int:
        return self._run("update_instance", {**_inst_params(inst), "expected_version": expected_version})

    def record_event(self, event: dict[str, Any]) -> None:
        self._run("record_event", event)


class _SqlBackend:
    """What both SQL stores share: per-thread connections and the reads outside transactions."""

    dialect = ""
    url = ""

    def __init__(self, prefix: str = "", pool_size: int = 32) -> None:
        self.prefix = prefix
        self.q = queries(self.dialect, prefix)
        # A bounded pool: a node may run hundreds of threads, a server allows ~150 connections.
        self._pool_size = pool_size
        self._idle: list[Any] = []
        self._opened = 0
        self._cond = threading.Condition()

    def _connect(self) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    @contextmanager
    def _conn(self) -> Iterator[Any]:
        """Borrow a connection for one transaction or read; wait if all are in use."""
        with self._cond:
            while not self._idle and self._opened >= self._pool_size:
                self._cond.wait()
            if self._idle:
                conn = self._idle.pop()
            else:
                self._opened += 1
                conn = None
        if conn is None:
            try:
                conn = self._connect()
            except BaseException:
                with self._cond:
                    self._opened -= 1
                    self._cond.notify()
                raise
        broken = False
        try:
            yield conn
        except BaseException as exc:
            broken = self._is_broken(exc)
            raise
        finally:
            with self._cond:
                if broken:
                    self._opened -= 1
                else:
                    self._idle.append(conn)
                self._cond.notify()
            if broken:
                self._close_quietly(conn)

    def _is_broken(self, exc: BaseException) -> bool:
        """Whether `exc` left the connection unusable (it is then closed, not reused)."""
        return False

    @staticmethod
    def _close_quietly(conn: Any) -> None:
        try:
            conn.close()
        except Exception:  # closing a broken connection is not worth failing over
            pass

    def _begin(self, conn: Any) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    @contextmanager
    def transaction(self) -> Iterator[SqlTxn]:
        with self._conn() as conn:
            yield from self._in_transaction(conn)

    def _in_transaction(self, conn: Any) -> Iterator[SqlTxn]:
        """BEGIN on `conn`, yield the transaction's operations once, then COMMIT (ROLLBACK if
        the body raised). A plain generator, for `yield from` inside a store's `transaction`:
        a context manager nested in another cost a few us a transaction on its own."""
        self._begin(conn)
        cur = conn.cursor()
        try:
            yield SqlTxn(cur, self.q, self.dialect == "sqlite")
        except BaseException:
            try:
                conn.rollback()
            except Exception:  # the original error matters more than a failed rollback
                pass
            raise
        else:
            conn.commit()
        finally:
            cur.close()

    def _query(self, name: str, params: dict[str, Any]) -> list[Any]:
        with self._conn() as conn:
            cur = conn.cursor()
            try:
                cur.execute(self.q[name], params)
                return list(cur.fetchall())
            finally:
                cur.close()

    def due_tasks(self, now: int, limit: int) -> list[Task]:
        return [t for t in map(_task, self._query("due_tasks", {"now": now, "limit": limit})) if t]

    def read_task(self, key: TaskKey) -> Task | None:
        rows = self._query("read_task", {"owner": key.owner, "task_id": key.task_id})
        return _task(rows[0]) if rows else None

    def read_instance(self, wf: str) -> Instance | None:
        rows = self._query("read_instance", {"wf": wf})
        return _instance(rows[0]) if rows else None

    def list_instances(self) -> list[Instance]:
        return [i for i in map(_instance, self._query("list_instances", {})) if i]

    def read_events(self) -> list[Event]:
        out = []
        for seq, wf, wf_seq, node, op, now, args, outcome, state in self._query("read_events", {}):
            out.append(
                Event(
                    seq=int(seq),
                    wf=wf,
                    wf_seq=int(wf_seq),
                    node=node,
                    op=op,
                    now=int(now),
                    args=json.loads(args),
                    outcome=outcome,
                    state=json.loads(state),
                )
            )
        return out

    def _exec_names(self, names: Any) -> None:
        with self._conn() as conn:
            cur = conn.cursor()
            try:
                for name in names:
                    cur.execute(self.q[name])
            finally:
                cur.close()
            conn.commit()

    def create_schema(self) -> None:
        self._exec_names(schema_names(self.dialect))

    def drop_schema(self) -> None:
        self._exec_names(DROP_NAMES)

    def close(self) -> None:
        with self._cond:
            conns, self._idle = self._idle, []
            self._opened -= len(conns)
        for conn in conns:
            self._close_quietly(conn)


class SqliteBackend(_SqlBackend):
    """The embedded default: one SQLite file, shareable by several processes."""

    dialect = "sqlite"
    # One write transaction at a time, across every process sharing the file: a node needs
    # no more worker threads than that (`threads.workers_for`).
    max_writers = 1

    def __init__(self, path: str, prefix: str = "") -> None:
        super().__init__(prefix)
        self.path = path
        self.url = f"sqlite:///{path}"
        self._writer = threading.Lock()  # this process's writers queue here (see transaction)
        self._fd: int | None = None

    def _connect(self) -> Any:
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=60000")
        except (sqlite3.Error, OSError) as exc:
            raise StoreUnavailable(
                f"cannot open SQLite store {self.path}: {exc}; check the directory exists and is writable"
            ) from exc
        return conn

    def _begin(self, conn: Any) -> None:
        conn.execute("BEGIN IMMEDIATE")

    @contextmanager
    def transaction(self) -> Iterator[SqlTxn]:
        """A write transaction, holding the writer lock from before BEGIN until after COMMIT.

        SQLite lets one writer in at a time and makes the others poll (`busy_timeout`: sleeps
        of 1 to 100 ms), so under contention most of a transaction's time was a waiter's sleep
        after the writer had gone. The threads of this process queue on a lock, and the
        processes sharing the file on an `flock` of `PATH.writer-lock` beside it, so a waiter
        is woken as the writer commits. Reads take neither (WAL readers never wait).

        The connection is borrowed under the writer lock: a thread waiting for the lock holds
        no connection, so the pool never runs dry of connections held by waiting writers."""
        with self._writer:
            fd = self._lock_fd()
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                with self._conn() as conn:
                    yield from self._in_transaction(conn)
            finally:
                if fd is not None:
                    fcntl.flock(fd, fcntl.LOCK_UN)

    def _lock_fd(self) -> int | None:
        """The open writer-lock file of this process (none for an in-memory database)."""
        if self.path == ":memory:" or fcntl is None:
            return None
        if self._fd is None:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(f"{self.path}.writer-lock", os.O_RDWR | os.O_CREAT, 0o644)
        return self._fd

    def close(self) -> None:
        super().close()
        with self._writer:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _exec_names(self, names: Any) -> None:
        with self._conn() as conn:
            for name in names:
                conn.execute(self.q[name])

    def is_retryable(self, exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)


class MysqlBackend(_SqlBackend):
    """MySQL or MariaDB through PyMySQL, InnoDB tables, READ COMMITTED transactions."""

    dialect = "mysql"
    _RETRYABLE = (1213, 1205)  # deadlock, lock wait timeout: the transaction was rolled back

    def __init__(
        self, host: str, port: int, user: str, password: str, database: str, prefix: str = "", url: str = ""
    ) -> None:
        super().__init__(prefix)
        self._args = dict(host=host, port=port, user=user, password=password, database=database)
        self.url = url or f"mysql://{user}@{host}:{port}/{database}"

    def _connect(self) -> Any:
        import pymysql

        try:
            conn = pymysql.connect(**self._args, autocommit=True, connect_timeout=10)
        except pymysql.MySQLError as exc:
            raise StoreUnavailable(
                f"cannot connect to MySQL store {self.url}: {exc}; start the server or fix the URL"
            ) from exc
        with conn.cursor() as cur:
            cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
        return conn

    def _begin(self, conn: Any) -> None:
        conn.begin()

    def is_retryable(self, exc: BaseException) -> bool:
        import pymysql

        return isinstance(exc, pymysql.MySQLError) and bool(exc.args) and exc.args[0] in self._RETRYABLE

    def _is_broken(self, exc: BaseException) -> bool:
        import pymysql

        return isinstance(exc, (pymysql.err.OperationalError, pymysql.err.InterfaceError)) and not self.is_retryable(exc)
