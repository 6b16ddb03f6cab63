"""Running TLC: the one place that starts a JVM, with a time budget and live output.

`run_tlc` never raises for what TLC does (a crash, a non-zero exit, a timeout): it returns a
`RawRun` and the verdict logic decides. It raises only when the process cannot start at all.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from conformance.errors import JavaNotFound

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RawRun:
    """What a TLC process left: its whole output, exit code, wall time, and whether it timed out."""

    output: str
    exit_code: int | None
    seconds: float
    timed_out: bool


def run_tlc(
    cmd: list[str],
    cwd: Path,
    timeout: float,
    on_line: Callable[[str], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> RawRun:
    """Run `cmd` in `cwd`, stopping it after `timeout` seconds; `on_line` sees each output line."""
    start = clock()
    try:
        proc = subprocess.Popen(
            cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            text=True, encoding="utf-8", errors="replace", start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise JavaNotFound(f"cannot start {cmd[0]}: install Java 11+ or set JAVA_HOME") from exc
    except PermissionError as exc:
        raise JavaNotFound(f"cannot execute {cmd[0]}: {exc.strerror}") from exc

    lines: list[str] = []

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if on_line is not None:
                on_line(line.rstrip("\n"))

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        log.warning("TLC passed its %.0f s budget; stopping it", timeout)
        _kill(proc)
    except BaseException:
        _kill(proc)
        raise
    reader.join(timeout=10)
    return RawRun("".join(lines), None if timed_out else proc.returncode, clock() - start, timed_out)


def _kill(proc: subprocess.Popen[str]) -> None:
    """Stop TLC and anything it started (its process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
