"""The TraceCheck printer: TLC prints what a trace spec explains (the L, ACCEPT and DIFF lines of
`tla/TraceCheck.tla`) through a Java override (`java/TraceCheck.java`) instead of PrintT.

PrintT copies and normalises every value it prints and runs TLC's pretty printer on it; a batch
prints a line per line explained and a record per field that disagrees on each branch the search
drops. The override prints the same values, each on one line, which `batch.read_prints` reads
alike. Compiled like the TraceValues reader (`reader.py`) and used with it: where there is no
`javac`, or with LEASEPROOF_TRACE_READER=text, TLA+'s own definitions print, as before.
"""

from __future__ import annotations

from pathlib import Path

from conformance.tlc.classes import compiled

SOURCE = Path(__file__).parent / "java" / "TraceCheck.java"


def printer_classes(java: Path, jar: Path, root: Path | None = None) -> Path | None:
    """The folder holding TraceCheck.class compiled against `jar` (on first use, into `root`,
    default the cache folder), or None where no `javac` is found or the cache cannot be written."""
    return compiled(java, jar, SOURCE, "trace-check", root)
