"""Simulated time on the queue's stores: the in-memory twin (fakeredis running the same Lua
scripts on a virtual clock) and a real Redis server whose clock is warped forward.

fakeredis 2.41 reads time in three ways: `_helpers.current_time()` (imported by name into its
stream and hash modules: idle times), `time.time()` in its socket layer (key expiry: guard and
state TTLs), in its stream model (`XADD *` ids) and in its `TIME` command (our scripts'
`last_touched`). `virtual_time(clock)` points all of them at a `VirtualClock` while a simulation
runs, so idle times, TTLs and traces follow simulated time and replay byte for byte. (Ids are
explicit in simulation anyway, see `QueueStore(explicit_ids=True)`.)

The patch is process-wide, so simulations must not run concurrently in threads of one process.

A real server's clock cannot be set, so `RedisTimeWarp` moves a simulation's time forward the
other way round: it raises the prefix's clock offset (which every script adds to `TIME`, see
`prelude.lua`) and ages everything the server times by the same amount: each pending entry's
idle time (`XCLAIM ... IDLE`, to its own owner, `JUSTID`: the delivery count is kept) and each
key's TTL. The real milliseconds that pass between steps still count, so a simulation on a real
server uses durations far above them (`for_real_server`): its decisions are those of the twin,
its traces' clocks differ from the twin's by those milliseconds.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
import time as _real_time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fakeredis

import redis

from impl.clock import VirtualClock
from impl.workqueue.store import clock_offset_key

# (module, attribute) pairs that hold fakeredis' view of the clock.
_CURRENT_TIME_USERS = (
    "fakeredis._helpers",
    "fakeredis.model._stream",
    "fakeredis.model._hash",
    "fakeredis.model._expiring_members_set",
    "fakeredis.commands_mixins.streams_mixin",
    "fakeredis.commands_mixins.hash_mixin",
)
_TIME_MODULE_USERS = (
    "fakeredis._socket._base",
    "fakeredis.model._stream",
    "fakeredis.commands_mixins.server_mixin",
)

_lock = threading.Lock()


def _time_shim(clock: VirtualClock) -> types.SimpleNamespace:
    """A stand-in for the `time` module whose `time()` is the virtual clock, in seconds."""
    return types.SimpleNamespace(
        time=lambda: clock.now_ms() / 1000.0,
        sleep=_real_time.sleep,
        monotonic=_real_time.monotonic,
        perf_counter=_real_time.perf_counter,
        time_ns=lambda: clock.now_ms() * 1_000_000,
    )


@contextlib.contextmanager
def virtual_time(clock: VirtualClock) -> Iterator[None]:
    """Make fakeredis read `clock` for every time it uses, until the block ends.

    >>> clock = VirtualClock(5_000)
    >>> with virtual_time(clock):
    ...     r = fakeredis.FakeRedis()
    ...     int(r.time()[0])
    5
    """
    if not _lock.acquire(blocking=False):
        raise RuntimeError("virtual_time is already active: simulations cannot run concurrently in one process")
    saved: list[tuple[Any, str, Any]] = []
    try:
        shim = _time_shim(clock)
        for name in _CURRENT_TIME_USERS:
            mod = importlib.import_module(name)
            saved.append((mod, "current_time", mod.current_time))
            mod.current_time = clock.now_ms  # type: ignore[attr-defined]
        for name in _TIME_MODULE_USERS:
            mod = importlib.import_module(name)
            saved.append((mod, "time", mod.time))
            mod.time = shim  # type: ignore[attr-defined]
        yield
    finally:
        for mod, attr, value in reversed(saved):
            setattr(mod, attr, value)
        _lock.release()


def fake_client() -> Any:
    """A fresh, private fakeredis server and client (Lua enabled through lupa)."""
    return fakeredis.FakeRedis(server=fakeredis.FakeServer(), decode_responses=False)


_WARP_LUA = (Path(__file__).parent / "time_warp.lua").read_text(encoding="utf-8")


class RedisTimeWarp:
    """Simulated time on a real Redis server, for the keys under one prefix (see the module
    docstring). `start(now_ms)` sets the offset so that the scripts' clock reads `now_ms`;
    `advance(ms)` moves it and ages the PEL of `stream` and every TTL under the prefix."""

    def __init__(self, client: Any, prefix: str, stream: str, group: str) -> None:
        self.client = client
        self.prefix = prefix
        self.stream = stream
        self.group = group
        self.key = clock_offset_key(prefix)
        self._warp = client.register_script(_WARP_LUA)

    def server_ms(self) -> int:
        """The server's own clock, in ms."""
        secs, micros = self.client.time()
        return int(secs) * 1000 + int(micros) // 1000

    def start(self, now_ms: int) -> None:
        """Make the scripts' clock read `now_ms` from here on (plus the real time that passes)."""
        self.client.set(self.key, now_ms - self.server_ms())

    def advance(self, ms: int) -> None:
        """Move the scripts' clock forward by `ms`, ageing pending entries and TTLs alike, in
        one script (`time_warp.lua`)."""
        if ms <= 0:
            return
        self._warp(keys=[self.key, self.stream], args=[self.group, ms, f"{self.prefix}:*"], client=self.client)


def real_client(url: str) -> Any:
    """A client of the Redis server at `url` (bytes replies, as the twin's)."""
    return redis.Redis.from_url(url, decode_responses=False, socket_timeout=10)
