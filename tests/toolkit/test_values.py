"""The TLA+ value grammar: what TLC prints parses back to the value it printed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.errors import ValueSyntaxError
from conformance.output.values import FrozenDict, ModelValue, format_value, parse_value, to_json

names = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
model_values = names.map(ModelValue)
strings = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")) | st.sampled_from('"\\\n\t'), max_size=12)
scalars = st.integers(-10**9, 10**9) | st.booleans() | strings | model_values


def _records(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.dictionaries(names, children, min_size=1, max_size=4).map(FrozenDict)


def _functions(children: st.SearchStrategy) -> st.SearchStrategy:
    # Keys that TLC prints as `k :> v`: model values, or integers whose domain is not 1..n.
    keys = model_values | st.integers(2, 50)
    return st.dictionaries(keys, children, min_size=1, max_size=4).filter(
        lambda d: set(d) != set(range(1, len(d) + 1))
    ).map(FrozenDict)


tla_values = st.recursive(
    scalars,
    lambda children: st.frozensets(children, max_size=4)
    | st.lists(children, max_size=4).map(tuple)
    | _records(children)
    | _functions(children),
    max_leaves=20,
)


@given(tla_values)
def test_printed_values_parse_back(value: object) -> None:
    assert parse_value(format_value(value)) == value


def test_what_tlc_printed_for_a_state() -> None:
    # Copied from a TLC 2.15 run of a spec that prints one of each kind of value.
    text = ('<<1..3, (m1 :> TRUE @@ m2 :> FALSE), [a |-> 1, b |-> 1], << >>, {}, <<>>, "q\\"\\\\z", -4, '
            '<<1, 2>>, (2 :> 2 @@ 3 :> 3), {<<>>}, [p |-> {}, q |-> m1], {{}, {1}, {2}, {1, 2}}, {<<2>>}, (3 :> 4)>>')
    m1, m2 = ModelValue("m1"), ModelValue("m2")
    assert parse_value(text) == (
        frozenset({1, 2, 3}), {m1: True, m2: False}, {"a": 1, "b": 1}, (), frozenset(), (), 'q"\\z', -4,
        (1, 2), {2: 2, 3: 3}, frozenset({()}), {"p": frozenset(), "q": m1},
        frozenset({frozenset(), frozenset({1}), frozenset({2}), frozenset({1, 2})}), frozenset({(2,)}), {3: 4},
    )


def test_model_values_are_not_strings() -> None:
    assert parse_value("n1") == ModelValue("n1")
    assert parse_value("n1") != "n1"
    assert parse_value('"n1"') == "n1"


def test_values_spanning_lines() -> None:
    assert parse_value("[a |-> 1,\n   b |-> <<2,\n  3>>]") == {"a": 1, "b": (2, 3)}


@pytest.mark.parametrize("bad", ["", "[a |-> ]", "<<1, 2", "{1,, 2}", '"open', "(a :> )", "1 .. "])
def test_not_a_value(bad: str) -> None:
    with pytest.raises(ValueSyntaxError, match="cannot parse TLA\\+ value"):
        parse_value(bad)


def test_parsed_values_are_immutable() -> None:
    record = parse_value("[a |-> 1]")
    with pytest.raises(TypeError):
        record["a"] = 2


def test_json_form() -> None:
    assert to_json(parse_value("[s |-> {n2, n1}, f |-> (n1 :> 1)]")) == {"s": ["n1", "n2"], "f": {"n1": 1}}
    assert to_json(parse_value("(2 :> TRUE @@ 5 :> FALSE)")) == [[2, True], [5, False]]
