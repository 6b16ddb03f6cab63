"""A pytest plugin: check the traces your integration tests record, at the end of the session.

    pytest --leaseproof-traces out/traces [--leaseproof-root PROJECT] [--leaseproof-fail-on-skip]
           [--leaseproof-coverage] [--leaseproof-batch-size N]

Your tests (or the system they drive) record traces during the session; when it ends, every
`*.ndjson` under the directory is checked against your systems (`PROJECT/traces/systems/*.yaml`,
trace specs in `PROJECT/tla`, PROJECT defaulting to pytest's rootdir) with the same batched
checker as `leaseproof traces check`, many traces per TLC run. The terminal summary lists every
trace that was not accepted (for a rejection, the line and why) and the counts, and the session
fails on a rejected, malformed or inconclusive trace, on a skipped one with
`--leaseproof-fail-on-skip`, and when nothing was recorded at all; a requirement of a system
file's `coverage:` that no accepted trace met is listed, and fails it with `--leaseproof-coverage`.

Two fixtures hand a test somewhere to record, each named after the test:

    def test_two_workers(leaseproof_recorder):
        with leaseproof_recorder.open(header, entity="job-1") as trace:
            trace.event(node="w1", op="acquire", now=0, outcome="acquired", state={...})

    def test_my_service(leaseproof_trace_dir):
        run_service(trace_dir=leaseproof_trace_dir)   # it writes its own *.ndjson files there

Off unless asked: without `--leaseproof-traces` the plugin registers its options and fixtures
and nothing else (no hook runs, nothing heavy is imported), and the fixtures record into the
test's `tmp_path`, unchecked. Under pytest-xdist the workers record and only the controller
checks, once. The directory is the plugin's: it must be new, empty, or one an earlier session
of the plugin wrote (which is cleared first, so that only this session's traces are checked).
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import threading
from collections.abc import Iterable, Iterator, Mapping
from hashlib import sha1
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import pytest

# Marks a directory as the plugin's, so that a later session may clear it (and no other).
MARKER = ".leaseproof-traces"
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")

log = logging.getLogger(__name__)


def pytest_addoption(parser: pytest.Parser) -> None:
    """The plugin's options (registered always; they do nothing unless --leaseproof-traces is given)."""
    group = parser.getgroup("leaseproof", "check recorded traces against TLA+ trace specs (leaseproof)")
    group.addoption("--leaseproof-traces", metavar="DIR", default=None,
                    help="record the tests' traces into DIR and check them all at the end of the session")
    group.addoption("--leaseproof-root", metavar="PROJECT", default=None,
                    help="the project holding traces/systems/*.yaml and tla/ (default: pytest's rootdir)")
    group.addoption("--leaseproof-fail-on-skip", action="store_true", default=False,
                    help="a skipped trace (a feature its system file declares out of scope) fails the session")
    group.addoption("--leaseproof-coverage", action="store_true", default=False,
                    help="fail the session when the accepted traces never showed what a system file's coverage: "
                         "requires (without it, what is missing is only listed)")
    group.addoption("--leaseproof-batch-size", type=int, default=None, metavar="N",
                    help="traces per TLC run (default: leaseproof's, 400)")


def pytest_configure(config: pytest.Config) -> None:
    """With --leaseproof-traces: prepare the directory (on the controller) and register the checker."""
    directory = config.getoption("leaseproof_traces", None)
    if not directory:
        return  # off: nothing else of the plugin runs
    batch = config.getoption("leaseproof_batch_size", None)
    if batch is not None and batch < 1:
        raise pytest.UsageError(f"--leaseproof-batch-size {batch}: at least 1 trace per TLC run")
    path = Path(directory).resolve()
    if not hasattr(config, "workerinput"):  # the controller, or a run without xdist
        _prepare(path)
        # xdist hands the controller's options to its workers: they record into this very path.
        config.option.leaseproof_traces = str(path)
        config.pluginmanager.register(TraceCheck(config, path), "leaseproof-trace-check")


def _prepare(path: Path) -> None:
    """Make `path` an empty directory marked as the plugin's; refuse one holding other files."""
    if path.exists():
        if not path.is_dir():
            raise pytest.UsageError(f"--leaseproof-traces {path}: not a directory")
        if any(path.iterdir()) and not (path / MARKER).is_file():
            raise pytest.UsageError(f"--leaseproof-traces {path}: the directory holds files the plugin did not write; "
                                    f"give a new or empty directory (an earlier session's is cleared)")
        shutil.rmtree(path)
    path.mkdir(parents=True)
    (path / MARKER).write_text("traces recorded by leaseproof's pytest plugin; cleared by its next session\n",
                               encoding="utf-8")


def trace_dir_name(nodeid: str) -> str:
    """A file name for a test: its node id with anything but letters, digits, `.`, `_` and `-`
    replaced (and, when very long, shortened with a hash so that names stay distinct)."""
    name = _SAFE.sub("_", nodeid).strip("_") or "test"
    if len(name) > 120:
        name = f"{name[:100]}-{sha1(nodeid.encode()).hexdigest()[:10]}"
    return name


def _test_dir(request: pytest.FixtureRequest) -> Path:
    """This test's own directory: under --leaseproof-traces, else in its tmp_path (unchecked)."""
    root = request.config.getoption("leaseproof_traces", None)
    if not root:
        return Path(request.getfixturevalue("tmp_path")) / "leaseproof-traces"
    # Shared by both fixtures of one test, and never cleared here: one fixture set up after the
    # other must not take away what the first made (the session cleared the whole directory).
    return Path(root).resolve() / trace_dir_name(request.node.nodeid)


class OpenTrace:
    """A trace being written, an event at a time: `seq` is numbered for you (unless you give
    the store's own), and closing writes the end line with the count.

        with recorder.open({"system": "joblease", "nodes": ["w1", "w2"], ...}) as trace:
            trace.event(node="w1", op="acquire", now=0, outcome="acquired", state={...})
    """

    def __init__(self, path: Path, header: Mapping[str, Any]) -> None:
        self.path = path
        self.count = 0
        # Nodes of the system under test may be threads: one line at a time, numbered in the
        # order the calls come (call it inside the store's transaction, and that is commit order).
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = path.open("w", encoding="utf-8")
        self._line({"kind": "header", "format": 1, "gates": {}, "settings": {}, **header})

    def _line(self, value: Mapping[str, Any]) -> None:
        if self._file is None:
            raise ValueError(f"{self.path}: the trace is closed; open another")
        self._file.write(json.dumps(value, sort_keys=True) + "\n")
        self._file.flush()  # a crash mid-test leaves what was committed, and no end line

    def event(self, event: Mapping[str, Any] | None = None, **fields: Any) -> None:
        """Write one event line: a committed step (`node`, `op`, `now`, `outcome`, `state`, and
        the entity and `args` your system file names). Write it in the transaction that commits
        the step, so that the trace is in commit order."""
        line = {**(event or {}), **fields}
        with self._lock:
            self.count += 1
            self._line({"kind": "event", "seq": self.count, **line})

    def close(self) -> Path:
        """Write the end line (the number of events) and close the file; its path."""
        with self._lock:
            if self._file is not None:
                self._line({"kind": "end", "count": self.count})
                self._file.close()
                self._file = None
        return self.path

    @property
    def closed(self) -> bool:
        """Whether the end line has been written."""
        return self._file is None

    def __enter__(self) -> OpenTrace:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        # The events written were committed, whatever the test did next: the trace ends here.
        self.close()


class TraceRecorder:
    """Records a test's traces as NDJSON files named after the test (one per entity).

    `write(header, events)` writes a whole trace at once; `open(header)` gives an `OpenTrace` to
    write event by event. The header needs at least `system` and `nodes`; `format` 1 and empty
    `gates` and `settings` are filled in when left out. With `--leaseproof-traces` the files are
    checked at the end of the session (`checked` is True); without it they go to the test's
    tmp_path and nobody checks them.
    """

    def __init__(self, directory: Path, checked: bool) -> None:
        self.directory = directory
        self.checked = checked
        self.paths: list[Path] = []
        self._open: list[OpenTrace] = []

    def path_for(self, entity: str = "trace") -> Path:
        """The file a trace of `entity` is written to."""
        return self.directory / f"{_SAFE.sub('_', entity).strip('_') or 'trace'}.ndjson"

    def open(self, header: Mapping[str, Any], entity: str = "trace") -> OpenTrace:
        """Begin a trace of `entity`; close it (or use `with`) to write its end line."""
        path = self.path_for(entity)
        if path in self.paths:  # a second trace would overwrite the first, unchecked
            raise ValueError(f"this test already recorded a trace of {entity!r} ({path}): give each trace its own entity")
        t = OpenTrace(path, header)
        self.paths.append(t.path)
        self._open.append(t)
        return t

    def write(self, header: Mapping[str, Any], events: Iterable[Mapping[str, Any]], entity: str = "trace") -> Path:
        """Write a whole trace of `entity` (events in commit order, `seq` numbered 1, 2, ...)."""
        with self.open(header, entity) as t:
            for e in events:
                t.event(e)
        return t.path

    def close(self) -> None:
        """Close every trace still open (the test ended: what it recorded is the trace)."""
        for t in self._open:
            t.close()


@pytest.fixture
def leaseproof_recorder(request: pytest.FixtureRequest) -> Iterator[TraceRecorder]:
    """A `TraceRecorder` writing this test's traces (checked at the end of the session under
    --leaseproof-traces)."""
    rec = TraceRecorder(_test_dir(request), checked=bool(request.config.getoption("leaseproof_traces", None)))
    try:
        yield rec
    finally:
        rec.close()


@pytest.fixture
def leaseproof_trace_dir(request: pytest.FixtureRequest) -> Path:
    """An empty directory for this test, for a system under test that writes its own trace files
    (`*.ndjson`): checked at the end of the session under --leaseproof-traces."""
    where = _test_dir(request)
    where.mkdir(parents=True, exist_ok=True)
    return where


class TraceCheck:
    """The session's check (registered on the controller only, and only under --leaseproof-traces)."""

    def __init__(self, config: pytest.Config, directory: Path) -> None:
        self.config = config
        self.directory = directory
        self.lines: list[str] = []
        self.failed = False

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Check every trace recorded, after every test (and every xdist worker) has finished."""
        if exitstatus == pytest.ExitCode.INTERRUPTED or self.config.getoption("collectonly", False):
            self.lines = ["not checked: the session ran no tests to the end (interrupted, or --collect-only)"]
            return
        try:
            self.lines, self.failed = self.check()
        except Exception as exc:  # said, and a failure: never a pass that checked nothing
            from conformance.errors import LeaseproofError

            if isinstance(exc, LeaseproofError):  # your setup: no Java, no TLC, a bad system file
                why = str(exc)
            else:
                log.exception("checking the recorded traces failed")
                why = f"a bug in leaseproof ({type(exc).__name__}: {exc}); please report it"
            self.lines, self.failed = [f"FAILED: the traces could not be checked: {why}"], True
        if self.failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def check(self) -> tuple[list[str], bool]:
        """The report's lines, and whether the session fails."""
        files = sorted(self.directory.rglob("*.ndjson"))
        if not files:
            return [f"FAILED: no traces were recorded in {self.directory}: nothing was checked"], True
        # Imported only now: a session without the option never loads the checker.
        from conformance.check.runner import Tlc
        from conformance.report.trace_report import summary_line
        from conformance.traces.check import check_traces
        from conformance.traces.read import read_trace_file
        from conformance.traces.system import load_systems
        from conformance.traces.trace import Trace, TraceKind

        opt = self.config.getoption
        root = Path(opt("leaseproof_root") or self.config.rootpath).resolve()
        systems = load_systems(root)
        if not systems:
            return [f"FAILED: no system files in {root / 'traces' / 'systems'}: give --leaseproof-root PROJECT"], True
        kwargs: dict[str, Any] = {}
        if opt("leaseproof_batch_size") is not None:
            kwargs["batch_size"] = opt("leaseproof_batch_size")
        items = [read_trace_file(p) for p in files]  # a bad file gets its verdict; the others go on
        verdicts = check_traces(items, systems, Tlc.locate(), **kwargs)
        bad = {TraceKind.REJECTED, TraceKind.MALFORMED, TraceKind.INCONCLUSIVE}
        if opt("leaseproof_fail_on_skip"):
            bad.add(TraceKind.SKIPPED)
        verbose = self.config.getoption("verbose", 0) > 0
        lines = [f"{v.kind.value.upper():12} {self._short(v.source)}: {v.describe()}"
                 for v in verdicts if verbose or v.kind is not TraceKind.ACCEPTED]
        failed = any(v.kind in bad for v in verdicts)
        missing = self.coverage_lines(systems, [(i, v.kind) for i, v in zip(items, verdicts) if isinstance(i, Trace)])
        failed |= bool(missing) and opt("leaseproof_coverage")
        lines += missing
        lines.append(f"{'FAILED' if failed else 'passed'}: {summary_line(verdicts)} ({len(files)} trace files in {self.directory})")
        return lines, failed

    def coverage_lines(self, systems: dict[str, Any], checked: list[tuple[Any, Any]]) -> list[str]:
        """One line per system whose accepted traces never showed a requirement of its system
        file's `coverage:` (`checked`: each well-formed trace and its verdict's kind)."""
        from conformance.traces.coverage import coverage
        from conformance.traces.trace import TraceKind

        strict = self.config.getoption("leaseproof_coverage")
        in_scope = sorted({t.system for t, kind in checked if kind is not TraceKind.SKIPPED and t.system in systems})
        out = []
        for name in in_scope:
            cov = coverage(systems[name], [t for t, kind in checked if t.system == name and kind is TraceKind.ACCEPTED])
            if cov.missing:
                out.append(f"{'MISSING' if strict else 'not seen':12} coverage: the accepted {name} traces never showed "
                           f"{', '.join(cov.missing)}" + ("" if strict else " (--leaseproof-coverage fails on it)"))
        return out

    def _short(self, source: str) -> str:
        try:
            return str(Path(source).relative_to(self.directory))
        except ValueError:
            return source

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """The verdicts that did not pass, and the counts."""
        if not self.lines:
            return
        terminalreporter.write_sep("=", "leaseproof traces", red=self.failed, green=not self.failed, bold=True)
        for line in self.lines:
            terminalreporter.write_line(line)
