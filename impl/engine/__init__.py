"""The reference workflow engine: a lease-based scheduler on SQLite, MySQL or memory.

Nodes share one store; each node has an in-memory execution queue, a fetch loop, a taker that
runs workflow handlers with lease renewal, and the start/signal/result API. Every store
transaction records one trace event in the same transaction (`store.py`), so the store orders
the trace even across processes. `sim.py` runs nodes step by step under a seeded scheduler and
a virtual clock; `threads.py` runs the same code with threads and the wall clock.
"""

from impl.engine.backend import MemoryBackend
from impl.engine.effects import drive
from impl.engine.errors import (
    EngineError,
    OptimisticLockError,
    ResultTimeout,
    ResultUnavailable,
    SignalConflict,
    UnknownWorkflow,
)
from impl.engine.model import Gates, Scheduled, ScheduleOutcome, ScheduleRequest, Settings, Task
from impl.engine.node import Handle, Node, WorkflowFailed
from impl.engine.scheduler import Scheduler
from impl.engine.sim import Simulation
from impl.engine.simulate import Faults, simulate
from impl.engine.store import Store
from impl.engine.urls import open_backend

__all__ = [
    "EngineError",
    "Faults",
    "Gates",
    "Handle",
    "MemoryBackend",
    "Node",
    "OptimisticLockError",
    "ResultTimeout",
    "ResultUnavailable",
    "ScheduleOutcome",
    "ScheduleRequest",
    "Scheduled",
    "Scheduler",
    "Settings",
    "SignalConflict",
    "Simulation",
    "Store",
    "Task",
    "UnknownWorkflow",
    "WorkflowFailed",
    "drive",
    "open_backend",
    "simulate",
]
