"""The engine's traces: the schema, the contract's ops and outcomes, one file per workflow."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from impl.engine.export import write_traces
from impl.engine.faults import LINE_OPS
from impl.engine.model import Gates
from impl.engine.schema import trace_line_schema
from impl.engine.simulate import Faults, simulate

ROOT = Path(__file__).resolve().parents[2]


def contract() -> dict[str, set[str]]:
    """The Engine table of tla/README.md: op -> its outcomes."""
    text = (ROOT / "tla" / "README.md").read_text(encoding="utf-8")
    section = text.split("### Engine", 1)[1].split("###", 1)[0]
    table = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`") and cells[0] != "`op`":
            table[cells[0].strip("`")] = cells[3]
    out: dict[str, set[str]] = {}
    for op, cell in table.items():
        same = re.fullmatch(r"as `(\w+)`", cell)  # "as `schedule`": the same outcomes
        out[op] = set(re.findall(r"`(\w+)`", table[same.group(1)] if same else cell))
    return out


@pytest.fixture(scope="module")
def runs():
    return [simulate(seed=s, workflows=8, faults=Faults(pause=0.01, crash=0.0003), max_steps=20_000) for s in range(5)]


def test_the_contract_table_is_read() -> None:
    table = contract()
    assert {"create_instance", "schedule", "schedule_in_memory", "fetch", "run_start", "remove"} <= set(table)
    assert table["remove"] == {"removed", "gone", "rerun", "lost"}


def test_every_line_is_valid_and_every_trace_is_complete(runs) -> None:
    validator = jsonschema.Draft202012Validator(trace_line_schema())
    for run in runs:
        for wf, text in run.traces.items():
            lines = [json.loads(x) for x in text.splitlines()]
            for line in lines:
                validator.validate(line)
            head, events, end = lines[0], lines[1:-1], lines[-1]
            assert head["kind"] == "header" and head["system"] == "engine"
            assert head["gates"] == Gates().header() and head["settings"]["lease_ms"] == 1_000
            assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
            assert end == {"kind": "end", "count": len(events)}
            assert {e["wf"] for e in events} == {wf}


def test_ops_outcomes_and_args_are_the_contracts(runs) -> None:
    table = contract()
    seen = set()
    for run in runs:
        for text in run.traces.values():
            for line in map(json.loads, text.splitlines()[1:-1]):
                op, out, args = line["op"], line["outcome"], line["args"]
                assert op in table, f"op {op} is not in tla/README.md"
                assert out in table[op], f"{op} outcome {out} is not in tla/README.md"
                seen.add(op)
                if op in ("schedule", "schedule_in_memory"):
                    assert {"run_after", "honour_leases"} <= set(args)
                if op == "schedule_in_memory":
                    assert isinstance(args["queued"], bool)
                if op == "run_start":
                    assert args["source"] in ("memory", "store") and isinstance(args["task_version"], int)
                if op == "run_end":
                    assert args["result"] in ("completed", "waiting", "failed")
                if op == "answer":
                    assert args["from"] in ("call", "run", "store")
                # A fault or answer line changes no state and logs none.
                assert set(line["state"]) == (set() if op in LINE_OPS else {"instance", "task"})
    # The workload reaches the steps that matter (a coverage guard).
    assert {"create_instance", "schedule_in_memory", "schedule", "update_instance", "run_start", "run_end",
            "renew", "remove", "fetch"} <= seen


def test_write_traces_writes_one_file_per_workflow(tmp_path: Path) -> None:
    run = simulate(seed=2, workflows=4)
    paths = write_traces(run.sim.backend.read_events(), tmp_path, gates=run.sim.gates,
                         settings=run.sim.settings, nodes=["n1", "n2"], run="t")
    assert sorted(p.name for p in paths) == [f"t-wf0000{i}.ndjson" for i in range(4)]
    assert not list(tmp_path.glob("*.part"))
    first = paths[0].read_text().splitlines()
    assert json.loads(first[0])["run"] == "t/wf00000"


def test_headers_name_the_features_the_spec_may_not_model() -> None:
    plain = simulate(seed=4, workflows=8, waiting_fraction=0.0, long_fraction=0.0)
    for text in plain.traces.values():
        assert "features" not in json.loads(text.splitlines()[0])
    waiting = simulate(seed=4, workflows=8, waiting_fraction=1.0, long_fraction=0.0)
    feats = [json.loads(t.splitlines()[0]).get("features", []) for t in waiting.traces.values()]
    assert all("wait_for_signal" in f for f in feats)
    adopted = [simulate(seed=s, workflows=12, long_fraction=1.0) for s in range(4)]
    assert any(
        "renew_adopts_rerun" in json.loads(t.splitlines()[0]).get("features", [])
        for r in adopted for t in r.traces.values()
    )


def test_events_match_the_engine_event_schema(runs) -> None:
    schema = json.loads((ROOT / "traces" / "schema" / "engine-event.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    for run in runs:
        for text in run.traces.values():
            for line in map(json.loads, text.splitlines()[1:-1]):
                validator.validate(line)
    bad = {"kind": "event", "seq": 1, "node": "n1", "op": "fetch", "now": 0, "wf": "w", "args": {},
           "outcome": "stolen", "state": {"instance": None, "task": None}}
    assert not validator.is_valid(bad)  # the schema can refuse something


def test_a_step_committed_without_its_event_leaves_a_gap_the_reader_rejects(tmp_path: Path) -> None:
    # The store numbers a workflow's committed transactions (wf_seq) and the trace keeps that
    # number: an event lost from its transaction (or written in one of its own, after the
    # commit) cannot be renumbered away into a trace that looks whole.
    from conformance.traces.read import read_trace_file
    from conformance.traces.trace import TraceKind, TraceVerdict
    from impl.engine.export import by_workflow, render_workflow

    run = simulate(seed=3, workflows=1)
    [(wf, events)] = by_workflow(run.sim.backend.read_events()).items()
    assert [e.wf_seq for e in events] == list(range(1, len(events) + 1))
    whole, holed = tmp_path / "whole.ndjson", tmp_path / "holed.ndjson"
    whole.write_text(render_workflow(events, run.sim.gates, run.sim.settings, run.sim.node_names, "whole"))
    holed.write_text(render_workflow(events[:2] + events[3:], run.sim.gates, run.sim.settings, run.sim.node_names,
                                     "holed"))
    assert not isinstance(read_trace_file(whole), TraceVerdict)
    bad = read_trace_file(holed)
    assert isinstance(bad, TraceVerdict) and bad.kind is TraceKind.MALFORMED
    assert "seq 4 where 3 was due" in bad.reason
