"""Skips fail unless allowed by feature (conformance/traces/skips.py, `traces check --allow-skip`).

A trace that claims a feature its system file declares out of scope is skipped without TLC, so
none of these runs TLC: the engine's double run below is never checked, which is the point.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.traces.read import read_trace_file
from conformance.traces.skips import UnknownSkipFeature, allowed_features, counts, judge, skip_line
from conformance.traces.system import load_systems
from conformance.traces.trace import TraceKind, TraceVerdict

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "tests" / "fixtures" / "project"
DOUBLE_RUN = ROOT / "traces" / "corpus" / "engine" / "rejected" / "honour-check-off-double-run-two-nodes.ndjson"


def claiming(src: Path, dest: Path, *features: str) -> Path:
    """`src` with `features` added to its header's."""
    header, *rest = src.read_text().splitlines(keepends=True)
    head = json.loads(header)
    head["features"] = sorted({*head.get("features", ()), *features})
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(head) + "\n" + "".join(rest))
    return dest


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["traces", "check", "--root", str(ROOT), *args])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_a_double_run_claiming_an_out_of_scope_feature_fails_unless_the_feature_is_allowed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's case: the engine's double run (rejected as it is), with `direct_calls` in its
    header, was skipped and passed. Now it fails, and passes only where the command names it."""
    trace = claiming(DOUBLE_RUN, tmp_path / "tests" / "double-run.ndjson", "direct_calls")
    status, out, err = run(capsys, str(tmp_path))
    assert status == 1, out + err
    assert f"SKIPPED      {trace}: skipped: uses direct_calls, which the TraceEngine spec does not model" in out
    assert out.splitlines()[0].endswith("[fails: direct_calls not allowed (--allow-skip direct_calls allows it)]")
    assert "skips: 0 allowed, 1 failed (direct_calls 1); --allow-skip FEATURE allows a feature's skips" in out
    # --fail-on-skip is the default now, and still accepted.
    assert run(capsys, "--fail-on-skip", str(tmp_path))[0] == 1
    status, out, err = run(capsys, "--allow-skip", "direct_calls", "--allow-skip", "concurrent_calls", str(tmp_path))
    assert status == 0, out + err
    assert out.splitlines()[0].endswith("[allowed (direct_calls)]")
    assert "skips: 1 allowed (direct_calls 1), 0 failed" in out


def test_each_feature_of_a_skip_must_be_allowed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    both = claiming(DOUBLE_RUN, tmp_path / "both.ndjson", "direct_calls", "concurrent_calls")
    status, out, _ = run(capsys, "--allow-skip", "direct_calls", str(tmp_path))
    assert status == 1
    assert out.splitlines()[0].endswith("[fails: concurrent_calls not allowed (--allow-skip concurrent_calls allows it)]")
    assert "skips: 0 allowed, 1 failed (concurrent_calls 1)" in out
    status, out, _ = run(capsys, "--allow-skip", "direct_calls", "--allow-skip", "concurrent_calls", "--json", str(tmp_path))
    doc = json.loads(out)
    assert status == 0 and doc["passed"] is True
    assert doc["skips"] == {"allow_skip": ["concurrent_calls", "direct_calls"], "allowed": {"concurrent_calls": 1, "direct_calls": 1},
                            "failed": {}}
    assert doc["traces"][0]["skip"] == {"features": ["concurrent_calls", "direct_calls"], "allowed": True}
    assert doc["skips_failed"] == [] and doc["traces"][0]["trace"] == str(both)


def test_json_and_junit_say_which_skips_failed_and_which_were_allowed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    allowed = claiming(DOUBLE_RUN, tmp_path / "allowed.ndjson", "direct_calls")
    failing = claiming(DOUBLE_RUN, tmp_path / "failing.ndjson", "direct_calls", "concurrent_calls")
    status, out, _ = run(capsys, "--allow-skip", "direct_calls", "--json", "--junit", str(tmp_path / "t.xml"),
                         "--html", str(tmp_path / "html"), str(tmp_path))
    doc = json.loads(out)
    assert status == 1 and doc["passed"] is False
    assert doc["skips"] == {"allow_skip": ["direct_calls"], "allowed": {"direct_calls": 1}, "failed": {"concurrent_calls": 1}}
    assert doc["skips_failed"] == [str(failing)]
    suite = ET.parse(tmp_path / "t.xml").getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("2", "1", "1")
    cases = {c.get("name"): c for c in suite}
    assert cases[allowed.name].find("skipped").get("message", "").endswith("[allowed (direct_calls)]")  # type: ignore[union-attr]
    failure = cases[failing.name].find("failure")
    assert failure is not None and failure.get("type") == "skipped"
    assert failure.get("message", "").endswith("[fails: concurrent_calls not allowed (--allow-skip concurrent_calls allows it)]")
    assert "skips: 1 allowed (direct_calls 1), 1 failed (concurrent_calls 1)" in (tmp_path / "html" / "index.html").read_text()


def test_an_unknown_feature_or_the_removed_skip_ok_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A typo must not allow everything (nor quietly nothing): exit 2, the known features named."""
    claiming(DOUBLE_RUN, tmp_path / "t.ndjson", "direct_calls")
    status, out, err = run(capsys, "--allow-skip", "direct_call", str(tmp_path))
    assert (status, out) == (2, "")
    assert err == ("leaseproof: error: --allow-skip 'direct_call': no system file declares that feature out of scope, so it "
                   "allows nothing; the features declared out of scope are: concurrent_calls (engine), direct_calls (engine)\n")
    status, out, err = run(capsys, "--skip-ok", "*/tests/*", str(tmp_path))
    assert (status, out) == (2, "")
    assert err.startswith("leaseproof: error: --skip-ok */tests/*: removed") and "--allow-skip FEATURE" in err


def test_judged_by_the_features_that_made_the_skip() -> None:
    """Pure: a skip is allowed when it has features and all are allowed; counted by feature."""
    systems = load_systems(PROJECT)
    systems["counter"] = replace(systems["counter"], out_of_scope={"reset": "r", "jump": "j"})
    items = [read_trace_file(p) for p in sorted((PROJECT / "traces" / "corpus" / "counter" / "accepted").glob("*.ndjson"))][:1]
    item = items[0]
    two = replace(item, header={**item.header, "features": ["reset", "jump"]})
    one = replace(item, header={**item.header, "features": ["reset"]}, source="one")
    verdicts = [TraceVerdict(item.source, TraceKind.ACCEPTED), TraceVerdict(two.source, TraceKind.SKIPPED),
                TraceVerdict("one", TraceKind.SKIPPED), TraceVerdict("bad", TraceKind.SKIPPED)]
    skips = judge([item, two, one, "not a trace"], verdicts, systems, {"reset"})
    assert [(s.source, s.features, s.allowed) for s in skips] == [
        (item.source, ("jump", "reset"), False), ("one", ("reset",), True), ("bad", (), False)]
    assert counts(skips, {"reset"}) == {"allowed": {"reset": 1}, "failed": {"(no declared feature)": 1, "jump": 1}}
    assert skip_line(skips, {"reset"}) == ("skips: 1 allowed (reset 1), 2 failed ((no declared feature) 1, jump 1); "
                                           "--allow-skip FEATURE allows a feature's skips")
    assert skip_line([], {"reset"}) is None
    assert allowed_features(["jump", "reset"], systems) == {"jump", "reset"}
    with pytest.raises(UnknownSkipFeature, match=r"--leaseproof-allow-skip 'rest': .* are: jump \(counter\), reset \(counter\)"):
        allowed_features(["reset", "rest"], systems, flag="--leaseproof-allow-skip")
