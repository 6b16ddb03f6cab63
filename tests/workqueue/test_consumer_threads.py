"""The real consumer's threads: the executor that runs handlers (threads kept for the next task,
the bound, rejection) and the poller's wait for a permit (woken by a handler's finish, not by its
poll interval).

Event-driven: every wait that decides a verdict is on something the code under test signals;
the timeouts only bound a hang (the poll interval in the poller tests is an hour).
"""

from __future__ import annotations

import threading

import pytest

from impl.workqueue.consumer import ExecutorRejected, ThreadExecutor
from impl.workqueue.core import Invocation

from .conftest import FAST, Harness

HOUR_MS = 3_600_000


def test_a_thread_whose_task_returned_runs_the_next_one() -> None:
    ex = ThreadExecutor(2, keep_alive_s=60)
    threads: list[threading.Thread] = []
    ex.submit(lambda: threads.append(threading.current_thread()))
    assert ex.wait_idle(10)
    ex.submit(lambda: threads.append(threading.current_thread()))
    assert ex.wait_idle(10)
    assert len(threads) == 2 and threads[0] is threads[1]


def test_tasks_at_once_run_on_threads_of_their_own_within_the_bound() -> None:
    ex = ThreadExecutor(2, keep_alive_s=60)
    go = threading.Event()
    started = [threading.Event(), threading.Event()]
    threads: list[threading.Thread] = []

    def task(i: int) -> None:
        threads.append(threading.current_thread())
        started[i].set()
        go.wait(10)

    ex.submit(lambda: task(0))
    ex.submit(lambda: task(1))
    assert all(s.wait(10) for s in started)
    with pytest.raises(ExecutorRejected):
        ex.submit(lambda: None)  # two running: saturated
    assert ex.running == 2 and threads[0] is not threads[1]
    go.set()
    assert ex.wait_idle(10) and ex.running == 0
    ex.reject_all = True
    with pytest.raises(ExecutorRejected):
        ex.submit(lambda: None)


def test_a_failing_task_is_reported_and_the_executor_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    ex = ThreadExecutor(1, keep_alive_s=60)
    ran = threading.Event()

    def fail() -> None:
        raise RuntimeError("handler bug")

    ex.submit(fail)
    assert ex.wait_idle(10) and ex.running == 0
    ex.submit(ran.set)
    assert ran.wait(10)
    assert "an executor task failed" in caplog.text


def test_an_idle_thread_ends_after_keep_alive() -> None:
    ex = ThreadExecutor(1, keep_alive_s=0)
    threads: list[threading.Thread] = []
    ex.submit(lambda: threads.append(threading.current_thread()))
    assert ex.wait_idle(10)
    threads[0].join(10)
    assert not threads[0].is_alive()
    ran = threading.Event()
    ex.submit(ran.set)  # a new thread starts for the next task
    assert ran.wait(10)


@pytest.mark.redis
def test_a_finished_handler_wakes_the_poller_waiting_for_a_permit(harness: Harness) -> None:
    """One permit, two messages, a poll interval of an hour: the second message is taken as soon
    as the first one's handler gives its permit back (the poller slept out its interval before)."""
    harness.configure(settings=FAST.__class__(**{**FAST.__dict__, "concurrency": 1, "poll_interval_ms": HOUR_MS}))
    harness.offer("m0")
    harness.offer("m1")
    second = threading.Event()
    refused = threading.Event()  # the poller found the one permit in use

    def handler(inv: Invocation) -> bool:
        if inv.payload == "m0":
            assert refused.wait(30)  # held until the poller waits for its permit
        else:
            second.set()
        return True

    c = harness.consumer("a", handler, start=False)
    acquire = c.node.permits.try_acquire

    def try_acquire() -> bool:
        got = acquire()
        if not got:
            refused.set()
        return got

    c.node.permits.try_acquire = try_acquire  # type: ignore[method-assign]
    c.start()
    assert second.wait(60), "the poller slept out its poll interval with a permit free and work waiting"
    assert c.close(timeout_s=30)


@pytest.mark.redis
def test_close_wakes_a_poller_waiting_out_its_interval(harness: Harness) -> None:
    harness.configure(settings=FAST.__class__(**{**FAST.__dict__, "poll_interval_ms": HOUR_MS}))
    c = harness.consumer("a", lambda inv: True)
    assert c.close(timeout_s=30)
    assert not c._threads[0].is_alive(), "close returned with the poller still waiting"
