"""The swimlanes, the HTML and terminal reports, the trace JUnit: pure, from saved TLC output
(`report_fixtures.py`), except the two command-line tests, which run TLC (marked `tlc`)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rich.console import Console

from conformance.output.counterexample import Counterexample, State
from conformance.report.definition import property_definition
from conformance.report.html import trace_sections, traces_html
from conformance.report.junit import traces_junit_xml
from conformance.report.lanes import model_swimlane
from conformance.report.svg import LANE_W, PAD, lane_widths, layout, swimlane_svg
from conformance.report.table import counterexample_table
from conformance.traces.trace import Diff, Trace, TraceKind, TraceVerdict
from toolkit.report_fixtures import PROJECT, REPORT, ROOT, saved_outcome


def texts(cell: tuple) -> list[str]:  # type: ignore[type-arg]
    return [c.text() for c in cell]


def test_a_counterexample_has_a_lane_per_node_and_one_for_the_store_showing_only_what_changed() -> None:
    sl = model_swimlane(saved_outcome("invariant"))
    assert sl is not None and sl.lanes == ("n1", "n2", "store")
    first, second = sl.rows[0], sl.rows[1]
    # The first state shows every value, a function over nodes split by node; then only changes.
    assert texts(first.cell("n1")) == ["seen = 0"] and texts(first.cell("n2")) == ["seen = 0"]
    assert texts(first.cell("store")) == ["x = 0"]
    assert second.action == "Step" and texts(second.cell("store")) == ["x: 0 \u2192 1"]
    assert sum(len(changes) for _, changes in second.cells) == 2
    assert [r.marked for r in sl.rows] == [False, False, False, True]
    assert sl.rows[-1].note == "BelowCap broken here"


def test_the_engine_actions_are_named_as_the_replay_map_names_them() -> None:
    sl = model_swimlane(saved_outcome("inmem_overlap_unguarded"))
    assert sl is not None
    assert [r.action for r in sl.rows][1:] == ["CreateInstance(n1, w1)", "ScheduleInMemory(n1, w1)", "RunStart(n1, w1, s1)",
                                               "CreateInstance(n2, w1)", "ScheduleInMemory(n2, w1)", "RunStart(n2, w1, s1)"]
    last = sl.rows[-1]
    assert last.marked and not last.cell("n1") and "work[w1][s1].phase: \"none\" \u2192 \"running\"" in texts(last.cell("n2"))


def test_a_liveness_counterexample_is_drawn_with_its_loop_or_its_stutter() -> None:
    lasso, stutter = model_swimlane(saved_outcome("lasso")), model_swimlane(saved_outcome("temporal"))
    assert lasso is not None and lasso.loop_to == 0 and lasso.loop_action == "Next"
    assert 'data-kind="loop" data-back-to="1"' in swimlane_svg(lasso)
    assert "loops back to state 1" in lasso.rows[-1].note
    assert stutter is not None and stutter.stutters and 'data-kind="stutter"' in swimlane_svg(stutter)


def test_a_counterexample_of_23_states_stays_aligned_and_shows_only_changes() -> None:
    sl = model_swimlane(saved_outcome("ladder"))
    assert sl is not None and len(sl.rows) == 23 and sl.lanes == ("n1", "n2", "store")
    for r in sl.rows[1:]:
        # One node's count, the rung and the turn: three changes, never the unchanged node.
        assert sorted(len(c) for _, c in r.cells) == [1, 2]
    box = layout(sl)
    lane_x = {x for _, x in box.lanes}
    # Every change starts at its lane's left edge, and each row starts where the last ended.
    assert {ln.x - PAD for r in box.rows for ln in r.lines} <= lane_x
    assert all(a.y + a.height == b.y for a, b in zip(box.rows, box.rows[1:]))
    assert len({r.height for r in box.rows[1:-1]}) == 1  # the same height for the same shape
    # No change runs past its lane, and no lane is wider than LANE_W (a longer change is cut).
    width_at = {x: w for (_, x), w in zip(box.lanes, lane_widths(sl))}
    assert all(ln.width <= width_at[ln.x - PAD] - PAD for r in box.rows for ln in r.lines)
    assert all(w <= LANE_W for w in width_at.values())
    console = Console(width=120, record=True)
    console.print(counterexample_table(sl))
    out = console.export_text()
    assert "23 \u2717" in out and "BelowTop broken here" in out and "rung: 21 \u2192 22" in out
    assert out.count("climbed") == 2 + 22  # two first values, then one change a step


def test_full_lists_the_unchanged_variables_too() -> None:
    full = model_swimlane(saved_outcome("ladder"), full=True)
    assert full is not None
    assert set(texts(full.rows[1].cell("n2"))) == {"climbed = 0"}  # unchanged, listed as it is


def test_the_definition_is_read_from_the_module_that_defines_it() -> None:
    assert property_definition("BelowCap", PROJECT / "tla" / "Counter.tla") == ("Counter.tla", "BelowCap == x <= Cap")
    module, text = property_definition("NoOverlappingRuns", ROOT / "tla" / "MCEngine.tla") or ("", "")
    assert module == "Engine.tla" and text.startswith("NoOverlappingRuns ==") and "Running(m, w, r)" in text
    assert property_definition("NoSuchProperty", PROJECT / "tla" / "Counter.tla") is None


EVIL = "<script>alert(1)</script>"


def evil_trace() -> tuple[Trace, TraceVerdict]:
    header = {"kind": "header", "system": "joblease", "nodes": ["w1", EVIL], "format": 1}
    events = (
        {"kind": "event", "seq": 1, "node": "w1", "op": "acquire", "outcome": "acquired", "job": EVIL,
         "state": {"owner": "w1", "note": EVIL}},
        {"kind": "event", "seq": 2, "node": EVIL, "op": EVIL, "outcome": "acquired", "state": {"owner": EVIL}},
        {"kind": "event", "seq": 3, "node": "w1", "op": "release", "outcome": "released", "state": {}},
    )
    verdict = TraceVerdict(f"traces/{EVIL}.ndjson", TraceKind.REJECTED, line=2, op=EVIL, node=EVIL, explained=1,
                           diffs=(Diff("owner", '"w1"', EVIL),))
    return Trace(f"traces/{EVIL}.ndjson", header, events), verdict


def test_untrusted_text_is_escaped_in_the_html_and_the_svg() -> None:
    trace, verdict = evil_trace()
    page = traces_html([verdict], trace_sections([trace], [verdict], {}), "1 rejected")
    assert "<script" not in page and "&lt;script&gt;" in page
    cx = Counterexample((State(1, "Initial predicate", None, {"x": EVIL}), State(2, EVIL, None, {"x": "</text><script>"})))
    svg = swimlane_svg(model_swimlane_of(cx))
    assert "<script" not in svg and "&lt;/text&gt;&lt;script&gt;" in svg


def model_swimlane_of(cx: Counterexample):  # type: ignore[no-untyped-def]
    from conformance.report.swimlane import counterexample_swimlane

    return counterexample_swimlane(cx, note=EVIL)


def test_a_rejected_trace_is_drawn_up_to_its_rejected_line_in_its_nodes_lanes() -> None:
    trace, verdict = evil_trace()
    (section,) = trace_sections([trace], [verdict], {})
    sl = section.swimlane
    assert sl.lanes == ("w1", EVIL, "store") and [r.number for r in sl.rows] == [1, 2]  # event 3 left out
    assert sl.rows[-1].marked and "no behaviour explains line 2" in sl.rows[-1].note
    # The first event's state is its values, the next one's changes are changes (highlighted);
    # an event's own fields are its arguments, never highlighted.
    assert [c.changed for c in sl.rows[0].cell("store")] == [False, False]
    assert [c.changed for c in sl.rows[1].cell("store")] == [True, True]
    assert not any(c.changed for c in sl.rows[0].cell("w1"))
    assert texts(sl.rows[0].cell("w1")) == [f'job = "{EVIL}"'] and texts(sl.rows[1].cell("store")) == [f'owner: "w1" \u2192 "{EVIL}"',
                                                                                                      f'note: "{EVIL}" \u2192 (absent)']


def test_trace_verdicts_as_junit_one_case_a_trace() -> None:
    verdicts = [TraceVerdict("out/a/ok.ndjson", TraceKind.ACCEPTED),
                TraceVerdict("out/a/bad.ndjson", TraceKind.REJECTED, line=3, op="renew", node="w1", explained=2,
                             diffs=(Diff("version", 3, 4),)),
                TraceVerdict("out/b/skip.ndjson", TraceKind.SKIPPED, reason="reset is out of scope"),
                TraceVerdict("out/b/cut.ndjson", TraceKind.MALFORMED, reason="truncated: no end line")]
    suite = ET.fromstring(traces_junit_xml(verdicts).split("\n", 1)[1])
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("4", "1", "1", "1")
    cases = {c.get("name"): c for c in suite}
    failure = cases["bad.ndjson"].find("failure")
    assert failure is not None and failure.get("message", "").startswith("rejected at event 3 (renew by w1)")
    assert failure.text == "version (spec 3, trace 4)" and cases["bad.ndjson"].get("classname") == "out.a"
    assert cases["ok.ndjson"].find("failure") is None and cases["cut.ndjson"].find("error") is not None
    strict = ET.fromstring(traces_junit_xml(verdicts, failing_skips=[verdicts[2]]).split("\n", 1)[1])
    assert strict.get("failures") == "2"


@pytest.mark.tlc
def test_check_html_draws_the_ladder_from_a_live_run(tmp_path: Path) -> None:
    from conformance.cli import main

    status = main(["check", "--root", str(REPORT), "ladder", "--html", str(tmp_path / "html"), "-j", "1"])
    page = (tmp_path / "html" / "index.html").read_text()
    assert status == 0
    assert len(re.findall(r'<g class="step', page)) == 23 and page.count('data-marked="true"') == 1


@pytest.mark.tlc
def test_traces_check_html_and_junit_from_a_live_run(tmp_path: Path) -> None:
    from conformance.cli import main

    corpus = PROJECT / "traces" / "corpus" / "counter"
    status = main(["traces", "check", "--root", str(PROJECT), str(corpus), "--no-coverage",
                   "--html", str(tmp_path / "html"), "--junit", str(tmp_path / "junit.xml")])
    assert status == 1  # the corpus holds rejected traces
    page = (tmp_path / "html" / "index.html").read_text()
    assert page.count('<section class="failure"') == 2 and page.count('data-marked="true"') == 2
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    assert suite.get("tests") == "4" and suite.get("failures") == "2"


def test_progress_says_what_is_done_the_time_elapsed_and_an_estimate_of_what_is_left() -> None:
    from conformance.report.progress import ItemProgress, estimate, progress_suffix

    assert estimate(0, 4, 5.0) is None and estimate(1, 4, 10.0) == 30.0 and estimate(4, 4, 40.0) == 0.0
    assert progress_suffix(1, 4, 10.0) == "1/4, 10 s elapsed, ~30 s left"
    assert progress_suffix(4, 4, 95.0) == "4/4, 1:35 elapsed"  # nothing left to estimate
    now = [0.0]
    console = Console(width=200, record=True)
    with ItemProgress("trace batches", 0, console, clock=lambda: now[0], lines=True) as p:
        p.set_total(3)
        now[0] = 6.0
        p.advance("engine: 40 traces checked")
    assert console.export_text().strip() == "engine: 40 traces checked (1/3, 6 s elapsed, ~12 s left)"


def test_the_node_lanes_are_the_actors_of_each_spec() -> None:
    from conformance.models.model import load_model
    from conformance.report.lanes import nodes_of

    lanes = {name: nodes_of(load_model(ROOT / "models" / f"{name}.yaml", (ROOT / "tla",)))
             for name in ("engine/inmem_overlap_unguarded", "workqueue/no_owner_check", "command/no_terminal_check")}
    assert lanes == {"engine/inmem_overlap_unguarded": ("n1", "n2"), "workqueue/no_owner_check": ("c1", "c2"),
                     "command/no_terminal_check": ("w1", "w2")}
    assert nodes_of(load_model(PROJECT / "models" / "lasso.yaml", (PROJECT / "tla",))) == ()  # a store lane only


def test_a_key_with_a_final_line_feed_is_shown_as_a_key_not_as_a_field() -> None:
    # `.name` is for a field name; `$` let `a\n` pass for one and printed the line feed.
    from conformance.output.values import FrozenDict
    from conformance.report.swimlane import changes_of

    lanes = changes_of({"r": FrozenDict({"a\n": 1, "b": 1})}, {"r": FrozenDict({"a\n": 2, "b": 2})}, frozenset())
    assert [c.path for c in lanes["store"]] == ['r["a\\n"]', "r.b"]
