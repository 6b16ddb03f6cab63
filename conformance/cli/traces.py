"""`leaseproof traces lint|check`: validate trace files against the schema and the specs.

Exit status of `check`: 0 when every trace was accepted, or skipped for features the command
allows (`--allow-skip FEATURE`), and coverage was met (with --coverage-per-source by each source
directory by itself; with --self-test, the known traces got their verdicts and every mutant was
rejected); 1 otherwise; 2 when the command could not run (an --allow-skip feature no system file
declares out of scope among them). A trace is skipped only for a feature its system file
declares out of scope; every skip is listed with its reason and whether it was allowed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from rich.console import Console

from conformance.check.runner import Tlc
from conformance.errors import LeaseproofError
from conformance.output.safe_text import visible
from conformance.report.trace_report import coverage_lines, mutation_lines, source_line, summary_line, verdict_json, verdict_line
from conformance.report.progress import ItemProgress
from conformance.traces.batch import TRACE_HEAP_MB, Batch
from conformance.traces.check import DEFAULT_BATCH, check_traces
from conformance.traces.coverage import by_source, coverage, source_of
from conformance.traces.spec_coverage import SpecCoverageError, spec_coverage
from conformance.traces.read import DEFAULT_LIMITS, Limits, read_trace_file, trace_files
from conformance.traces.selftest import check_corpus, check_mutants
from conformance.traces.skips import Skip, allowed_features, counts, judge, skip_line
from conformance.traces.system import System, load_systems
from conformance.traces.trace import Trace, TraceKind, TraceVerdict


def _spec_coverage(args: argparse.Namespace, systems: dict[str, System], names: list[str], accepted: list[Trace],
                   out: dict[str, Any]) -> bool:
    """Print (and add to `out`, and to --coverage-report) each system's spec coverage; whether
    it fails the check: a system file whose `unreachable` names no outcome of its spec, or, with
    --require-spec-coverage, an outcome never shown or one declared unreachable that a trace showed."""
    failed = False
    report: dict[str, Any] = {}
    for name in names:
        system = systems[name]
        try:
            cov = spec_coverage(system, system.spec_path.read_text(encoding="utf-8"), [t for t in accepted if t.system == name])
        except SpecCoverageError as exc:
            failed = True
            report[name] = {"error": str(exc)}
            if not args.json:
                print(visible(f"spec coverage: {exc}"))
            continue
        if cov is None:
            report[name] = {"error": f"{system.spec} declares no Outcomes table: no spec coverage"}
            if not args.json:
                print(f"spec coverage ({name}): {system.spec} declares no Outcomes table (docs/your-own-system.md)")
            continue
        report[name] = cov.to_json()
        # Shown though declared unreachable: printed, and a failure where coverage is required
        # (a trace recorded with a gate off may show one rightly: a calibration's run).
        failed |= args.require_spec_coverage and bool(cov.missing or cov.shown_unreachable)
        if not args.json:
            print(visible(cov.summary()))
    out["spec_coverage"] = report
    if args.coverage_report is not None:
        try:
            args.coverage_report.write_text(json.dumps({"systems": report}, indent=1) + "\n", encoding="utf-8")
        except OSError as exc:
            print(f"cannot write the coverage report {args.coverage_report}: {exc}", file=sys.stderr)
            failed = True
    return failed


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the `traces` command with `lint` and `check`."""
    p = sub.add_parser("traces", help="lint and check NDJSON traces against the specs", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    tsub = p.add_subparsers(dest="traces_command", metavar="SUBCOMMAND")
    tsub.required = True

    lint = tsub.add_parser("lint", help="validate trace files against the JSON Schema")
    lint.add_argument("paths", nargs="+", type=Path, metavar="FILE|DIR")
    _limit_options(lint)
    lint.set_defaults(func=run_lint)

    check = tsub.add_parser("check", help="validate traces against the TLA+ specs with TLC")
    check.add_argument("paths", nargs="+", type=Path, metavar="FILE|DIR")
    check.add_argument("--root", type=Path, default=Path("."), help="the project holding traces/systems and tla/ (default: .)")
    check.add_argument("--self-test", action="store_true",
                       help="first check the known-good and known-bad corpus, then reject a mutant of every accepted trace")
    check.add_argument("--no-coverage", action="store_true", help="do not fail when the interesting actions were never seen")
    check.add_argument("--coverage-per-source", action="store_true",
                       help="each source (a sub-directory of a directory given, e.g. out/traces/engine-sim; else the "
                            "directory itself) must meet the coverage guard by itself: one line per source and system")
    check.add_argument("--union-only", action="append", default=[], metavar="GLOB",
                       help="with --coverage-per-source: sources matching GLOB (a source's name, e.g. command-redis) "
                            "count toward the whole set's guard but need not meet it by themselves (a wall-clock run "
                            "whose interleavings no seed decides); their lines say so. Repeatable")
    check.add_argument("--coverage-report", type=Path, metavar="FILE",
                       help="also write each system's spec coverage as JSON to FILE: every op/outcome of its trace spec's "
                            "Outcomes table with its count, what no trace showed, and each pair of consecutive steps of "
                            "one entity with its count")
    check.add_argument("--require-spec-coverage", action="store_true",
                       help="fail when an outcome of a trace spec's Outcomes table that the system file does not declare "
                            "unreachable was never shown")
    check.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    check.add_argument("--junit", type=Path, metavar="FILE", help="also write the verdicts as JUnit XML to FILE, a test case per trace")
    check.add_argument("--html", type=Path, metavar="DIR",
                       help="also write a report page to DIR/index.html: the verdicts, and every rejected trace as swimlanes")
    check.add_argument("--batch-size", type=int, default=DEFAULT_BATCH, help=f"traces per TLC run (default {DEFAULT_BATCH})")
    check.add_argument("-w", "--workers", type=int, default=None, help="TLC workers (default: all cores)")
    check.add_argument("--keep", type=Path, metavar="DIR", help="keep the generated TLA+ modules in DIR")
    check.add_argument("-v", "--verbose", action="store_true", help="list every trace, not only those that did not pass")
    check.add_argument("--allow-skip", action="append", default=[], metavar="FEATURE",
                       help="a trace skipped for FEATURE (one its system file declares out of scope) does not fail the "
                            "check; a trace skipped for several features needs each allowed (repeatable). Without it, "
                            "every skip fails")
    check.add_argument("--fail-on-skip", action="store_true",
                       help="deprecated, does nothing: a skip fails by default (name the features allowed with --allow-skip)")
    # Removed: it allowed skips by path, whatever feature made them. Kept only to say so.
    check.add_argument("--skip-ok", action="append", default=[], metavar="GLOB", help=argparse.SUPPRESS)
    check.add_argument("--no-faults", action="store_true",
                       help="the run injected no fault: a trace with a fault line (a crash, a lag, a lapse, ...) is "
                            "rejected there, instead of the hidden steps the line would excuse")
    check.add_argument("--tlc-heap", type=int, default=TRACE_HEAP_MB, metavar="MB",
                       help=f"TLC's Java heap per trace batch (default {TRACE_HEAP_MB} MiB)")
    _limit_options(check)
    check.set_defaults(func=run_check)


def _limit_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-events", type=int, default=DEFAULT_LIMITS.max_events, metavar="N",
                   help=f"a trace with more events is inconclusive, not read on (default {DEFAULT_LIMITS.max_events:,})")
    p.add_argument("--max-bytes", type=int, default=DEFAULT_LIMITS.max_bytes, metavar="N",
                   help=f"a larger trace file is inconclusive, not read (default {DEFAULT_LIMITS.max_bytes:,})")


def _limits(args: argparse.Namespace) -> Limits:
    if args.max_events < 1 or args.max_bytes < 1:
        raise LeaseproofError("--max-events and --max-bytes must be at least 1")
    return replace(DEFAULT_LIMITS, max_events=args.max_events, max_bytes=args.max_bytes)


def _allowed_skips(args: argparse.Namespace, systems: dict[str, Any]) -> frozenset[str]:
    """--allow-skip's features, each one some system file declares out of scope (else a usage
    error: a typo must not allow everything, nor quietly nothing)."""
    if args.skip_ok:
        raise LeaseproofError(f"--skip-ok {args.skip_ok[0]}: removed, since it allowed a skip by path whatever made it; "
                              f"name the out-of-scope features whose skips you allow: --allow-skip FEATURE")
    return allowed_features(args.allow_skip, systems)


def _per_source(args: argparse.Namespace, files: list[Path], items: list[Any], verdicts: list[TraceVerdict],
                systems: dict[str, Any], out: dict[str, Any]) -> bool:
    """Print one coverage line per source and system (and add them to `out`); whether any
    source missed a requirement."""
    accepted: list[tuple[str, Trace]] = []
    present: dict[str, set[str]] = {}
    for path, item, v in zip(files, items, verdicts):
        if not isinstance(item, Trace) or v.kind is TraceKind.SKIPPED or item.system not in systems:
            continue
        src = source_of(path, args.paths)
        present.setdefault(item.system, set()).add(src)
        if v.kind is TraceKind.ACCEPTED:
            accepted.append((src, item))
    out["coverage_per_source"] = []
    missed = False
    for name in sorted(present):
        for cov in by_source(systems[name], accepted, present[name]):
            exempt = any(fnmatch(Path(cov.source).name, g) for g in args.union_only)
            out["coverage_per_source"].append({"source": cov.source, "system": name, "accepted": cov.traces,
                                               "required": cov.required, "missing": cov.missing,
                                               "required_by_itself": not exempt})
            missed |= bool(cov.missing) and not exempt
            if not args.json:
                print(source_line(cov) + (" (counts toward the whole set only: --union-only)" if exempt else ""))
    return missed


@contextmanager
def _progress(what: str) -> Iterator[dict[str, Any]]:
    """Progress over TLC's batches (on stderr: stdout holds the verdicts): the `on_plan` and
    `on_batch` hooks of `check_traces`, for its callers to pass on."""
    with ItemProgress(what, 0, Console(stderr=True)) as p:
        def batch(b: Batch) -> None:
            p.advance(f"{what}: {len(b.traces)} {b.system.name} traces checked")

        yield {"on_plan": p.set_total, "on_batch": batch}


def _write_reports(args: argparse.Namespace, items: list[Any], verdicts: list[TraceVerdict],
                   systems: dict[str, Any], summary: str, skips: list[Skip], spec_coverage: dict[str, Any]) -> None:
    """--junit FILE and --html DIR: the same verdicts as XML and as a page with swimlanes (and
    each system's spec coverage)."""
    where = sys.stderr if args.json else sys.stdout
    if args.junit:
        from conformance.report.junit import traces_junit_xml

        by_source = {v.source: v for v in verdicts}
        args.junit.parent.mkdir(parents=True, exist_ok=True)
        args.junit.write_text(traces_junit_xml(verdicts, failing_skips=[by_source[s.source] for s in skips if not s.allowed],
                                               skip_notes={s.source: s.note(args.allow_skip) for s in skips}),
                              encoding="utf-8")
    if args.html:
        from conformance.report.html import coverage_tables, trace_sections, traces_html, write_report

        page = write_report(args.html, traces_html(verdicts, trace_sections(items, verdicts, systems), summary,
                                                   coverage=coverage_tables(spec_coverage)))
        print(f"HTML report: {page}", file=where)


def run_lint(args: argparse.Namespace) -> int:
    """Lint the files: one line per file, exit 1 when any is malformed."""
    files = trace_files(args.paths)
    if not files:
        raise LeaseproofError(f"no trace files (*.ndjson) in {', '.join(map(str, args.paths))}")
    bad = 0
    limits = _limits(args)
    for path in files:
        item = read_trace_file(path, limits=limits)
        if isinstance(item, Trace):
            print(visible(f"ok        {path}: {item.system}, {len(item.events)} events"))
        else:
            bad += 1
            print(visible(f"malformed {path}: {item.reason}"))
    print(f"{len(files) - bad} of {len(files)} trace files well formed")
    return 1 if bad else 0


def run_check(args: argparse.Namespace) -> int:
    """Check the traces; with --self-test, the corpus first and the mutants after."""
    files = trace_files(args.paths)
    if not files:
        raise LeaseproofError(f"no trace files (*.ndjson) in {', '.join(map(str, args.paths))}")
    systems = load_systems(args.root)
    if not systems:
        raise LeaseproofError(f"no system files in {args.root / 'traces' / 'systems'}: run from the project directory or pass --root")
    allowed = _allowed_skips(args, systems)
    tlc = Tlc.locate()
    if args.tlc_heap < 64:
        raise LeaseproofError(f"--tlc-heap {args.tlc_heap}: TLC needs at least 64 MiB")
    opts: dict[str, Any] = {"batch_size": args.batch_size, "workers": args.workers, "heap_mb": args.tlc_heap}
    failed = False
    out: dict[str, Any] = {}

    limits = _limits(args)
    items = [read_trace_file(p, limits=limits) for p in files]
    if args.self_test:
        present = {i.system for i in items if isinstance(i, Trace)}
        with _progress("corpus batches") as p:
            corpus = check_corpus(args.root, systems, tlc, only=present, **opts, **p)
        out["corpus"] = {"checked": corpus.checked, "problems": corpus.problems}
        if corpus.problems:
            if args.json:
                json.dump(out, sys.stdout, indent=2)
            else:
                print("self-test failed before any trace was checked:")
                for p in corpus.problems:
                    print(f"  {visible(p)}")
            return 1
        if not args.json:
            print(f"self-test: {corpus.checked} known traces got their known verdicts")

    with _progress("trace batches") as p:
        verdicts = check_traces(items, systems, tlc, keep_dir=args.keep, no_faults=args.no_faults, **opts, **p)
    skips = judge(items, verdicts, systems, allowed)
    notes = {s.source: s for s in skips}
    out["traces"] = [verdict_json(v) | ({"skip": {"features": list(notes[v.source].features), "allowed": notes[v.source].allowed}}
                                        if v.source in notes else {}) for v in verdicts]
    out["summary"] = summary_line(verdicts)
    failed |= any(v.kind in (TraceKind.REJECTED, TraceKind.MALFORMED, TraceKind.INCONCLUSIVE) for v in verdicts)
    failed |= any(not s.allowed for s in skips)
    out["skips"] = {"allow_skip": sorted(allowed), **counts(skips, allowed)}
    out["skips_failed"] = [s.source for s in skips if not s.allowed]
    if not args.json:
        for v in verdicts:
            # Every skip is listed with its reason and whether it passes: a skip is never a quiet pass;
            # an acceptance that needed a fault line says so.
            if args.verbose or v.kind is not TraceKind.ACCEPTED or v.excused:
                note = f" [{notes[v.source].note(allowed)}]" if v.source in notes else ""
                print(verdict_line(v) + visible(note))
        print(out["summary"])
        if skips:
            print(skip_line(skips, allowed))

    accepted = [i for i, v in zip(items, verdicts) if isinstance(i, Trace) and v.kind is TraceKind.ACCEPTED]
    in_scope = {i.system for i, v in zip(items, verdicts) if isinstance(i, Trace) and v.kind is not TraceKind.SKIPPED}
    out["coverage"] = {}
    for name in sorted(in_scope & set(systems)):
        cov = coverage(systems[name], [t for t in accepted if t.system == name])
        out["coverage"][name] = {"seen": {f"{op}/{o}": n for (op, o), n in sorted(cov.seen.items())}, "required": cov.required}
        if not args.json:
            print("\n".join(coverage_lines(cov)))
        if cov.missing and not args.no_coverage:
            failed = True
            if not args.json:
                print(visible(f"coverage guard: {name} traces never showed {', '.join(cov.missing)}"))
    if args.coverage_per_source:
        failed |= _per_source(args, files, items, verdicts, systems, out) and not args.no_coverage
    failed |= _spec_coverage(args, systems, sorted(in_scope & set(systems)), accepted, out)
    # The page's summary names the skips too: its table shows a skip as passing, allowed or not.
    _write_reports(args, items, verdicts, systems, "; ".join(x for x in (out["summary"], skip_line(skips, allowed)) if x), skips,
                   out["spec_coverage"])

    if args.self_test:
        with _progress("mutant batches") as p:
            excused = {v.source: tuple(x.line for x in v.excused) for v in verdicts if v.excused}
            result = check_mutants(accepted, systems, tlc, excused=excused, **opts, **p)
        out["mutants"] = {"total": result.total, "rejected": result.rejected,
                          "survivors": [{"operator": m.operator, "trace": m.original, "change": m.change, "verdict": v.describe()}
                                        for m, v in result.survivors],
                          "excluded": [{"operator": e.operator, "trace": e.original, "why": e.why, "declared": e.declared} for e in result.excluded]}
        failed |= bool(result.survivors) or result.total == 0
        if not args.json:
            print("\n".join(mutation_lines(result)))
            if result.total == 0:
                print("no mutants: no trace was accepted, so the self-test shows nothing")
    if args.json:
        out["passed"] = not failed
        json.dump(out, sys.stdout, indent=2)
        print()
    return 1 if failed else 0
