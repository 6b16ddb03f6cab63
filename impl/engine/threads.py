"""Production mode: one node's fibers on threads, with the wall clock and real sleeps.

    fetch-loop thread:  drive(node.fetch_loop())            polls every poll_interval_ms
    taker thread:       item = node.take(); thread per run  drive(node.run(item))
    caller threads:     drive(any fiber you submit)         starts, signals, results

The code that runs is the same as in the simulation; only the driver differs.
"""

from __future__ import annotations

import threading
from typing import Any

from impl.engine.effects import Fiber, Stopped, drive
from impl.engine.faults import Stalls
from impl.engine.node import Node


class NodeRuntime:
    """Runs a `Node` with threads until `stop()`."""

    def __init__(self, node: Node, stalls: Stalls | None = None) -> None:
        self.node = node
        self.stalls = stalls  # injected stalls of a thread before some calls (faults.Stalls)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self.errors: list[BaseException] = []

    def _sleep(self, ms: int) -> None:
        if self._stop.wait(ms / 1000):
            raise Stopped()

    def _spawn(self, target: Any, name: str) -> threading.Thread:
        t = threading.Thread(target=target, name=f"{self.node.name}-{name}", daemon=True)
        with self._lock:
            self._threads = [x for x in self._threads if x.is_alive()]
            self._threads.append(t)
        t.start()
        return t

    def _run_fiber(self, fiber: Fiber[Any], box: dict[str, Any]) -> None:
        try:
            box["value"] = drive(fiber, self._sleep, self.stalls.before if self.stalls is not None else None)
        except Stopped:
            box["stopped"] = True
        except BaseException as exc:  # kept for the caller; a thread must not die silently
            box["error"] = exc
            self.errors.append(exc)
        finally:
            box["done"] = True

    def start(self) -> None:
        """Start the fetch loop and the taker."""
        self._spawn(lambda: self._run_fiber(self.node.fetch_loop(), {}), "fetch")
        self._spawn(self._taker, "taker")

    def _taker(self) -> None:
        while not self._stop.is_set():
            item = self.node.take(timeout=0.05)
            if item is not None:
                self._spawn(lambda item=item: self._run_fiber(self.node.run(item), {}), f"run-{item.task.task_id}")

    def submit(self, fiber: Fiber[Any], name: str = "call") -> dict[str, Any]:
        """Run `fiber` on its own thread; returns a box that gets `done`, `value` or `error`."""
        box: dict[str, Any] = {"done": False}
        self._spawn(lambda: self._run_fiber(fiber, box), name)
        return box

    def stop(self, timeout: float = 10.0) -> None:
        """Stop every thread (sleeping fibers end with `Stopped`) and wait for them."""
        self._stop.set()
        with self._lock:
            threads = list(self._threads)
        for t in threads:
            t.join(timeout)
