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

from impl.workqueue.command_store import CommandStore
from impl.workqueue.commands import CommandApp, CommandClient, CommandProcessor
from impl.workqueue.config import Gates, Settings
from impl.workqueue.consumer import Consumer, ExecutorRejected, ThreadExecutor
from impl.workqueue.core import Invocation
from impl.workqueue.store import Delivery, QueueStore

__all__ = [
    "CommandApp", "CommandClient", "CommandProcessor", "CommandStore", "Consumer", "Delivery",
    "ExecutorRejected", "Gates", "Invocation", "QueueStore", "Settings", "ThreadExecutor",
]
