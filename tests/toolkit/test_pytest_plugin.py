"""The pytest plugin (conformance/pytest_plugin.py), in pytest sessions of their own (pytester),
on a copy of the fixture project's toy (tests/fixtures/project/joblease.py).

Each session that checks traces costs a TLC run (and the xdist one, two worker start-ups), so
one session, under xdist, holds every verdict: a trace accepted, the toy's planted bug rejected
at its line, a truncated and a garbage trace malformed, the corpus, a test that recorded nothing,
two test ids that differ in a replaced character, a 300-character entity, failing tests with
and without a trace. Skips, coverage and the other failures are decided without TLC.
"""

from __future__ import annotations

import re
import shutil
import textwrap
from pathlib import Path

import pytest

from conformance.pytest_plugin import RecordingError, TraceRecorder, trace_dir_name, trace_file_name

pytestmark = pytest.mark.tlc

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "tests" / "fixtures" / "project"
# `-p`: the shared environment may predate the entry point; named as the entry point, so that
# an install that has it does not register the plugin twice.
PLUGIN = ("-p", "conformance.pytest_plugin", "-p", "no:cacheprovider",
          # The inner sessions need no other plugin: fewer to load in each xdist worker.
          "-p", "no:hypothesispytest", "-p", "no:benchmark")


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A copy of the fixture project (its specs, system files and toy) as pytester's directory."""
    for name in ("tla", "traces"):
        shutil.copytree(PROJECT / name, pytester.path / name)
    shutil.copy(PROJECT / "joblease.py", pytester.path)
    # xdist's workers are new interpreters: they import this checkout's conformance, and the toy.
    monkeypatch.setenv("PYTHONPATH", f"{ROOT}:{pytester.path}")
    monkeypatch.syspath_prepend(str(pytester.path))
    return pytester


GOOD = textwrap.dedent("""
    from joblease import ManualClock, Slot, header, two_workers

    def test_good(leaseproof_recorder):
        clock = ManualClock(5_000)
        with leaseproof_recorder.open(header("good", 1000)) as trace:
            two_workers(Slot(1000, clock, trace.event), clock)
""")


CHECKERS = """
    from pathlib import Path

    def pytest_sessionfinish(session):
        # Which processes hold the checker: the controller only. (Not PYTEST_XDIST_WORKER: an
        # outer xdist run sets it for this whole process, inner controller included.)
        who = getattr(session.config, "workerinput", {}).get("workerid", "controller")
        if session.config.pluginmanager.has_plugin("leaseproof-trace-check"):
            with open(Path(session.config.rootpath) / "checkers.txt", "a") as f:
                f.write(who + "\\n")
"""


def where(test: str, entity: str = "trace") -> str:
    """Where the recorder writes `test`'s trace of `entity`, relative to --leaseproof-traces."""
    return f"{trace_dir_name('test_toy.py::' + test)}/{trace_file_name(entity)}"


def test_a_session_under_xdist_fails_on_each_bad_trace_and_says_where(project: pytest.Pytester) -> None:
    """Two xdist workers record; the controller alone checks, once, when both are done. No
    trace is lost: not when two test ids differ in a replaced character (`job/1`, `job_1`: they
    shared a file, and the good trace overwrote the double run), not a 300-character entity's
    (its file name was too long), not a failing test's; and a failing test that recorded
    nothing is named, not passed over."""
    pytest.importorskip("xdist")
    project.makeconftest(CHECKERS)
    project.makepyfile(test_toy=GOOD + textwrap.dedent("""
        import pytest

        @pytest.mark.parametrize("bug", [True, False], ids=["job/1", "job_1"])
        def test_one_job(leaseproof_recorder, bug):
            clock = ManualClock(5_000)
            with leaseproof_recorder.open(header("job", 1000, check_owner_on_renew=not bug)) as trace:
                two_workers(Slot(1000, clock, trace.event, check_owner_on_renew=not bug), clock)

        def test_long_entity(leaseproof_recorder):
            clock = ManualClock(5_000)
            with leaseproof_recorder.open(header("long", 1000), entity="e" * 300) as trace:
                two_workers(Slot(1000, clock, trace.event), clock)

        def test_fails_after_recording(leaseproof_recorder):
            # Left open: the fixture closes it when the test ends, failed or not.
            trace = leaseproof_recorder.open(header("failing", 1000))
            clock = ManualClock(5_000)
            two_workers(Slot(1000, clock, trace.event), clock)
            raise AssertionError("the test failed after recording")

        def test_fails_before_recording(leaseproof_recorder):
            raise AssertionError("the test failed before it recorded anything")

        def test_system_dies(leaseproof_trace_dir):
            raise RuntimeError("the system under test died before writing its trace")

        def test_planted_bug(leaseproof_recorder):
            clock = ManualClock(5_000)
            with leaseproof_recorder.open(header("bug", 1000, check_owner_on_renew=False)) as trace:
                two_workers(Slot(1000, clock, trace.event, check_owner_on_renew=False), clock)

        def test_truncated(leaseproof_trace_dir):
            # The system under test died after one event: no end line.
            events = []
            Slot(1000, ManualClock(), events.append).acquire("w1")
            import json
            lines = [header("cut", 1000), {"kind": "event", "seq": 1, **events[0]}]
            (leaseproof_trace_dir / "cut.ndjson").write_text("".join(json.dumps(x) + "\\n" for x in lines))

        def test_garbage(leaseproof_trace_dir):
            (leaseproof_trace_dir / "junk.ndjson").write_text("not json\\n")

        def test_records_nothing(leaseproof_recorder):
            pass

        def test_corpus(leaseproof_trace_dir):
            # The checked-in known-good and known-bad traces, through the same session.
            import shutil
            shutil.copytree("traces/corpus/joblease", leaseproof_trace_dir, dirs_exist_ok=True)
    """))
    result = project.runpytest(*PLUGIN, "-n", "2", "--leaseproof-traces", "out", "--leaseproof-root", ".")
    result.assert_outcomes(passed=9, failed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    planted = ('rejected at event 5 (renew by w1): no behaviour of the spec explains it; disagrees on outcome (spec "lost", '
               'trace "renewed"), expires (spec 2501, trace 2751), version (spec 3, trace 4)')
    result.stdout.fnmatch_lines([
        "*= short test summary info =*",
        "*= leaseproof traces =*",
        f"REJECTED     {where('test_planted_bug')}: {planted}",
    ])
    section = out.split("= leaseproof traces =")[1]
    assert f"REJECTED     {where('test_one_job[job/1]')}: {planted}" in section
    corpus = trace_dir_name("test_toy.py::test_corpus")
    assert f"REJECTED     {corpus}/rejected/rejected-renew-without-owner-check.ndjson: rejected at event 5" in section
    assert f"REJECTED     {corpus}/rejected/rejected-restart-not-logged.ndjson: rejected at event 2 (acquire by w2)" in section
    assert "accepted-" not in section
    truncated, garbage = trace_dir_name("test_toy.py::test_truncated"), trace_dir_name("test_toy.py::test_garbage")
    assert f"MALFORMED    {truncated}/cut.ndjson: malformed: truncated: no end line after 1 events" in section
    assert f"MALFORMED    {garbage}/junk.ndjson: malformed: line 1: not JSON" in section
    for test, entity in (("test_good", "trace"), ("test_one_job[job_1]", "trace"), ("test_long_entity", "e" * 300),
                         ("test_fails_after_recording", "trace")):
        assert (project.path / "out" / where(test, entity)).read_text().endswith('{"count": 10, "kind": "end"}\n'), test
        assert trace_dir_name(f"test_toy.py::{test}") not in section  # accepted: not listed
    assert (project.path / "out" / trace_dir_name("test_toy.py::test_records_nothing")).is_dir()  # it passed: not listed
    assert "test_records_nothing" not in section
    lines = out.splitlines()
    assert [ln for ln in lines if ln.startswith("NO TRACE")] == [
        f"NO TRACE     test_toy.py::{t}: the test failed before it recorded a trace; nothing of its run was checked"
        for t in ("test_fails_before_recording", "test_system_dies")]
    # The verdict is the summary's last line, and pytest's own last line counts it.
    assert lines[-2].startswith("FAILED: 6 of 10 in-scope runs accepted, 0 skipped, 4 rejected, 2 malformed; "
                                "2 failing test(s) recorded no trace (12 trace files in "), lines[-2]
    assert re.fullmatch(r"=+ 3 failed, 9 passed, (\d+ warnings?, )?1 leaseproof check failed in .* =+", lines[-1]), lines[-1]
    assert (project.path / "checkers.txt").read_text() == "controller\n"


def test_the_toy_projects_own_tests_pass_under_the_plugin(project: pytest.Pytester) -> None:
    """The worked example as a user runs it: the project's tests/test_joblease.py (one trace by
    the recorder, one written by the toy into its test's directory), listed with -v, coverage
    required (by default). The options now the default are still accepted."""
    shutil.copytree(PROJECT / "tests", project.path / "tests")
    shutil.copy(PROJECT / "conftest.py", project.path)
    result = project.runpytest(*PLUGIN, "--leaseproof-traces", "out", "--leaseproof-root", ".", "-v", "--leaseproof-coverage",
                               "--leaseproof-fail-on-skip", "tests")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK
    restart = trace_dir_name("tests/test_joblease.py::test_a_restart_frees_the_slot")
    turns = trace_dir_name("tests/test_joblease.py::test_two_workers_take_turns")
    result.stdout.fnmatch_lines([
        "*= leaseproof traces =*",
        f"ACCEPTED     {restart}/slot.ndjson: accepted, excused by restart at line 2 (w2)",
        f"ACCEPTED     {turns}/{trace_file_name('trace')}: accepted",
        "passed: 2 of 2 in-scope runs accepted, 0 skipped (2 trace files in *out)",
    ])
    assert "coverage" not in result.stdout.str().split("= leaseproof traces =")[1]


def test_coverage_fails_by_default_and_is_only_listed_when_not_asked(project: pytest.Pytester,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The wiring alone, without TLC: every trace is taken as accepted. One that never shows a
    takeover or a stale renewal misses both of joblease.yaml's coverage requirements, which
    fails the session (as `traces check` does) unless --leaseproof-no-coverage."""
    from conformance.traces import check
    from conformance.traces.trace import TraceKind, TraceVerdict

    monkeypatch.setattr(check, "check_traces", lambda items, *a, **k: [TraceVerdict(i.source, TraceKind.ACCEPTED) for i in items])
    project.makepyfile(test_toy="""
        from joblease import ManualClock, Slot, header

        def test_alone(leaseproof_recorder):
            clock = ManualClock()
            with leaseproof_recorder.open(header("alone", 1000)) as trace:
                slot = Slot(1000, clock, trace.event)
                slot.acquire("w1")
                slot.release("w1")
    """)
    args = (*PLUGIN, "--leaseproof-traces", "out", "--leaseproof-root", ".")
    missing = ("coverage: the accepted joblease traces never showed the slot acquired after the other worker held it, "
               "a stale renewal refused while the other worker holds the slot")
    strict = project.runpytest(*args)
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.stdout.fnmatch_lines([f"MISSING      {missing}", "FAILED: 1 of 1 *", "=*= 1 passed, *1 leaseproof check failed in *"])
    lenient = project.runpytest(*args, "--leaseproof-no-coverage")
    assert lenient.ret == pytest.ExitCode.OK
    lenient.stdout.fnmatch_lines([f"not seen     {missing} (--leaseproof-no-coverage: not a failure)", "passed: 1 of 1 *"])
    assert "leaseproof check failed" not in lenient.stdout.str()


def test_inert_without_the_option(project: pytest.Pytester) -> None:
    """A fresh interpreter: no checker module is imported, nothing is written but to tmp_path."""
    project.makepyfile(test_toy=GOOD + textwrap.dedent("""
        import sys

        def test_nothing_heavy_was_imported(leaseproof_recorder, leaseproof_trace_dir, tmp_path):
            heavy = [m for m in ("conformance.traces.check", "conformance.check.runner", "jsonschema", "jinja2", "lark")
                     if m in sys.modules]
            assert heavy == []
            assert not leaseproof_recorder.checked
            assert leaseproof_recorder.path_for().is_relative_to(tmp_path)
            assert leaseproof_trace_dir.is_relative_to(tmp_path)
    """))
    result = project.runpytest_subprocess(*PLUGIN)
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK
    assert "leaseproof traces" not in result.stdout.str()
    # The fixtures wrote into the tests' tmp_path (pytester's basetemp), and nowhere else.
    written = [p.relative_to(project.path).parts[0] for p in project.path.rglob("*.ndjson")]
    assert {w for w in written if w != "traces"} == {"runpytest-0"}
    assert not list(project.path.rglob(".leaseproof-traces"))


def test_nothing_recorded_is_said_and_fails(project: pytest.Pytester) -> None:
    """Also: an earlier session's directory is cleared first, so its traces are not checked
    again; a failing test that recorded nothing is named; the verdict is the last line."""
    earlier = project.path / "out" / trace_dir_name("test_toy.py::test_broken")
    earlier.mkdir(parents=True)
    shutil.copy(PROJECT / "traces" / "corpus" / "joblease" / "accepted" / "accepted-two-workers.ndjson", earlier)
    (project.path / "out" / ".leaseproof-traces").write_text("")
    project.makepyfile(test_toy="def test_quiet():\n    pass\n\ndef test_broken(leaseproof_recorder):\n    assert False\n")
    result = project.runpytest(*PLUGIN, "--leaseproof-traces", "out", "--leaseproof-root", ".")
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*= short test summary info =*", "FAILED test_toy.py::test_broken - assert False",
        "*= leaseproof traces =*",
        "NO TRACE     test_toy.py::test_broken: the test failed before it recorded a trace; nothing of its run was checked",
        "FAILED: no traces were recorded in *out: nothing was checked; 1 failing test(s) recorded no trace",
        "=*= 1 failed, 1 passed, *1 leaseproof check failed in *"])


def test_a_skip_fails_unless_its_feature_is_allowed(project: pytest.Pytester) -> None:
    """A trace using a feature its system file declares out of scope (the counter's `reset`):
    decided without TLC, listed with its reason, and a failure unless --leaseproof-allow-skip
    names the feature; a name no system file declares is refused before any test runs."""
    project.makepyfile(test_toy="""
        def test_reset(leaseproof_recorder):
            leaseproof_recorder.write({"system": "counter", "settings": {"limit": 3}, "nodes": ["n1"], "features": ["reset"]},
                                      [{"node": "n1", "op": "step", "now": 0, "outcome": "stepped",
                                        "state": {"x": 1, "seen": {"n1": 1}}}])
    """)
    args = (*PLUGIN, "--leaseproof-traces", "out", "--leaseproof-root", ".")
    reset = where("test_reset")
    strict = project.runpytest(*args)
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    why = "skipped: uses reset, which the TraceCounter spec does not model: the counter's spec has no reset"
    lines = strict.stdout.lines
    assert f"SKIPPED      {reset}: {why} (a fixture feature declared out of scope) " \
           f"[fails: reset not allowed (--leaseproof-allow-skip reset allows it)]" in lines
    assert lines[-2].startswith("FAILED: 0 of 0 in-scope runs accepted, 1 skipped; skips: 0 allowed, 1 failed (reset 1); "
                                "--leaseproof-allow-skip FEATURE allows a feature's skips (1 trace files in ")
    allowed = project.runpytest(*args, "--leaseproof-allow-skip", "reset")
    assert allowed.ret == pytest.ExitCode.OK
    assert f"SKIPPED      {reset}: {why} (a fixture feature declared out of scope) [allowed (reset)]" in allowed.stdout.lines
    assert allowed.stdout.lines[-2].startswith("passed: 0 of 0 in-scope runs accepted, 1 skipped; skips: 1 allowed (reset 1), "
                                               "0 failed (1 trace files in ")
    typo = project.runpytest(*PLUGIN, "--leaseproof-traces", "fresh", "--leaseproof-root", ".", "--leaseproof-allow-skip", "rest")
    assert typo.ret == pytest.ExitCode.USAGE_ERROR
    typo.stderr.fnmatch_lines(["*--leaseproof-allow-skip 'rest': no system file declares that feature out of scope, so it "
                               "allows nothing; the features declared out of scope are: reset (counter)"])
    assert "Traceback" not in typo.stderr.str() + typo.stdout.str()
    assert not (project.path / "fresh").exists()  # refused before anything ran


def test_no_faults_rejects_a_trace_at_its_fault_line(project: pytest.Pytester) -> None:
    """A session that injects no faults (`--leaseproof-no-faults`) fails on a trace that has a
    fault line (the toy's store restart), at that line; without the option the restart is a
    fault like any other and the trace is accepted, excused by it."""
    project.makepyfile(test_toy="""
        from joblease import ManualClock, Slot, header, restarted

        def test_restart(leaseproof_recorder):
            clock = ManualClock(5_000)
            with leaseproof_recorder.open(header("restarted", 1000)) as trace:
                restarted(Slot(1000, clock, trace.event), clock)
    """)
    args = (*PLUGIN, "--leaseproof-traces", "out", "--leaseproof-root", ".", "--leaseproof-no-coverage")
    allowed = project.runpytest(*args, "-v")
    assert allowed.ret == pytest.ExitCode.OK
    assert f"ACCEPTED     {where('test_restart')}: accepted, excused by restart at line 2 (w2)" in allowed.stdout.lines
    strict = project.runpytest(*args, "--leaseproof-no-faults")
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    [line] = [ln for ln in strict.stdout.lines if ln.startswith("REJECTED")]
    assert line.startswith(f"REJECTED     {where('test_restart')}: rejected at event 2 (restart by w2)"), line


def test_a_project_without_system_files_is_said_and_fails(project: pytest.Pytester) -> None:
    (project.path / "empty").mkdir()
    project.makepyfile(test_toy=GOOD + textwrap.dedent("""
        import pytest

        def test_both_fixtures_share_the_tests_directory(leaseproof_trace_dir, leaseproof_recorder):
            assert leaseproof_trace_dir.is_dir() and leaseproof_recorder.path_for().parent == leaseproof_trace_dir

        def test_one_trace_per_entity(leaseproof_recorder):
            from conformance.pytest_plugin import RecordingError

            leaseproof_recorder.open(header("a", 1000), entity="job")
            with pytest.raises(RecordingError, match="already recorded a trace of 'job'"):
                leaseproof_recorder.open(header("b", 1000), entity="job")
    """))
    result = project.runpytest(*PLUGIN, "--leaseproof-traces", "out", "--leaseproof-root", "empty")
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["FAILED: no system files in *empty/traces/systems: give --leaseproof-root PROJECT"])


def test_no_tlc_is_said_and_fails(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TLA2TOOLS_JAR", str(project.path / "no-such.jar"))
    project.makepyfile(test_toy=GOOD)
    result = project.runpytest(*PLUGIN, "--leaseproof-traces", "out", "--leaseproof-root", ".")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["FAILED: the traces could not be checked: TLA2TOOLS_JAR is *no-such.jar, but there is no file there*"])


def test_a_directory_of_other_files_and_a_batch_of_none_are_refused(project: pytest.Pytester) -> None:
    (project.path / "mine").mkdir()
    (project.path / "mine" / "notes.txt").write_text("not the plugin's\n")
    project.makepyfile(test_toy="def test_quiet():\n    pass\n")
    result = project.runpytest(*PLUGIN, "--leaseproof-traces", "mine")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the directory holds files the plugin did not write*"])
    assert (project.path / "mine" / "notes.txt").exists()
    zero = project.runpytest(*PLUGIN, "--leaseproof-traces", "out", "--leaseproof-batch-size", "0")
    assert zero.ret == pytest.ExitCode.USAGE_ERROR
    zero.stderr.fnmatch_lines(["*--leaseproof-batch-size 0: at least 1 trace per TLC run*"])


def test_the_corpus_is_what_the_toy_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """traces/corpus/joblease is written by joblease.py (planted bug and all): regenerated, it
    is the same, byte for byte."""
    monkeypatch.syspath_prepend(str(PROJECT))
    import joblease

    joblease.write_corpus(tmp_path)
    corpus = PROJECT / "traces" / "corpus" / "joblease"
    names = sorted(str(p.relative_to(corpus)) for p in corpus.rglob("*.ndjson"))
    assert names == sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.ndjson"))
    for name in names:
        assert (tmp_path / name).read_text() == (corpus / name).read_text(), name
    assert re.search(r'"check_owner_on_renew": false', (corpus / "rejected" / "rejected-renew-without-owner-check.ndjson").read_text())


def test_names_are_stable_distinct_and_bounded() -> None:
    """A test id or entity made safe for a file name, cut to a readable length, and followed
    by a hash of the whole: the same id gives the same name, ids that read alike do not."""
    assert trace_dir_name("t.py::test_x[job/1]") == trace_dir_name("t.py::test_x[job/1]")
    assert trace_dir_name("t.py::test_x[job/1]").startswith("t.py_test_x_job_1-")
    assert trace_dir_name("t.py::test_x[job/1]") != trace_dir_name("t.py::test_x[job_1]")
    assert trace_file_name("job/1") != trace_file_name("job_1") and trace_file_name("job").startswith("job-")
    long = "x" * 300
    assert trace_file_name(long) != trace_file_name(long + "y")  # differ past the readable part
    assert max(len(trace_file_name(long).encode()), len(trace_dir_name(long).encode())) < 128
    # Nothing readable left, or only dots: the fallback, never a hidden file.
    assert trace_file_name("\u00e9\ud800/..").startswith("trace-") and trace_dir_name("::").startswith("test-")


def test_a_trace_already_in_the_file_is_never_overwritten(tmp_path: Path) -> None:
    """The same test id recorded twice in a session (a rerun plugin, say): the second trace is
    refused, and the first kept as it was."""
    first = TraceRecorder(tmp_path, checked=True).write({"system": "joblease", "nodes": ["w1"]}, [])
    kept = first.read_text()
    with pytest.raises(RecordingError, match="a trace is already there"):
        TraceRecorder(tmp_path, checked=True).open({"system": "joblease", "nodes": ["w2"]})
    assert first.read_text() == kept


@pytest.mark.slow
def test_the_toys_self_test_rejects_every_mutant() -> None:
    """The worked example's trace spec earns its place: the corpus gets its verdicts, and every
    mutant of its accepted traces is rejected (a drop or a duplicate of a renewal survived until
    the toy logged a version). Four TLC runs: behind the slow marker."""
    import subprocess
    import sys

    corpus = PROJECT / "traces" / "corpus" / "joblease"
    proc = subprocess.run([sys.executable, "-m", "conformance.cli", "traces", "check", "--root", str(PROJECT), "--self-test",
                           str(corpus / "accepted")], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "self-test: 4 known traces got their known verdicts" in proc.stdout
    assert "10 of 10 mutants rejected" in proc.stdout
