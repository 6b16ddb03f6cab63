"""The in-memory twin (fakeredis on a virtual clock) answers like the real Redis server: the
same scripted steps record the same trace events on both, up to times and stream ids."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis

from impl.clock import VirtualClock
from impl.workqueue.command_store import CommandStore
from impl.workqueue.sim_redis import fake_client, virtual_time
from impl.workqueue.store import QueueStore

VT = 100


def _script(queue: QueueStore, cmds: CommandStore, now: Any, wait: Any) -> list[Any]:
    """Every step of both tables, including the refusals; returns the steps' answers."""
    out: list[Any] = []
    e1 = queue.offer("p", now(), "one", cmd="c1")
    e2 = queue.offer("p", now(), "two")
    out.append(queue.receive_new("a", now()))
    out.append(queue.receive_new("b", now()))
    out.append(queue.receive_new("b", now()))                 # nothing new: None, no event
    out.append(queue.reclaim("b", now(), VT))                 # nothing idle yet: None
    wait(VT + 20)
    out.append(queue.reclaim("b", now(), VT))                 # e1 moves to b
    out.append(queue.renew("a", now(), e1))                   # refused: b owns it
    out.append(queue.renew("b", now(), e1))
    out.append(queue.release("a", now(), e1))                 # refused
    queue.invoke_start("b", now(), e1)
    queue.invoke_end("b", now(), e1, "done")
    out.append(queue.ack("b", now(), e1))
    out.append(queue.ack("b", now(), e1))                     # already gone: a no-op, acked
    out.append(queue.release("b", now(), e2))
    out.append(cmds.submit_state("p", now(), "c1", 10_000))
    out.append(cmds.submit_state("p", now(), "c1", 10_000))
    out.append(cmds.guard_take("a", now(), "c1", "t1", VT))
    out.append(cmds.guard_take("b", now(), "c1", "t2", VT))
    out.append(cmds.put_if_owner("a", now(), "c1", "t1", "SUBMITTING", 10_000))
    out.append(cmds.external_call("a", now(), "c1", "t1"))
    out.append(cmds.cancel("b", now(), "c1", "t3", VT, 10_000))
    wait(VT + 20)                                             # the guard expires
    out.append(cmds.guard_renew("a", now(), "c1", "t1", VT))
    out.append(cmds.guard_take("b", now(), "c1", "t2", VT))
    out.append(cmds.put_if_owner("a", now(), "c1", "t1", "FAILED", 10_000))
    out.append(cmds.put_if_owner("b", now(), "c1", "t2", "SUCCEEDED", 10_000))
    out.append(cmds.guard_release("a", now(), "c1", "t1"))
    out.append(cmds.guard_release("b", now(), "c1", "t2"))
    out.append(cmds.cancel("b", now(), "c1", "t3", VT, 10_000))
    out.append(cmds.cancel("b", now(), "nope", "t4", VT, 10_000))
    return out


def _normalise(events: list[dict[str, Any]], answers: list[Any]) -> tuple[list[Any], list[Any]]:
    ids: dict[str, str] = {}

    def norm(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: ("T" if k in ("now", "last_touched") else
                        # An idle read is a duration on the real clock: keep only whether there was one.
                        ("I" if v is not None else None) if k == "idle_ms" else norm(v))
                    for k, v in value.items()}
        if isinstance(value, str) and value[:1].isdigit() and "-" in value:
            return ids.setdefault(value, f"id{len(ids)}")
        return value

    evs = [norm(e) for e in events]
    ans = [None if a is None else (norm(a.__dict__) if hasattr(a, "__dict__") else a) for a in answers]
    return evs, ans


@pytest.mark.redis
def test_twin_and_real_redis_record_the_same_events(redis_url: str, key_prefix: str) -> None:
    client = redis.Redis.from_url(redis_url)
    real_q = QueueStore(client, key_prefix, url=redis_url)
    real_c = CommandStore(client, key_prefix, url=redis_url)
    try:
        wall = lambda: int(time.time() * 1000)  # noqa: E731
        real_answers = _script(real_q, real_c, wall, lambda ms: time.sleep(ms / 1000))
        real = _normalise(real_q.events(), real_answers)
    finally:
        real_q.delete_keys()
        client.close()

    clock = VirtualClock(1_000_000)
    with virtual_time(clock):
        fake = fake_client()
        twin_q = QueueStore(fake, "twin", explicit_ids=True)
        twin_c = CommandStore(fake, "twin")
        twin_answers = _script(twin_q, twin_c, clock.now_ms, clock.advance)
        twin = _normalise(twin_q.events(), twin_answers)

    assert len(real[0]) == len(twin[0]) == 27, (len(real[0]), len(twin[0]))
    for i, (r, t) in enumerate(zip(real[0], twin[0])):
        assert r == t, f"event {i + 1} differs: real {r} twin {t}"
    assert real[1] == twin[1]


def test_renew_release_and_ack_log_the_idle_time_they_read_before_writing() -> None:
    """`args.idle_ms` is the entry's idle time before the step (the state after it has reset or
    deleted it), and null when the entry was not pending: never delivered, or already acked."""
    clock = VirtualClock(1_000_000)
    with virtual_time(clock):
        queue = QueueStore(fake_client(), "idle", explicit_ids=True)
        e = queue.offer("p", clock.now_ms(), "one")
        queue.release("a", clock.now_ms(), e)                 # not delivered yet: refused
        queue.receive_new("a", clock.now_ms())
        clock.advance(40)
        queue.renew("a", clock.now_ms(), e)
        queue.renew("a", clock.now_ms(), e)                   # the same ms again: reads 0
        clock.advance(25)
        queue.release("a", clock.now_ms(), e)
        clock.advance(VT + 5)                                 # past VT: read as is, not capped
        queue.ack("a", clock.now_ms(), e)
        queue.ack("a", clock.now_ms(), e)                     # already gone
        reads = [(ev["op"], ev["outcome"], ev["args"]["idle_ms"]) for ev in queue.events() if "args" in ev]
    assert reads == [("release", "refused", None), ("renew", "renewed", 40), ("renew", "renewed", 0),
                     ("release", "touched", 25), ("ack", "acked", VT + 5), ("ack", "acked", None)]
