"""The seed's adversarial cases for the command layer, on the real Redis server, each with its
guard on (must hold) and off (the bad outcome must happen)."""

from __future__ import annotations

import threading
import time

import pytest

from impl.workqueue import analysis
from impl.workqueue.config import Gates
from impl.workqueue.core import Invocation
from impl.workqueue.errors import StoreFault, UnknownCommand

from .apps import SlowApp
from .conftest import Harness, wait_until

pytestmark = pytest.mark.redis
GUARD = pytest.mark.parametrize("guarded", [True, False], ids=["guard-on", "guard-off"])


def gates(guarded: bool, *names: str) -> Gates:
    return Gates() if guarded else Gates().off(*names)


def command_consumer(h: Harness, name: str, app: SlowApp):  # type: ignore[no-untyped-def]
    proc = h.processor(name, app)
    return h.consumer(name, proc.handle), proc


@GUARD
def test_two_instances_duplicate_submission_and_a_long_handler(harness: Harness, guarded: bool) -> None:
    """Two instances, the same command submitted twice (two entries), an external call held
    longer than the VT: the attempt guard keeps it to one external call, and both entries get
    acked.

    Event-driven: the call is held until the test has seen what decides the case (the second
    entry's attempt finding the guard busy, or a second call running beside the first), so a
    loaded machine that starts b late cannot change the verdict."""
    harness.configure(gates=gates(guarded, "attempt_guard"))
    client = harness.command_client()
    assert client.submit("c1", "p") is True
    assert client.submit("c1", "p") is False  # same id: state exists, but offered again
    app = SlowApp(hold=threading.Event())
    command_consumer(harness, "a", app)
    command_consumer(harness, "b", app)

    def busy() -> bool:
        return any(e["op"] == "guard_take" and e["outcome"] == "busy" for e in harness.events())

    try:
        shown = wait_until(busy if guarded else (lambda: app.peak >= 2), 30.0)
    finally:
        app.hold.set()
    assert shown, ("no attempt found the guard busy" if guarded else "no second call ran beside the first", harness.events()[-3:])
    assert wait_until(lambda: harness.queue.stream_length() == 0, 30.0), harness.events()[-3:]
    assert harness.cstore.status("c1") == "SUCCEEDED"
    assert harness.duplicates() == 0  # the two entries are different entries
    if guarded:
        assert app.calls["c1"] == 1 and harness.cstore.external_calls("c1") == 1 and app.peak == 1
    else:
        assert app.calls["c1"] == 2 and app.peak == 2  # the external system was called twice at once


@GUARD
def test_stale_owner_state_write_refused(harness: Harness, guarded: bool) -> None:
    """a's guard expires while it is paused just before its final write; b takes the guard and
    finishes the command SUCCEEDED. a's late write (FAILED) must be refused."""
    harness.configure(gates=gates(guarded, "atomic_put_if_owner"))
    harness.check_order = False  # deliveries by hand, with no invocations (trace not kept)
    client = harness.command_client()
    client.submit("c1", "p")
    delivery = harness.queue.receive_new("a", harness.clock.now_ms())
    assert delivery is not None
    inv = Invocation(delivery.entry, delivery.payload, delivery.deliveries, delivery.source, delivery.cmd)
    proc_a = harness.processor("a", SlowApp(answer="failed"))
    proc_b = harness.processor("b", SlowApp(answer="succeeded"))

    def pause_then_peer_takes_over(status: str) -> None:
        if status not in ("SUCCEEDED", "FAILED"):
            return
        proc_a.before_write = None
        time.sleep(0.25)  # past the 200 ms guard TTL, no heartbeat: a is now a stale owner
        assert proc_b.handle(Invocation(delivery.entry, "p", 2, "reclaim", "c1")) is True

    proc_a.before_write = pause_then_peer_takes_over
    proc_a.handle(inv)
    changed = analysis.terminal_changes(harness.events())
    a_writes = [e for e in harness.events() if e["op"] == "put_if_owner" and e["node"] == "a"
                and e["args"]["status"] == "FAILED"]
    if guarded:
        assert harness.cstore.status("c1") == "SUCCEEDED" and changed == []
        assert a_writes[-1]["outcome"] == "refused"
    else:
        assert harness.cstore.status("c1") == "FAILED" and changed == ["c1"]  # terminal overwritten


@GUARD
def test_create_offer_gap_repaired_by_resubmission(harness: Harness, guarded: bool) -> None:
    """The state is written but the offer fails (the submitter crashes between them); submitting
    the same id again must offer again, and the command completes."""
    harness.configure(gates=gates(guarded, "submit_always_offers"))
    client = harness.command_client()
    harness.queue.faults.fail("offer", "client")
    with pytest.raises(StoreFault):
        client.submit("c1", "p")
    assert harness.cstore.status("c1") == "PENDING" and harness.queue.stream_length() == 0
    assert client.submit("c1", "p") is False  # exists: the repair
    app = SlowApp()
    command_consumer(harness, "a", app)
    done = wait_until(lambda: harness.cstore.status("c1") == "SUCCEEDED", 1.0)
    assert done == guarded
    if not guarded:
        assert harness.queue.stream_length() == 0 and app.calls["c1"] == 0  # stranded PENDING


@GUARD
def test_cancellation_refused_while_a_handler_holds_the_guard(harness: Harness, guarded: bool) -> None:
    """A cancel while the external call runs must be refused (`busy`); the terminal state the
    handler writes then never changes. A cancel of a waiting command wins; unknown ids are an
    error."""
    harness.configure(gates=gates(guarded, "cancel_takes_guard"))
    harness.features.append("cancellation")
    client = harness.command_client()
    client.submit("c1", "p")
    app = SlowApp(delay_s=0.4)
    command_consumer(harness, "a", app)
    assert wait_until(lambda: app.running == 1, 1.0)
    outcome = client.cancel("c1")
    assert wait_until(lambda: harness.queue.stream_length() == 0, 2.0)
    changed = analysis.terminal_changes(harness.events())
    if guarded:
        assert outcome == "busy" and harness.cstore.status("c1") == "SUCCEEDED" and changed == []
        assert client.cancel("c1") == "terminal"
    else:
        assert outcome == "cancelled" and changed == ["c1"]  # CANCELLED, then overwritten
    with pytest.raises(UnknownCommand):
        client.cancel("never-submitted")


def test_cancelled_before_delivery_is_acked_without_an_external_call(harness: Harness) -> None:
    """A command cancelled while PENDING is acked on delivery, and the external system is never
    called; a later duplicate submission is acked the same way."""
    harness.features.append("cancellation")
    client = harness.command_client()
    client.submit("c1", "p")
    assert client.cancel("c1") == "cancelled"
    client.submit("c1", "p")
    app = SlowApp()
    command_consumer(harness, "a", app)
    assert wait_until(lambda: harness.queue.stream_length() == 0, 1.0)
    assert harness.cstore.status("c1") == "CANCELLED" and app.calls["c1"] == 0


def test_a_crashed_attempt_in_submitting_is_retried_with_the_same_key(harness: Harness) -> None:
    """An attempt that wrote SUBMITTING and then threw leaves the command SUBMITTING; the next
    delivery calls the external system again with the same idempotency key (the command id)."""
    harness.features.append("handler_throws")
    client = harness.command_client()
    client.submit("c1", "p")

    class FlakyApp(SlowApp):
        def call(self, cmd: str, payload: str) -> str:
            super().call(cmd, payload)
            if self.calls[cmd] == 1:
                raise ConnectionError("external system hung up")
            return "succeeded"

    app = FlakyApp()
    command_consumer(harness, "a", app)
    assert wait_until(lambda: harness.cstore.status("c1") == "SUCCEEDED", 2.0)
    calls = [e for e in harness.events() if e["op"] == "external_call"]
    assert [e["args"]["key"] for e in calls] == ["c1", "c1"]
    assert [e["state"]["command"]["status"] for e in calls] == ["SUBMITTING", "SUBMITTING"]
