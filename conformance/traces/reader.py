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

import os
from pathlib import Path

from conformance.errors import BadEnvironment
from conformance.tlc.classes import compiled

HERE = Path(__file__).parent
SOURCE = HERE / "java" / "TraceValues.java"
MODULE = HERE / "TraceValues.tla"
# What a batch's TraceData reads when the class is there (a file of the run's directory).
VALUES_FILE = "TraceData.values"

def reader_classes(java: Path, jar: Path, root: Path | None = None) -> Path | None:
    """The folder holding TraceValues.class compiled against `jar` (compiled on first use, into
    `root`, default the cache folder: `conformance.tlc.classes.compiled`), or None where no
    `javac` is found or the cache cannot be written."""
    return compiled(java, jar, SOURCE, "trace-values", root)


def reader_for(java: Path, jar: Path, env: dict[str, str] | None = None) -> Path | None:
    """The classes folder to put on TLC's classpath for trace batches, or None for TLA+ text
    (no javac, or LEASEPROOF_TRACE_READER=text)."""
    env = dict(os.environ) if env is None else env
    mode = env.get("LEASEPROOF_TRACE_READER", "java")
    if mode == "text":
        return None
    if mode != "java":
        raise BadEnvironment(f"LEASEPROOF_TRACE_READER is {mode!r}: use java (the default) or text")
    return reader_classes(java, jar)
