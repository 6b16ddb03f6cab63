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


def _stamps(client, stream: str) -> dict[bytes, int]:
    """Each pending entry's PEL stamp (server ms), read when the server's clock is pinned."""
    lua = """
    local out = {}
    for _, row in ipairs(redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 100000)) do
      local t0, p, t1
      repeat
        t0 = redis.call('TIME')
        p = redis.call('XPENDING', KEYS[1], ARGV[1], row[1], row[1], 1)
        t1 = redis.call('TIME')
      until t0[1] == t1[1] and math.floor(tonumber(t0[2]) / 1000) == math.floor(tonumber(t1[2]) / 1000)
      out[#out + 1] = row[1]
      out[#out + 1] = tonumber(t1[1]) * 1000 + math.floor(tonumber(t1[2]) / 1000) - tonumber(p[1][3])
    end
    return out
    """
    flat = client.eval(lua, 1, stream, GROUP)
    return {flat[i]: int(flat[i + 1]) for i in range(0, len(flat), 2)}


def test_a_warp_moves_every_stamp_back_by_exactly_its_time_however_long_it_takes(client, key_prefix: str) -> None:
    # Thousands of pending entries: the warp's one script takes tens of milliseconds, as a server
    # descheduled inside it does. Written back with the idle time read at the script's XPENDING,
    # an entry aged in its last milliseconds came out that much younger than the warp meant.
    prefix = f"{key_prefix}-warp-many"
    queue = QueueStore(client, prefix, explicit_ids=True)
    warp = RedisTimeWarp(client, prefix, queue.stream, GROUP)
    try:
        warp.start(1_000_000)
        pipe = client.pipeline(transaction=False)
        for i in range(4000):
            pipe.xadd(queue.stream, {"payload": "x"}, id=f"1000000-{i + 1}")
        pipe.execute()
        client.xreadgroup(GROUP, "a", {queue.stream: ">"}, count=4000)
        before = _stamps(client, queue.stream)
        warp.advance(10_000)
        after = _stamps(client, queue.stream)
        off = {k: after[k] - (v - 10_000) for k, v in before.items() if abs(after[k] - (v - 10_000)) > 1}
        assert len(before) == 4000 and off == {}
    finally:
        queue.delete_keys()
