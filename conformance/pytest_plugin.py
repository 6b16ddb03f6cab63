"""A pytest plugin: check the traces your integration tests record, at the end of the session.

    pytest --leaseproof-traces out/traces [--leaseproof-root PROJECT]
           [--leaseproof-allow-skip FEATURE ...] [--leaseproof-no-coverage] [--leaseproof-no-faults]
           [--leaseproof-batch-size N]

Your tests (or the system they drive) record traces during the session; when it ends, every
`*.ndjson` under the directory is checked against your systems (`PROJECT/traces/systems/*.yaml`,
trace specs in `PROJECT/tla`, PROJECT defaulting to pytest's rootdir) with the same batched
checker as `leaseproof traces check`, many traces per TLC run. The terminal summary lists every
trace that was not accepted (for a rejection, the line and why; for a skip, its features and
whether they were allowed) and ends with the verdict and the counts, as its last line, just
above pytest's own (which then counts `1 leaseproof check failed`). The session fails on a
rejected, malformed or inconclusive trace; on a skipped one unless `--leaseproof-allow-skip`
names every out-of-scope feature that made it skip (a name no system file declares out of scope
is a usage error); when the accepted traces never showed a requirement of a system file's
`coverage:` (as the CLI, unless `--leaseproof-no-coverage`); when a failing test recorded no
trace (its run was never checked: it is listed); and when nothing was recorded at all. With
`--leaseproof-no-faults` (a session that injects no fault), a trace with a fault line is
rejected at that line, as `leaseproof traces check --no-faults` does.
`--leaseproof-fail-on-skip` and `--leaseproof-coverage` are still accepted, and do nothing: both
are the default now.

Two fixtures hand a test somewhere to record, in a directory of its own named after the test
(its id made safe for a file name and cut to a readable length, then a short hash of the whole
id, so that ids differing only in a replaced character, `job/1` and `job_1`, never share one):

    def test_two_workers(leaseproof_recorder):
        with leaseproof_recorder.open(header, entity="job-1") as trace:
            trace.event(node="w1", op="acquire", now=0, outcome="acquired", state={...})

    def test_my_service(leaseproof_trace_dir):
        run_service(trace_dir=leaseproof_trace_dir)   # it writes its own *.ndjson files there

The recorder names each file after its entity the same way, within a bounded length (a
300-character entity name works), never overwrites a trace, and closes every trace the test
left open when the test ends, failed or not: what a failing test recorded is checked too. A test
that failed after setting up either fixture but before anything was written there is listed as
`NO TRACE` and fails the check. (A test that records elsewhere, through an environment variable
say, cannot be told apart: only what lands in the directory is checked.)

One module, past the usual size, because pytest loads a plugin as one (the `pytest11` entry point,
`-p conformance.pytest_plugin`): its options, fixtures, recorder and session check belong together;
what is pure and shared with `leaseproof traces check` lives in `conformance/traces/` (skips.py).

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
from collections.abc import Generator, Iterable, Iterator, Mapping
from hashlib import sha1
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import pytest

from conformance.errors import LeaseproofError

# Marks a directory as the plugin's, so that a later session may clear it (and no other).
MARKER = ".leaseproof-traces"
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")
# Readable characters kept of a test id and of an entity: with the hash and `.ndjson`, each path
# component stays far below the 255 bytes most file systems allow.
TEST_CHARS, ENTITY_CHARS = 100, 80
# pytest's count of what failed, on its last line, when the traces did.
STATS_KEY = "leaseproof check failed"

log = logging.getLogger(__name__)


def pytest_addoption(parser: pytest.Parser) -> None:
    """The plugin's options (registered always; they do nothing unless --leaseproof-traces is given)."""
    group = parser.getgroup("leaseproof", "check recorded traces against TLA+ trace specs (leaseproof)")
    group.addoption("--leaseproof-traces", metavar="DIR", default=None,
                    help="record the tests' traces into DIR and check them all at the end of the session")
    group.addoption("--leaseproof-root", metavar="PROJECT", default=None,
                    help="the project holding traces/systems/*.yaml and tla/ (default: pytest's rootdir)")
    group.addoption("--leaseproof-allow-skip", action="append", default=[], metavar="FEATURE",
                    help="a trace skipped for FEATURE (one its system file declares out of scope) does not fail the "
                         "session; a trace skipped for several features needs each allowed (repeatable). Without "
                         "it, every skip fails")
    group.addoption("--leaseproof-no-coverage", action="store_true", default=False,
                    help="do not fail when the accepted traces never showed what a system file's coverage: requires "
                         "(what is missing is still listed)")
    group.addoption("--leaseproof-no-faults", action="store_true", default=False,
                    help="the session injects no faults: a trace with a fault line (a crash, a pause, a lapse, ... "
                         "as its system file's faults: lists) is rejected at that line")
    group.addoption("--leaseproof-fail-on-skip", action="store_true", default=False,
                    help="deprecated, does nothing: a skip fails by default (allow features with --leaseproof-allow-skip)")
    group.addoption("--leaseproof-coverage", action="store_true", default=False,
                    help="deprecated, does nothing: coverage is required by default (--leaseproof-no-coverage)")
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
        _check_allowed(config)
        _prepare(path)
        # xdist hands the controller's options to its workers: they record into this very path.
        config.option.leaseproof_traces = str(path)
        config.pluginmanager.register(TraceCheck(config, path), "leaseproof-trace-check")


def _check_allowed(config: pytest.Config) -> None:
    """Refuse, before any test runs, an --leaseproof-allow-skip feature no system file declares
    out of scope: a typo must not fail the session only at its end, nor allow anything."""
    names = config.getoption("leaseproof_allow_skip", None) or []
    if not names:
        return
    from conformance.traces.skips import allowed_features
    from conformance.traces.system import load_systems

    try:
        allowed_features(names, load_systems(_root(config)), flag="--leaseproof-allow-skip")
    except LeaseproofError as exc:
        raise pytest.UsageError(str(exc)) from None


def _root(config: pytest.Config) -> Path:
    return Path(config.getoption("leaseproof_root", None) or config.rootpath).resolve()


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


def safe_name(text: str, fallback: str, limit: int) -> str:
    """`text` as a file name, the same every time: anything but letters, digits, `.`, `_` and
    `-` replaced, at most `limit` of it kept, then `-` and a hash of the whole of `text`, so that
    two texts never share a name (`job/1` and `job_1` both read `job_1`, and differ after it)."""
    readable = _SAFE.sub("_", text).strip("_.-")[:limit].rstrip("_.-") or fallback  # never hidden, nor an option
    return f"{readable}-{sha1(text.encode('utf-8', 'surrogatepass')).hexdigest()[:10]}"


def trace_dir_name(nodeid: str) -> str:
    """The directory name of a test's traces: its node id, made safe and bounded (`safe_name`)."""
    return safe_name(nodeid, "test", TEST_CHARS)


def trace_file_name(entity: str) -> str:
    """The file name of the recorder's trace of `entity`: made safe and bounded (`safe_name`)."""
    return f"{safe_name(str(entity), 'trace', ENTITY_CHARS)}.ndjson"


def _test_dir(request: pytest.FixtureRequest) -> Path:
    """This test's own directory: under --leaseproof-traces, else in its tmp_path (unchecked)."""
    root = request.config.getoption("leaseproof_traces", None)
    if not root:
        return Path(request.getfixturevalue("tmp_path")) / "leaseproof-traces"
    # Shared by both fixtures of one test, and never cleared here: one fixture set up after the
    # other must not take away what the first made (the session cleared the whole directory).
    return Path(root).resolve() / trace_dir_name(request.node.nodeid)


class RecordingError(LeaseproofError, ValueError):
    """A trace could not be recorded where asked without losing another: the test recorded a
    second trace of one entity, or a trace is already in the file (the same test id ran twice)."""


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
        try:  # "x": a trace already there is never overwritten (it would be lost, unchecked)
            self._file: IO[str] | None = path.open("x", encoding="utf-8")
        except FileExistsError:
            raise RecordingError(f"{path}: a trace is already there (did this test id run twice in the session?); "
                                 f"it is kept, and this one is not recorded") from None
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
        """The file a trace of `entity` is written to: its name made safe and bounded, then a hash
        of the whole name (`safe_name`), so that any two entities get two files."""
        return self.directory / trace_file_name(entity)

    def open(self, header: Mapping[str, Any], entity: str = "trace") -> OpenTrace:
        """Begin a trace of `entity`; close it (or use `with`) to write its end line."""
        path = self.path_for(entity)
        if path in self.paths:  # a second trace would overwrite the first, unchecked
            raise RecordingError(f"this test already recorded a trace of {entity!r} ({path}): give each trace its own entity")
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
    # Made now, so that a test that fails before it records is known to have meant to.
    rec.directory.mkdir(parents=True, exist_ok=True)
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
        # Node ids of the tests that failed (any phase): under xdist too, since the workers'
        # reports reach the controller's hook.
        self.failed_tests: set[str] = set()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Note a failed test: if it recorded nothing, the summary must say so."""
        if report.failed:
            self.failed_tests.add(report.nodeid)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Check every trace recorded, after every test (and every xdist worker) has finished."""
        if exitstatus == pytest.ExitCode.INTERRUPTED or self.config.getoption("collectonly", False):
            self.lines = ["not checked: the session ran no tests to the end (interrupted, or --collect-only)"]
            return
        try:
            self.lines, self.failed = self.check()
        except Exception as exc:  # said, and a failure: never a pass that checked nothing
            if isinstance(exc, LeaseproofError):  # your setup: no Java, no TLC, a bad system file
                why = str(exc)
            else:
                log.exception("checking the recorded traces failed")
                why = f"a bug in leaseproof ({type(exc).__name__}: {exc}); please report it"
            self.lines, self.failed = [f"FAILED: the traces could not be checked: {why}"], True
        if self.failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def unrecorded(self) -> list[str]:
        """The failed tests that set up a fixture of the plugin (their directory exists) and
        left no trace in it: nothing of their run was checked."""
        out = []
        for nodeid in sorted(self.failed_tests):
            where = self.directory / trace_dir_name(nodeid)
            if where.is_dir() and next(where.rglob("*.ndjson"), None) is None:
                out.append(nodeid)
        return out

    def check(self) -> tuple[list[str], bool]:
        """The report's lines (the verdict and the counts last), and whether the session fails."""
        silent = self.unrecorded()
        lines = [f"{'NO TRACE':12} {n}: the test failed before it recorded a trace; nothing of its run was checked"
                 for n in silent]
        tail = f"; {len(silent)} failing test(s) recorded no trace" if silent else ""
        files = sorted(self.directory.rglob("*.ndjson"))
        if not files:
            return [*lines, f"FAILED: no traces were recorded in {self.directory}: nothing was checked{tail}"], True
        # Imported only now: a session without the option never loads the checker.
        from conformance.check.runner import Tlc
        from conformance.report.trace_report import summary_line
        from conformance.traces.check import check_traces
        from conformance.traces.read import read_trace_file
        from conformance.traces.skips import allowed_features, judge, skip_line
        from conformance.traces.system import load_systems
        from conformance.traces.trace import Trace, TraceKind

        opt = self.config.getoption
        root = _root(self.config)
        systems = load_systems(root)
        if not systems:
            return [*lines, f"FAILED: no system files in {root / 'traces' / 'systems'}: give --leaseproof-root PROJECT"], True
        flag = "--leaseproof-allow-skip"
        allowed = allowed_features(opt("leaseproof_allow_skip") or [], systems, flag=flag)
        kwargs: dict[str, Any] = {}
        if opt("leaseproof_batch_size") is not None:
            kwargs["batch_size"] = opt("leaseproof_batch_size")
        items = [read_trace_file(p) for p in files]  # a bad file gets its verdict; the others go on
        verdicts = check_traces(items, systems, Tlc.locate(), no_faults=bool(opt("leaseproof_no_faults")), **kwargs)
        skips = {s.source: s for s in judge(items, verdicts, systems, allowed)}
        verbose = self.config.getoption("verbose", 0) > 0
        lines = [f"{v.kind.value.upper():12} {self._short(v.source)}: {v.describe()}"
                 + (f" [{skips[v.source].note(allowed, flag)}]" if v.source in skips else "")
                 for v in verdicts if verbose or v.kind is not TraceKind.ACCEPTED] + lines
        failed = any(v.kind in {TraceKind.REJECTED, TraceKind.MALFORMED, TraceKind.INCONCLUSIVE} for v in verdicts)
        failed |= any(not s.allowed for s in skips.values()) or bool(silent)
        missing = self.coverage_lines(systems, [(i, v.kind) for i, v in zip(items, verdicts) if isinstance(i, Trace)])
        failed |= bool(missing) and not opt("leaseproof_no_coverage")
        lines += missing
        said = "; ".join(x for x in (summary_line(verdicts), skip_line(list(skips.values()), allowed, flag)) if x)
        lines.append(f"{'FAILED' if failed else 'passed'}: {said}{tail} ({len(files)} trace files in {self.directory})")
        return lines, failed

    def coverage_lines(self, systems: dict[str, Any], checked: list[tuple[Any, Any]]) -> list[str]:
        """One line per system whose accepted traces never showed a requirement of its system
        file's `coverage:` (`checked`: each well-formed trace and its verdict's kind)."""
        from conformance.traces.coverage import coverage
        from conformance.traces.trace import TraceKind

        strict = not self.config.getoption("leaseproof_no_coverage")
        in_scope = sorted({t.system for t, kind in checked if kind is not TraceKind.SKIPPED and t.system in systems})
        out = []
        for name in in_scope:
            cov = coverage(systems[name], [t for t, kind in checked if t.system == name and kind is TraceKind.ACCEPTED])
            if cov.missing:
                out.append(f"{'MISSING' if strict else 'not seen':12} coverage: the accepted {name} traces never showed "
                           f"{', '.join(cov.missing)}" + ("" if strict else " (--leaseproof-no-coverage: not a failure)"))
        return out

    def _short(self, source: str) -> str:
        try:
            return str(Path(source).relative_to(self.directory))
        except ValueError:
            return source

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> Generator[None, object, object]:
        """The verdicts that did not pass, and the counts: after the rest of the summary (pytest's
        short test summary included), so that the verdict is its last line; and when the check
        failed, counted on pytest's own last line too."""
        result = yield
        if self.lines:
            terminalreporter.write_sep("=", "leaseproof traces", red=self.failed, green=not self.failed, bold=True)
            for line in self.lines:
                terminalreporter.write_line(line)
            if self.failed:
                _count_on_last_line(terminalreporter, self.lines[-1])
        return result


def _count_on_last_line(reporter: pytest.TerminalReporter, line: str) -> None:
    """Add `1 leaseproof check failed` to pytest's last line (`=== 6 passed, 1 leaseproof check
    failed in 3s ===`): that line counts every key of the reporter's `stats`."""
    add = getattr(reporter, "_add_stats", None)  # pytest's own way, which also recolours the line
    if callable(add):
        add(STATS_KEY, [line])
    else:
        reporter.stats.setdefault(STATS_KEY, []).append(line)
