"""The in-memory twin: fakeredis running the same Lua scripts, on a virtual clock.

fakeredis 2.41 reads time in three ways: `_helpers.current_time()` (imported by name into its
stream and hash modules: idle times), `time.time()` in its socket layer (key expiry: guard and
state TTLs), in its stream model (`XADD *` ids) and in its `TIME` command (our scripts'
`last_touched`). `virtual_time(clock)` points all of them at a `VirtualClock` while a simulation
runs, so idle times, TTLs and traces follow simulated time and replay byte for byte. (Ids are
explicit in simulation anyway, see `QueueStore(explicit_ids=True)`.)

The patch is process-wide, so simulations must not run concurrently in threads of one process.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
import time as _real_time
import types
from collections.abc import Iterator
from typing import Any

import fakeredis

from impl.clock import VirtualClock

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
