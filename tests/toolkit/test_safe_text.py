"""Output that cannot be spoofed or broken: a name, a path, a TLC message or a trace value holding
an ANSI escape, a NUL, a form feed, a bidi override or rich markup is shown escaped in the
terminal, the JUnit XML (well-formed for every C0 and C1 character) and the HTML report."""

from __future__ import annotations

import io
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rich.console import Console

from conformance.check.compare import outcome
from conformance.check.witness import Witness
from conformance.models.model import Expect, Model
from conformance.output.counterexample import Counterexample, State
from conformance.output.safe_text import markup, visible
from conformance.output.verdict import ErrorKind, Kind, PropertyKind, Stats, Verdict
from conformance.traces.trace import Diff, Trace, TraceKind, TraceVerdict

SPOOF = "n1\x1b[32mACCEPTED everything\x1b[0m\x00\x0c\u202e[bold green]ok[/]\r"
C0_C1 = "".join(map(chr, [*range(0, 32), *range(0x7F, 0xA0)]))
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
RAW = set(C0_C1 + BIDI) - {"\n", "\t"}  # what none of the outputs may hold as it is


def raw_in(text: str) -> set[str]:
    return {c for c in text if c in RAW}


def test_visible_escapes_every_control_and_bidi_character_and_keeps_the_rest() -> None:
    shown = visible(C0_C1 + BIDI + "\ud800\ufffe")
    assert not raw_in(shown) and "\n" not in shown and "\t" not in shown
    assert shown.startswith("\\x00\\x01") and "\\x1b" in shown and "\\x9f" in shown and "\\u202e" in shown
    assert "\\ud800" in shown and "\\ufffe" in shown
    assert visible("Inv == /\\ x > 0\n\tnext", lines=True) == "Inv == /\\ x > 0\n\tnext"  # TLA+ and layout kept
    assert visible("a\nb") == "a\\x0ab" and visible(3) == "3"
    assert markup("[bold green]ok[/]") == "\\[bold green]ok\\[/]"


def spoofed_outcomes() -> list:  # type: ignore[type-arg]
    model = Model(name=SPOOF, path=Path(f"models/{SPOOF}.yaml"), module="M", module_path=Path("M.tla"),
                  expect=Expect("ok"), why=SPOOF, notes=(SPOOF,),
                  constants={})
    error = Verdict(Kind.ERROR, Stats(), error_kind=ErrorKind.PARSE, message=f"{SPOOF}\nsecond line {SPOOF}")
    cx = Counterexample((State(1, "Initial predicate", None, {"x": SPOOF}), State(2, SPOOF, None, {"x": "y"})))
    violated = Verdict(Kind.VIOLATED, Stats(), property=SPOOF, property_kind=PropertyKind.INVARIANT, counterexample=cx)
    return [outcome(model, error), outcome(model, violated)]


def test_the_terminal_report_shows_no_raw_escape_bidi_or_markup() -> None:
    from conformance.report.table import print_report, witness_table

    out = io.StringIO()
    console = Console(file=out, width=300, force_terminal=False, color_system=None)  # rich adds no ESC of its own
    print_report(console, spoofed_outcomes())
    console.print(witness_table([Witness(SPOOF, SPOOF, (SPOOF,), (SPOOF,), (), ())]))
    text = out.getvalue()
    assert not raw_in(text), raw_in(text)
    assert "\\x1b[32mACCEPTED everything\\x1b[0m" in text and "\\u202e" in text
    assert "[bold green]ok[/]" in text  # shown as written, not read as markup
    assert "second line" in text  # a TLC message keeps its lines


def test_junit_is_well_formed_for_every_c0_and_c1_character() -> None:
    from conformance.report.junit import junit_xml, traces_junit_xml

    for ch in C0_C1 + BIDI + "\ud800":
        name = f"m{ch}x"
        model = Model(name=name, path=Path(f"models{ch}/{name}.yaml"), module="M", module_path=Path("M.tla"),
                      expect=Expect("ok"), why="w")
        v = Verdict(Kind.ERROR, Stats(), error_kind=ErrorKind.PARSE, message=f"TLC said {ch}")
        for doc in (junit_xml([outcome(model, v)]),
                    traces_junit_xml([TraceVerdict(f"out/{name}.ndjson", TraceKind.REJECTED, line=1, op=name, node=name,
                                                   diffs=(Diff(name, ch, ch),)),
                                      TraceVerdict(f"out/{name}.ndjson", TraceKind.MALFORMED, reason=ch)])):
            suite = ET.fromstring(doc.encode("utf-8"))  # raises on a document that is not well-formed
            assert not raw_in(doc.split("\n", 1)[1].replace("\n", "")), repr(ch)
            assert suite.find("testcase") is not None


def test_the_html_report_holds_no_raw_control_or_bidi_character() -> None:
    from conformance.report.html import model_sections, models_html, trace_sections, traces_html

    outcomes = spoofed_outcomes()
    page = models_html(outcomes, model_sections(outcomes))
    header = {"kind": "header", "system": "joblease", "nodes": ["w1", SPOOF], "format": 1}
    events = ({"kind": "event", "seq": 1, "node": SPOOF, "op": SPOOF, "outcome": "acquired", "job": SPOOF,
               "state": {"owner": SPOOF}},)
    verdict = TraceVerdict(f"traces/{SPOOF}.ndjson", TraceKind.REJECTED, line=1, op=SPOOF, node=SPOOF, explained=0,
                           diffs=(Diff("owner", SPOOF, SPOOF),))
    trace_page = traces_html([verdict], trace_sections([Trace(verdict.source, header, events)], [verdict], {}), SPOOF)
    for html in (page, trace_page):
        assert not raw_in(html), raw_in(html)
        assert "\\x1b[32mACCEPTED" in html and "\\u202e" in html


def test_trace_report_lines_show_trace_values_escaped() -> None:
    from conformance.report.trace_report import verdict_line

    line = verdict_line(TraceVerdict(f"out/{SPOOF}.ndjson", TraceKind.REJECTED, line=2, op=SPOOF, node="w1",
                                     diffs=(Diff("owner", "w1", SPOOF),)))
    assert line.startswith("REJECTED     out/n1\\x1b[32mACCEPTED") and not raw_in(line)


def test_progress_lines_show_labels_escaped() -> None:
    from conformance.report.progress import ItemProgress

    console = Console(width=300, record=True, force_terminal=False, color_system=None)
    with ItemProgress("batches", 1, console, lines=True) as p:
        p.advance(SPOOF)
    text = console.export_text()
    assert not raw_in(text) and "[bold green]ok[/]" in text


def test_a_usage_error_quoting_input_prints_it_escaped(tmp_path: Path) -> None:
    root = tmp_path / "proj\x1b[32mACCEPTED\u202e"
    root.mkdir()
    proc = subprocess.run([sys.executable, "-m", "conformance.cli", "check", "--root", str(root)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and "no models/ directory" in proc.stderr and "Traceback" not in proc.stderr
    assert not raw_in(proc.stderr) and "proj\\x1b[32mACCEPTED\\u202e" in proc.stderr


@pytest.mark.tlc
def test_check_on_a_model_file_with_control_characters_in_its_name(tmp_path: Path) -> None:
    # The file's name gives the model's name: refused (it would name the files written), shown
    # escaped in the terminal, and the JUnit report still parses.
    import shutil

    project = Path(__file__).parent.parent / "fixtures" / "project"
    shutil.copytree(project / "tla", tmp_path / "tla")
    (tmp_path / "models").mkdir()
    shutil.copy(project / "models" / "passing.yaml", tmp_path / "models" / "passing.yaml")
    shutil.copy(project / "models" / "passing.yaml", tmp_path / "models" / "evil\x1b[32m\u202e\x0c.yaml")
    junit = tmp_path / "out" / "junit.xml"
    proc = subprocess.run([sys.executable, "-m", "conformance.cli", "check", "--root", str(tmp_path), "--junit", str(junit),
                           "-j", "1"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert not raw_in(proc.stdout) and "evil\\x1b[32m\\u202e\\x0c" in proc.stdout
    assert "is not a model name" in proc.stdout.replace("\n", " ")
    names = {c.get("name") for c in ET.parse(junit).getroot()}
    assert names == {"passing", "evil\\x1b[32m\\u202e\\x0c"}
