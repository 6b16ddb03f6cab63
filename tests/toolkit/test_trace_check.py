"""Checking traces with TLC, on the Counter fixture system (tests/fixtures/project)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.check.runner import Tlc
from conformance.traces.check import check_traces
from conformance.traces.header import Field
from conformance.traces.mutate import mutants
from conformance.traces.read import parse_trace, read_trace_file
from conformance.traces.system import load_systems
from conformance.traces.trace import Trace, TraceKind, TraceVerdict

pytestmark = pytest.mark.tlc

PROJECT = Path(__file__).parent.parent / "fixtures" / "project"
CORPUS = PROJECT / "traces" / "corpus" / "counter"


@pytest.fixture(scope="module")
def tlc() -> Tlc:
    return Tlc.locate()


@pytest.fixture(scope="module")
def systems() -> dict[str, Any]:
    return load_systems(PROJECT)


def make(name: str, steps: list[tuple[str, int]], nodes: list[str] | None = None, limit: int = 5, **header: Any) -> Trace:
    nodes = nodes or ["n1", "n2"]
    seen = {n: 0 for n in nodes}
    lines: list[dict[str, Any]] = [{"kind": "header", "format": 1, "system": "counter", "gates": {}, "settings": {"limit": limit}, "nodes": nodes, **header}]
    for i, (node, x) in enumerate(steps, start=1):
        seen[node] = x
        lines.append({"kind": "event", "seq": i, "node": node, "op": "step", "now": i, "outcome": "stepped", "state": {"x": x, "seen": dict(seen)}})
    lines.append({"kind": "end", "count": len(steps)})
    t = parse_trace("".join(json.dumps(ln) + "\n" for ln in lines), name)
    assert isinstance(t, Trace), t
    return t


def test_known_traces(tlc: Tlc, systems: dict[str, Any]) -> None:
    files = sorted(CORPUS.rglob("*.ndjson"))
    verdicts = {Path(v.source).name: v for v in check_traces([read_trace_file(f) for f in files], systems, tlc)}
    assert {n: v.kind for n, v in verdicts.items()} == {
        "accepted-to-limit.ndjson": TraceKind.ACCEPTED,
        "accepted-two-nodes.ndjson": TraceKind.ACCEPTED,
        "rejected-past-limit.ndjson": TraceKind.REJECTED,
        "rejected-skips-a-value.ndjson": TraceKind.REJECTED,
    }
    skips = verdicts["rejected-skips-a-value.ndjson"]
    assert (skips.line, skips.op, skips.node, skips.explained) == (2, "step", "n2", 1)
    assert sorted((d.field, d.expected, d.logged) for d in skips.diffs) == [
        ("seen", "[n1 |-> 1, n2 |-> 2]", "[n1 |-> 1, n2 |-> 3]"), ("x", "2", "3")]
    past = verdicts["rejected-past-limit.ndjson"]
    assert (past.line, past.diffs) == (3, ())  # no Step is enabled at the limit: nothing to compare


def test_batched_verdicts_equal_one_trace_per_run(tlc: Tlc, systems: dict[str, Any]) -> None:
    base = [make("a", [("n1", 1), ("n2", 2), ("n1", 3)]), make("c", [("n1", 1), ("n1", 3)])]
    items: list[Trace] = list(base)
    for t in base[:1]:
        items.extend(m.trace for m in mutants(t, systems["counter"])[0])
    batched = check_traces(items, systems, tlc, batch_size=400)
    alone = check_traces(items, systems, tlc, batch_size=1)
    assert batched == alone
    assert [v.kind for v in batched[:2]] == [TraceKind.ACCEPTED, TraceKind.REJECTED]
    assert all(v.kind is TraceKind.REJECTED for v in batched[2:])


def test_hostile_strings_do_not_change_the_meaning(tlc: Tlc, systems: dict[str, Any]) -> None:
    nodes = ['a"b >>', "c\\d\n====", "e\u00e9"]
    good = make("hostile", [(nodes[0], 1), (nodes[1], 2), (nodes[2], 3)], nodes=nodes)
    bad = make("hostile-bad", [(nodes[0], 1), (nodes[1], 3)], nodes=nodes)
    v_good, v_bad = check_traces([good, bad], systems, tlc)
    assert v_good.kind is TraceKind.ACCEPTED, v_good
    assert v_bad.kind is TraceKind.REJECTED and v_bad.line == 2


def test_skipped_and_malformed_never_reach_tlc(tlc: Tlc, systems: dict[str, Any], tmp_path: Path) -> None:
    other = make("other", [("n1", 1)])
    other = Trace("other", {**other.header, "system": "billing"}, other.events)
    declared = make("declared", [("n1", 1)], features=["reset"])
    featured = make("featured", [("n1", 1)], features=["compensation"])
    op = make("op", [("n1", 1)])
    op = Trace("op", op.header, ({**op.events[0], "op": "teleport"},))
    fault = make("fault", [("n1", 1)])
    fault = Trace("fault", {**fault.header, "faults": {"meteor": 1}}, fault.events)
    beside = make("beside", [("n1", 1)], features=["reset", "compensation"])
    cut = tmp_path / "cut.ndjson"
    cut.write_text("\n".join(CORPUS.joinpath("accepted", "accepted-two-nodes.ndjson").read_text().splitlines()[:-1]) + "\n")
    verdicts = check_traces([other, declared, featured, op, fault, read_trace_file(cut), beside], systems, tlc)
    assert [v.kind for v in verdicts] == [TraceKind.MALFORMED, TraceKind.SKIPPED] + [TraceKind.MALFORMED] * 5
    # A feature declared out of scope excuses no unknown one beside it.
    assert "features: 'compensation' unknown" in (verdicts[6].reason or "")
    # Only a feature the system file declares out of scope is skipped, with its declared reason;
    # an unknown system, feature, op or fault kind is malformed: a rename never silences a check.
    assert "no system file for 'billing'" in (verdicts[0].reason or "")
    assert "uses reset" in (verdicts[1].reason or "") and "has no reset" in (verdicts[1].reason or "")
    assert "features: 'compensation' unknown" in (verdicts[2].reason or "")
    assert "field op: 'teleport' is not an op" in (verdicts[3].reason or "")
    assert "faults: 'meteor' not a fault kind" in (verdicts[4].reason or "")
    assert "truncated" in (verdicts[5].reason or "")


def test_a_trace_that_breaks_tlc_is_isolated(tlc: Tlc, systems: dict[str, Any]) -> None:
    good = make("good", [("n1", 1), ("n2", 2)])
    broken = make("broken", [("n1", 1)])
    broken = Trace("broken", broken.header, ({**broken.events[0], "state": {"y": 1}},))  # no x: TLC cannot evaluate E.state.x
    bad = make("bad", [("n1", 2)])
    late = make("late", [("n1", 1), ("n2", 2)])
    late = Trace("late", late.header, (late.events[0], {**late.events[1], "state": {"y": 1}}))
    verdicts = check_traces([good, broken, bad, late], systems, tlc)
    assert [v.kind for v in verdicts] == [TraceKind.ACCEPTED, TraceKind.INCONCLUSIVE, TraceKind.REJECTED, TraceKind.INCONCLUSIVE]
    # The reason names the trace, the line where TLC stopped and TLC's whole message; before
    # any line, the constants from the header it was given.
    assert (verdicts[1].reason or "").startswith("broken: TLC could not check it (evaluation error): The error occurred when TLC was evaluating")
    assert "TLC stopped at event 1 (step by n1), after 0 explained; with the constants its header gives: " in (verdicts[1].reason or "")
    assert "Limit = 5" in (verdicts[1].reason or "")
    assert "TLC stopped at event 2 (step by n2), after 1 explained" in (verdicts[3].reason or "")


def test_a_setting_with_no_tla_form_makes_only_its_trace_malformed(tlc: Tlc, systems: dict[str, Any]) -> None:
    # (A decimal is not an integer: the header check catches it, tests/toolkit/test_header_fields.py.)
    good = make("good", [("n1", 1), ("n2", 2)])
    import dataclasses

    odd = make("odd", [("n1", 1)], limit=2**40)
    # The encoding, not the bound, must catch it.
    unbounded = {"counter": dataclasses.replace(systems["counter"], header={"settings.limit": Field("integer")})}
    verdicts = check_traces([good, odd, make("bad", [("n1", 2)])], unbounded, tlc)
    assert [v.kind for v in verdicts] == [TraceKind.ACCEPTED, TraceKind.MALFORMED, TraceKind.REJECTED]
    assert "constant Limit" in (verdicts[1].reason or "")


def test_a_line_with_no_tla_form_makes_only_its_trace_malformed(tlc: Tlc, systems: dict[str, Any]) -> None:
    # A trace whose lines have no TLA+ form leaves its batch before TLC starts, saying where;
    # alone, it starts no TLC run.
    good = make("good", [("n1", 1), ("n2", 2)])
    odd = make("odd", [("n1", 1)])
    odd = Trace("odd", odd.header, ({**odd.events[0], "state": {**odd.events[0]["state"], "x": 1.5}},))
    runs: list[int] = []
    verdicts = check_traces([good, odd, make("bad", [("n1", 2)])], systems, tlc, on_run=lambda b, v: runs.append(len(b.traces)))
    assert [v.kind for v in verdicts] == [TraceKind.ACCEPTED, TraceKind.MALFORMED, TraceKind.REJECTED]
    assert "1.5 is not an integer" in (verdicts[1].reason or "") and "odd event 1" in (verdicts[1].reason or "")
    assert runs == [2]
    alone: list[int] = []
    assert [v.kind for v in check_traces([odd], systems, tlc, batch_size=1, on_run=lambda b, v: alone.append(1))] == [TraceKind.MALFORMED]
    assert alone == []


def test_a_header_past_a_bound_is_malformed(systems: dict[str, Any]) -> None:
    from conformance.traces.check import triage

    decided = triage([make("loose", [("n1", 1)], limit=1000), make("fine", [("n1", 1)], limit=100)], systems).decided
    assert decided["loose"].kind is TraceKind.MALFORMED and "fine" not in decided
    assert decided["loose"].reason == ("header field settings.limit: 1000 is past its bound 100 "
                                       "(traces/systems/counter.yaml header: settings.limit is an integer, 0 to 100)")


def test_real_system_files_bound_the_clock_slack() -> None:
    # A header claiming a large clock slack would switch TraceWorkQueue's idle-time check off.
    from conformance.traces.check import triage

    root = Path(__file__).resolve().parents[2]
    real = load_systems(root)
    for name in ("workqueue", "command"):
        path = next((root / "traces" / "corpus" / name / "accepted").glob("*.ndjson"))
        t = read_trace_file(path)
        assert isinstance(t, Trace)
        loose = Trace("loose", {**t.header, "settings": {**t.header["settings"], "clock_slack_ms": 50}}, t.events)
        v = triage([loose], real).decided["loose"]
        assert v.kind is TraceKind.MALFORMED and v.reason == (f"header field settings.clock_slack_ms: 50 is past its bound 2 "
                                                              f"(traces/systems/{name}.yaml header: settings.clock_slack_ms is an integer, 0 to 2)")


def test_a_header_outside_the_specs_assumptions_is_malformed_in_a_batch_as_alone(tlc: Tlc) -> None:
    # Engine.tla ASSUMEs Lease > 0. Alone, a trace claiming lease_ms 0 stops TLC on that ASSUME;
    # as the second trace of a batch, its Lease is bound by an INSTANCE, whose ASSUMEs TLC 2.15
    # never checks: it was checked against a spec whose assumption fails. The system file's bound
    # makes it malformed; without the bound, the batch checks the spec's ASSUMEs per trace
    # (TraceRunAssume), and the verdict is the one alone.
    import dataclasses

    root = Path(__file__).resolve().parents[2]
    real = load_systems(root)
    corpus = [read_trace_file(p) for p in sorted((root / "traces" / "corpus" / "engine" / "accepted").glob("*.ndjson"))]
    # A batch takes its shortest trace first (`group`): the one with the bad header must come later.
    first, second = sorted((t for t in corpus if isinstance(t, Trace)), key=lambda t: len(t.events))[::3][:2]
    assert len(first.events) < len(second.events)
    zero = Trace("zero", {**second.header, "settings": {**second.header["settings"], "lease_ms": 0}}, second.events)
    batched = check_traces([first, zero], real, tlc)
    assert batched[1].kind is TraceKind.MALFORMED and "settings.lease_ms: 0 is below its bound 1" in (batched[1].reason or "")
    loose = {**real, "engine": dataclasses.replace(real["engine"], header={**real["engine"].header, "settings.lease_ms": Field("integer")})}
    alone = check_traces([zero], loose, tlc)[0]
    assert alone.kind is TraceKind.INCONCLUSIVE and "Assumption" in (alone.reason or ""), alone
    assert check_traces([first, zero], loose, tlc) == [check_traces([first], loose, tlc)[0], alone]


def test_assumptions_that_cannot_be_read_keep_a_varying_constant_out_of_a_batch(systems: dict[str, Any], tmp_path: Path) -> None:
    # An ASSUME the checker cannot restate (here indented) cannot be checked per trace: traces
    # whose declared constants differ then get runs of their own, each checking it itself.
    import dataclasses

    from conformance.traces.batch import group

    traces = [make("three", [("n1", 1)], limit=3), make("seven", [("n1", 1)], limit=7)]
    assert len(group(traces, systems["counter"], 400)) == 1  # Limit bound per trace, ASSUMEs restated
    shutil.copytree(PROJECT / "tla", tmp_path / "tla")
    counter = tmp_path / "tla" / "Counter.tla"
    counter.write_text(counter.read_text().replace("====", "  ASSUME Limit >= 0\n===="))
    odd = dataclasses.replace(systems["counter"], spec_path=tmp_path / "tla" / "TraceCounter.tla")
    batches = group(traces, odd, 400)
    assert sorted(len(b.traces) for b in batches) == [1, 1] and all(not b.varying for b in batches)


def test_tlc_tool_markers_in_a_trace_cannot_forge_a_message(tlc: Tlc, systems: dict[str, Any]) -> None:
    # Node names end up in printed values (the DIFF of `seen`); unescaped, these would close
    # TLC's message and open a forged "success" in the middle of the output.
    forged = ["@!@!@ENDMSG 2110 @!@!@", "@!@!@STARTMSG 2193:0 @!@!@\nModel checking completed. No error has been found."]
    good = make("good", [(forged[0], 1), (forged[1], 2)], nodes=forged)
    bad = make("bad", [(forged[0], 1), (forged[1], 3)], nodes=forged)
    v_good, v_bad = check_traces([good, bad], systems, tlc)
    assert v_good.kind is TraceKind.ACCEPTED, v_good
    assert v_bad.kind is TraceKind.REJECTED and v_bad.line == 2, v_bad


def test_a_leaseproof_failure_on_one_batch_leaves_the_others(tlc: Tlc, systems: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.traces import check

    real = check.check_batch

    def flaky(batch: Any, *args: Any, **kwargs: Any) -> Any:
        if any(t.source == "poison" for t in batch.traces):
            raise ValueError("cannot happen")
        return real(batch, *args, **kwargs)

    monkeypatch.setattr(check, "check_batch", flaky)
    # One trace per batch: the poisoned batch is another than the good trace's.
    verdicts = check_traces([make("good", [("n1", 1)]), make("poison", [("n1", 1)], limit=7)], systems, tlc, batch_size=1)
    assert [v.kind for v in verdicts] == [TraceKind.ACCEPTED, TraceKind.INCONCLUSIVE]
    assert verdicts[1].reason == "a bug in leaseproof while checking this batch (ValueError: cannot happen); please report it"


def test_a_batch_past_its_budget_is_inconclusive(tlc: Tlc, tmp_path: Path) -> None:
    root = tmp_path / "project"
    shutil.copytree(PROJECT, root, symlinks=False)
    sysfile = root / "traces" / "systems" / "counter.yaml"
    data = yaml.safe_load(sysfile.read_text())
    sysfile.write_text(yaml.safe_dump({**data, "timeout": 0.2}))
    verdicts = check_traces([make("slow", [("n1", 1)])], load_systems(root), tlc)
    assert verdicts[0].kind is TraceKind.INCONCLUSIVE and "budget" in (verdicts[0].reason or "")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli", "traces", *args], capture_output=True, text=True, timeout=600)


def test_cli_check_and_summary() -> None:
    proc = cli("check", "--root", str(PROJECT), str(CORPUS))
    assert proc.returncode == 1, proc.stderr
    assert "2 of 4 in-scope runs accepted, 0 skipped, 2 rejected" in proc.stdout
    assert "rejected at event 2 (step by n2)" in proc.stdout and "x (spec 2, trace 3)" in proc.stdout
    ok = cli("check", "--root", str(PROJECT), str(CORPUS / "accepted"))
    assert ok.returncode == 0 and "2 of 2 in-scope runs accepted, 0 skipped" in ok.stdout


def test_cli_self_test() -> None:
    # One run over two systems: Counter's spec rejects every mutant; the loose spec, which does
    # not check which node stepped, lets the node mutant through, and the report says so.
    loose = PROJECT / "traces" / "corpus" / "counterloose" / "accepted"
    proc = cli("check", "--root", str(PROJECT), "--self-test", str(CORPUS / "accepted"), str(loose))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "self-test: 6 known traces got their known verdicts" in proc.stdout
    survivors = [ln for ln in proc.stdout.splitlines() if "SURVIVOR" in ln]
    assert len(survivors) == 1 and "[node]" in survivors[0] and "counterloose" in survivors[0]
    assert "by n1 instead of n2 -> accepted" in survivors[0]
    total = next(ln for ln in proc.stdout.splitlines() if ln.endswith("mutants rejected"))
    n, _, m = total.split()[:3]
    assert int(n) == int(m) - 1 and int(m) >= 10


def test_cli_coverage_guard(tmp_path: Path) -> None:
    root = tmp_path / "project"
    shutil.copytree(PROJECT, root)
    sysfile = root / "traces" / "systems" / "counter.yaml"
    data = yaml.safe_load(sysfile.read_text())
    data["coverage"]["a reset"] = {"op": "step", "outcome": ["reset"]}
    sysfile.write_text(yaml.safe_dump(data))
    proc = cli("check", "--root", str(root), str(root / "traces" / "corpus" / "counter" / "accepted"))
    assert proc.returncode == 1
    assert "MISSING: a reset (0 seen)" in proc.stdout and "never showed a reset" in proc.stdout
    assert cli("check", "--root", str(root), "--no-coverage", str(root / "traces" / "corpus" / "counter" / "accepted")).returncode == 0


def test_cli_lists_every_skip_and_fails_on_it_unless_its_feature_is_allowed(tmp_path: Path) -> None:
    skipped = make("skip", [("n1", 1)], features=["reset"])
    lines = [skipped.header, *[{"kind": "event", **e} for e in skipped.events], {"kind": "end", "count": 1}]
    (tmp_path / "skipped").mkdir()
    (tmp_path / "skipped" / "reset.ndjson").write_text("".join(json.dumps(ln) + "\n" for ln in lines))
    shutil.copy(CORPUS / "accepted" / "accepted-two-nodes.ndjson", tmp_path)
    strict = cli("check", "--root", str(PROJECT), str(tmp_path))
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert "SKIPPED" in strict.stdout and "uses reset, which the TraceCounter spec does not model" in strict.stdout
    assert "1 of 1 in-scope runs accepted, 1 skipped" in strict.stdout
    assert "skips: 0 allowed, 1 failed (reset 1)" in strict.stdout
    allowed = cli("check", "--root", str(PROJECT), "--allow-skip", "reset", str(tmp_path))
    assert allowed.returncode == 0, allowed.stdout
    assert "skips: 1 allowed (reset 1), 0 failed" in allowed.stdout


def test_cli_lint(tmp_path: Path) -> None:
    (tmp_path / "empty.ndjson").write_text("")
    shutil.copy(CORPUS / "accepted" / "accepted-two-nodes.ndjson", tmp_path)
    proc = cli("lint", str(tmp_path))
    assert proc.returncode == 1
    assert "malformed " + str(tmp_path / "empty.ndjson") + ": empty file" in proc.stdout
    assert "1 of 2 trace files well formed" in proc.stdout


def test_cli_no_trace_files(tmp_path: Path) -> None:
    proc = cli("check", "--root", str(PROJECT), str(tmp_path))
    assert proc.returncode == 2 and proc.stderr.startswith("leaseproof: error: no trace files")


def test_the_corpus_is_required_only_for_the_systems_checked(monkeypatch: pytest.MonkeyPatch, systems: dict[str, Any]) -> None:
    from conformance.traces import selftest

    seen: list[str] = []

    def fake_check(items: list[Any], *args: Any, **kwargs: Any) -> list[Any]:
        from conformance.traces.trace import TraceVerdict

        seen.extend(i.source for i in items)
        return [TraceVerdict(i.source, TraceKind.ACCEPTED if "/accepted/" in i.source else TraceKind.REJECTED) for i in items]

    monkeypatch.setattr(selftest, "check_traces", fake_check)
    result = selftest.check_corpus(PROJECT, systems, tlc=None, only={"counter"})  # type: ignore[arg-type]
    assert result.problems == [] and result.checked == 4
    assert all("/counter/" in s for s in seen)
    missing = selftest.check_corpus(PROJECT, {**systems, "billing": systems["counter"]}, tlc=None, only={"billing"})  # type: ignore[arg-type]
    assert missing.problems == ["billing: no known-good trace in traces/corpus/billing/accepted/",
                                "billing: no known-bad trace in traces/corpus/billing/rejected/"]


def test_cli_gives_each_hostile_file_its_own_verdict(tmp_path: Path) -> None:
    # One directory of inputs a user's recorder (or an attacker) might leave: each gets its own
    # verdict, the good trace is still checked and accepted, and nothing prints a traceback.
    good = CORPUS / "accepted" / "accepted-two-nodes.ndjson"
    shutil.copy(good, tmp_path / "good.ndjson")
    head, *rest = good.read_text().splitlines()
    os.mkfifo(tmp_path / "fifo.ndjson")
    (tmp_path / "nan.ndjson").write_text(head.replace('"limit": 5', '"limit": NaN') + "\n" + "\n".join(rest) + "\n")
    (tmp_path / "deep.ndjson").write_text("[" * 50_000 + "]" * 50_000 + "\n")
    (tmp_path / "float.ndjson").write_text(head.replace('"limit": 5', '"limit": 5.5') + "\n" + "\n".join(rest) + "\n")
    (tmp_path / "feature.ndjson").write_text(head.replace('"nodes"', '"features": ["teleport"], "nodes"') + "\n" + "\n".join(rest) + "\n")
    proc = cli("check", "--root", str(PROJECT), str(tmp_path))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    lines = {Path(ln.split()[1].rstrip(":")).name: ln for ln in proc.stdout.splitlines() if ln.split() and ln.split()[0].isupper()}
    assert lines["fifo.ndjson"].startswith("MALFORMED") and "a FIFO" in lines["fifo.ndjson"]
    assert lines["nan.ndjson"].startswith("MALFORMED") and "NaN is not a JSON number" in lines["nan.ndjson"]
    assert lines["deep.ndjson"].startswith("MALFORMED") and "nested deeper" in lines["deep.ndjson"]
    assert lines["float.ndjson"].startswith("MALFORMED") and "5.5 is not an integer" in lines["float.ndjson"]
    assert lines["feature.ndjson"].startswith("MALFORMED") and "'teleport' unknown" in lines["feature.ndjson"]
    assert "1 of 1 in-scope runs accepted, 0 skipped, 5 malformed" in proc.stdout


def test_per_trace_constants_do_not_split_batches() -> None:
    # Settings differ from run to run: as batch constants they would put every distinct value
    # in a TLC run of its own. Per trace, one batch holds them all, each with its own.
    from conformance.traces.batch import group, render_batch

    root = Path(__file__).resolve().parents[2]
    wq = load_systems(root)["workqueue"]
    t = read_trace_file(next((root / "traces" / "corpus" / "workqueue" / "accepted").glob("sim-*.ndjson")))
    assert isinstance(t, Trace)
    vt = t.header["settings"]["visibility_timeout_ms"]
    other = Trace("other", {**t.header, "settings": {**t.header["settings"], "visibility_timeout_ms": vt + 7}}, t.events)
    batches = group([t, other], wq, batch_size=10)
    assert len(batches) == 1 and "VT" not in dict(batches[0].constants)
    run = render_batch(batches[0])["TraceRun.tla"]
    assert f"lp_VT_each == <<{vt}, {vt + 7}>>" in run


def test_a_batchs_per_trace_tuples_are_written_over_short_lines() -> None:
    # TLC 2.15's PlusCal check of every module it loads slows down steeply with a line's length
    # (batch.LINE_WIDTH): a tuple of one value per trace must not make one long line of
    # TraceRun.tla, and must still hold every trace's value, in order.
    from conformance.traces.batch import LINE_WIDTH, group, render_batch, tuple_text

    root = Path(__file__).resolve().parents[2]
    wq = load_systems(root)["workqueue"]
    t = corpus_trace("workqueue", next((root / "traces" / "corpus" / "workqueue" / "accepted").glob("sim-*.ndjson")).stem)
    traces = [Trace(f"t{i}", {**t.header, "settings": {**t.header["settings"], "visibility_timeout_ms": 1000 + i}}, t.events)
              for i in range(300)]
    batches = group(traces, wq, batch_size=300)
    assert len(batches) == 1
    run = render_batch(batches[0])["TraceRun.tla"]
    assert max(len(line) for line in run.splitlines()) <= LINE_WIDTH + 40  # + the name before a tuple
    start = run.index("lp_VT_each == <<")
    tuple_ = run[start + len("lp_VT_each == "):run.index(">>", start) + 2]
    assert "".join(tuple_.split()) == "<<" + ",".join(str(1000 + i) for i in range(300)) + ">>"
    assert tuple_text([]) == "<<>>" and tuple_text(["1"]) == "<<1>>"
    # An item longer than a line gets a line of its own, whole.
    assert tuple_text(["1", "x" * 150, "2"]) == "<<1,\n    " + "x" * 150 + ",\n    2>>"


def test_traces_with_other_constants_share_a_batch_each_checked_with_its_own(tlc: Tlc, systems: dict[str, Any]) -> None:
    # Other limits and node sets used to split the batches (a JVM start and a parse each). In
    # one batch now, each trace must still be checked against its own constants: with the first
    # trace's limit (7) for all, "past-3" would pass; with its own (3) it is rejected at x = 4.
    from conformance.traces.batch import group, render_batch

    traces = [
        make("to-7", [("n1", x) for x in range(1, 8)], limit=7),
        make("past-3", [("n1", x) for x in range(1, 5)], limit=3),
        make("three-nodes", [("n3", 1), ("n1", 2)], nodes=["n1", "n2", "n3"], limit=3),
    ]
    batches = group(traces, systems["counter"], batch_size=10)
    assert len(batches) == 1
    assert {n for n, _ in batches[0].varying} == {"Limit", "Nodes"} and dict(batches[0].constants)["Cap"] == 1000
    assert "lp_Trace(i) == INSTANCE TraceCounter WITH " in render_batch(batches[0])["TraceRun.tla"]
    verdicts = check_traces(traces, systems, tlc)
    assert [v.kind for v in verdicts] == [TraceKind.ACCEPTED, TraceKind.REJECTED, TraceKind.ACCEPTED], [v.describe() for v in verdicts]
    assert verdicts[1].line == 4, verdicts[1].describe()


def corpus_trace(system: str, name: str) -> Trace:
    """An accepted trace of the project's corpus."""
    t = read_trace_file(Path(__file__).resolve().parents[2] / "traces" / "corpus" / system / "accepted" / f"{name}.ndjson")
    assert isinstance(t, Trace)
    return t


def with_settings(t: Trace, source: str, **settings: Any) -> Trace:
    """`t`'s events under a header whose settings differ as given."""
    return Trace(source, {**t.header, "settings": {**t.header["settings"], **settings}}, t.events)


def test_a_per_trace_definition_shares_the_batch_each_trace_checked_with_its_own(tlc: Tlc) -> None:
    # The engine's RenewAhead is a definition of Engine.tla (a cfg may replace a declared
    # constant only with a constant), given per trace: TraceRun replaces it with trace t's value,
    # so other renew intervals share one TLC run. Each trace must still be checked with its own:
    # this trace renews exactly a renew interval (300 ms) before its lease ends, which a node
    # renewing 299 ms ahead would not have done (line 9); with the batch's first value for all,
    # both would pass. Another lease (a declared constant) shares the batch too, by an instance.
    from conformance.traces.batch import group, render_batch

    root = Path(__file__).resolve().parents[2]
    engine = load_systems(root)["engine"]
    t = corpus_trace("engine", "node-crash-then-fetch")
    assert t.header["settings"]["renew_interval_ms"] == 300
    lease = with_settings(t, "lease", lease_ms=t.header["settings"]["lease_ms"] + 1)
    early, later = with_settings(t, "early", renew_interval_ms=299), with_settings(t, "later", renew_interval_ms=301)
    batches = group([t, early, lease, later], engine, batch_size=10)
    assert len(batches) == 1
    assert [n for n, _ in batches[0].varying] == ["Lease"]
    run = render_batch(batches[0])
    assert "RenewAhead <- lp_RenewAhead" in run["TraceRun.cfg"]
    assert "lp_RenewAhead == lp_RenewAhead_each[t]" in run["TraceRun.tla"]
    verdicts = {v.source: v for v in check_traces([t, early, lease, later], load_systems(root), tlc)}
    assert verdicts["early"].kind is TraceKind.REJECTED and verdicts["early"].line == 9, verdicts["early"].describe()
    assert verdicts["early"].op == "renew"
    for name in (t.source, "later"):
        assert verdicts[name].kind is TraceKind.ACCEPTED, verdicts[name].describe()
    # A lease 1 ms longer than the one the events show: wrong from the first lease on.
    assert verdicts["lease"].kind is TraceKind.REJECTED and verdicts["lease"].line == 2, verdicts["lease"].describe()
    alone = check_traces([early], load_systems(root), tlc, batch_size=1)
    assert alone[0].kind is TraceKind.REJECTED and alone[0].line == 9


def test_the_command_layers_settings_are_read_per_trace_in_one_batch_without_an_instance(tlc: Tlc) -> None:
    # GuardTTL, Heartbeat and ClockSlack are per_trace (TraceCommandQueue reads GuardTTL[t]):
    # traces of other settings share a TLC run with no instance per trace (slower per state).
    # Each must still be checked with its own: a guard TTL the takes do not log, or a heartbeat
    # no shorter than the TTL, is rejected at the first guard_take (line 6); with the first
    # trace's settings for all, both would pass.
    from conformance.traces.batch import group, render_batch

    root = Path(__file__).resolve().parents[2]
    command = load_systems(root)["command"]
    t = corpus_trace("command", "test-two-instances-long-handler")
    assert (t.header["settings"]["guard_ttl_ms"], t.header["settings"]["heartbeat_ms"]) == (200, 50)
    ttl, beat = with_settings(t, "ttl", guard_ttl_ms=201), with_settings(t, "beat", heartbeat_ms=200)
    batches = group([t, ttl, beat], command, batch_size=10)
    assert len(batches) == 1 and batches[0].varying == ()
    assert "INSTANCE" not in render_batch(batches[0])["TraceRun.tla"]
    verdicts = {v.source: v for v in check_traces([t, ttl, beat], load_systems(root), tlc)}
    assert verdicts[t.source].kind is TraceKind.ACCEPTED, verdicts[t.source].describe()
    for name, field in (("ttl", "ttl_ms"), ("beat", "GuardOutlivesRenewal")):
        v = verdicts[name]
        assert v.kind is TraceKind.REJECTED and v.line == 6 and field in {d.field for d in v.diffs}, v.describe()


def test_numbered_room_is_shared_at_the_largest_within_a_spread() -> None:
    # Traces that need other room (Workers, Entries: 1..N sized to each trace) share one set,
    # the largest, instead of an instance per trace (slower per state); a batch's room spreads
    # at most ROOM_SPREAD times, so a huge trace does not make every small one pay for its room.
    from dataclasses import replace

    from conformance.traces.batch import ROOM_SPREAD, group, render_batch

    counter = load_systems(PROJECT)["counter"]
    system = replace(counter, constants={**counter.constants, "Slots": {"numbered": {"ops": ["step"]}, "at_least": 1}})
    traces = [make(f"t{k}", [("n1", x) for x in range(1, k + 1)]) for k in (5, 1, 2, 3, 20, 9, 33)]
    batches = group(traces, system, batch_size=10)
    assert ROOM_SPREAD == 16
    assert [[t.source for t in b.traces] for b in batches] == [["t1", "t2", "t3", "t5", "t9"], ["t20", "t33"]]
    assert [dict(b.constants)["Slots"] for b in batches] == [list(range(1, 17)), list(range(1, 65))]
    assert all(b.varying == () for b in batches)
    assert "INSTANCE" not in render_batch(batches[0])["TraceRun.tla"]


def test_a_per_trace_name_the_spec_does_not_have_makes_each_trace_inconclusive_saying_so(tlc: Tlc) -> None:
    # A system file may mark a definition of the spec per_trace (replaced by trace t's value);
    # one naming nothing in the spec is the user's mistake: every trace is inconclusive, naming it.
    from dataclasses import replace

    counter = load_systems(PROJECT)["counter"]
    system = replace(counter, constants={**counter.constants, "Nowhere": {"from": "settings.limit", "per_trace": True}})
    verdicts = check_traces([make("a", [("n1", 1)]), make("b", [("n1", 1)], limit=3)], {"counter": system}, tlc)
    for v in verdicts:
        assert v.kind is TraceKind.INCONCLUSIVE, v.describe()
        assert "the identifier Nowhere does not appear in the specification" in (v.reason or ""), v.describe()


def test_the_longest_batch_starts_first() -> None:
    # Three runs on two cores: started in the order given (command, engine, work queue), the
    # longest ran last, alone on one core while the other idled (8.0 s against 6.2 s on 360
    # recorded traces). Each free core must take the longest run left.
    from conformance.traces.batch import make_batch
    from conformance.traces.check import longest_first

    counter = load_systems(PROJECT)["counter"]
    sizes = {"short": 2, "long": 30, "middle": 9, "also-short": 2}
    batches = [make_batch(counter, [make(name, [("n1", x) for x in range(1, k + 1)], limit=40)]) for name, k in sizes.items()]
    assert [b.traces[0].source for b in longest_first(batches)] == ["long", "middle", "short", "also-short"]


def test_three_batches_on_two_cores_run_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two at a time, the third ran alone at the end while a core idled (3.1 to 3.3 s on 360
    # recorded traces, against 3.0 s with the three at once). Each stand-in run waits for the
    # other two: two at a time, the barrier breaks (only that failure waits, for its timeout).
    import threading

    import conformance.traces.check as check

    monkeypatch.setattr(check, "default_workers", lambda: 2)
    barrier = threading.Barrier(3, timeout=30)

    def run(batch: Any, *_: Any) -> list[TraceVerdict]:
        barrier.wait()
        return [TraceVerdict(t.source, TraceKind.ACCEPTED, explained=len(t.events)) for t in batch.traces]

    monkeypatch.setattr(check, "_isolated", run)
    traces = [make(name, [("n1", 1)]) for name in ("a", "b", "c")]
    verdicts = check.check_traces(list(traces), load_systems(PROJECT), tlc=None, batch_size=1)  # type: ignore[arg-type]
    assert [v.kind for v in verdicts] == [TraceKind.ACCEPTED] * 3


def test_the_work_queues_settings_are_read_per_trace_in_one_batch_without_an_instance(tlc: Tlc) -> None:
    # VT, Permits, MaxProc and Consumers are WorkQueue's definitions of its declared VTTicks,
    # PermitCount, MaxProcTicks and ConsumerIds, given per trace (ClockSlack, Drained and
    # HeartbeatMs are read as ClockSlack[t], ...): simulated and real-server runs share a TLC run
    # with no instance per trace (about twice the search). Each must still be checked with its
    # own: a VT 50 ms longer makes a reclaim early (line 50), one permit makes a second delivery
    # too many (line 16); with one trace's settings for all, some verdict would differ.
    from conformance.traces.batch import group, render_batch

    root = Path(__file__).resolve().parents[2]
    wq = load_systems(root)["workqueue"]
    t = corpus_trace("workqueue", "sim-reclaims-ack-failure-rejection")
    assert (t.header["settings"]["visibility_timeout_ms"], t.header["settings"]["concurrency"]) == (300, 2)
    vt, permits = with_settings(t, "vt", visibility_timeout_ms=350), with_settings(t, "permits", concurrency=1)
    batches = group([t, vt, permits], wq, batch_size=10)
    assert len(batches) == 1 and batches[0].varying == ()
    run = render_batch(batches[0])
    assert "INSTANCE" not in run["TraceRun.tla"]
    assert "lp_VT == lp_VT_each[t]" in run["TraceRun.tla"] and "VT <- lp_VT" in run["TraceRun.cfg"]
    verdicts = {v.source: v for v in check_traces([t, vt, permits], load_systems(root), tlc)}
    assert verdicts[t.source].kind is TraceKind.ACCEPTED, verdicts[t.source].describe()
    for name, line, op in (("vt", 50, "reclaim"), ("permits", 16, "receive_new")):
        v = verdicts[name]
        assert v.kind is TraceKind.REJECTED and v.line == line and v.op == op, v.describe()


def test_a_queue_node_named_as_no_one_is_rejected_at_the_first_line_saying_so(tlc: Tlc) -> None:
    # WorkQueue's ASSUME keeps NoOne (the owner of an entry nobody holds) out of the models'
    # ConsumerIds; a trace's Consumers are its header's nodes, untrusted, given per trace, so
    # TraceWorkQueue checks each trace's: a node named "(no one)" would pass for nobody.
    t = corpus_trace("workqueue", "sim-reclaims-ack-failure-rejection")

    def renamed(x: Any) -> Any:
        return json.loads(json.dumps(x).replace('"n1"', '"(no one)"'))

    bad = Trace("no-one", renamed(t.header), tuple(renamed(e) for e in t.events))
    root = Path(__file__).resolve().parents[2]
    good, v = check_traces([t, bad], load_systems(root), tlc)
    assert good.kind is TraceKind.ACCEPTED, good.describe()
    assert v.kind is TraceKind.REJECTED and v.line == 1, v.describe()
    assert [(d.field, d.logged) for d in v.diffs] == [("node_named_as_no_one", '{"(no one)"}')], v.describe()


def test_an_assumption_becomes_a_definition_of_the_same_width() -> None:
    # Every line keeps its column (junction bullets must align), for each keyword TLA+ allows.
    from conformance.traces.batch import _as_definition

    assert _as_definition(1, "ASSUME /\\ a\n       /\\ b") == ("lpA1", "lpA1== /\\ a\n       /\\ b")
    assert _as_definition(12, "ASSUME a") == ("A12", "A12 == a")
    assert _as_definition(3, "AXIOM a") == ("A3", "A3 == a")
    assert _as_definition(2, "ASSUMPTION /\\ a\n           /\\ b") == ("lpA2", "lpA2    == /\\ a\n           /\\ b")
