"""The two schema validators of a trace line agree: jsonschema-rs, fast, may only pass a line that
jsonschema, the reference, passes too (where the fast one fails a line, jsonschema decides)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.traces.read import SCHEMA_NAME, _fast_valid, _first_error, _validator, default_schema_dir

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = default_schema_dir()


def corpus_lines() -> list[tuple[str, dict[str, Any]]]:
    """Every line of the trace corpus (accepted and rejected traces of the three systems), with
    its trace's system."""
    out = []
    for path in sorted((ROOT / "traces" / "corpus").glob("*/*/*.ndjson")):
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        out += [(lines[0]["system"], line) for line in lines]
    return out


LINES = corpus_lines()


def validators_for(line: dict[str, Any], system: str) -> list[Any]:
    kind = line.get("kind")
    found = [_validator(SCHEMAS / SCHEMA_NAME, kind)] if kind in ("header", "event", "end") else []
    event_schema = SCHEMAS / f"{system}-event.schema.json"
    if kind == "event" and event_schema.is_file():
        found.append(_validator(event_schema))
    return found


def agree(line: Any, system: str) -> None:
    for v in validators_for(line, system) if isinstance(line, dict) else []:
        fast, exact = _fast_valid(v, line), v.exact.is_valid(line)
        assert not (fast and not exact), f"jsonschema-rs passes what jsonschema fails: {line!r}"
        assert (_first_error(v, line) is None) == exact


def test_the_corpus_lines_are_valid_to_both() -> None:
    assert len(LINES) > 1000
    for system, line in LINES:
        for v in validators_for(line, system):
            assert _fast_valid(v, line) and v.exact.is_valid(line), line


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8)
                    | st.sampled_from(["1-2", "1-2\n", "a", "PENDING", "acked", "n1", 1.0]),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                    max_leaves=6)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(range(len(LINES))), st.data())
def test_a_changed_line_is_never_passed_by_the_fast_validator_alone(i: int, data: st.DataObject) -> None:
    # A corpus line with one field (or one field of a nested object) replaced, removed or added:
    # the fast validator passes it only where jsonschema does ("1-2\n" matches Python's `$`,
    # not Rust's: there jsonschema decides, and passes it).
    system, line = LINES[i]
    line = json.loads(json.dumps(line))
    target = line
    nested = [k for k, v in line.items() if isinstance(v, dict) and v]
    if nested and data.draw(st.booleans()):
        target = line[data.draw(st.sampled_from(sorted(nested)))]
    key = data.draw(st.sampled_from(sorted(target)) | st.text(max_size=6))
    if data.draw(st.booleans()) and key in target:
        del target[key]
    else:
        target[key] = data.draw(JSON)
    agree(line, system)


def test_what_the_fast_validator_cannot_take_jsonschema_decides() -> None:
    # A value the fast validator fails on (raises) is judged by jsonschema, never passed on the
    # exception; a huge integer is an integer to both.
    from conformance.traces.read import _Validators

    class Broken:
        def is_valid(self, value: Any) -> bool:
            raise OverflowError("cannot take it")

    line = next(dict(ln) for _, ln in LINES if ln.get("kind") == "end")
    v = _validator(SCHEMAS / SCHEMA_NAME, "end")
    broken = _Validators(Broken(), v.exact)
    assert _fast_valid(broken, line) is False and _first_error(broken, line) is None
    line["count"] = "many"
    assert _first_error(broken, line) == _first_error(v, line) == "field count: 'many' is not of type 'integer'"
    line["count"] = 2**70
    assert _fast_valid(v, line) and v.exact.is_valid(line)
