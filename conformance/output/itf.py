"""TLA+ values and counterexamples in the Informal Trace Format (ITF), the JSON that Apalache,
Quint and their readers share (https://apalache-mc.org/docs/adr/015adr-trace.html). Pure.

| TLA+ (as parsed by `values.py`) | ITF                                        |
|---------------------------------|--------------------------------------------|
| `3`                             | `{"#bigint": "3"}`                         |
| `"a"`, `TRUE`                   | `"a"`, `true`                              |
| `n1` (a TLC model value)        | `{"#unserializable": "n1"}` (ITF has none) |
| `{1, 2}`                        | `{"#set": [...]}`, elements in TLC's order |
| `<<1, 2>>`                      | `[...]`                                    |
| `[a |-> 1]`                     | `{"a": ...}`                               |
| `(n1 :> 1 @@ n2 :> 2)`          | `{"#map": [[k, v], ...]}`                  |

So a model value, a string, a set and a sequence stay apart (`check --json` uses the same
tagged values). `from_itf` reads them back; it also takes the untagged JSON of earlier
`check --json` files (plain numbers, lists for sets), so a saved run still replays.

>>> to_itf(frozenset({ModelValue("n1")}))
{'#set': [{'#unserializable': 'n1'}]}
>>> from_itf({"#map": [[{"#bigint": "1"}, "a"]]})
{1: 'a'}
"""

from __future__ import annotations

import json
from typing import Any

from conformance.output.counterexample import Counterexample
from conformance.output.values import FrozenDict, ModelValue, format_value

FORMAT_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"
MAX_DEPTH = 200  # a saved run is input: bound how deep its values may nest


def _is_record(v: dict[Any, Any]) -> bool:
    return bool(v) and all(isinstance(k, str) and not isinstance(k, ModelValue) and k.isidentifier() for k in v)


def _order(items: list[Any]) -> list[Any]:
    # TLC's own order where it has one (numbers, then by printed form): the same run, the same bytes.
    return sorted(items, key=lambda x: (0, f"{x:020d}") if isinstance(x, int) and not isinstance(x, bool)
                  else (1, format_value(x)))


def to_itf(v: Any) -> Any:
    """A parsed TLA+ value as an ITF value."""
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return {"#bigint": str(v)}
    if isinstance(v, ModelValue):
        return {"#unserializable": str(v)}
    if isinstance(v, str):
        return v
    if isinstance(v, (frozenset, set)):
        return {"#set": [to_itf(x) for x in _order(list(v))]}
    if isinstance(v, (tuple, list)):
        return [to_itf(x) for x in v]
    if isinstance(v, dict):
        if _is_record(v):
            return {str(k): to_itf(x) for k, x in v.items()}
        return {"#map": [[to_itf(k), to_itf(x)] for k, x in v.items()]}
    raise TypeError(f"no ITF form for {type(v).__name__}")


class ItfError(ValueError):
    """A JSON value that is no ITF value (or untagged `check --json` value)."""


def from_itf(v: Any, _depth: int = 0) -> Any:
    """An ITF value (or an untagged value of an earlier `check --json`) as a Python value."""
    if _depth > MAX_DEPTH:
        raise ItfError(f"a value nested deeper than {MAX_DEPTH}")
    d = _depth + 1
    if isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return v  # untagged: an earlier check --json
    if isinstance(v, list):
        return tuple(from_itf(x, d) for x in v)
    if isinstance(v, dict):
        if len(v) == 1:
            (tag, body), = v.items()
            if tag == "#bigint":
                try:
                    return int(body)
                except (TypeError, ValueError):
                    raise ItfError(f"#bigint {str(body)[:40]!r} is not an integer") from None
            if tag == "#set":
                return frozenset(from_itf(x, d) for x in _list(body, tag))
            if tag == "#tup":
                return tuple(from_itf(x, d) for x in _list(body, tag))
            if tag == "#map":
                pairs = [_list(p, "#map pair") for p in _list(body, tag)]
                if any(len(p) != 2 for p in pairs):
                    raise ItfError("a #map entry is not a [key, value] pair")
                return FrozenDict((from_itf(k, d), from_itf(x, d)) for k, x in pairs)
            if tag == "#unserializable":
                return ModelValue(str(body))
        return FrozenDict((str(k), from_itf(x, d)) for k, x in v.items())
    raise ItfError(f"no TLA+ value for JSON {json.dumps(v)[:40]}")


def _list(v: Any, tag: str) -> list[Any]:
    if not isinstance(v, list):
        raise ItfError(f"{tag} holds no list")
    return v


def itf_trace(cx: Counterexample, *, source: str, description: str) -> dict[str, Any]:
    """A counterexample as an ITF trace: its variables, its states (each `#meta` naming the
    action that led to it), and `loop`, the 0-based state a lasso returns to (the last state
    itself for a behaviour that stutters forever)."""
    names = sorted({n for s in cx.states for n in s.variables})
    states = []
    for i, s in enumerate(cx.states):
        meta: dict[str, Any] = {"index": i, "action": s.action}
        if s.location is not None:
            meta["location"] = str(s.location)
        states.append({"#meta": meta, **{n: to_itf(s.variables[n]) for n in names if n in s.variables}})
    trace: dict[str, Any] = {
        "#meta": {"format": "ITF", "format-description": FORMAT_DESCRIPTION, "source": source,
                  "description": description},
        "vars": names,
        "states": states,
    }
    if cx.back_to is not None:
        trace["loop"] = cx.back_to - 1
    elif cx.stutters:
        trace["loop"] = len(cx.states) - 1
    return trace
