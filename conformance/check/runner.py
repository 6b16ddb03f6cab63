"""Checking one model with TLC: render it, run it in a fresh directory, read the verdict.

Each run gets its own directory (the spec files, the rendered cfg, its own `-metadir`), so that
concurrent runs never collide. When a temporal property is violated in a run that checked
several, TLC 2.15 does not say which: the runner checks them again one at a time to name it.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from conformance.models.model import Model
from conformance.models.render import Rendered, render_model
from conformance.output.messages import parse_messages
from conformance.output.verdict import Kind, PropertyKind, Verdict, verdict_from_output
from conformance.tlc.command import TlcInvocation, tlc_command
from conformance.tlc.launcher import launcher
from conformance.tlc.locate import find_jar, find_java
from conformance.tlc.process import RawRun, run_tlc

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Tlc:
    """Where Java and TLC are, found once per command."""

    java: Path
    jar: Path

    @classmethod
    def locate(cls) -> "Tlc":
        """Find Java and the jar (see `conformance.tlc.locate`), or raise with what to install."""
        return cls(find_java(), find_jar())


def default_workers() -> int:
    """All the cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def prepare(model: Model, rendered: Rendered, run_dir: Path) -> None:
    """Write into `run_dir` the module's folder as TLC needs it (every .tla and Java override
    .class file under it, subfolders kept: `Model.spec_files`), the wrapper, and the cfg."""
    for rel in model.spec_files:
        dest = run_dir / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(model.spec_dir / rel, dest)
    for name, text in rendered.extra_modules.items():
        (run_dir / name).write_text(text, encoding="utf-8")
    (run_dir / rendered.cfg_name).write_text(rendered.cfg, encoding="utf-8")


def invocation(model: Model, rendered: Rendered, tlc: Tlc, workers: int, run_dir: Path | None = None) -> TlcInvocation:
    """The TLC invocation for a rendered model (paths relative to its run directory; the module's
    subfolders on TLC's library path, so that EXTENDS finds their modules, and the folders of
    Java override classes on its classpath)."""
    base = run_dir if run_dir is not None else Path(".")
    launch = launcher(tlc.java, tlc.jar)
    return TlcInvocation(
        java=tlc.java, jar=tlc.jar, module_file=f"{rendered.main}.tla", cfg_file=rendered.cfg_name,
        workers=workers, metadir="states", check_deadlock=model.check_deadlock,
        tmpdir=str(run_dir / "tmp") if run_dir is not None else None,
        library=tuple(str(base / d) for d in model.library_dirs),
        classpath=(*(str(base / d) for d in model.class_dirs), *launch.classpath), main_class=launch.main,
    )


def run_once(
    model: Model,
    tlc: Tlc,
    workers: int,
    properties: tuple[str, ...] | None = None,
    on_line: Callable[[str], None] | None = None,
    keep_dir: Path | None = None,
    invariants: bool = True,
    extra: tuple[str, ...] = (),
) -> tuple[Verdict, RawRun]:
    """One TLC run of `model` (checking `properties`, default all, and its invariants unless
    `invariants` is false; `extra`: more TLC options, such as `-dump`); returns its verdict and
    output."""
    rendered = render_model(model, properties, invariants=invariants)
    with tempfile.TemporaryDirectory(prefix=f"leaseproof-{model.name}-") as tmp:
        run_dir = Path(tmp)
        prepare(model, rendered, run_dir)
        (run_dir / "tmp").mkdir()
        cmd = tlc_command(dataclasses.replace(invocation(model, rendered, tlc, workers, run_dir), extra=extra))
        log.info("running %s", " ".join(cmd))
        raw = run_tlc(cmd, run_dir, model.timeout, on_line)
        if keep_dir is not None:
            keep_dir.mkdir(parents=True, exist_ok=True)
            (keep_dir / f"{model.name}.out").write_text(raw.output, encoding="utf-8")
            (keep_dir / rendered.cfg_name).write_text(rendered.cfg, encoding="utf-8")
            run_facts = {"exit_code": raw.exit_code, "timed_out": raw.timed_out, "seconds": round(raw.seconds, 3)}
            (keep_dir / f"{model.name}.run.json").write_text(json.dumps(run_facts) + "\n", encoding="utf-8")
    verdict = verdict_from_output(parse_messages(raw.output), exit_code=raw.exit_code, seconds=raw.seconds,
                                  timed_out=raw.timed_out, behaviours=not model.assumptions_only)
    return verdict, raw


def workers_for(model: Model, workers: int | None = None) -> int:
    """How many TLC workers check `model`: one when it checks a temporal property, whatever its
    file or the command line says, because TLC 2.15 can miss a liveness violation with more
    (tlaplus/tlaplus issue 971, fixed only in 2024; the maintainers' advice is `-workers 1`);
    else its file's count, the caller's, or every core."""
    if model.properties:
        return 1
    return model.workers or workers or default_workers()


def check_model(
    model: Model,
    tlc: Tlc,
    workers: int | None = None,
    on_line: Callable[[str], None] | None = None,
    keep_dir: Path | None = None,
) -> Verdict:
    """Check `model` and return its verdict, naming a violated temporal property."""
    n = workers_for(model, workers)
    verdict, _ = run_once(model, tlc, n, on_line=on_line, keep_dir=keep_dir)
    if verdict.kind is Kind.VIOLATED and verdict.property_kind is PropertyKind.TEMPORAL:
        if len(model.properties) == 1:
            return dataclasses.replace(verdict, property=model.properties[0])
        return _name_temporal(model, tlc, n, verdict)
    return verdict


def _name_temporal(model: Model, tlc: Tlc, workers: int, first: Verdict) -> Verdict:
    """Re-check the temporal properties one at a time; the first that fails names the verdict."""
    seconds = first.stats.seconds
    for prop in model.properties:
        v, _ = run_once(model, tlc, workers, properties=(prop,), invariants=False)
        seconds += v.stats.seconds
        if v.kind is Kind.VIOLATED and v.property_kind is PropertyKind.TEMPORAL:
            log.info("%s: temporal property %s is the one violated", model.name, prop)
            return dataclasses.replace(v, property=prop, stats=dataclasses.replace(first.stats, seconds=seconds))
    names = ", ".join(model.properties)
    return dataclasses.replace(first, property=f"one of {names}", message="each property held when checked alone")
