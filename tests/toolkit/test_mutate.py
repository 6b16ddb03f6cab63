"""Mutation operators (pure): what each changes, and what is left out because it could not fail."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from conformance.traces.mutate import _changes_state, mutants
from conformance.traces.system import System
from conformance.traces.trace import Trace

SYSTEM = System(name="s", spec="S", spec_path=Path("S.tla"), ops=frozenset({"put"}), features=frozenset(), constants={},
                mutations={"version": ["state.v"], "status": {"state.st": ["A", "B", "C"]}, "lease_time": ["state.until"], "lease_shift": 5},
                entity="key")


def ev(seq: int, key: str, v: int, node: str = "n1", st: str = "A", **extra: Any) -> dict[str, Any]:
    return {"kind": "event", "seq": seq, "node": node, "op": "put", "now": seq, "key": key, "outcome": "ok",
            "state": {"v": v, "st": st, "until": 100 + v}, **extra}


def trace(*events: dict[str, Any]) -> Trace:
    return Trace("t", {"system": "s", "nodes": ["n1", "n2"]}, tuple(events))


def by_op(t: Trace) -> dict[str, Any]:
    made, excluded = mutants(t, SYSTEM)
    return {"made": {m.operator: m for m in made}, "excluded": {e.operator: e.why for e in excluded}}


def test_every_operator_on_a_plain_trace() -> None:
    t = trace(ev(1, "a", 1), ev(2, "a", 2), ev(3, "a", 3), ev(4, "a", 4))
    r = by_op(t)
    assert set(r["made"]) == {"version", "status", "lease_time", "drop", "duplicate", "node", "swap"}
    assert r["excluded"] == {}
    m = r["made"]
    assert [e["state"]["v"] for e in m["version"].trace.events] == [1, 2, 4, 4]  # the middle event's v + 1
    assert m["status"].trace.events[2]["state"]["st"] == "B"
    assert m["lease_time"].trace.events[2]["state"]["until"] == 108
    assert [e["state"]["v"] for e in m["drop"].trace.events] == [1, 2, 4]
    assert [e["state"]["v"] for e in m["duplicate"].trace.events] == [1, 2, 3, 3, 4]
    assert m["node"].trace.events[2]["node"] == "n2"
    assert [e["state"]["v"] for e in m["swap"].trace.events] == [1, 3, 2, 4]
    for made in m.values():  # mutants stay well formed: seq renumbered from 1
        assert [e["seq"] for e in made.trace.events] == list(range(1, len(made.trace.events) + 1))


def test_events_of_different_entities_are_not_swapped() -> None:
    r = by_op(trace(ev(1, "a", 1), ev(2, "b", 1), ev(3, "a", 2), ev(4, "b", 2)))
    assert "swap" not in r["made"]
    assert r["excluded"]["swap"] == "no two adjacent events of one key both change its state"


def test_steps_that_change_nothing_or_repeat_are_not_targets() -> None:
    # Event 2 changes nothing, and events 3 and 4 are one step repeated as is: event 1 is the
    # only target.
    t = trace(ev(1, "a", 1), ev(2, "a", 1), {**ev(3, "a", 2), "now": 9}, {**ev(4, "a", 2), "now": 9, "seq": 4})
    r = by_op(t)
    assert r["made"]["duplicate"].change == "event 1 (put) twice"
    assert r["made"]["drop"].change == "event 1 (put) dropped"


def test_a_trace_whose_only_change_is_last_is_not_dropped() -> None:
    r = by_op(trace(ev(1, "a", 1)))
    assert "drop" not in r["made"]
    assert "prefix" in r["excluded"]["drop"]


def test_the_node_operator_aims_past_ops_the_spec_takes_for_no_node() -> None:
    system = replace(SYSTEM, mutations={**SYSTEM.mutations, "node_free_ops": ["offer"]})
    t = trace(ev(1, "a", 1), ev(2, "a", 2), {**ev(3, "a", 3), "op": "offer"}, ev(4, "a", 4))
    made, _ = mutants(t, system)
    node = next(m for m in made if m.operator == "node")
    assert node.change == "event 2 (put) by n2 instead of n1"  # event 3, the middle, is an offer
    assert node.ops == ("put",)
    only_offers = trace(*({**ev(i, "a", i), "op": "offer"} for i in range(1, 4)))
    _, excluded = mutants(only_offers, system)
    assert [e.why for e in excluded if e.operator == "node"] == [
        "every event that changes the state is of an op the spec takes for no node (offer)"]


def test_state_logged_of_another_thing_is_compared_per_thing() -> None:
    # Events 2 and 3 log the entries e1 and e2 of key a: each is the first of its entry, so
    # both change the state; event 4 shows e1 as event 2 left it, so it changes nothing.
    system = replace(SYSTEM, mutations={**SYSTEM.mutations, "state_of": {"entry": "entry"}})
    def delivery(seq: int, entry: str, n: int) -> dict[str, Any]:
        return {**ev(seq, "a", 0), "op": "deliver", "entry": entry, "state": {"entry": {"n": n}}}
    events = [ev(1, "a", 1), delivery(2, "e1", 1), delivery(3, "e2", 2), delivery(4, "e1", 1), ev(5, "a", 2)]
    assert _changes_state(events, "key", {"entry": "entry"}) == [True, True, True, False, True]
    assert _changes_state(events, "key") == [True, True, True, True, True]  # e1 seen against e2
    made, _ = mutants(trace(*events), system)
    assert all("event 4 " not in m.change for m in made if m.operator in ("drop", "duplicate", "node"))


def test_a_mutant_records_the_ops_it_touched() -> None:
    made, _ = mutants(trace(ev(1, "a", 1), {**ev(2, "a", 2), "op": "take"}, ev(3, "a", 3)), SYSTEM)
    swap = next(m for m in made if m.operator == "swap")
    assert set(swap.ops) == {"put", "take"}
    drop = next(m for m in made if m.operator == "drop")
    assert (drop.ops, drop.next_op) == (("take",), "put")  # event 2 dropped; its key's next is a put


def test_the_fault_operator_takes_out_every_fault_line_where_an_acceptance_needed_one() -> None:
    from conformance.traces.mutate import fault_mutants

    def line(seq: int, op: str, outcome: str) -> dict[str, Any]:
        return {"kind": "event", "seq": seq, "node": "n1", "op": op, "now": seq, "outcome": outcome, "state": {}}

    # A stall window and the lapse its node saw in it excuse the same step; the acceptance names
    # the window. Taking out the window alone leaves the lapse line: every fault line goes.
    t = trace(ev(1, "a", 1), line(2, "stall", "start"), line(3, "stall", "end"), line(4, "lapse", "observed"),
              ev(5, "a", 2))
    faults = frozenset({"stall", "lapse"})
    [m] = fault_mutants(t, (2,), faults)
    assert m.operator == "fault" and [(e["seq"], e["op"]) for e in m.trace.events] == [(1, "put"), (2, "put")]
    assert "every fault line taken out (3; the acceptance named 1, the first event 2, stall start by n1)" in m.change
    # No excuse named, no fault line, or a named line that is not there: no mutant.
    assert fault_mutants(t, (), faults) == [] and fault_mutants(trace(ev(1, "a", 1)), (1,), faults) == []
    assert fault_mutants(t, (9,), faults) == []
