"""The TraceValues reader (conformance/traces/reader.py): TLC reads a batch's traces through a
Java class instead of parsing them; the values, and so the verdicts, must be those of the text."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conformance.check.runner import Tlc
from conformance.traces.check import check_traces
from conformance.traces.mutate import mutants
from conformance.tlc.classes import clear_cache
from conformance.traces.reader import MODULE, reader_classes, reader_for
from conformance.traces.system import load_systems
from conformance.traces.to_tla import tla_value
from conformance.traces.trace import TraceKind

from tests.toolkit.test_trace_check import PROJECT, make

pytestmark = pytest.mark.tlc

# Every form the renderer writes: records, functions with keys that are no identifiers, the
# empty record, nested sequences, negative and extreme integers, booleans, null, and strings
# with quotes, backslashes, newlines, non-ASCII, TLC's -tool marker, and what looks like syntax.
HOSTILE: Any = {
    "op": "step", "now": -2147483647, "big": 2147483647, "flag": True, "off": False, "none": None,
    "s": ['a"b >>', "c\\d\n====", "e\u00e9\U0001F600", "@!@!@STARTMSG 2262:0 @!@!@", "\\\"", "", "Nil", "TRUE"],
    "f": {"a b": 1, "_1": [], "CASE": {}, "x": {"y": [[1, 2], [3]]}},
    "empty": {}, "seq": [], "nested": [{"k": None}, {"K": "v"}],
}


@pytest.fixture(scope="module")
def tlc() -> Tlc:
    return Tlc.locate()


@pytest.fixture(scope="module")
def classes(tlc: Tlc) -> Path:
    found = reader_classes(tlc.java, tlc.jar)
    if found is None:
        pytest.skip("no javac beside java or on PATH to compile the reader (apt-get install openjdk-17-jdk-headless)")
    return found


def run_tlc(tlc: Tlc, where: Path, module: str, classpath: Path | None) -> subprocess.CompletedProcess[str]:
    """TLC on `module` (no variables: only its ASSUMEs are checked)."""
    (where / "M.cfg").write_text("CONSTANT Nil = Nil\n")
    (where / MODULE.name).write_text(MODULE.read_text())
    (where / "M.tla").write_text(module)
    cp = f"{tlc.jar}:{classpath}" if classpath else str(tlc.jar)
    return subprocess.run([str(tlc.java), f"-Djava.io.tmpdir={where}", "-cp", cp, "tlc2.TLC", "-config", "M.cfg", "M.tla"],
                          cwd=where, capture_output=True, text=True, timeout=300)


def module(assume: str) -> str:
    return f"---- MODULE M ----\nEXTENDS TraceValues, Integers, TLC\nCONSTANT Nil\nASSUME {assume}\n====\n"


def test_the_reader_gives_the_values_of_the_text(tlc: Tlc, classes: Path, tmp_path: Path) -> None:
    text = tla_value([HOSTILE, [HOSTILE]])
    (tmp_path / "v.values").write_text(text)
    # Equal as values, and printed alike (TLC prints what it holds, field names included).
    same = run_tlc(tlc, tmp_path, module(f'Read("v.values") = {text}\nASSUME PrintT(Read("v.values")) /\\ PrintT({text})'), classes)
    assert same.returncode == 0 and "Model checking completed" in same.stdout, same.stdout + same.stderr
    printed = [ln for ln in same.stdout.splitlines() if ln.startswith("<<")]
    assert len(printed) == 2 and printed[0] == printed[1]
    # The check can fail: one character off in the file and the values differ.
    (tmp_path / "v.values").write_text(text.replace("2147483647", "2147483646"))
    differs = run_tlc(tlc, tmp_path, module(f'Read("v.values") = {text}'), classes)
    assert "Assumption" in differs.stdout and "is false" in differs.stdout, differs.stdout


@pytest.mark.parametrize("bad", ["<<1, >>", '["a b" |-> 1]', '<<"\\n">>', "<<2147483648>>", "<<-2147483648>>", '<<"open', "<<1>> 2", "[A |-> 1]", "<<Nilx>>", ""])
def test_a_value_file_it_cannot_read_stops_tlc_saying_where(tlc: Tlc, classes: Path, tmp_path: Path, bad: str) -> None:
    (tmp_path / "v.values").write_text(bad)
    out = run_tlc(tlc, tmp_path, module('Read("v.values") = <<>>'), classes)
    assert out.returncode != 0
    assert "TraceValues!Read: expected" in out.stdout and "at offset" in out.stdout, out.stdout


def test_without_the_class_tlc_stops_instead_of_reading_nothing(tlc: Tlc, tmp_path: Path) -> None:
    (tmp_path / "v.values").write_text("<<>>")
    out = run_tlc(tlc, tmp_path, module('Read("v.values") = <<>>'), None)
    assert out.returncode != 0 and "the Java class TraceValues is not on TLC's classpath" in out.stdout, out.stdout


def test_verdicts_through_the_reader_equal_those_through_the_text(tlc: Tlc, classes: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    systems = load_systems(PROJECT)
    nodes = ['a"b >>', "c\\d\n====", "e\u00e9", "@!@!@"]
    base = [make("hostile", [(nodes[0], 1), (nodes[1], 2), (nodes[2], 3)], nodes=nodes),
            make("hostile-bad", [(nodes[0], 1), (nodes[3], 3)], nodes=nodes),
            make("a", [("n1", 1), ("n2", 2), ("n1", 3)])]
    items = base + [m.trace for m in mutants(base[2], systems["counter"])[0]]
    monkeypatch.setenv("LEASEPROOF_TRACE_READER", "java")
    read = check_traces(list(items), systems, tlc)
    monkeypatch.setenv("LEASEPROOF_TRACE_READER", "text")
    text = check_traces(list(items), systems, tlc)
    assert read == text
    assert [v.kind for v in read[:3]] == [TraceKind.ACCEPTED, TraceKind.REJECTED, TraceKind.ACCEPTED]
    assert all(v.kind is TraceKind.REJECTED for v in read[3:]) and len(read) > 4


def jre_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `java` with no `javac` beside it or on PATH (a JRE only)."""
    java = tmp_path / "jre" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    java.chmod(0o755)
    monkeypatch.setenv("PATH", str(java.parent))
    return java


def test_no_javac_means_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tlc: Tlc) -> None:
    java = jre_only(tmp_path, monkeypatch)
    assert reader_classes(java, tlc.jar, tmp_path / "cache") is None
    assert not (tmp_path / "cache").exists()


def test_compiled_once_into_the_cache(tlc: Tlc, classes: Path, tmp_path: Path) -> None:
    first = reader_classes(tlc.java, tlc.jar, tmp_path)
    assert first is not None and (first / "TraceValues.class").is_file() and first.parent == tmp_path
    stamp = (first / "TraceValues.class").stat().st_mtime_ns
    clear_cache()
    again = reader_classes(tlc.java, tlc.jar, tmp_path)
    assert again == first and (again / "TraceValues.class").stat().st_mtime_ns == stamp
    assert [p.name for p in tmp_path.iterdir()] == [first.name]  # no scratch folder left


def test_the_mode_is_chosen_by_the_environment(tlc: Tlc, classes: Path) -> None:
    assert reader_for(tlc.java, tlc.jar, {"LEASEPROOF_TRACE_READER": "text"}) is None
    assert reader_for(tlc.java, tlc.jar, {}) == classes
    with pytest.raises(ValueError, match="use java"):
        reader_for(tlc.java, tlc.jar, {"LEASEPROOF_TRACE_READER": "fast"})


def test_a_batch_renders_its_traces_once_either_way() -> None:
    from conformance.traces.batch import make_batch, render_batch

    system = load_systems(PROJECT)["counter"]
    batch = make_batch(system, [make("a", [("n1", 1)]), make("b", [("n2", 1)])])
    text, read = render_batch(batch), render_batch(batch, values_file=True)
    literal = text["TraceData.tla"].split("Traces == ", 1)[1].rsplit("====", 1)[0]
    assert json.dumps(literal.split()) == json.dumps(read["TraceData.values"].split())
    assert 'Traces == Read("TraceData.values")' in read["TraceData.tla"] and "<<" not in read["TraceData.tla"].split("Traces ==")[1]


def test_an_unwritable_cache_means_text(tlc: Tlc, tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    clear_cache()
    assert reader_classes(tlc.java, tlc.jar, blocked / "cache") is None


def test_the_cache_folder_the_environment_names_is_the_one_used(tlc: Tlc, classes: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # Remembering the build by (java, jar) alone handed one test's cache folder to the next
    # (another LEASEPROOF_CACHE, or HOME, in the same process): the folder is part of the key.
    monkeypatch.setenv("LEASEPROOF_CACHE", str(tmp_path / "a"))
    a = reader_classes(tlc.java, tlc.jar)
    monkeypatch.setenv("LEASEPROOF_CACHE", str(tmp_path / "b"))
    b = reader_classes(tlc.java, tlc.jar)
    assert a is not None and b is not None
    assert a.parent == tmp_path / "a" and b.parent == tmp_path / "b"
    assert (a / "TraceValues.class").is_file() and (b / "TraceValues.class").is_file()
