"""Command apps (simulated external systems) for the real-Redis tests."""

from __future__ import annotations

import threading
import time
from collections import Counter


class SlowApp:
    """Answers `answer` after `delay_s` (or once `hold` is set); counts calls and tracks how many
    run at once."""

    def __init__(self, delay_s: float = 0.0, answer: str = "succeeded", hold: threading.Event | None = None) -> None:
        self.delay_s = delay_s
        self.answer = answer
        self.hold = hold  # if given, a call waits for it (set by the test) instead of sleeping
        self.calls: Counter[str] = Counter()
        self.running = 0
        self.peak = 0
        self._lock = threading.Lock()

    def call(self, cmd: str, payload: str) -> str:
        with self._lock:
            self.calls[cmd] += 1
            self.running += 1
            self.peak = max(self.peak, self.running)
        try:
            if self.hold is not None:
                self.hold.wait(30.0)
            else:
                time.sleep(self.delay_s)
        finally:
            with self._lock:
                self.running -= 1
        return self.answer

    def check(self, cmd: str, payload: str) -> str:
        return self.answer
