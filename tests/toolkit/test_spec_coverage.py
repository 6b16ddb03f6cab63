"""Spec coverage of a trace set (conformance/traces/spec_coverage.py): the requirements come
from each trace spec's `Outcomes` table, which the spec holds itself to, and what no trace
showed is listed by name."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.traces.read import parse_trace
from conformance.traces.spec_coverage import SpecCoverageError, outcomes_table, spec_coverage
from conformance.traces.system import System, load_systems
from conformance.traces.trace import Trace

ROOT = Path(__file__).resolve().parents[2]
SYSTEMS = load_systems(ROOT)


@pytest.mark.parametrize("name", sorted(SYSTEMS))
def test_each_trace_spec_declares_every_store_step_s_outcomes(name: str) -> None:
    system = SYSTEMS[name]
    table = outcomes_table(system.spec_path.read_text(encoding="utf-8"), system.spec)
    assert table is not None, f"{system.spec} has no Outcomes table"
    assert set(table) <= system.ops, f"{sorted(set(table) - system.ops)} are no ops of {name}"
    # Every op that is no fault line and not the engine's answer line is a store step with outcomes.
    assert set(table) == set(system.ops) - system.faults - {"answer", "stop"} - {"heartbeat_lag", "reject", "ack_fail", "offer_fail"}


@pytest.mark.parametrize("text, why", [
    ('Outcomes == [fetch |-> {"leased"}', "no closing ]"),
    ('Outcomes == [fetch |-> {leased}]', "not a string literal"),
    ('Outcomes == [fetch |-> {}]', "no outcome"),
    ('Outcomes == [fetch |-> {"a"}, fetch |-> {"b"}]', "fetch twice"),
    ('Outcomes == [fetch == {"a"}]', "is not `op |->"),
    ('Outcomes == []', "an empty table"),
])
def test_a_malformed_table_is_an_error_that_says_what(text: str, why: str) -> None:
    with pytest.raises(SpecCoverageError, match=why):
        outcomes_table(text, "T.tla")


def _system(**kw: object) -> System:
    base = SYSTEMS["engine"]
    return System(**{**{f: getattr(base, f) for f in base.__dataclass_fields__}, **kw})  # type: ignore[arg-type]


def _trace(*steps: tuple[str, str, str]) -> Trace:
    events = tuple({"op": op, "outcome": outcome, "wf": wf} for wf, op, outcome in steps)
    return Trace("t.ndjson", {"system": "engine"}, events)


SPEC = 'Outcomes == [fetch |-> {"leased"}, remove |-> {"removed", "lost", "rerun"}, renew |-> {"renewed"}]'


def test_coverage_counts_outcomes_and_pairs_of_one_entity_and_names_what_is_missing() -> None:
    t1 = _trace(("w1", "fetch", "leased"), ("w2", "fetch", "leased"), ("w1", "remove", "removed"),
                ("w2", "crash", "injected"), ("w2", "remove", "lost"))
    cov = spec_coverage(_system(unreachable={}), SPEC, [t1])
    assert cov is not None
    assert cov.seen == {"fetch/leased": 2, "remove/removed": 1, "remove/lost": 1}
    # Pairs of one workflow, fault lines left out; w1's and w2's steps are never paired.
    assert cov.pairs == {("fetch/leased", "remove/removed"): 1, ("fetch/leased", "remove/lost"): 1}
    assert cov.missing == ["remove/rerun", "renew/renewed"]
    assert "never shown: remove/rerun, renew/renewed" in cov.summary()
    report = cov.to_json()
    assert report["outcomes"]["remove/rerun"] == 0 and report["missing"] == ["remove/rerun", "renew/renewed"]
    assert report["pairs"] == {"fetch/leased -> remove/lost": 1, "fetch/leased -> remove/removed": 1}


def test_an_outcome_declared_unreachable_is_not_required_and_is_named_when_shown() -> None:
    t = _trace(("w1", "renew", "renewed"))
    cov = spec_coverage(_system(unreachable={"renew/renewed": "only with a gate off", "remove/rerun": "never"}), SPEC, [t])
    assert cov is not None
    assert "renew/renewed" not in cov.required and "remove/rerun" not in cov.missing
    assert cov.shown_unreachable == ["renew/renewed"]
    assert "declared unreachable but shown: renew/renewed" in cov.summary()


def test_an_unreachable_declaration_must_name_an_outcome_of_the_spec() -> None:
    with pytest.raises(SpecCoverageError, match="'remove/vanished' is no op/outcome"):
        spec_coverage(_system(unreachable={"remove/vanished": "why"}), SPEC, [])


def test_a_spec_without_a_table_has_no_spec_coverage() -> None:
    assert spec_coverage(_system(unreachable={}), "Next == TRUE", []) is None


def test_an_entity_that_is_no_string_does_not_pair_or_crash() -> None:
    t = Trace("t.ndjson", {"system": "engine"}, ({"op": "fetch", "outcome": "leased", "wf": ["x"]},
                                                  {"op": "remove", "outcome": "removed", "wf": ["x"]}))
    cov = spec_coverage(_system(unreachable={}), SPEC, [t])
    assert cov is not None and cov.seen["fetch/leased"] == 1


def _corpus(system: str) -> list[Path]:
    return sorted(p for p in (ROOT / "traces" / "corpus").glob("*/accepted/**/*.ndjson")
                  if isinstance(t := parse_trace(p.read_text(encoding="utf-8"), str(p)), Trace) and t.system == system)


@pytest.mark.tlc
def test_the_check_reports_spec_coverage_and_fails_on_a_gap_only_when_required(tmp_path: Path) -> None:
    files = [str(p) for p in _corpus("workqueue") + _corpus("engine")]
    report = tmp_path / "coverage.json"
    run = [sys.executable, "-m", "conformance.cli", "traces", "check", "--root", str(ROOT), "--no-coverage", *files]
    proc = subprocess.run([*run, "--coverage-report", str(report)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "spec coverage (workqueue, TraceWorkQueue): 13 of 13 op outcomes" in proc.stdout
    data = json.loads(report.read_text())["systems"]
    assert data["workqueue"]["missing"] == [] and data["engine"]["missing"], data
    assert "schedule/honoured" in data["engine"]["unreachable"]
    assert all(f"{k}" in proc.stdout for k in data["engine"]["missing"])  # each gap named
    strict = subprocess.run([*run, "--require-spec-coverage"], capture_output=True, text=True, timeout=600)
    assert strict.returncode == 1, strict.stdout  # the engine corpus leaves outcomes unshown


@pytest.mark.tlc
def test_the_spec_holds_itself_to_its_table(tmp_path: Path) -> None:
    # An outcome the spec gives that its table leaves out rejects the line that shows it, naming
    # the table: the table cannot silently miss an outcome.
    root = tmp_path / "project"
    for part in ("tla", "traces"):
        shutil.copytree(ROOT / part, root / part)
    spec = root / "tla" / "TraceWorkQueue.tla"
    text = spec.read_text(encoding="utf-8")
    spec.write_text(text.replace('offer |-> {"added"}', 'offer |-> {"appended"}', 1), encoding="utf-8")
    trace = _corpus("workqueue")[0]
    proc = subprocess.run([sys.executable, "-m", "conformance.cli", "traces", "check", "--root", str(root),
                           "--no-coverage", str(trace)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1
    assert "outcome_in_Outcomes" in proc.stdout, proc.stdout


def test_the_html_report_shows_each_outcome_with_its_count_gaps_failing_and_reasons_escaped() -> None:
    from conformance.report.html import coverage_tables, traces_html

    cov = spec_coverage(_system(unreachable={"renew/renewed": "with <gate> off"}), SPEC,
                        [_trace(("w1", "fetch", "leased"), ("w1", "remove", "removed"))])
    assert cov is not None
    page = traces_html([], [], "summary", coverage=coverage_tables({"engine": cov.to_json()}))
    assert '<tr class="pass"><td>fetch/leased</td><td>1</td>' in page
    assert '<tr class="fail"><td>remove/lost</td><td>0</td><td>never shown</td>' in page
    assert "declared unreachable: with &lt;gate&gt; off" in page and "<gate>" not in page
    assert "engine (TraceEngine): 2 of 4 op outcomes, 1 distinct pairs" in page


@pytest.mark.tlc
def test_a_coverage_report_that_cannot_be_written_fails_the_check_and_says_where(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("a file, not a folder", encoding="utf-8")
    report = tmp_path / "plain" / "coverage.json"
    proc = subprocess.run([sys.executable, "-m", "conformance.cli", "traces", "check", "--root", str(ROOT), "--no-coverage",
                           "--coverage-report", str(report), str(_corpus("workqueue")[0])],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1
    assert f"cannot write the coverage report {report}" in proc.stderr
