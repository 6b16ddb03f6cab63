"""The TraceValues reader: TLC reads a batch's traces from a file through a Java override
(`java/TraceValues.java`, module `TraceValues.tla`) instead of parsing them as TLA+ text.

SANY parses a batch's megabytes of trace literal at about half a megabyte a second, then checks
and evaluates it: on 150 command traces, 8 of a run's 16 seconds. The class reads the same text
(`to_tla`'s, byte for byte) into the same values in milliseconds. It is compiled once per source
and jar, with the `javac` beside `java` or on PATH, into the user's cache; where there is no
`javac` (a JRE only), or with LEASEPROOF_TRACE_READER=text, traces go to TLC as TLA+ text, as
before: slower, same verdicts.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

log = logging.getLogger(__name__)

HERE = Path(__file__).parent
SOURCE = HERE / "java" / "TraceValues.java"
MODULE = HERE / "TraceValues.tla"
# What a batch's TraceData reads when the class is there (a file of the run's directory).
VALUES_FILE = "TraceData.values"


class ReaderBuildError(RuntimeError):
    """javac refused TraceValues.java: a bug of leaseproof's, or a TLC jar it does not fit."""


def cache_root(env: dict[str, str] | None = None) -> Path:
    """Where compiled classes are kept: $LEASEPROOF_CACHE, else $XDG_CACHE_HOME/leaseproof, else
    ~/.cache/leaseproof."""
    env = dict(os.environ) if env is None else env
    if env.get("LEASEPROOF_CACHE"):
        return Path(env["LEASEPROOF_CACHE"])
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "leaseproof"


def find_javac(java: Path) -> Path | None:
    """The `javac` of the JDK that `java` belongs to, else the one on PATH; None for a JRE."""
    beside = java.resolve().parent / "javac"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("javac")
    return Path(found) if found else None


def _key(jar: Path) -> str:
    stat = jar.stat()
    text = f"{SOURCE.read_text(encoding='utf-8')}\n{jar.resolve()}\n{stat.st_size}\n{stat.st_mtime_ns}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def reader_classes(java: Path, jar: Path, root: Path | None = None) -> Path | None:
    """The folder holding TraceValues.class compiled against `jar` (compiled on first use), or
    None where no `javac` is found. Concurrent callers each compile into a scratch folder and
    move it in place; the first to arrive wins, the rest use its folder. `root` defaults to the
    cache folder the environment names now (LEASEPROOF_CACHE), which is part of what is
    remembered: another folder is another build."""
    return _reader_classes(java, jar, root or cache_root())


@cache
def _reader_classes(java: Path, jar: Path, root: Path) -> Path | None:
    target = root / f"trace-values-{_key(jar)}"
    if (target / "TraceValues.class").is_file():
        return target
    javac = find_javac(java)
    if javac is None:
        log.info("no javac beside %s or on PATH: traces go to TLC as TLA+ text (slower to parse)", java)
        return None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=".trace-values-", dir=target.parent))
    except OSError as exc:
        log.warning("cannot write the trace reader's classes under %s (%s): traces go to TLC as TLA+ text; "
                    "set LEASEPROOF_CACHE to a writable folder", target.parent, exc)
        return None
    try:
        done = subprocess.run([str(javac), "-nowarn", "-cp", str(jar), "-d", str(scratch), str(SOURCE)],
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise ReaderBuildError(f"javac could not compile {SOURCE} against {jar}: {done.stderr.strip()}")
        try:
            os.rename(scratch, target)
        except OSError:
            if not (target / "TraceValues.class").is_file():
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


def reader_for(java: Path, jar: Path, env: dict[str, str] | None = None) -> Path | None:
    """The classes folder to put on TLC's classpath for trace batches, or None for TLA+ text
    (no javac, or LEASEPROOF_TRACE_READER=text)."""
    env = dict(os.environ) if env is None else env
    mode = env.get("LEASEPROOF_TRACE_READER", "java")
    if mode == "text":
        return None
    if mode != "java":
        raise ValueError(f"LEASEPROOF_TRACE_READER is {mode!r}: use java (the default) or text")
    return reader_classes(java, jar)
