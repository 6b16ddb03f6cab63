"""Simulated time on a real Redis server (`sim_redis.RedisTimeWarp`): the scripts' clock moves,
pending entries age and TTLs run out by the warp alone, and a seeded simulation on the server
takes the twin's steps."""

from __future__ import annotations

import uuid

import pytest

from impl.workqueue.command_store import CommandStore
from impl.workqueue.sim import Server, SimConfig, for_real_server, seeded
from impl.workqueue.sim_redis import RedisTimeWarp, real_client
from impl.workqueue.store import GROUP, QueueStore

pytestmark = pytest.mark.redis
VT = 60_000  # far above the real milliseconds this test takes


@pytest.fixture
def client(redis_url: str):
    c = real_client(redis_url)
    yield c
    c.close()


def test_time_passes_for_the_scripts_the_pel_and_the_ttls(client, key_prefix: str) -> None:
    prefix = f"{key_prefix}-warp"
    queue = QueueStore(client, prefix, explicit_ids=True)
    cmds = CommandStore(client, prefix)
    warp = RedisTimeWarp(client, prefix, queue.stream, GROUP)
    try:
        warp.start(1_000_000)
        entry = queue.offer("p", 1_000_000, "job")
        assert queue.receive_new("a", 1_000_000) is not None
        assert cmds.guard_take("a", 1_000_000, "c1", "a-1", VT)
        assert queue.reclaim("b", 1_000_000, VT) is None  # idle for real milliseconds only

        warp.advance(VT - 5_000)
        assert queue.reclaim("b", 1_000_000 + VT - 5_000, VT) is None
        assert cmds.guard_owner("c1") == "a-1"

        warp.advance(5_000)
        got = queue.reclaim("b", 1_000_000 + VT, VT)
        assert got is not None and got.entry == entry and got.deliveries == 2  # the warp kept the count
        assert cmds.guard_owner("c1") is None  # its TTL ran out with the warp
        events = queue.events()
        assert events[0]["now"] - 1_000_000 < 5_000  # the scripts' clock started where we said
        assert events[-1]["now"] - 1_000_000 >= VT  # and moved with the warp
    finally:
        queue.delete_keys()


@pytest.mark.parametrize("system", ["workqueue", "command"])
def test_a_seeded_simulation_on_redis_takes_the_twins_steps(client, system: str, key_prefix: str) -> None:
    config = for_real_server(SimConfig(system=system, crashes=1, faults=2, lags=2, closes=1))
    for seed in range(4):
        twin = seeded(config, seed)
        twin.run()
        server = Server(client, f"{key_prefix}-{system}-{seed}-{uuid.uuid4().hex[:6]}")
        real = seeded(config, seed, server)
        try:
            real.run()
            steps = [(e["node"], e["op"], e["outcome"], e.get("entry"), e.get("cmd")) for e in real.events]
        finally:
            real.queue.delete_keys()
        assert steps == [(e["node"], e["op"], e["outcome"], e.get("entry"), e.get("cmd")) for e in twin.events]
        assert len(steps) > 20
