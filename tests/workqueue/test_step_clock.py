"""A step's times stay exact when the server is descheduled inside its script.

A loaded machine stops Redis for milliseconds at a time, also in the middle of a script: between
its start and the write that stamps the entry's PEL record, or between an XPENDING and the TIME
read after it. The trace must still log every PEL stamp as the server keeps it, and a step that
stamps the record at that stamp (`prelude.lua`), or the next step reads another stamp than the
trace logged and TraceWorkQueue rejects the line (found in the queue's benchmark under load).

The twin stands in for the server: the descheduling is a virtual clock moved forward inside one
stream command (fakeredis' stream model), so each test is exact and needs no real server.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any
from unittest import mock

from fakeredis.model._stream import StreamGroup

from impl.clock import VirtualClock
from impl.workqueue.sim_redis import fake_client, virtual_time
from impl.workqueue.store import QueueStore

START = 1_000_000
VT = 100


@contextlib.contextmanager
def stalls(clock: VirtualClock, method: str, ms: int, *, after: bool = False) -> Iterator[None]:
    """The server loses `ms` before (or `after`) the first call of `StreamGroup.<method>` in the
    block, as a descheduled server would; later calls run on time."""
    original = getattr(StreamGroup, method)
    fired = []

    def stalled(self: StreamGroup, *args: Any, **kwargs: Any) -> Any:
        if not fired and not after:
            clock.advance(ms)
        out = original(self, *args, **kwargs)
        if not fired and after:
            clock.advance(ms)
        fired.append(True)
        return out

    with mock.patch.object(StreamGroup, method, stalled):
        yield
    assert fired, f"StreamGroup.{method} was never called"


def entry_of(ev: dict[str, Any]) -> dict[str, Any]:
    return ev["state"]["entry"]


def test_a_delivery_stamped_after_its_script_began_is_logged_at_its_stamp() -> None:
    clock = VirtualClock(START)
    with virtual_time(clock):
        queue = QueueStore(fake_client(), "stall", explicit_ids=True)
        e = queue.offer("p", clock.now_ms(), "one")
        with stalls(clock, "group_read", 5):  # between the script's start and XREADGROUP
            queue.receive_new("a", clock.now_ms())
        queue.invoke_start("a", clock.now_ms(), e)
        offer, delivered, started = queue.events()
    assert entry_of(delivered)["last_touched"] == delivered["now"] == START + 5
    assert entry_of(started)["last_touched"] == START + 5  # what the next step reads
    assert offer["now"] <= delivered["now"] <= started["now"]


def test_an_idle_time_read_before_a_stall_gives_the_exact_stamp() -> None:
    clock = VirtualClock(START)
    with virtual_time(clock):
        queue = QueueStore(fake_client(), "stall", explicit_ids=True)
        e = queue.offer("p", clock.now_ms(), "one")
        queue.receive_new("a", clock.now_ms())
        clock.advance(7)
        with stalls(clock, "pending", 3, after=True):  # between XPENDING and the TIME after it
            queue.invoke_start("a", clock.now_ms(), e)
        _, delivered, started = queue.events()
    assert entry_of(delivered)["last_touched"] == START
    assert entry_of(started)["last_touched"] == START
    assert started["now"] == START + 7  # the script's start: it stamps nothing


def test_a_renewal_stalled_before_its_claim_is_logged_at_its_new_stamp() -> None:
    """The renewal's `now` is the stamp its XCLAIM wrote; its idle read is that of the replaced
    record as of then, so the spec's idle before the step (now - the delivery's stamp) agrees."""
    clock = VirtualClock(START)
    with virtual_time(clock):
        queue = QueueStore(fake_client(), "stall", explicit_ids=True)
        e = queue.offer("p", clock.now_ms(), "one")
        queue.receive_new("a", clock.now_ms())
        clock.advance(40)
        with stalls(clock, "claim", 4):  # between the owner check and XCLAIM
            queue.renew("a", clock.now_ms(), e)
        queue.invoke_end("a", clock.now_ms(), e, "done")
        clock.advance(10)
        queue.ack("a", clock.now_ms(), e)
        _, delivered, renewed, ended, acked = queue.events()
    assert renewed["outcome"] == "renewed"
    assert renewed["now"] == entry_of(renewed)["last_touched"] == START + 44
    assert renewed["args"]["idle_ms"] == renewed["now"] - entry_of(delivered)["last_touched"] == 44
    assert entry_of(ended)["last_touched"] == START + 44
    assert acked["args"]["idle_ms"] == acked["now"] - (START + 44) == 10


def test_without_a_stall_the_times_are_those_of_the_script_start() -> None:
    """The common case is unchanged: every step is logged at its script's start."""
    clock = VirtualClock(START)
    with virtual_time(clock):
        queue = QueueStore(fake_client(), "calm", explicit_ids=True)
        e = queue.offer("p", clock.now_ms(), "one")
        clock.advance(3)
        queue.receive_new("a", clock.now_ms())
        clock.advance(20)
        queue.renew("a", clock.now_ms(), e)
        clock.advance(VT + 1)
        queue.reclaim("b", clock.now_ms(), VT)
        events = queue.events()
    assert [ev["now"] for ev in events] == [START, START + 3, START + 23, START + 24 + VT]
    assert [entry_of(ev)["last_touched"] for ev in events[1:]] == [START + 3, START + 23, START + 24 + VT]
    assert events[2]["args"]["idle_ms"] == 20
