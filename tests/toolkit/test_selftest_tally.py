"""The self-test's accounting (pure): survivors, rejections per operator, and mutants that a
system file declares valid behaviours, which are listed with why and never counted silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.traces.mutate import Mutant
from conformance.traces.selftest import tally
from conformance.traces.system import System, SystemFileError, load_system
from conformance.traces.trace import Trace, TraceKind, TraceVerdict

DECLARED = "a release may be lost to a crash, which the spec explains alike"
SYSTEM = System(name="q", spec="Q", spec_path=Path("Q.tla"), ops=frozenset({"renew", "release"}), features=frozenset(),
                constants={}, mutations={"equivalent": [{"operator": "drop", "ops": ["release"], "why": DECLARED}]})


def mutant(operator: str, op: str, next_op: str | None = None) -> Mutant:
    change = f"event 2 ({op}) {operator}"
    return Mutant(Trace(f"t#{change}", {"system": "q"}, ()), operator, change, "t", (op,), next_op)


def verdict(kind: TraceKind) -> TraceVerdict:
    return TraceVerdict("t", kind)


def test_declared_valid_behaviours_are_excluded_with_why_and_the_rest_counted() -> None:
    made = [mutant("drop", "release"), mutant("drop", "renew"), mutant("duplicate", "release"), mutant("drop", "release")]
    verdicts = [verdict(TraceKind.ACCEPTED), verdict(TraceKind.ACCEPTED), verdict(TraceKind.REJECTED), verdict(TraceKind.REJECTED)]
    r = tally(made, verdicts, {"q": SYSTEM}, [])
    # The accepted release drop is declared valid; the renew drop is not, so it survives; a
    # declared mutant that is rejected still counts as rejected.
    assert (r.total, r.rejected) == (3, 2)
    assert [(m.operator, m.ops) for m, _ in r.survivors] == [("drop", ("renew",))]
    assert r.by_operator == {"drop": (2, 1), "duplicate": (1, 1)}
    [ex] = r.excluded
    assert ex.declared and ex.operator == "drop"
    assert DECLARED in ex.why and "traces/systems/q.yaml" in ex.why and "event 2 (release) drop" in ex.why


def test_an_inconclusive_declared_mutant_is_a_survivor() -> None:
    r = tally([mutant("drop", "release")], [verdict(TraceKind.INCONCLUSIVE)], {"q": SYSTEM}, [])
    assert (r.total, r.rejected, len(r.survivors), r.excluded) == (1, 0, 1, [])


def test_a_declaration_must_name_the_systems_ops(tmp_path: Path) -> None:
    (tmp_path / "Q.tla").write_text("---- MODULE Q ----\n====\n")
    bad = tmp_path / "q.yaml"
    bad.write_text("system: q\nspec: Q\nops: [renew]\nconstants: {}\n"
                   "mutations:\n  equivalent:\n    - {operator: drop, ops: [relase], why: a typo must not excuse anything}\n")
    with pytest.raises(SystemFileError, match=r"mutations\.equivalent\.0\.ops: 'relase' is not one of the system's ops"):
        load_system(bad, tmp_path)
    bad.write_text("system: q\nspec: Q\nops: [renew]\nconstants: {}\nmutations:\n  equivalent:\n    - {operator: drop, ops: [renew]}\n")
    with pytest.raises(SystemFileError, match="why"):
        load_system(bad, tmp_path)


def test_a_declaration_may_require_the_entitys_next_op() -> None:
    system = System(name="q", spec="Q", spec_path=Path("Q.tla"), ops=frozenset({"renew", "reclaim", "ack"}),
                    features=frozenset(), constants={},
                    mutations={"equivalent": [{"operator": "drop", "ops": ["renew"], "next": ["reclaim"], "why": DECLARED}]})
    made = [mutant("drop", "renew", next_op="reclaim"), mutant("drop", "renew", next_op="ack"), mutant("drop", "renew")]
    r = tally(made, [verdict(TraceKind.ACCEPTED)] * 3, {"q": system}, [])
    assert [e.declared for e in r.excluded] == [True]
    assert [m.next_op for m, _ in r.survivors] == ["ack", None]


def test_a_declaration_may_require_outcomes_every_op_a_header_and_a_gap_within_a_setting() -> None:
    from dataclasses import replace

    equivalent = [
        {"operator": "drop", "ops": ["put"], "outcomes": ["refused"], "why": DECLARED},
        {"operator": "swap", "ops": ["offer", "cancel"], "every_op": True, "why": DECLARED},
        {"operator": "node", "ops": ["update"], "when": {"settings.drained": False}, "why": DECLARED},
        {"operator": "duplicate", "ops": ["renew"], "within": "settings.clock_slack_ms", "why": DECLARED},
    ]
    system = System(name="q", spec="Q", spec_path=Path("Q.tla"), ops=frozenset({"put", "offer", "cancel", "receive", "update", "renew"}),
                    features=frozenset(), constants={}, mutations={"equivalent": equivalent})

    def m(operator: str, ops: tuple[str, ...], outcomes: tuple[str, ...] = (), header: dict | None = None,
          gap_ms: int | None = None) -> Mutant:
        base = mutant(operator, ops[0])
        return replace(base, trace=Trace(base.trace.source, {"system": "q", **(header or {})}, ()), ops=ops,
                       outcomes=outcomes, gap_ms=gap_ms)

    made = [
        m("drop", ("put",), ("refused",)), m("drop", ("put",), ("written",)),          # outcomes
        m("swap", ("offer", "cancel")), m("swap", ("offer", "receive")),               # every op
        m("node", ("update",), header={"settings": {"drained": False}}),               # when
        m("node", ("update",), header={"settings": {"drained": True}}), m("node", ("update",)),
        m("duplicate", ("renew",), header={"settings": {"clock_slack_ms": 2}}, gap_ms=2),  # within
        m("duplicate", ("renew",), header={"settings": {"clock_slack_ms": 2}}, gap_ms=3),
        m("duplicate", ("renew",), header={"settings": {"clock_slack_ms": 0}}, gap_ms=0),
        m("duplicate", ("renew",), header={"settings": {"clock_slack_ms": 2}}),
    ]
    r = tally(made, [verdict(TraceKind.ACCEPTED)] * len(made), {"q": system}, [])
    declared = [e.why.split("event 2 (")[1].split(")")[0] for e in r.excluded]
    assert declared == ["put", "offer", "update", "renew", "renew"], declared
    assert [(s.operator, s.ops, s.outcomes, s.gap_ms) for s, _ in r.survivors] == [
        ("drop", ("put",), ("written",), None), ("swap", ("offer", "receive"), (), None),
        ("node", ("update",), (), None), ("node", ("update",), (), None),
        ("duplicate", ("renew",), (), 3), ("duplicate", ("renew",), (), None)]
