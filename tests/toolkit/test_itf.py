"""ITF values: tagged so that model values, strings, sets and sequences stay apart, read back
the same, and earlier untagged `check --json` values still read (`conformance/output/itf.py`)."""

from __future__ import annotations

import pytest

from conformance.output.counterexample import Counterexample, State
from conformance.output.itf import ItfError, from_itf, itf_trace, to_itf
from conformance.output.values import FrozenDict, ModelValue, parse_value, to_json

VALUES = [
    '[st |-> "RUNNING", q |-> {n1, n2}, seq |-> <<1, "a">>, f |-> (n1 :> 1 @@ n2 :> 2), ok |-> TRUE]',
    '{{1, 2}, {}}', '<<>>', '"n1"', 'n1', '-7', '(1 :> "a" @@ 2 :> "b")',
]


@pytest.mark.parametrize("text", VALUES)
def test_a_value_reads_back_the_same(text: str) -> None:
    v = parse_value(text)
    assert from_itf(to_itf(v)) == v


def test_a_model_value_a_string_a_set_and_a_sequence_stay_apart() -> None:
    assert to_itf(ModelValue("n1")) != to_itf("n1")
    assert to_itf(frozenset({1})) != to_itf((1,))
    assert to_itf(parse_value("[a |-> 1]")) == {"a": {"#bigint": "1"}}
    assert to_itf(parse_value("(n1 :> 1)")) == {"#map": [[{"#unserializable": "n1"}, {"#bigint": "1"}]]}


def test_an_earlier_untagged_value_reads_as_its_plain_form() -> None:
    # A saved `check --json` of an earlier leaseproof: sets as lists, functions as pairs.
    plain = to_json(parse_value('[q |-> {n1}, f |-> (n1 :> 1), s |-> <<2>>]'))
    assert to_json(from_itf(plain)) == plain


@pytest.mark.parametrize("bad", [{"#bigint": "x"}, {"#set": 3}, {"#map": [[1]]}, 1.5, None, {"#tup": "ab"}])
def test_what_is_no_itf_value_is_refused(bad: object) -> None:
    with pytest.raises(ItfError):
        from_itf(bad)


def test_a_deep_value_is_refused_not_a_crash() -> None:
    deep: object = 1
    for _ in range(500):
        deep = [deep]
    with pytest.raises(ItfError, match="deeper"):
        from_itf(deep)


def test_a_stuttering_end_is_a_loop_on_the_last_state() -> None:
    cx = Counterexample((State(1, "Initial predicate", None, {"x": 0}), State(2, "Next", None, {"x": 1})), stutters=True)
    trace = itf_trace(cx, source="M.tla", description="d")
    assert trace["loop"] == 1 and trace["vars"] == ["x"] and trace["states"][1]["x"] == {"#bigint": "1"}
    assert isinstance(from_itf({"a": {"#bigint": "1"}}), FrozenDict)
