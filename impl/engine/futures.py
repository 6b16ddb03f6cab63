"""Result futures: how an in-process caller gets a workflow's result from its own copy."""

from __future__ import annotations

from typing import Any

from impl.sync import REAL, Sync


class ResultFuture:
    """Completed by this node's run of the workflow, or failed (e.g. `ResultUnavailable`).

    Thread-safe; `result` blocks up to a timeout in production, and the simulation only asks
    `done()` before reading it.
    """

    def __init__(self, sync: Sync = REAL) -> None:
        self._done = sync.Event()
        self._lock = sync.Lock()  # a run and a caller's own path may answer it at once
        self._value: Any = None
        self._exc: BaseException | None = None

    def set_result(self, value: Any) -> bool:
        """Complete with `value`; False if it was already done (the second is ignored)."""
        with self._lock:
            if self._done.is_set():
                return False
            self._value = value
            self._done.set()
            return True

    def set_exception(self, exc: BaseException) -> bool:
        """Fail with `exc`; False if it was already done (ignored)."""
        with self._lock:
            if self._done.is_set():
                return False
            self._exc = exc
            self._done.set()
            return True

    def done(self) -> bool:
        """Whether it is completed or failed."""
        return self._done.is_set()

    def exception(self) -> BaseException | None:
        """The failure, if it failed."""
        return self._exc

    def result(self, timeout: float | None = None) -> Any:
        """The value; raises the failure; `TimeoutError` if not done within `timeout` seconds."""
        if not self._done.wait(timeout):
            raise TimeoutError("the workflow's result future is not done")
        if self._exc is not None:
            raise self._exc
        return self._value
