"""The TraceCheck printer (conformance/traces/printer.py): TLC prints a trace spec's L, ACCEPT and
DIFF lines through a Java override instead of PrintT; what the checker reads from them, and so
every verdict, must be what TLA+'s own definitions print."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import conformance.traces.batch as batch
from conformance.check.runner import Tlc
from conformance.output.values import parse_value
from conformance.traces.batch import make_batch, printed_texts, run_batch
from conformance.traces.check import check_traces
from conformance.traces.mutate import mutants
from conformance.traces.printer import printer_classes
from conformance.traces.system import load_systems
from conformance.traces.trace import TraceKind

from tests.toolkit.test_trace_check import PROJECT, make, tlc  # noqa: F401 (tlc: a fixture)

pytestmark = pytest.mark.tlc

TRACE_CHECK = PROJECT / "tla" / "TraceCheck.tla"


@pytest.fixture(scope="module")
def classes(tlc: Tlc) -> Path:
    found = printer_classes(tlc.java, tlc.jar)
    if found is None:
        pytest.skip("no javac beside java or on PATH to compile the printer (apt-get install openjdk-17-jdk-headless)")
    return found


def prints(tlc: Tlc, where: Path, assume: str, classpath: Path | None) -> tuple[subprocess.CompletedProcess[str], list[object]]:
    """TLC on a module that EXTENDS TraceCheck and ASSUMEs `assume`: its run, and the values it printed."""
    (where / "TraceCheck.tla").write_text(TRACE_CHECK.read_text())
    (where / "M.tla").write_text(f"---- MODULE M ----\nEXTENDS TraceCheck\nASSUME {assume}\n====\n")
    (where / "M.cfg").write_text("CONSTANT Nil = Nil\n")
    cp = f"{tlc.jar}:{classpath}" if classpath else str(tlc.jar)
    done = subprocess.run([str(tlc.java), f"-Djava.io.tmpdir={where}", "-cp", cp, "tlc2.TLC", "-config", "M.cfg", "M.tla"],
                          cwd=where, capture_output=True, text=True, timeout=300)
    return done, [parse_value(t) for t in printed_texts(done.stdout)]


# Fields that agree and fields that do not, of every kind a trace spec compares: records, sets,
# sequences, functions from strings, model values, and names that are no identifiers.
CASES = [
    'Explained(3, 17) /\\ Accept(3)',
    'Match(1, 2, [a |-> <<1, 1>>, b |-> <<{"x"}, {"x"}>>])',
    '~Match(4, 5, [b |-> <<1, 2>>, a |-> <<[n2 |-> 1, n1 |-> 0], [n1 |-> 0, n2 |-> 2]>>, c |-> <<"s", "s">>])',
    '~Match(1, 1, ("faults.reject" :> <<2, 3>>) @@ ("ok" :> <<Nil, Nil>>))',
    '~Match(2, 9, [entry |-> <<Nil, [pending |-> TRUE, owner |-> "a b", deliveries |-> 1]>>, idle |-> <<<<1, 2>>, <<>>>>])',
]


@pytest.mark.parametrize("assume", CASES)
def test_the_override_prints_the_values_tla_prints(tlc: Tlc, classes: Path, tmp_path: Path, assume: str) -> None:
    (tmp_path / "tla").mkdir()
    (tmp_path / "java").mkdir()
    plain, want = prints(tlc, tmp_path / "tla", assume, None)
    java, got = prints(tlc, tmp_path / "java", assume, classes)
    assert plain.returncode == 0 and java.returncode == 0, plain.stdout + java.stdout
    assert "TraceCheck.Match" in java.stdout and "TraceCheck.Match" not in plain.stdout  # the override is what ran
    assert got == want
    assert bool(want) == (assume != CASES[1])  # a match that holds prints nothing


def test_a_field_that_is_no_pair_stops_tlc(tlc: Tlc, classes: Path, tmp_path: Path) -> None:
    done, _ = prints(tlc, tmp_path, "Match(1, 1, [a |-> 3])", classes)
    assert done.returncode != 0 and 'field "a" is not a pair' in done.stdout, done.stdout


def test_verdicts_with_the_printer_equal_those_without(tlc: Tlc, classes: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    systems = load_systems(PROJECT)
    base = [make("a", [("n1", 1), ("n2", 2), ("n1", 3)]), make("b", [("n1", 1), ("n2", 3)])]
    items = base + [m.trace for m in mutants(base[0], systems["counter"])[0]]
    with_printer = check_traces(list(items), systems, tlc)
    monkeypatch.setattr(batch, "printer_classes", lambda *a, **k: None)
    without = check_traces(list(items), systems, tlc)
    assert with_printer == without
    assert with_printer[0].kind is TraceKind.ACCEPTED
    rejected = [v for v in with_printer[1:] if v.kind is TraceKind.REJECTED]
    assert len(rejected) == len(items) - 1 and all(v.diffs for v in rejected)


def test_a_batch_runs_with_the_printer(tlc: Tlc, classes: Path) -> None:
    system = load_systems(PROJECT)["counter"]
    verdict, output = run_batch(make_batch(system, [make("a", [("n1", 1)])]), tlc, 1)
    assert "TraceCheck.Explained" in output and '<<"ACCEPT", 1>>' in output, output
