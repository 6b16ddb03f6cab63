"""The store's own limit for the engine's kind of step, to set the engine's rate beside.

An engine step is one small transaction: lock the workflow's `wf_lock` row (a counter, read and
bumped), read a task row, write it back under its version, record one trace event. `measure`
runs exactly that, back to back, with nothing around it: no queue, no threads, no decisions.

    parent:      reset the tables, insert one task row per key, spawn `procs` processes
    process i:   open the store as a node does (same URL, prefix, connection settings),
                 wait for the others, then run its share of the transactions over its own keys:
                     BEGIN; lock_workflow; read_task; update_task; record_event; COMMIT
    parent:      the rate is the transactions over the span of the events' `now`s

The transactions are the engine's own named queries (`sql/`) through the engine's own backend,
so whatever the backend does for a transaction (SQLite's write lock, a pool, MariaDB's
isolation level) the limit pays too. The rate is read from the recorded events, as the engine
benchmark reads its own, so process start-up is counted on neither side.

>>> r = measure("memory://", "lim_", procs=1, txns=50)
>>> r.txns, r.events
(50, 50)
"""

from __future__ import annotations

import json
import multiprocessing
import threading
from dataclasses import dataclass
from typing import Any

from impl.clock import WallClock
from impl.engine.backend import Backend
from impl.engine.errors import EngineError
from impl.engine.model import PENDING, WORKFLOW_OWNER, Task, TaskKey
from impl.engine.urls import open_backend


@dataclass(frozen=True)
class LimitResult:
    """One measurement: transactions committed, over how long, by how many processes."""

    procs: int
    loops: int
    txns: int
    events: int
    seconds: float

    @property
    def rate(self) -> float:
        """Committed transactions per second."""
        return self.txns / self.seconds if self.seconds > 0 else float("inf")


def _key(i: int) -> str:
    return f"lim{i:05d}"


def step(backend: Backend, node: str, now: int, wf: str, outcome: str = "written") -> int:
    """One transaction of the limit workload on `wf`'s rows; the row's new version."""
    with backend.transaction() as tx:
        n = tx.lock_workflow(wf)
        key = TaskKey(WORKFLOW_OWNER, wf)
        row = tx.read_task(key)
        if row is None:
            raise EngineError(f"limit workload: no task row for {wf!r}; run `prepare` first")
        new = row.with_(run_after=now, version=row.version + 1)
        if tx.update_task(new, row.version) != 1:
            raise EngineError(f"limit workload: the write of {wf!r} missed under its lock")
        tx.record_event({
            "wf": wf, "wf_seq": n, "node": node, "op": "limit", "now": now,
            "args": json.dumps({"task_version": row.version}), "outcome": outcome,
            "state": json.dumps({"task": new.trace_state()}),
        })
        return new.version


def prepare(backend: Backend, keys: int) -> None:
    """Empty tables with one task row per key (and its lock row, taken once)."""
    backend.drop_schema()
    backend.create_schema()
    with backend.transaction() as tx:
        for i in range(keys):
            wf = _key(i)
            tx.lock_workflow(wf)
            tx.insert_task(Task(owner=WORKFLOW_OWNER, task_id=wf, status=PENDING, run_after=0, version=1))


def _loop(backend: Backend, name: str, keys: list[str], txns: int) -> None:
    clock = WallClock()
    for i in range(txns):
        step(backend, name, clock.now_ms(), keys[i % len(keys)])


def _worker(url: str, prefix: str, name: str, keys: list[str], txns: int, loops: int, ready: Any, go: Any) -> None:
    backend = open_backend(url, prefix, create=False)
    try:
        # Open a connection per loop before the start, not after it.
        warm = [threading.Thread(target=step, args=(backend, name, WallClock().now_ms(), keys[j], "warmup"))
                for j in range(loops)]
        for t in warm:
            t.start()
        for t in warm:
            t.join()
        ready.set()
        go.wait()
        shares = _split(txns, loops)
        threads = [threading.Thread(target=_loop, args=(backend, name, keys[j::loops], shares[j])) for j in range(loops)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        backend.close()


def _split(n: int, parts: int) -> list[int]:
    return [n // parts + (1 if i < n % parts else 0) for i in range(parts)]


def measure(url: str, prefix: str, *, procs: int, txns: int, loops: int = 1, keys_per_proc: int = 64) -> LimitResult:
    """Run `txns` limit transactions from `procs` processes (their own keys each); the rate.

    Each process runs `loops` loops (threads) side by side, each on its own keys: one loop
    waits out every commit, so a store whose commit waits for a disk (MariaDB) takes more
    from several, as the engine's pool of workers does.

    `memory://` runs in this process (the twin cannot be shared by processes): a test of the
    workload, not a limit of anything.
    """
    if procs < 1 or txns < procs:
        raise EngineError(f"need at least one process and a transaction each (got {procs}, {txns})")
    backend = open_backend(url, prefix, create=False)
    try:
        prepare(backend, procs * keys_per_proc)
        if keys_per_proc < loops:
            raise EngineError(f"need a key per loop ({loops} loops, {keys_per_proc} keys a process)")
        shares = _split(txns, procs)
        keys = [[_key(k) for k in range(i, procs * keys_per_proc, procs)] for i in range(procs)]
        if url.startswith("memory"):
            for i in range(procs):
                _loop(backend, f"p{i + 1}", keys[i], shares[i])
        else:
            ctx = multiprocessing.get_context("spawn")
            go = ctx.Event()
            readies = [ctx.Event() for _ in range(procs)]
            ps = [ctx.Process(target=_worker, args=(url, prefix, f"p{i + 1}", keys[i], shares[i], loops, readies[i], go),
                              daemon=True) for i in range(procs)]
            for p in ps:
                p.start()
            for r in readies:
                if not r.wait(120):
                    raise EngineError("a limit process did not start within 120 s")
            go.set()
            for p in ps:
                p.join()
            bad = [p.exitcode for p in ps if p.exitcode != 0]
            if bad:
                raise EngineError(f"limit processes failed (exit codes {bad})")
        events = backend.read_events()
        # Each process's warm-up ran before the start (it opened the connection): not timed.
        timed = sorted(e.now for e in events if e.outcome == "written")
        seconds = (timed[-1] - timed[0]) / 1000 if len(timed) > 1 else 0.0
        result = LimitResult(procs=procs, loops=loops, txns=len(timed), events=len(events), seconds=seconds)
        backend.drop_schema()
        return result
    finally:
        backend.close()
