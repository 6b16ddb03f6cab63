"""The work queue's exceptions: all `ImplError`s, so the command line prints them in one line."""

from __future__ import annotations

from impl.errors import ImplError, StoreUnavailable


class WorkQueueError(ImplError):
    """Root of the work queue's user-facing errors."""


class BadSettings(WorkQueueError):
    """A setting or gate name is invalid; the message names it and the accepted values."""


class QueueClosed(WorkQueueError):
    """An operation was asked of a consumer or command queue after `close()`."""


class UnknownCommand(WorkQueueError):
    """`cancel` or a status read named a command id that has no state record (never submitted,
    or its record's TTL ran out)."""


class RedisUnreachable(StoreUnavailable):
    """The Redis server at the given URL does not answer; start it or pass another `--redis`."""


class StoreFault(WorkQueueError):
    """A store step failed without committing (injected by a test's `FaultPlan`, or a lost
    connection). The caller treats it like a network error: nothing happened."""


__all__ = ["WorkQueueError", "BadSettings", "QueueClosed", "UnknownCommand", "RedisUnreachable", "StoreFault"]
