"""How a rejection reads (pure): logged fields that disagree, and properties the line breaks."""

from __future__ import annotations

from conformance.traces.trace import Diff, TraceKind, TraceVerdict


def rejected(*diffs: Diff) -> str:
    return TraceVerdict("t", TraceKind.REJECTED, line=7, op="run_start", node="n1", explained=6, diffs=diffs).describe()


def test_a_field_that_disagrees() -> None:
    assert rejected(Diff("task_version", "2", "1")) == (
        "rejected at event 7 (run_start by n1): no behaviour of the spec explains it; disagrees on task_version (spec 2, trace 1)")


def test_a_broken_property_is_named_with_the_state_it_left() -> None:
    d = Diff("NoOverlappingRuns", "[n1 |-> 1, n2 |-> 1]", "[n1 |-> 1, n2 |-> 0]")
    assert d.is_property
    assert rejected(d, Diff("source", '"memory"', '"store"')) == (
        "rejected at event 7 (run_start by n1): no behaviour of the spec explains it; "
        "breaks NoOverlappingRuns (after it [n1 |-> 1, n2 |-> 1], allowed [n1 |-> 1, n2 |-> 0]); "
        'disagrees on source (spec "memory", trace "store")')


def test_a_true_false_property_is_named_alone() -> None:
    assert rejected(Diff("NoStaleWrite", "TRUE", "FALSE")).endswith("explains it; breaks NoStaleWrite")


def test_a_line_no_action_explains() -> None:
    assert rejected() == "rejected at event 7 (run_start by n1): no behaviour of the spec explains it"


def test_the_diffs_of_a_line_do_not_depend_on_the_order_tlc_printed_them() -> None:
    # TLC's workers print the DIFFs of one line in the order they reach them; a verdict must
    # read the same whatever that order (a CI run once named another field first).
    from conformance.traces.batch import read_prints

    one = '<<"DIFF", 1, 6, [outcome |-> <<"conflict", "updated">>, version |-> <<1, 3>>]>>'
    two = '<<"DIFF", 1, 6, [version |-> <<2, 3>>]>>'
    lines = '<<"L", 1, 4>>\n<<"L", 1, 5>>\n'
    first, second = read_prints(f"{lines}{one}\n{two}\n"), read_prints(f"{two}\n{lines}{one}\n")
    assert first.diffs == second.diffs
    assert [(d.field, d.expected) for d in first.diffs[(1, 6)]] == [("outcome", '"conflict"'), ("version", "1"), ("version", "2")]


def test_only_the_diffs_of_the_line_a_trace_stopped_at_are_read() -> None:
    # A batch prints DIFFs at every dead end of the search, most of them on lines another branch
    # went on to explain; the verdict names those of the first line left unexplained only (and
    # reading the others was most of the time spent on a batch's output).
    from conformance.traces.batch import read_prints

    out = "\n".join([
        '<<"L", 1, 1>>', '<<"DIFF", 1, 2, [version |-> <<1, 2>>]>>', '<<"L", 1, 2>>',
        '<<"DIFF", 1, 3, [outcome |-> <<"acked", "failed">>]>>', '<<"L", 2, 1>>', '<<"ACCEPT", 2>>',
        '<<"DIFF", 2, 1, [version |-> <<1, 2>>]>>', '<<"DIFF", 3, 1, [node |-> <<"n1", "n2">>]>>', ""])
    prints = read_prints(out)
    assert prints.explained == {1: 2, 2: 1} and prints.accepted == {2}
    assert {k: [d.field for d in v] for k, v in prints.diffs.items()} == {(1, 3): ["outcome"], (3, 1): ["node"]}
