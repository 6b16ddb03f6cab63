"""The work queue's trace schema (pure): a renew, release or ack must log its idle read
(`args.idle_ms`), since TraceWorkQueue checks it; a trace without it is malformed, by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.traces.read import parse_trace
from conformance.traces.trace import Trace, TraceKind

CORPUS = Path(__file__).resolve().parents[2] / "traces" / "corpus" / "workqueue" / "accepted" / "sim-self-reclaim-dropped.ndjson"


def lines() -> list[dict]:
    return [json.loads(ln) for ln in CORPUS.read_text().splitlines()]


def text(rows: list[dict]) -> str:
    return "\n".join(json.dumps(r) for r in rows) + "\n"


def test_the_corpus_trace_is_well_formed() -> None:
    assert isinstance(parse_trace(text(lines()), "t"), Trace)


@pytest.mark.parametrize("op", ["renew", "release", "ack"])
def test_a_step_that_reads_before_writing_must_log_its_idle_read(op: str) -> None:
    rows = lines()
    i = next(i for i, r in enumerate(rows) if r.get("op") == op)
    del rows[i]["args"]["idle_ms"]
    v = parse_trace(text(rows), "t")
    assert not isinstance(v, Trace) and v.kind is TraceKind.MALFORMED
    assert f"line {i + 1}" in (v.reason or "") and "idle_ms" in (v.reason or ""), v.reason


def test_other_ops_log_no_idle_read() -> None:
    rows = lines()
    i = next(i for i, r in enumerate(rows) if r.get("op") == "receive_new")
    rows[i]["args"] = {"idle_ms": 5}
    v = parse_trace(text(rows), "t")
    assert not isinstance(v, Trace) and v.kind is TraceKind.MALFORMED, v
