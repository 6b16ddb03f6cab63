"""Production mode's driver (`threads.py`): the node's fibers on a small pool of reused threads.

No test waits for time to pass: each waits for an event the code under test sets (with a
generous bound that only a hang reaches).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from impl.clock import WallClock
from impl.engine.backend import MemoryBackend
from impl.engine.effects import Call, Sleep
from impl.engine.faults import Stalls
from impl.engine.model import Settings
from impl.engine.node import Node
from impl.engine.store import Store
from impl.engine.threads import NodeRuntime

HANG_S = 30  # only a hung runtime waits this long


def _node() -> Node:
    return Node("n1", Store(MemoryBackend(), lease_ms=60_000), WallClock(),
                settings=Settings(lease_ms=60_000, renew_interval_ms=20_000))


@pytest.fixture
def node() -> Node:
    return _node()


@contextmanager
def _runtime(node: Node, workers: int, stalls: Stalls | None = None) -> Iterator[NodeRuntime]:
    rt = NodeRuntime(node, stalls, workers=workers)
    rt.start()
    try:
        yield rt
    finally:
        rt.stop()


def _done(box: dict, event: threading.Event) -> None:
    assert event.wait(HANG_S), f"{box.get('name')} did not finish"


def test_many_fibers_run_on_the_pool_s_threads_in_order_and_return_their_values(node: Node) -> None:
    seen: list[str] = []
    finished = threading.Event()
    left = [40]
    lock = threading.Lock()

    def fiber(i: int):  # type: ignore[no-untyped-def]
        a = yield Call(lambda: threading.current_thread().name)
        b = yield Call(lambda: i * 2)
        with lock:
            seen.append(a)
            left[0] -= 1
            if left[0] == 0:
                finished.set()
        return b

    with _runtime(node, workers=3) as rt:
        boxes = [rt.submit(fiber(i), f"f{i}") for i in range(40)]
        _done({"name": "the 40 fibers"}, finished)
    assert [b["value"] for b in boxes] == [2 * i for i in range(40)]
    assert len(set(seen)) <= 3 and all(name.startswith("n1-worker") for name in seen)


def test_a_sleeping_fiber_holds_no_thread(node: Node) -> None:
    went_to_sleep, other = threading.Event(), threading.Event()

    def sleeper():  # type: ignore[no-untyped-def]
        yield Call(went_to_sleep.set)
        yield Sleep(3_600_000)

    def quick():  # type: ignore[no-untyped-def]
        yield Call(other.set)

    with _runtime(node, workers=1) as rt:
        asleep = rt.submit(sleeper(), "sleeper")
        assert went_to_sleep.wait(HANG_S)
        rt.submit(quick(), "quick")
        _done({"name": "quick"}, other)  # the one worker was free: the sleeper is parked
    assert asleep["done"] and asleep.get("stopped")  # stop ended the sleeper where it slept


def test_a_stall_parks_the_fiber_before_its_call_and_the_node_goes_on(node: Node) -> None:
    called, other = threading.Event(), threading.Event()

    def finisher():  # type: ignore[no-untyped-def]
        yield Call(called.set, "remove", "wf1")

    def quick():  # type: ignore[no-untyped-def]
        yield Call(other.set)

    with _runtime(node, workers=1, stalls=Stalls({"wf1": 3_600_000})) as rt:
        stalled = rt.submit(finisher(), "finisher")
        rt.submit(quick(), "quick")
        _done({"name": "quick"}, other)
        assert not called.is_set()  # still stalled before its call
    assert stalled.get("stopped") and not called.is_set()


def record_run_starts(node: Node, order: list[str]) -> None:
    """Append "run" to `order` at each run_start of the node's store."""
    run_start = node.store.run_start

    def recording_run_start(*args, **kwargs):  # type: ignore[no-untyped-def]
        order.append("run")
        return run_start(*args, **kwargs)

    node.store.run_start = recording_run_start  # type: ignore[method-assign]


def test_a_copy_in_the_queue_runs_before_the_callers_waiting_for_a_worker(node: Node) -> None:
    """Both wait for the one worker; the copy's lease is running, so its run goes first."""
    order: list[str] = []
    busy, release, caller_done = threading.Event(), threading.Event(), threading.Event()
    record_run_starts(node, order)

    def blocker():  # type: ignore[no-untyped-def]
        yield Call(lambda: (busy.set(), release.wait(HANG_S)))

    def caller():  # type: ignore[no-untyped-def]
        yield Call(lambda: (order.append("caller"), caller_done.set()))

    from impl.engine.effects import drive

    with _runtime(node, workers=1) as rt:
        rt.submit(blocker(), "blocker")
        assert busy.wait(HANG_S)
        rt.submit(caller(), "caller")
        drive(node.start("wf1", "approval", {"approved": True}))  # queues a copy on n1
        release.set()
        _done({"name": "caller"}, caller_done)
    assert order == ["run", "caller"]


def test_a_failing_fiber_reports_its_error_and_the_worker_goes_on(node: Node) -> None:
    after = threading.Event()

    def failing():  # type: ignore[no-untyped-def]
        yield Call(lambda: 1 / 0)

    def quick():  # type: ignore[no-untyped-def]
        yield Call(after.set)

    with _runtime(node, workers=1) as rt:
        box = rt.submit(failing(), "failing")
        rt.submit(quick(), "quick")
        _done({"name": "quick"}, after)
        assert isinstance(box["error"], ZeroDivisionError) and box["done"]
        assert [type(e) for e in rt.errors] == [ZeroDivisionError]


def test_a_node_runs_one_worker_per_write_its_store_runs_at_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """SQLite runs one writer at a time: more workers only hand its lock between threads."""
    from impl.engine.sqlbackend import MysqlBackend, SqliteBackend
    from impl.engine.threads import DEFAULT_WORKERS, workers_for

    sqlite = SqliteBackend(str(tmp_path / "e.db"))
    try:
        assert workers_for(sqlite) == 1
    finally:
        sqlite.close()
    assert workers_for(MysqlBackend("127.0.0.1", 3306, "root", "", "test")) == DEFAULT_WORKERS  # no connection made
    assert workers_for(MemoryBackend()) == DEFAULT_WORKERS


def test_a_fiber_on_no_lease_lets_a_copy_queued_meanwhile_run_before_its_next_call(node: Node) -> None:
    """With one worker, a fetch loop draining a backlog kept it until all were leased; a
    copy's lease runs while it waits, so the copy goes first, then the fiber goes on."""
    order: list[str] = []
    finished = threading.Event()
    record_run_starts(node, order)
    from impl.engine.effects import drive

    def caller():  # type: ignore[no-untyped-def]
        yield Call(lambda: (order.append("call 1"), drive(node.start("wf1", "approval", {"approved": True}))))
        yield Call(lambda: order.append("call 2"))
        finished.set()

    with _runtime(node, workers=1) as rt:
        rt.submit(caller(), "caller")
        _done({"name": "caller"}, finished)
    assert order == ["call 1", "run", "call 2"]
