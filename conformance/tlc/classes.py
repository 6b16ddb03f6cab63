"""Java classes that leaseproof puts on TLC's classpath, compiled once per source and TLC jar into
the user's cache, with the `javac` beside `java` or on PATH. Where there is no `javac` (a JRE
only) or the cache cannot be written, callers go without (each says what that costs).
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


class ClassesBuildError(RuntimeError):
    """javac refused one of leaseproof's own sources: a bug of leaseproof's, or a TLC jar it does not fit."""


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


def _key(source: Path, jar: Path) -> str:
    stat = jar.stat()
    text = f"{source.read_text(encoding='utf-8')}\n{jar.resolve()}\n{stat.st_size}\n{stat.st_mtime_ns}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def compiled(java: Path, jar: Path, source: Path, prefix: str, root: Path | None = None) -> Path | None:
    """The folder `<root>/<prefix>-<key>` holding `source` compiled against `jar` (compiled on
    first use; the key changes with the source and the jar), or None where no `javac` is found or
    the folder cannot be written. Concurrent callers each compile into a scratch folder and move
    it in place; the first to arrive wins, the rest use its folder. `root` defaults to the cache
    folder the environment names now (LEASEPROOF_CACHE), which is part of what is remembered."""
    return _compiled(java, jar, source, prefix, root or cache_root())


@cache
def _compiled(java: Path, jar: Path, source: Path, prefix: str, root: Path) -> Path | None:
    target = root / f"{prefix}-{_key(source, jar)}"
    main_class = target / f"{source.stem}.class"
    if main_class.is_file():
        return target
    javac = find_javac(java)
    if javac is None:
        log.info("no javac beside %s or on PATH: %s is not compiled", java, source.name)
        return None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f".{prefix}-", dir=target.parent))
    except OSError as exc:
        log.warning("cannot write compiled classes under %s (%s): %s is not used; set LEASEPROOF_CACHE to a "
                    "writable folder", target.parent, exc, source.name)
        return None
    try:
        done = subprocess.run([str(javac), "-nowarn", "-cp", str(jar), "-d", str(scratch), str(source)],
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise ClassesBuildError(f"javac could not compile {source} against {jar}: {done.stderr.strip()}")
        try:
            os.rename(scratch, target)
        except OSError:
            if not main_class.is_file():
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


def clear_cache() -> None:
    """Forget which folders were found or built in this process (for tests that change them)."""
    _compiled.cache_clear()
