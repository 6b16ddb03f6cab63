"""The TLC command line, built as a list by a pure function (printed as is by `--dry-run`)."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TlcInvocation:
    """Everything one run of TLC needs, apart from the files in its working directory."""

    java: Path
    jar: Path
    module_file: str  # relative to the run directory
    cfg_file: str
    workers: int
    metadir: str
    check_deadlock: bool = True
    java_options: tuple[str, ...] = ("-XX:+UseParallelGC",)
    extra: tuple[str, ...] = ()
    # TLC 2.15 copies the standard modules (Naturals.tla, ...) out of its jar into the JVM's
    # temporary directory; runs sharing /tmp race on those files. Each run gets its own.
    tmpdir: str | None = None
    library: tuple[str, ...] = ()  # folders where SANY also looks for modules (TLA-Library)
    classpath: tuple[str, ...] = ()  # folders of Java override classes, after the jar
    main_class: str = "tlc2.TLC"  # or leaseproof's LocalTLC (conformance.tlc.launcher)


def tlc_command(inv: TlcInvocation) -> list[str]:
    """The argv that runs TLC for `inv`.

    `-tool` makes the output machine-readable; a fresh `-metadir` per run keeps concurrent runs
    apart; `-deadlock` turns deadlock checking *off* (TLC 2.15 has no cfg keyword for it).
    """
    if inv.workers < 1:
        raise ValueError(f"TLC needs at least one worker, got {inv.workers}")
    tmp = [f"-Djava.io.tmpdir={inv.tmpdir}"] if inv.tmpdir else []
    lib = [f"-DTLA-Library={os.pathsep.join(inv.library)}"] if inv.library else []
    cp = os.pathsep.join([str(inv.jar), *inv.classpath])
    cmd = [str(inv.java), *inv.java_options, *tmp, *lib, "-cp", cp, inv.main_class, "-tool",
           "-workers", str(inv.workers), "-metadir", inv.metadir, "-config", inv.cfg_file]
    if not inv.check_deadlock:
        cmd.append("-deadlock")
    cmd.extend(inv.extra)
    cmd.append(inv.module_file)
    return cmd


def shell_line(cmd: list[str]) -> str:
    """`cmd` quoted for a shell, for `--dry-run` and logs."""
    return shlex.join(cmd)
