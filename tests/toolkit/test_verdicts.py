"""Verdicts read from saved TLC output (tests/fixtures/tlc_output): no Java needed.

The outputs were recorded with `leaseproof check --root tests/fixtures/project --keep
tests/fixtures/tlc_output`; re-record them the same way after changing a fixture spec.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conformance.output.messages import parse_messages
from conformance.output.values import ModelValue, format_value
from conformance.output.verdict import ErrorKind, Kind, PropertyKind, Verdict, verdict_from_output

OUTPUT = Path(__file__).parent.parent / "fixtures" / "tlc_output"


def saved(name: str) -> Verdict:
    facts = json.loads((OUTPUT / f"{name}.run.json").read_text())
    text = (OUTPUT / f"{name}.out").read_text()
    return verdict_from_output(parse_messages(text), exit_code=facts["exit_code"], seconds=facts["seconds"], timed_out=facts["timed_out"])


@pytest.mark.parametrize(
    ("name", "kind", "property_kind", "error_kind"),
    [
        ("passing", Kind.OK, None, None),
        ("expression_constant", Kind.OK, None, None),
        ("invariant", Kind.VIOLATED, PropertyKind.INVARIANT, None),
        ("temporal", Kind.VIOLATED, PropertyKind.TEMPORAL, None),
        ("lasso", Kind.VIOLATED, PropertyKind.TEMPORAL, None),
        ("deadlock", Kind.DEADLOCK, PropertyKind.DEADLOCK, None),
        ("assertion", Kind.VIOLATED, PropertyKind.ASSERTION, None),
        ("syntax_error", Kind.ERROR, None, ErrorKind.PARSE),
        ("semantic_error", Kind.ERROR, None, ErrorKind.SEMANTIC),
        ("cfg_error", Kind.ERROR, None, ErrorKind.CFG),
        ("evaluation_error", Kind.ERROR, None, ErrorKind.EVALUATION),
        ("no_initial_states", Kind.ERROR, None, ErrorKind.NO_INITIAL_STATES),
        ("slow", Kind.TIMEOUT, None, None),
    ],
)
def test_each_saved_output_gets_its_verdict(name: str, kind: Kind, property_kind: PropertyKind | None, error_kind: ErrorKind | None) -> None:
    v = saved(name)
    assert (v.kind, v.property_kind, v.error_kind) == (kind, property_kind, error_kind)
    assert v.tlc_version == "2.15"


def test_no_initial_states_is_never_ok() -> None:
    # TLC 2.15 prints "Model checking completed. No error has been found." and exits 0 here.
    text = (OUTPUT / "no_initial_states.out").read_text()
    assert "No error has been found" in text
    assert saved("no_initial_states").kind is Kind.ERROR


def test_error_messages_carry_tlcs_words() -> None:
    assert "Unknown operator: `y'" in (saved("semantic_error").message or "")
    assert "line 5, column 1" in (saved("syntax_error").message or "")
    assert "Nodes is not assigned a value" in (saved("cfg_error").message or "")
    assert "second argument of \\div is 0" in (saved("evaluation_error").message or "")
    assert saved("assertion").property == "x went past 1"


def test_stats_on_a_complete_search() -> None:
    v = saved("passing")
    assert (v.stats.distinct_states, v.stats.states_generated, v.stats.depth) == (13, 21, 4)
    assert v.stats.seconds > 0


def test_invariant_counterexample_is_what_tlc_printed() -> None:
    v = saved("invariant")
    assert v.property == "BelowCap"
    cx = v.counterexample
    assert cx is not None
    n1, n2 = ModelValue("n1"), ModelValue("n2")
    assert [(s.index, s.action, s.variables) for s in cx.states] == [
        (1, "Initial predicate", {"seen": {n1: 0, n2: 0}, "x": 0}),
        (2, "Step", {"seen": {n1: 1, n2: 0}, "x": 1}),
        (3, "Step", {"seen": {n1: 2, n2: 0}, "x": 2}),
        (4, "Step", {"seen": {n1: 3, n2: 0}, "x": 3}),
    ]
    loc = cx.states[1].location
    assert loc is not None and (loc.module, loc.line, loc.column) == ("Counter", 10, 12)


def test_every_parsed_state_prints_back_as_in_the_output() -> None:
    # Independent of the hand-written list above: each state's variables, printed again,
    # appear in TLC's own text for that state, in the same order.
    text = (OUTPUT / "invariant.out").read_text()
    blocks = re.findall(r"STARTMSG 2217:4 @!@!@\n(.*?)\n@!@!@ENDMSG", text, re.S)
    cx = saved("invariant").counterexample
    assert cx is not None and len(blocks) == len(cx.states)
    for block, state in zip(blocks, cx.states):
        printed = [ln.removeprefix("/\\ ") for ln in block.strip().splitlines()[1:]]
        assert printed == [f"{k} = {format_value(v)}" for k, v in state.variables.items()]


def test_liveness_counterexamples_say_how_they_end() -> None:
    stutter = saved("temporal").counterexample
    lasso = saved("lasso").counterexample
    assert stutter is not None and stutter.stutters and stutter.back_to is None
    assert lasso is not None and lasso.back_to == 1 and not lasso.stutters
    assert [s.variables["on"] for s in lasso.states] == [False, True]
    # The loop's closing action (from the last state back to state 1) is kept, with where it is.
    assert lasso.back_action == "Next" and str(lasso.back_location) == "Spinner.tla:7:9"
    assert stutter.back_action is None


def test_the_lasso_closing_action_is_in_the_table_and_the_json() -> None:
    from conformance.report.json_report import counterexample_json
    from rich.console import Console

    from conformance.report.swimlane import counterexample_swimlane
    from conformance.report.table import counterexample_table

    lasso = saved("lasso").counterexample
    assert lasso is not None
    console = Console(width=200, record=True)
    console.print(counterexample_table(counterexample_swimlane(lasso, note="SettlesOn broken")))
    assert "back to state 1 by Next (Spinner.tla:7:9) (a loop)" in console.export_text()
    js = counterexample_json(lasso)
    assert js is not None and js["back_to"] == 1 and js["back_action"] == "Next" and js["back_location"] == "Spinner.tla:7:9"


def test_a_crash_with_no_verdict_is_an_error() -> None:
    v = verdict_from_output(parse_messages("Error: Could not find or load main class tlc2.TLC\n"), exit_code=1, seconds=0.1)
    assert v.kind is Kind.ERROR and v.error_kind is ErrorKind.CRASH
    assert "Could not find or load main class" in (v.message or "")


def test_empty_output_is_an_error_not_ok() -> None:
    v = verdict_from_output([], exit_code=0, seconds=0.0)
    assert v.kind is Kind.ERROR
