"""The real consumer's threads: the poller's wait for a permit (woken by a handler's finish, not
by its poll interval).

Event-driven: every wait that decides a verdict is on something the code under test signals;
the timeouts only bound a hang (the poll interval in the poller tests is an hour).
"""

from __future__ import annotations

import threading

import pytest

from impl.workqueue.core import Invocation

from .conftest import FAST, Harness

HOUR_MS = 3_600_000


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
