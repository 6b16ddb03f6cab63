"""`leaseproof check [MODEL...]`: model-check the models and compare with their expected verdicts.

A model file that cannot be read or is invalid gets its own error row; the others run. So does
one whose module, cfg or module folder lies outside the project root (symlinks followed) and
every `--allow-path DIR`: it is refused before that file is read.

Exit status: 0 when every model gave its expected verdict, 1 when any did not (a mismatch, an
error, a timeout, a refused model file), 2 for a usage error (unknown model, no Java or TLC).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from conformance.check.compare import Outcome, refused
from conformance.check.runner import Tlc, default_workers, invocation, workers_for
from conformance.check.suite import run_suite
from conformance.check.witness import unwitnessed, witnesses
from conformance.cli.options import add_allow_path, confinement, output_dir
from conformance.errors import LeaseproofError, ModelFileError
from conformance.models.confine import Confinement
from conformance.models.discover import model_files, select
from conformance.models.model import Model, load_model
from conformance.models.render import render_model
from conformance.output.safe_text import markup, visible
from conformance.report.json_report import outcomes_json
from conformance.report.junit import junit_xml
from conformance.report.progress import columns as progress_columns
from conformance.report.progress import progress_suffix
from conformance.report.table import print_report, witness_table
from conformance.tlc.command import shell_line, tlc_command


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the `check` command."""
    p = sub.add_parser("check", help="model-check the models and compare with their expected verdicts",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="*", metavar="MODEL", help="model names, system dirs or model files (default: all)")
    p.add_argument("--root", type=Path, default=Path("."), help="the project directory holding models/ and tla/ (default: .)")
    p.add_argument("--quick", action="store_true", help="only the models marked quick: true")
    p.add_argument("--json", action="store_true", help="print the outcomes as JSON instead of a table")
    p.add_argument("--junit", type=Path, metavar="FILE", help="also write the outcomes as JUnit XML to FILE")
    p.add_argument("--itf", type=Path, metavar="FILE",
                   help="also write each counterexample in the ITF JSON trace format: to FILE when the run has one, "
                        "else to FILE's name with the model's inserted (out.itf.json -> out.MODEL.itf.json)")
    p.add_argument("--html", type=Path, metavar="DIR",
                   help="also write a report page to DIR/index.html: the table, and every counterexample as swimlanes")
    p.add_argument("--full", action="store_true", help="in the terminal, show every variable of each state, not only what changed")
    p.add_argument("-j", "--jobs", type=int, default=None, help="models checked at once (default: 1 per 2 cores, at least 1)")
    p.add_argument("-w", "--workers", type=int, default=None, help="TLC workers per model (default: cores / jobs)")
    p.add_argument("--keep", type=Path, metavar="DIR", help="keep each model's cfg and raw TLC output in DIR")
    p.add_argument("-n", "--dry-run", action="store_true", help="print the TLC command lines and cfgs, run nothing")
    p.add_argument("--strict", action="store_true",
                   help="a claimed property that no calibration violated (unwitnessed) is a mismatch; in a partial run, "
                        "a calibration of the suite that was left out counts as not run, not as missing")
    add_allow_path(p)
    p.set_defaults(func=run)


def load_selected(root: Path, names: list[str], quick: bool,
                  allowed: list[Path] | None = None) -> tuple[list[Model], list[Outcome]]:
    """The models named (or all), loaded and checked (only the quick ones with `quick`), and an
    error outcome for each model file the loader refused. What a model file names must lie
    inside `root` or an `allowed` folder; so must a model file found under models/ (a link
    there may point anywhere), but not one the command line names by its path."""
    models_dir = root / "models"
    if not models_dir.is_dir():
        raise LeaseproofError(f"no models/ directory in {root.resolve()}: run from the project directory or pass --root")
    confined = confinement(root, allowed or [])
    tla_dirs = (root / "tla",)
    named = {Path(n) for n in names if Path(n).suffix == ".yaml" and Path(n).is_file()}
    models: list[Model] = []
    bad: list[Outcome] = []
    for p in select(models_dir, names):
        try:
            if p not in named:
                confined.check("the model file", p)
            models.append(load_model(p, tla_dirs, confined))
        except ModelFileError as exc:
            bad.append(refused(p, str(exc)))
    if quick:
        models = [m for m in models if m.quick]
    if not models and not bad:
        raise LeaseproofError("no models to check" + (" (none is marked quick: true)" if quick else ""))
    return models, bad


def whole_suite(root: Path, confined: Confinement) -> list[Model]:
    """Every model file under root/models that loads: where a partial run's claims find the
    calibrations it left out (a file that does not load is reported when it is selected)."""
    found: list[Model] = []
    for path in model_files(root / "models"):
        try:
            confined.check("the model file", path)
            found.append(load_model(path, (root / "tla",), confined))
        except LeaseproofError:
            continue
    return found


def itf_paths(path: Path, names: list[str]) -> dict[str, Path]:
    """Where each model's counterexample goes: `path` itself for a single one, else `path` with the
    model's name before its suffixes (`out.itf.json` -> `out.inmem_overlap.itf.json`)."""
    if len(names) == 1:
        return {names[0]: path}
    stem, dot, rest = path.name.partition(".")
    return {n: path.with_name(f"{stem}.{n}{dot}{rest}" if dot else f"{stem}.{n}") for n in names}


def write_itf(path: Path, outcomes: list[Outcome]) -> list[Path]:
    """Write every counterexample of the run as an ITF trace; the files written."""
    from conformance.output.itf import itf_trace

    with_cx = [o for o in outcomes if o.verdict.counterexample is not None]
    where = itf_paths(path, [o.model.name for o in with_cx])
    for o in with_cx:
        v = o.verdict
        assert v.counterexample is not None
        what = f"violated {v.property}" if v.property else v.kind.value
        trace = itf_trace(v.counterexample, source=str(o.model.module_path),
                          description=f"leaseproof check: model {o.model.name}, {what}")
        where[o.model.name].parent.mkdir(parents=True, exist_ok=True)
        where[o.model.name].write_text(json.dumps(trace, indent=1) + "\n", encoding="utf-8")
    return [where[o.model.name] for o in with_cx]


def run(args: argparse.Namespace) -> int:
    """Run `leaseproof check`."""
    models, bad = load_selected(args.root, args.models, args.quick, args.allow_path)
    tlc = Tlc.locate()
    jobs = args.jobs or max(1, default_workers() // 2)
    if args.dry_run:
        workers = args.workers or max(1, default_workers() // jobs)
        for o in bad:
            print(visible(f"# REFUSED {o.model.path}: {o.verdict.message}"))
        for m in models:
            rendered = render_model(m)
            print(visible(f"# {m.name} ({m.path}): in a fresh directory holding the .tla and .class files under "
                          f"{m.spec_dir} and {rendered.cfg_name}"))
            print(visible(rendered.cfg.rstrip(), lines=True))
            print(visible(shell_line(tlc_command(invocation(m, rendered, tlc, workers_for(m, workers))))))
        return 1 if bad else 0
    # Made before TLC runs: a folder that cannot be made is a usage error now, not a traceback later.
    for option, folder in (("--keep", args.keep), ("--html", args.html), ("--junit", args.junit and args.junit.parent),
                           ("--itf", args.itf and args.itf.parent)):
        if folder is not None:
            output_dir(option, folder)

    console = Console(stderr=args.json)
    if not console.is_terminal:
        console = Console(stderr=args.json, width=max(console.width, 140))
    start = time.monotonic()
    with Progress(*progress_columns(), console=console, transient=True, disable=not console.is_terminal) as progress:
        task = progress.add_task(f"checking {len(models)} models", total=len(models) + len(bad))
        running: dict[str, int] = {}

        def show() -> None:
            parts = [markup(f"{name} ({n:,} states)" if n else name) for name, n in sorted(running.items())]
            progress.update(task, description=f"checking {', '.join(parts)}")

        def started(m: Model) -> None:
            running[m.name] = 0
            show()

        def advanced(m: Model, distinct: int) -> None:
            if m.name in running:
                running[m.name] = distinct
                show()

        finished = [0]

        def done(o: Outcome) -> None:
            running.pop(o.model.name, None)
            progress.advance(task)
            finished[0] += 1
            if not console.is_terminal and not args.json:  # a CI log: one line per model as it ends
                mark = "PASS" if o.passed else "FAIL"
                so_far = progress_suffix(finished[0], len(models) + len(bad), time.monotonic() - start)
                print(visible(f"{mark} {o.model.name}: {o.verdict.summary()} ({o.verdict.stats.seconds:.1f} s; {so_far})"),
                      flush=True)

        for o in bad:
            done(o)
        outcomes = bad + run_suite(models, tlc, jobs=jobs, workers=args.workers, on_start=started, on_done=done,
                                   keep_dir=args.keep, on_progress=advanced)

    ws = witnesses(outcomes, whole_suite(args.root, confinement(args.root, args.allow_path)))
    missing = unwitnessed(ws)
    passed = all(o.passed for o in outcomes) and not (args.strict and missing)
    if args.junit:
        args.junit.write_text(junit_xml(outcomes), encoding="utf-8")
    if args.itf:
        for path in write_itf(args.itf, outcomes):
            print(visible(f"ITF counterexample: {path}"), file=sys.stderr if args.json else sys.stdout)
    if args.html:
        from conformance.report.html import model_sections, models_html, write_report

        page = write_report(args.html, models_html(outcomes, model_sections(outcomes)))
        print(visible(f"HTML report: {page}"), file=sys.stderr if args.json else sys.stdout)
    if args.json:
        json.dump(outcomes_json(outcomes, ws, passed), sys.stdout, indent=2)
        print()
    else:
        print_report(console, outcomes, full=args.full)
        console.print(witness_table(ws))
        if missing:
            names = markup(", ".join(f"{w.module} {w.property}" for w in missing))
            colour = "red" if args.strict else "yellow"
            console.print(f"[{colour}]{len(missing)} of {len(ws)} claimed properties unwitnessed "
                          f"(no calibration violated them, and none was left out of this run){' (a mismatch under --strict)' if args.strict else ''}: "
                          f"{names}[/]", highlight=False)
        else:
            console.print(f"[green]every one of the {len(ws)} claimed properties is witnessed by a calibration[/]")
    return 0 if passed else 1
