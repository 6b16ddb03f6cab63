"""Edge coverage of the base models' state graphs (conformance/guided/edges.py, edge_run.py):
the graph parsed from TLC's dump, its edges projected onto what a trace shows, a behaviour
replayed for each, and the coverage measured from the accepted traces."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.guided.edges import GraphError, StateGraph, edge_paths, parse_dot
from conformance.guided.projection import workqueue_step

ROOT = Path(__file__).resolve().parents[2]


def test_a_dump_that_is_empty_truncated_or_unreadable_is_an_error() -> None:
    with pytest.raises(GraphError, match="no state"):
        parse_dot(["strict digraph DiskGraph {", "}"])
    with pytest.raises(GraphError, match="name no state"):
        parse_dot(['1 [label="/\\\\ x = 0"];', "1 -> 2;"])
    with pytest.raises(GraphError, match="line 1: a state TLC's value syntax does not read"):
        parse_dot(['1 [label="/\\\\ x = {{"];'])


def test_a_label_s_escapes_are_read_as_tlc_wrote_them() -> None:
    g = parse_dot(['7 [label="/\\\\ s = \\"a\\\\\\\\b\\"\\n/\\\\ n = 2",style = filled]'])
    assert g.states == {"7": {"s": "a\\b", "n": 2}} and g.initial == ["7"]


def test_a_pair_spans_hidden_steps_and_is_kept_per_entity() -> None:
    # e1 logs a then (a hidden step) b; e2 logs c between them: the pairs are e1's a -> b only.
    g = StateGraph({str(i): {"i": i} for i in range(5)}, [("0", "1"), ("1", "2"), ("2", "3"), ("3", "4")], ["0"])
    steps = {0: (("e1", "a"),), 1: (("e2", "c"),), 2: (), 3: (("e1", "b"),)}
    assert edge_paths(g, lambda p, q: steps[p["i"]]) == {("a", "b"): ["0", "1", "2", "3", "4"]}


def test_the_queue_s_self_reclaim_projects_onto_the_drop_the_node_logs_at_its_poll() -> None:
    # c1 runs e1 and reclaims it (its heartbeat lagged): the node drops it at the poll.
    base = {"mode": {"c1": "running"}, "status": {"e1": "pending"}, "owner": {"e1": "c1"}, "idle": {"e1": 2},
            "deliveries": {"e1": 1}, "inbox": {"c1": []}, "active": {"c1": ["e1"]}, "toAck": {"c1": []},
            "toRelease": {"c1": []}, "lagging": {"c1": ["e1"]}, "stalled": {"c1": []}, "leaked": {"c1": []},
            "lost": {"c1": []}, "checked": {"c1": []}, "permits": {"c1": ["e1"]}, "elapsed": {"c1": {"e1": 0}},
            "faults": 1, "polls": {"c1": 0}}
    after = {**base, "owner": {"e1": "c1"}, "idle": {"e1": 0}, "deliveries": {"e1": 2}, "inbox": {"c1": ["e1"]},
             "permits": {"c1": ["e1"]}, "polls": {"c1": 1}}
    step_of = workqueue_step({"Consumers": ["c1"]})
    assert step_of(base, after) == (("e1", "reclaim/claimed"), ("e1", "invoke_start/duplicate_dropped"))
    dropped = {**after, "inbox": {"c1": []}}
    assert step_of(after, dropped) == ()  # the model's later InvokeStart logs nothing more


@pytest.mark.tlc
def test_the_queue_s_edges_are_replayed_the_coverage_printed_and_the_differences_found(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    run = [sys.executable, "-m", "conformance.cli", "guided", "--root", str(ROOT), "--system", "workqueue",
           "--target", "offer/added", "--edges", "--json"]
    proc = subprocess.run(run, capture_output=True, text=True, timeout=600)
    out = json.loads(proc.stdout)["edges"]
    assert out["projected"] == 105 and out["states"] == 14141 and out["covered"] >= 100, out
    # No trace of the designed code is rejected; what the code cannot do is one of the two
    # differences guided/workqueue.yaml declares known (exit 0): a call's permit held through
    # its ack or release, and a self-reclaimed hand-off dropped at the poll, not started once
    # the first call ended. Undeclared, each is a finding (exit 1).
    assert proc.returncode == 0 and out["findings"] == [], proc.stdout[-2000:]
    assert len(out["known"]) == 5 and all(
        k["difference"].startswith("the model can, the code cannot")
        and ("no free permit" in k["difference"] or "holds no hand-off" in k["difference"]) for k in out["known"])


def test_a_system_without_a_projection_or_with_a_bad_edges_section_is_an_error(tmp_path: Path) -> None:
    from conformance.check.runner import Tlc
    from conformance.guided.edge_run import EdgeError, run_edges
    from conformance.guided.run import base_model

    def edges(system: str, base: dict) -> None:
        run_edges(ROOT, system, base, tmp_path, store="memory://", tlc=Tlc(Path("java"), Path("no.jar")),
                  validate=None, accepted=[])

    with pytest.raises(EdgeError, match="no edge projection for 'lease'"):
        edges("lease", {"module": "Lease"})
    base = base_model(ROOT, "engine")
    with pytest.raises(EdgeError, match="edges must be a mapping with only `constants`"):
        edges("engine", {**base, "edges": {"constants": {}, "gates": {}}})
    with pytest.raises(EdgeError, match="names what the base model does not: Nodez"):
        edges("engine", {**base, "edges": {"constants": {"Nodez": ["n1"]}}})
    with pytest.raises(EdgeError, match="known must map an edge"):
        edges("engine", {**base, "edges": {"known": ["x"]}})


def test_a_known_difference_is_declared_not_a_finding_and_a_stale_declaration_is_one() -> None:
    from conformance.guided.edge_run import EdgeError, EdgeRun, known_differences

    blocked = EdgeRun(("a/x", "b/y"), replay="blocked", reason="step 3: refused")
    assert blocked.finding == "the model can, the code cannot: step 3: refused"
    known = EdgeRun(("a/x", "b/y"), replay="blocked", reason="step 3: refused", declared="the code is stricter")
    assert known.finding is None and known.line().startswith("known     edge a/x -> b/y")
    # The code follows the model now: the declaration is stale, and says so.
    stale = EdgeRun(("a/x", "b/y"), replay="held", declared="the code is stricter")
    assert stale.finding is not None and "drop the entry" in stale.finding
    # A rejected trace is a finding whatever is declared.
    rejected = EdgeRun(("a/x", "b/y"), replay="blocked", declared="why", rejected={"t.ndjson": "rejected at 2"})
    assert rejected.finding is not None and rejected.finding.startswith("trace rejected")
    assert known_differences("s", {"edges": {"known": {"a/x -> b/y": "why"}}}) == {"a/x -> b/y": "why"}
    for bad in ({"a/x -> b/y": ""}, ["a/x -> b/y"], {"a/x -> b/y": 3}):
        with pytest.raises(EdgeError, match="known must map an edge"):
            known_differences("s", {"edges": {"known": bad}})


def test_the_engine_projection_names_each_logged_step_and_admits_no_overlapping_runs() -> None:
    from conformance.guided.projection import engine_step, no_overlapping_runs
    from conformance.models.model import load_model
    from conformance.replay import run as replay_run

    def projected(name: str) -> tuple[list[tuple[str, str]], list[bool]]:
        model = load_model(ROOT / "models" / "engine" / f"{name}.yaml", (ROOT / "tla",))
        verdict = replay_run.saved_verdict(ROOT / "tests" / "fixtures" / "replay" / f"{name}.json", name)
        states = [s["variables"] for s in verdict["counterexample"]["states"]]
        step_of = engine_step({k: c.value for k, c in model.constants.items()})
        return [x for p, q in zip(states, states[1:]) for x in step_of(p, q)], [no_overlapping_runs(s) for s in states]

    shown, admitted = projected("signal_failure")
    assert [s for _, s in shown] == ["create_instance/created", "schedule/inserted", "fetch/leased", "run_start/started",
                                     "update_instance/updated", "run_end/conflict", "remove/removed"]
    assert all(admitted)
    # A lease lapses under a run and another node runs the workflow beside it: the last state
    # has two runs at once, which no generated run may pass through.
    shown, admitted = projected("lease_faults")
    assert [s for _, s in shown][-2:] == ["fetch/leased", "run_start/started"] and admitted[-1] is False
    assert all(admitted[:-1])


@pytest.mark.tlc
@pytest.mark.slow
def test_the_command_layer_s_edges_are_covered_but_the_status_read_point(tmp_path: Path) -> None:
    from conformance.check.runner import Tlc
    from conformance.guided.edge_run import run_edges
    from conformance.guided.run import base_model
    from conformance.interleave.validate import trace_validator

    cov, runs = run_edges(ROOT, "command", base_model(ROOT, "command"), tmp_path, store="memory://",
                          tlc=Tlc.locate(), validate=trace_validator(ROOT), accepted=[])
    # CommandQueue refuses a stale call and releases early after a throw, as the code does: no
    # finding. What stays uncovered is the model's refused write where the code's attempt, which
    # reads the status only in the step of its first write, ends by the terminal check instead.
    assert [r.finding for r in runs if r.finding is not None] == []
    assert len(cov.projected) == 290 and len(cov.covered) >= 278, cov.summary()
    assert all("put_if_owner/refused" in edge for edge in cov.missing), cov.summary()


@pytest.mark.tlc
@pytest.mark.slow
def test_the_engine_s_edges_are_replayed_on_its_smaller_edge_model(tmp_path: Path) -> None:
    from conformance.check.runner import Tlc
    from conformance.guided.edge_run import run_edges
    from conformance.guided.run import base_model
    from conformance.interleave.validate import trace_validator

    cov, runs = run_edges(ROOT, "engine", base_model(ROOT, "engine"), tmp_path, store="memory://",
                          tlc=Tlc.locate(), validate=trace_validator(ROOT), accepted=[])
    assert cov.states == 52690 and len(cov.projected) == 201 and len(cov.covered) >= 193, cov.summary()
    # A lapsed lease is a logged stall window, and no behaviour runs a workflow twice at once:
    # no trace of the designed engine is rejected; what it cannot follow is declared known.
    assert [r.finding for r in runs if r.finding is not None] == []
    known = [r.difference for r in runs if r.declared is not None]
    assert known and all(d is not None and d.startswith("the model can, the code cannot") for d in known), known


@pytest.mark.tlc
def test_a_users_system_projects_its_own_edges_and_covers_them_all(tmp_path: Path) -> None:
    from conformance.check.runner import Tlc
    from conformance.guided.edge_run import run_edges
    from conformance.guided.run import base_model
    from conformance.interleave.validate import trace_validator

    project = ROOT / "tests" / "fixtures" / "project"
    cov, runs = run_edges(project, "joblease", base_model(project, "joblease"), tmp_path, store="memory://",
                          tlc=Tlc.locate(), validate=trace_validator(project), accepted=[])
    # Six outcomes, 36 pairs; a released slot is free, so no busy acquire, renewal or second
    # release follows a release at once (restarts aside): 33.
    assert [r.finding for r in runs] == [None] * 33
    assert cov.covered == cov.projected and len(cov.projected) == 33 and not cov.beyond
