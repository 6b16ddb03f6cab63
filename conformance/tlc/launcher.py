"""Which main class starts TLC: `LocalTLC` (java/LocalTLC.java), TLC with no network listener,
wherever it can be compiled; else TLC's own `tlc2.TLC`. Both give the same results; the stock
main listens on a TCP port on every interface for the whole run (TLC 2.15's fingerprint set is
an RMI object, for distributed TLC) and its exit waits 300 ms for that listener (LocalTLC.java
says why), which on a one-trace check is about a third of the run.

LEASEPROOF_TLC_MAIN=stock picks TLC's own main (to compare, or where the cache cannot hold the
class).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from conformance.errors import BadEnvironment
from conformance.tlc.classes import compiled

SOURCE = Path(__file__).parent / "java" / "LocalTLC.java"
LOCAL = "LocalTLC"
STOCK = "tlc2.TLC"


@dataclass(frozen=True)
class Launcher:
    """The main class to run, and the folders to add to TLC's classpath for it."""

    main: str
    classpath: tuple[str, ...] = ()


def launcher(java: Path, jar: Path, env: dict[str, str] | None = None) -> Launcher:
    """LocalTLC, compiled against `jar`, unless LEASEPROOF_TLC_MAIN=stock or it cannot be
    compiled (no javac, an unwritable cache): then TLC's own main."""
    env = dict(os.environ) if env is None else env
    mode = env.get("LEASEPROOF_TLC_MAIN", "local")
    if mode not in ("local", "stock"):
        raise BadEnvironment(f"LEASEPROOF_TLC_MAIN is {mode!r}: use local (the default) or stock")
    if mode == "stock":
        return Launcher(STOCK)
    folder = compiled(java, jar, SOURCE, "local-tlc")
    return Launcher(LOCAL, (str(folder),)) if folder is not None else Launcher(STOCK)
