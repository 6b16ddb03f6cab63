"""Traces as TLA+: values rendered, never pasted, so that no field can change a module's meaning."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.output.values import parse_value
from conformance.traces.to_tla import TraceEncodeError, spec_event, tla_string, tla_value, trace_literal


def encoded(s: str) -> str:
    """The string a trace spec sees for `s`: backslashes doubled, "@" and the rest as \\uXXXX."""
    out = []
    for ch in s.replace("\\", "\\\\"):
        out.append(ch if " " <= ch <= "~" and ch != "@" else ("\\u%04x" % ord(ch) if ord(ch) <= 0xFFFF else "\\U%08x" % ord(ch)))
    return "".join(out)


@given(st.text())
def test_a_string_literal_is_one_token_denoting_its_string(s: str) -> None:
    lit = tla_string(s)
    assert lit.startswith('"') and lit.endswith('"')
    assert "\n" not in lit and "\r" not in lit
    assert parse_value(lit) == encoded(s)


@given(st.text(), st.text())
def test_the_encoding_is_one_to_one(a: str, b: str) -> None:
    assert (tla_string(a) == tla_string(b)) == (a == b)


def test_hostile_strings_stay_strings() -> None:
    hostile = '" >>\n====\n\\* \\" (* x *) Traces == <<>>'
    lit = tla_string(hostile)
    assert parse_value(lit) == encoded(hostile)
    assert parse_value(tla_value({"op": hostile, "n": [1, None]})) == {"op": encoded(hostile), "n": (1, parse_value("Nil"))}


def test_values() -> None:
    assert tla_value({"a": {"b": [True, None]}}) == "[a |-> [b |-> <<TRUE, Nil>>]]"
    assert tla_value({}) == "<< >>"
    # Keys that are not identifiers (or are TLA+ keywords) make a function from strings.
    assert tla_value({"a-b": 1, "c": 2}) == '("a-b" :> 1 @@ "c" :> 2)'
    assert tla_value({"IF": 1}) == '("IF" :> 1)'


@pytest.mark.parametrize("key", ["op\n", "WF_x", "SF_y", "_1", "CASE", "Op", "1a", "a b", "é", ""])
def test_a_key_that_is_not_surely_an_identifier_is_a_string_key(key: str) -> None:
    # A trailing newline, a fairness prefix, a name with no letter first: quoted, never pasted.
    assert tla_value({key: 1}) == f"({tla_string(key)} :> 1)"


@given(st.text())
def test_no_string_can_print_a_tlc_tool_marker(s: str) -> None:
    # "@!@!@STARTMSG 2110:1 @!@!@" inside a printed value would open a message in TLC's output.
    assert "@" not in tla_string(s) and "@" not in tla_value({"k": [s]})
    assert parse_value(tla_string("@!@!@ENDMSG 2110 @!@!@")) == "\\u0040!\\u0040!\\u0040ENDMSG 2110 \\u0040!\\u0040!\\u0040"


def test_nesting_is_bounded() -> None:
    deep: object = 1
    for _ in range(100):
        deep = [deep]
    with pytest.raises(TraceEncodeError, match="nested deeper"):
        tla_value(deep, "event 1")


@pytest.mark.parametrize(("value", "says"), [(2**31, "32-bit"), (1.5, "no decimals"), (-(2**31) - 1, "32-bit"), (-(2**31), "32-bit")])
def test_values_with_no_tla_form(value: object, says: str) -> None:
    with pytest.raises(TraceEncodeError, match=says):
        tla_value({"now": value}, "event 3")


def test_times_become_relative_to_the_first_event() -> None:
    events = ({"kind": "event", "seq": 1, "now": 1_700_000_000_000, "state": {"run_after": 1_700_000_030_000}},
              {"kind": "event", "seq": 2, "now": 1_700_000_001_000, "state": {"run_after": None}})
    lit = trace_literal(events, ("now", "state.run_after"))
    assert parse_value(lit.replace("Nil", '"nil"')) == ({"now": 0, "state": {"run_after": 30_000}}, {"now": 1000, "state": {"run_after": "nil"}})
    assert "kind" not in spec_event(events[0], (), 0) and "seq" not in spec_event(events[0], (), 0)
    # The lines as read are left as they were (the shift writes to copies on the time's path).
    assert events[0]["now"] == 1_700_000_000_000 and events[0]["state"] == {"run_after": 1_700_000_030_000}


def test_a_trace_with_no_tla_form_is_malformed_before_tlc() -> None:
    from pathlib import Path

    from conformance.traces.check import triage
    from conformance.traces.header import parse_fields
    from conformance.traces.system import System
    from conformance.traces.trace import Trace, TraceKind

    system = System(name="s", spec="S", spec_path=Path("S.tla"), ops=frozenset({"put"}), features=frozenset(),
                    constants={"Nodes": {"from": "nodes"}, "Lease": {"from": "settings.lease_ms"}},
                    header=parse_fields({"settings.lease_ms": {"type": "integer", "min": 1, "max": 1000}}))
    header = {"system": "s", "nodes": ["n1"], "settings": {"lease_ms": 10}}
    decimal = Trace("decimal.ndjson", header, ({"seq": 1, "op": "put", "node": "n1", "now": 0, "state": {"v": 1.5}},))
    no_lease = Trace("no-lease.ndjson", {**header, "settings": {}}, ({"seq": 1, "op": "put", "node": "n1", "now": 0},))
    sorted_ = triage([decimal, no_lease], {"s": system})
    assert sorted_.ready == {}
    assert sorted_.decided["decimal.ndjson"].kind is TraceKind.MALFORMED
    assert "decimal.ndjson event 1.state.v: 1.5 is not an integer" in (sorted_.decided["decimal.ndjson"].reason or "")
    assert sorted_.decided["no-lease.ndjson"].reason == "the header has no settings.lease_ms (needed for the constant Lease)"


def test_a_traces_text_is_made_once_and_never_carried_to_another_trace() -> None:
    # The checker needs a trace's TLA+ text twice (sorting traces out, writing its batch): it is
    # kept on the trace. A trace made from another by replace() (a mutant, say) has its own.
    from dataclasses import replace

    from conformance.traces.to_tla import literal_of
    from conformance.traces.trace import Trace

    t = Trace("a", {}, ({"op": "step", "now": 5, "x": 1},))
    first = literal_of(t, ("now",))
    assert first == trace_literal(t.events, ("now",)) and literal_of(t, ("now",)) is first
    assert literal_of(t, ()) == '<<[op |-> "step", now |-> 5, x |-> 1]>>'
    other = replace(t, events=({"op": "step", "now": 5, "x": 2},))
    assert literal_of(other, ("now",)) == '<<[op |-> "step", now |-> 0, x |-> 2]>>'


def test_an_unencodable_value_is_named_by_where_it_sits() -> None:
    # The place is put into words only for the error: a field, an index, a key that is no field.
    with pytest.raises(TraceEncodeError) as exc:
        tla_value({"a": [1, {"b c": 2**40}]}, "line 3")
    assert str(exc.value) == "line 3.a[1].'b c': 1099511627776 does not fit TLC's 32-bit integers"
    with pytest.raises(TraceEncodeError, match=r"^line 3\.a\[0\]: 0\.5 is not an integer"):
        tla_value({"a": [0.5]}, "line 3")
    assert tla_value({"a": [2.0, True, None, "x@y"]}) == '[a |-> <<2, TRUE, Nil, "x\\\\u0040y">>]'
