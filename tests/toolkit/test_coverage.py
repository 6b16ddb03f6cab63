"""The coverage guard's conditions (`where`, `held_by_other`) and its per-source counting.

Pure tests on hand-made traces, plus one run of `leaseproof traces check --coverage-per-source`
on the Counter fixture project (TLC), where one source meets the guard and the other does not.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.traces.coverage import by_source, coverage, holds, source_of
from conformance.traces.system import SystemFileError, load_system, load_systems
from conformance.traces.trace import Trace

ROOT = Path(__file__).parent.parent.parent
PROJECT = Path(__file__).parent.parent / "fixtures" / "project"
CORPUS = PROJECT / "traces" / "corpus" / "counter"

# A stale node's remove refused while another node holds the lease, as traces/systems/engine.yaml says.
STALE_FINISH = {
    "op": "remove", "outcome": ["lost"],
    "where": [{"field": "state.task.status", "eq": "RUNNING"}, {"field": "state.task.run_after", "gt": {"field": "now"}}],
    "held_by_other": {"fetch": ["leased"], "renew": ["renewed"]},
}


def engine_trace(events: list[tuple[str, str, str, int, dict[str, Any] | None]], name: str = "t") -> Trace:
    """A trace of (node, op, outcome, now, task row after) lines of one workflow (not checked by TLC)."""
    header = {"kind": "header", "format": 1, "system": "engine", "gates": {}, "settings": {}, "nodes": ["n1", "n2"]}
    events_ = tuple({"seq": i, "node": node, "op": op, "now": now, "wf": "w", "args": {}, "outcome": outcome,
                     "state": {"instance": {"status": "RUNNING", "version": 1}, "task": task}}
                    for i, (node, op, outcome, now, task) in enumerate(events, start=1))
    return Trace(name, header, events_)


def running(run_after: int) -> dict[str, Any]:
    return {"status": "RUNNING", "run_after": run_after, "version": 3, "retry_count": 2}


@pytest.fixture(scope="module")
def engine() -> Any:
    system = load_systems(ROOT)["engine"]
    return type(system)(**{**system.__dict__, "coverage": {"stale": STALE_FINISH}})


def test_a_refusal_while_another_node_holds_the_lease_counts(engine: Any) -> None:
    t = engine_trace([("n1", "fetch", "leased", 0, running(1000)), ("n2", "fetch", "leased", 1200, running(2200)),
                      ("n1", "remove", "lost", 1300, running(2200))])
    assert coverage(engine, [t]).required == {"stale": 1}


@pytest.mark.parametrize("why, events", [
    ("the lease had lapsed: no one held it", [("n1", "fetch", "leased", 0, running(1000)), ("n2", "fetch", "leased", 1200, running(2200)),
                                              ("n1", "remove", "lost", 2300, running(2200))]),
    ("the row was gone", [("n1", "fetch", "leased", 0, running(1000)), ("n1", "remove", "lost", 1300, None)]),
    ("the node itself last leased it", [("n2", "fetch", "leased", 0, running(1000)), ("n1", "fetch", "leased", 1200, running(2200)),
                                        ("n1", "remove", "lost", 1300, running(2200))]),
    ("no one leased it before", [("n1", "remove", "lost", 1300, running(2200))]),
    ("another outcome", [("n1", "fetch", "leased", 0, running(1000)), ("n2", "fetch", "leased", 1200, running(2200)),
                         ("n1", "remove", "gone", 1300, running(2200))]),
])
def test_a_refusal_after_the_lease_simply_lapsed_does_not_count(engine: Any, why: str, events: list[Any]) -> None:
    assert coverage(engine, [engine_trace(events)]).required == {"stale": 0}, why


def test_the_holder_is_read_from_the_latest_lease_taken_before_the_event(engine: Any) -> None:
    # n2 leased it, then n1 renewed it (a renewal is a taking too): n1 holds it, so n1's own
    # refused remove does not count; a later one, after n2 took it again, does.
    t = engine_trace([("n2", "fetch", "leased", 0, running(1000)), ("n1", "renew", "renewed", 100, running(1100)),
                      ("n1", "remove", "lost", 200, running(1100)), ("n2", "renew", "renewed", 300, running(1300)),
                      ("n1", "remove", "lost", 400, running(1300))])
    assert coverage(engine, [t]).required == {"stale": 1}


@pytest.mark.parametrize("condition, expected", [
    ({"field": "state.guard.owner", "ne": {"field": "args.attempt"}}, True),
    ({"field": "state.guard.owner", "eq": "a2"}, True),
    ({"field": "state.guard.owner", "ne": None}, True),
    ({"field": "state.guard.owner", "eq": {"field": "args.attempt"}}, False),
    ({"field": "now", "gt": 5}, True),
    ({"field": "now", "le": 5}, False),
    ({"field": "now", "gt": {"field": "state.guard.owner"}}, False),  # no order between a number and a string
    ({"field": "state.guard.missing", "ne": "a1"}, False),  # a field the event lacks: false, even for ne
    ({"field": "now", "ne": {"field": "args.missing"}}, False),
])
def test_where_conditions(condition: dict[str, Any], expected: bool) -> None:
    event = {"op": "put_if_owner", "outcome": "refused", "now": 10, "args": {"attempt": "a1"}, "state": {"guard": {"owner": "a2"}}}
    assert holds(condition, event) is expected


def _system_file(tmp_path: Path, coverage_block: dict[str, Any]) -> Path:
    data = yaml.safe_load((PROJECT / "traces" / "systems" / "counter.yaml").read_text())
    data["coverage"] = coverage_block
    path = tmp_path / "counter.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("block, message", [
    ({"x": {"op": "stepp"}}, "coverage.x.op: 'stepp' is not one of the system's ops"),
    ({"x": {"op": "step", "held_by_other": {"fetch": ["leased"]}}}, "coverage.x.held_by_other: 'fetch' is not one of"),
    ({"x": {"op": "step", "where": [{"field": "now", "above": 1}]}}, "field coverage.x.where.0"),
    ({"x": {"op": "step", "where": [{"field": "now", "gt": 1, "lt": 9}]}}, "field coverage.x.where.0"),
    ({"x": {"op": "step", "where": [{"field": "now", "gt": {"fields": "x"}}]}}, "field coverage.x.where.0.gt"),
])
def test_a_system_file_with_a_bad_requirement_is_refused(tmp_path: Path, block: dict[str, Any], message: str) -> None:
    with pytest.raises(SystemFileError, match=message.replace("(", r"\(")):
        load_system(_system_file(tmp_path, block), PROJECT / "tla")


def test_the_shipped_system_files_load_with_their_stale_meets_live_requirements() -> None:
    systems = load_systems(ROOT)
    assert "held_by_other" in systems["engine"].coverage["stale finish refused while another node holds the lease"]
    assert any("where" in need for need in systems["workqueue"].coverage.values())
    assert any("where" in need for need in systems["command"].coverage.values())


def test_the_source_of_a_trace_is_its_first_directory_under_the_one_given(tmp_path: Path) -> None:
    (tmp_path / "engine-sim").mkdir()
    (tmp_path / "tests" / "x").mkdir(parents=True)
    assert source_of(tmp_path / "engine-sim" / "a.ndjson", [tmp_path]) == str(tmp_path / "engine-sim")
    assert source_of(tmp_path / "tests" / "x" / "b.ndjson", [tmp_path]) == str(tmp_path / "tests")
    assert source_of(tmp_path / "c.ndjson", [tmp_path]) == str(tmp_path)
    assert source_of(tmp_path / "engine-sim" / "a.ndjson", [tmp_path / "engine-sim" / "a.ndjson"]) == str(tmp_path / "engine-sim")


def test_each_source_is_counted_by_itself(engine: Any) -> None:
    good = engine_trace([("n1", "fetch", "leased", 0, running(1000)), ("n2", "fetch", "leased", 1200, running(2200)),
                         ("n1", "remove", "lost", 1300, running(2200))], "good")
    plain = engine_trace([("n1", "fetch", "leased", 0, running(1000))], "plain")
    covs = by_source(engine, [("b", good), ("a", plain)], ["a", "b", "c"])
    assert [(c.source, c.traces, c.missing) for c in covs] == [("a", 1, ["stale"]), ("b", 1, []), ("c", 0, ["stale"])]
    assert coverage(engine, [good, plain]).missing == []  # together they meet it: only per source does a fail


@pytest.mark.tlc
def test_cli_reports_and_fails_per_source(tmp_path: Path) -> None:
    root = tmp_path / "project"
    shutil.copytree(PROJECT, root)
    sysfile = root / "traces" / "systems" / "counter.yaml"
    data = yaml.safe_load(sysfile.read_text())
    data["coverage"] = {"n1 steps to 1": {"op": "step", "outcome": ["stepped"],
                                          "where": [{"field": "node", "eq": "n1"}, {"field": "state.x", "eq": 1}]}}
    sysfile.write_text(yaml.safe_dump(data))
    traces = tmp_path / "traces"
    (traces / "two-nodes").mkdir(parents=True)
    (traces / "to-limit").mkdir()
    shutil.copy(CORPUS / "accepted" / "accepted-two-nodes.ndjson", traces / "two-nodes")
    shutil.copy(CORPUS / "accepted" / "accepted-to-limit.ndjson", traces / "to-limit")

    def check(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "conformance.cli", "traces", "check", "--root", str(root), *extra, str(traces)],
                              capture_output=True, text=True, cwd=ROOT)

    together = check()
    assert together.returncode == 0, together.stdout + together.stderr
    per = check("--coverage-per-source")
    assert per.returncode == 1, per.stdout + per.stderr
    assert f"coverage {traces / 'two-nodes'} (counter, 1 accepted): ok, 1 of 1 required behaviours seen" in per.stdout
    assert f"coverage {traces / 'to-limit'} (counter, 1 accepted): MISSING n1 steps to 1 (0 of 1 seen)" in per.stdout
    assert check("--coverage-per-source", "--no-coverage").returncode == 0
    doc = json.loads(check("--coverage-per-source", "--json").stdout)
    assert {(c["source"], tuple(c["missing"])) for c in doc["coverage_per_source"]} == {
        (str(traces / "two-nodes"), ()), (str(traces / "to-limit"), ("n1 steps to 1",))}
    # A source named --union-only counts toward the whole set only, and its line says so.
    union = check("--coverage-per-source", "--union-only", "to-*")
    assert union.returncode == 0, union.stdout + union.stderr
    assert "MISSING n1 steps to 1 (0 of 1 seen) (counts toward the whole set only: --union-only)" in union.stdout
    assert check("--coverage-per-source", "--union-only", "two-*").returncode == 1
