"""The command layer's own guards on the twin (fakeredis, virtual clock): a guard TTL that a
renewal cannot keep alive is refused, and an external call is recorded only while its attempt
owns the guard, with the TTL each guard step writes logged."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from impl.clock import VirtualClock
from impl.workqueue.analysis import command_order_problems
from impl.workqueue.command_store import CommandStore
from impl.workqueue.commands import CommandProcessor, check_guard_ttl
from impl.workqueue.config import Gates
from impl.workqueue.core import Invocation
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


def test_a_put_is_refused_to_a_stale_attempt_of_the_node_that_holds_the_guard() -> None:
    """A held guard is not taken again, and the owner check compares attempts, not nodes: a
    node's attempt that lost its guard to a newer attempt of the same node (a redelivery after
    its lease lapsed) writes nothing."""
    clock = VirtualClock(1_000)
    with virtual_time(clock):
        store = CommandStore(fake_client(), "t")
        store.submit_state("client", clock.now_ms(), "c1", 10_000)
        assert store.guard_take("n1", clock.now_ms(), "c1", "n1-1", 300)
        assert not store.guard_take("n1", clock.now_ms(), "c1", "n1-2", 300)  # held: no second owner
        clock.advance(301)  # n1-1's guard lapses; the same node's next attempt takes it
        assert store.guard_take("n1", clock.now_ms(), "c1", "n1-2", 300)
        assert store.put_if_owner("n1", clock.now_ms(), "c1", "n1-2", "SUBMITTING", 10_000)
        assert not store.put_if_owner("n1", clock.now_ms(), "c1", "n1-1", "FAILED", 10_000)
        events = store.events()
    puts = [(e["args"]["attempt"], e["outcome"], e["state"]["command"]["status"]) for e in events if e["op"] == "put_if_owner"]
    assert puts == [("n1-2", "written", "SUBMITTING"), ("n1-1", "refused", "SUBMITTING")]


class _Answers:
    def call(self, cmd: str, payload: str) -> str:
        return "succeeded"

    def check(self, cmd: str, payload: str) -> str:
        return "succeeded"


class _RenewsRightAfterARefusal(CommandStore):
    """A store whose refused put lets the heartbeat thread renew at once, before the attempt
    has seen the refusal: the moment a loaded two-process run hit (`guard_renew` logged after
    a refused put)."""

    renewers: list  # the attempt's renewers, as the heartbeat holds them
    threads: list[threading.Thread]

    def put_if_owner(self, *args, **kwargs) -> bool:  # type: ignore[no-untyped-def]
        ok = super().put_if_owner(*args, **kwargs)
        if not ok:
            heartbeat = threading.Thread(target=lambda: [renew() for renew in self.renewers])
            heartbeat.start()
            # With the fix the renewal waits for the attempt's end (and then renews nothing),
            # so this join times out; without it the renewal is logged here, after the refusal.
            heartbeat.join(timeout=2)
            self.threads.append(heartbeat)
        return ok


def _delivery_of_c1(store: CommandStore, clock: VirtualClock) -> tuple[CommandProcessor, Invocation]:
    """Command c1 submitted, and node n1's processor with one delivery of it (not yet started)."""
    store.submit_state("client", clock.now_ms(), "c1", 10_000)
    return CommandProcessor(store, "n1", clock, SIM_SETTINGS, Gates(), _Answers()), Invocation("1-0", "p", 1, "new", "c1")


def test_no_guard_renewal_comes_after_a_refused_put() -> None:
    clock = VirtualClock(1_000)
    with virtual_time(clock):
        store = _RenewsRightAfterARefusal(fake_client(), "t")
        store.threads = []
        proc, inv = _delivery_of_c1(store, clock)
        steps = proc.steps(inv)
        next(steps)  # the guard is taken, its renewer registered
        store.renewers = list(inv.renewers)
        clock.advance(SIM_SETTINGS.guard_ttl_ms + 1)  # the guard lapses; another attempt takes it
        assert store.guard_take("n2", clock.now_ms(), "c1", "n2-1", SIM_SETTINGS.guard_ttl_ms)
        for _ in steps:
            pass
        for t in store.threads:
            t.join()
        ops = [(e["op"], e["outcome"]) for e in store.events() if e.get("args", {}).get("attempt") == "n1-1"]
    assert store.threads and ops == [("guard_take", "taken"), ("put_if_owner", "refused")], ops


def test_no_write_comes_after_the_heartbeat_found_the_guard_lost() -> None:
    """The attempt decides to write, then (before its write reaches the store) the heartbeat
    finds its guard taken over and the renewal lost: the write must not reach the store (a
    two-process run under load logged put_if_owner after guard_renew lost)."""
    clock = VirtualClock(1_000)
    with virtual_time(clock):
        store = CommandStore(fake_client(), "t")
        proc, inv = _delivery_of_c1(store, clock)

        def heartbeat_loses_the_guard(status: str) -> None:
            clock.advance(SIM_SETTINGS.guard_ttl_ms + 1)  # the guard lapses; another attempt takes it
            assert store.guard_take("n2", clock.now_ms(), "c1", "n2-1", SIM_SETTINGS.guard_ttl_ms)
            for renew in list(inv.renewers):
                renew()  # the heartbeat's renewal, in the moment before the write

        proc.before_write = heartbeat_loses_the_guard
        for _ in proc.steps(inv):
            pass
        ops = [(e["op"], e["outcome"]) for e in store.events() if e.get("args", {}).get("attempt") == "n1-1"]
    assert ops == [("guard_take", "taken"), ("guard_renew", "lost")], ops
    assert command_order_problems(store.events()) == []


def test_no_guard_renewal_comes_after_the_attempt_released_its_guard() -> None:
    """The heartbeat takes its list of renewers, then the handler ends and releases the guard,
    then the heartbeat runs what it took: that renewal must not reach the store (a two-process
    run logged guard_renew after guard_release, which TraceCommandQueue rejects)."""
    clock = VirtualClock(1_000)
    with virtual_time(clock):
        store = CommandStore(fake_client(), "t")
        proc, inv = _delivery_of_c1(store, clock)
        steps = proc.steps(inv)
        next(steps)  # the guard is taken, its renewer registered
        taken = list(inv.renewers)  # what a heartbeat about to renew holds
        assert len(taken) == 1
        for _ in steps:
            pass
        for renew in taken:
            renew()
        ops = [e["op"] for e in store.events()]
    assert ops[-1] == "guard_release" and "guard_renew" not in ops, ops
