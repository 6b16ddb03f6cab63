"""Run the checks on each mutant, in scratch copies of the project (never the work tree).

The project's files (those git tracks, or every file outside hidden, output and cache
directories when it is no git checkout) are copied once; each mutant gets its own copy of
that, with its one edit. Each check runs there as a subprocess (`PYTHONPATH` and the working
directory are the copy, so the mutated source is the one imported), with its timeout. First
every check runs on the unmutated copy: a check that fails there cannot kill anything, and
each of its cells is an error.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conformance.mutate.catalogue import Catalogue, Check, Mutant, MutantError
from conformance.mutate.matrix import BLIND, EQUIVALENT, ERROR, KILLED, SURVIVED, TIMEOUT, Cell, Row
from conformance.report.progress import progress_suffix

log = logging.getLogger(__name__)
SKIP_DIRS = {"out", "__pycache__", "node_modules", "build", "dist"}
DETAIL_CHARS = 300


def project_files(root: Path) -> list[Path]:
    """The files of the project to copy, relative to `root`."""
    try:
        listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                capture_output=True, check=True, timeout=60).stdout
        files = [Path(p) for p in listed.decode().split("\0") if p]
        return [p for p in files if (root / p).is_file()]
    except (OSError, subprocess.SubprocessError):
        files = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS and not d.endswith(".egg-info")]
            files += [Path(dirpath, f).relative_to(root) for f in filenames]
        return files


class Scratch:
    """The copies of one run, under `work` (removed by the caller)."""

    def __init__(self, root: Path, work: Path) -> None:
        self.root, self.work = root, work
        self.base = work / "base"
        for rel in project_files(root):
            dest = self.base / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / rel, dest)

    def tree(self, mutant: Mutant | None) -> Path:
        """A copy with `mutant` applied (the base itself for None); `MutantError` if it does not apply."""
        if mutant is None:
            return self.base
        tree = self.work / f"{mutant.system}-{mutant.name}"
        if tree.exists():
            shutil.rmtree(tree)
        target = self.base / mutant.file
        if not target.is_file():
            raise MutantError(f"mutant {mutant.name}: no file {mutant.file} in the project")
        edited = mutant.apply(target.read_text(encoding="utf-8"))
        shutil.copytree(self.base, tree, symlinks=True)
        (tree / mutant.file).write_text(edited, encoding="utf-8")
        return tree

    def out_dir(self, label: str) -> Path:
        """A fresh output directory for one check run (its `{out}`)."""
        d = self.work / "out" / label
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        return d


def _detail(output: str) -> str:
    """The line that says why a check failed: its first FAILED / REJECTED / Error line, else its last."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    for marker in ("FAILED ", "REJECTED", "ERROR ", "Error:", "AssertionError", "error:"):
        hit = next((ln for ln in lines if marker in ln), None)
        if hit:
            return hit[:DETAIL_CHARS]
    return lines[-1][:DETAIL_CHARS] if lines else "(no output)"


def run_check(check: Check, tree: Path, out: Path) -> tuple[str, float, str]:
    """Run `check` in `tree`: (`survived` | `killed` | `timeout` | `error`, seconds, detail)."""
    env = {k: v for k, v in os.environ.items() if k not in {"LEASEPROOF_TRACE_DIR", "PYTHONPATH"}}
    env["PYTHONPATH"] = str(tree)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    start = time.monotonic()
    try:
        proc = subprocess.run(check.argv(sys.executable, out), cwd=tree, env=env, capture_output=True,
                              text=True, timeout=check.timeout_s)
    except subprocess.TimeoutExpired:
        return TIMEOUT, time.monotonic() - start, f"ran past {check.timeout_s:.0f} s"
    except OSError as exc:
        return ERROR, time.monotonic() - start, f"cannot run {check.run[0]!r}: {exc}"
    seconds = time.monotonic() - start
    if proc.returncode == 0:
        return SURVIVED, seconds, ""
    return KILLED, seconds, _detail(proc.stdout + "\n" + proc.stderr)


Progress = Callable[[str], None]


def baseline(cat: Catalogue, checks: list[str], scratch: Scratch) -> dict[str, str]:
    """Each check on the unmutated copy: the ones that fail there, with why."""
    broken = {}
    for name in checks:
        verdict, seconds, detail = run_check(cat.checks[name], scratch.base, scratch.out_dir(f"{cat.system}-baseline-{name}"))
        log.info("%s baseline %s: %s (%.1f s)", cat.system, name, verdict, seconds)
        if verdict != SURVIVED:
            broken[name] = f"the check fails on the unmutated source ({verdict}: {detail})"
    return broken


def runs_on(cat: Catalogue, m: Mutant) -> set[str]:
    """The checks that run on `m` (none for an equivalent mutant; in the --quick subset only the
    ones it names; never one declared blind to it)."""
    if m.equivalent is not None:
        return set()
    named = set(m.quick) if cat.quick_subset else set(cat.checks)
    return named - set(m.blind)


def prepared(row: Row, m: Mutant, columns: list[str], scratch: Scratch) -> Path | None:
    """`m`'s scratch copy; None when its row is complete without one: an equivalent mutant's
    (each cell says why), or one that does not apply (each cell an error)."""
    if m.equivalent is not None:
        row.cells = {c: Cell(EQUIVALENT, detail=m.equivalent) for c in columns}
        return None
    try:
        return scratch.tree(m)
    except MutantError as exc:
        row.cells = {c: Cell(ERROR, detail=str(exc)) for c in columns}
        return None


def mutant_row(cat: Catalogue, m: Mutant, checks: list[str], scratch: Scratch, broken: dict[str, str]) -> Row:
    """Every selected check on one mutant (in the --quick subset, those of them it names as the
    ones that must kill it)."""
    row = Row(cat.system, m.name, m.bug_class)
    if cat.quick_subset:
        checks = [c for c in checks if c in m.quick]
        row.expected = tuple(checks)
    tree = prepared(row, m, checks, scratch)
    if tree is None:
        return row
    for name in checks:
        if name in m.blind:
            row.cells[name] = Cell(BLIND, detail=m.blind[name])
        elif name in broken:
            row.cells[name] = Cell(ERROR, detail=broken[name])
        else:
            verdict, seconds, detail = run_check(cat.checks[name], tree, scratch.out_dir(f"{cat.system}-{m.name}-{name}"))
            row.cells[name] = Cell(verdict, seconds, detail)
    shutil.rmtree(tree, ignore_errors=True)
    return row


def run_matrix(cat: Catalogue, mutants: list[Mutant], checks: list[str], scratch: Scratch, *, jobs: int = 1,
               progress: Progress | None = None) -> list[Row]:
    """The rows of `mutants`, in catalogue order, `jobs` mutants at a time."""
    broken = baseline(cat, [c for c in checks if any(c in runs_on(cat, m) for m in mutants)], scratch)
    for name, why in broken.items():
        if progress:
            progress(f"{cat.system}: check {name} fails on the unmutated source: {why}")
    return each_row(cat.system, mutants, lambda m: mutant_row(cat, m, checks, scratch, broken), jobs=jobs,
                    progress=progress, said=lambda row: ", ".join(f"{k} {c.verdict}" for k, c in row.cells.items()))


def each_row(system: str, mutants: list[Mutant], make: Callable[[Mutant], Row], *, jobs: int = 1,
             progress: Progress | None = None, said: Callable[[Row], str] = lambda row: "") -> list[Row]:
    """`make(m)` for each mutant, `jobs` at a time, in catalogue order; a progress line for each
    as it ends (`said` tells what the row shows)."""
    done = [0]
    start = time.monotonic()
    lock = threading.Lock()

    def one(m: Mutant) -> Row:
        row = make(m)
        with lock:  # mutants end in several threads: count and print one at a time
            done[0] += 1
            if progress:
                so_far = progress_suffix(done[0], len(mutants), time.monotonic() - start)
                progress(f"[{done[0]}/{len(mutants)}] {system}/{m.name}: {said(row)} ({row.seconds:.1f} s; {so_far})")
        return row

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, mutants))
