"""The reference Redis Streams work queue and command layer (seed 002), recording traces.

You get at-least-once delivery with invocation-scoped leases from `Consumer` over a
`QueueStore`, and near-exactly-once command handling from `CommandClient` (submit, cancel) and
`CommandProcessor` (the handler of command messages). Every store step is one Lua script (the
`.lua` files beside this module) that commits the step and appends its trace event, so Redis
orders the trace across processes; `recording.export` writes it as NDJSON.

    >>> # store = QueueStore(redis.Redis(), "myapp")
    >>> # store.offer("producer", WallClock().now_ms(), "hello")
    >>> # Consumer(store, "worker-1", lambda inv: True, settings=Settings(), gates=Gates()).start()

The same steps run in a deterministic simulation (`sim.py`): fakeredis on a virtual clock,
with a seeded or Hypothesis-driven chooser picking each step. Modules, one concept each:
`store` / `command_store` (the steps), `core` (pure decisions), `node` (a consumer's steps),
`consumer` (threads), `commands` (the command layer), `sim_redis` / `sim` (simulation),
`analysis` (what a trace shows), `recording` (export), `runner` / `cli` (the command line).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Imported on first use (PEP 562): the stores import redis, a fifth of a second that every
# `leaseproof` command paid at start, the trace checker included, through the CLI's parser.
_HOME = {
    "CommandStore": "command_store", "CommandApp": "commands", "CommandClient": "commands",
    "CommandProcessor": "commands", "Gates": "config", "Settings": "config", "Consumer": "consumer",
    "ExecutorRejected": "consumer", "ThreadExecutor": "consumer", "Invocation": "core",
    "Delivery": "store", "QueueStore": "store",
}

__all__ = sorted(_HOME)

if TYPE_CHECKING:
    from impl.workqueue.command_store import CommandStore
    from impl.workqueue.commands import CommandApp, CommandClient, CommandProcessor
    from impl.workqueue.config import Gates, Settings
    from impl.workqueue.consumer import Consumer, ExecutorRejected, ThreadExecutor
    from impl.workqueue.core import Invocation
    from impl.workqueue.store import Delivery, QueueStore


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value
    return value
