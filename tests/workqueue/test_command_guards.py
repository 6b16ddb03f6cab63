"""The command layer's own guards on the twin (fakeredis, virtual clock): a guard TTL that a
renewal cannot keep alive is refused, and an external call is recorded only while its attempt
owns the guard, with the TTL each guard step writes logged."""

from __future__ import annotations

from dataclasses import replace

import pytest

from impl.clock import VirtualClock
from impl.workqueue.command_store import CommandStore
from impl.workqueue.commands import CommandProcessor, check_guard_ttl
from impl.workqueue.config import Gates
from impl.workqueue.errors import BadSettings
from impl.workqueue.sim import SIM_SETTINGS
from impl.workqueue.sim_redis import fake_client, virtual_time


@pytest.mark.parametrize("ttl", [50, 100])
def test_a_guard_ttl_not_above_the_heartbeat_is_refused(ttl: int) -> None:
    bad = replace(SIM_SETTINGS, guard_ttl_ms=ttl)  # heartbeat every 100 ms
    with pytest.raises(BadSettings, match="guard_ttl_ms"):
        check_guard_ttl(bad)
    with pytest.raises(BadSettings):
        CommandProcessor(None, "n1", VirtualClock(0), bad, Gates(), app=None)  # type: ignore[arg-type]
    check_guard_ttl(replace(SIM_SETTINGS, guard_ttl_ms=101))


def test_an_external_call_is_recorded_only_while_the_attempt_owns_the_guard() -> None:
    clock = VirtualClock(1_000)
    with virtual_time(clock):
        store = CommandStore(fake_client(), "t")
        store.submit_state("client", clock.now_ms(), "c1", 10_000)
        assert store.guard_take("n1", clock.now_ms(), "c1", "a1", 300)
        assert store.external_call("n1", clock.now_ms(), "c1", "a1") == 1
        assert store.external_call("n2", clock.now_ms(), "c1", "a2") == -1  # not the owner
        clock.advance(301)  # a1's guard lapses
        assert store.external_call("n1", clock.now_ms(), "c1", "a1") == -1
        assert store.external_call("n1", clock.now_ms(), "c1", "a1", checked=False) == 2  # no guard to check
        assert store.external_calls("c1") == 2
        events = store.events()
    calls = [(e["args"]["attempt"], e["outcome"], e["state"]["external_calls"]) for e in events if e["op"] == "external_call"]
    assert calls == [("a1", "called", 1), ("a2", "refused", 1), ("a1", "refused", 1), ("a1", "called", 2)]
    take = next(e for e in events if e["op"] == "guard_take")
    assert take["args"] == {"attempt": "a1", "ttl_ms": 300}
