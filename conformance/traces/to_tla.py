"""Traces as TLA+ text: a trace is untrusted input, so every value is rendered, never pasted.

Pure. JSON objects become records (or, where a key is not a plain identifier, the equal function
from strings: `e.op` reads both),
arrays sequences, strings escaped TLA+ strings, null the model value `Nil`. A string's
characters outside printable ASCII, and "@", become `\\uXXXX` after its backslashes are
doubled, so the encoding stays one-to-one, nothing in a string can end it early, and no string
can print TLC's `-tool` marker `@!@!@` (which would open or close a message in its output).
"""

from __future__ import annotations

import re
from typing import Any

from conformance.errors import LeaseproofError
from conformance.traces.trace import Trace

# TLC's integers are 32-bit; -2^31 has no literal (TLC reads "-2147483648" as the negation of a
# number too big for it, and stops).
TLC_INT_MIN, TLC_INT_MAX = -(2**31 - 1), 2**31 - 1
# A record field is a key that is surely a TLA+ identifier and no keyword: it starts with a
# lower-case letter (every TLA+ keyword, and the WF_/SF_ prefixes, are upper-case), and the
# whole key matches (`fullmatch`: "op\n" is no identifier). Any other key (`_1`, `WF_x`,
# `CASE`, "a b") becomes a string key of a function, which `e.key` reads just the same.
_FIELD = re.compile(r"[a-z][A-Za-z0-9_]*")
# How deeply a value may nest before it is refused (the reader bounds lines more tightly).
MAX_DEPTH = 64


class TraceEncodeError(LeaseproofError):
    """A trace value has no TLA+ form (a decimal, an integer past 32 bits); the message says where."""


def tla_string(s: str) -> str:
    """`s` as a TLA+ string literal that denotes exactly one value per input string."""
    out = ['"']
    for ch in s.replace("\\", "\\\\"):
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif " " <= ch <= "~" and ch != "@":
            # "@" never reaches TLC's output, where "@!@!@" opens and closes its -tool messages.
            out.append(ch)
        else:
            out.append("\\\\u%04x" % ord(ch) if ord(ch) <= 0xFFFF else "\\\\U%08x" % ord(ch))
    out.append('"')
    return "".join(out)


def tla_value(v: Any, where: str = "value", depth: int = 0) -> str:
    """A JSON value as TLA+ text; `where` names it in errors."""
    if depth > MAX_DEPTH:
        raise TraceEncodeError(f"{where}: nested deeper than {MAX_DEPTH} levels")
    if v is None:
        return "Nil"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        if not TLC_INT_MIN <= v <= TLC_INT_MAX:
            raise TraceEncodeError(f"{where}: {v} does not fit TLC's 32-bit integers")
        return str(v)
    if isinstance(v, float):
        if v.is_integer():
            return tla_value(int(v), where, depth)
        raise TraceEncodeError(f"{where}: {v} is not an integer, and TLA+ as TLC checks it has no decimals")
    if isinstance(v, str):
        return tla_string(v)
    if isinstance(v, list):
        return "<<" + ", ".join(tla_value(x, f"{where}[{i}]", depth + 1) for i, x in enumerate(v)) + ">>"
    if isinstance(v, dict):
        if not v:
            return "<< >>"
        if all(_FIELD.fullmatch(k) for k in v):
            return "[" + ", ".join(f"{k} |-> {tla_value(x, f'{where}.{k}', depth + 1)}" for k, x in v.items()) + "]"
        return "(" + " @@ ".join(f"{tla_string(k)} :> {tla_value(x, f'{where}.{k!r}', depth + 1)}" for k, x in v.items()) + ")"
    raise TraceEncodeError(f"{where}: a {type(v).__name__} has no TLA+ form")


def _shift(event: dict[str, Any], path: str, epoch: int) -> None:
    parts = path.split(".")
    node: Any = event
    for p in parts[:-1]:
        if not isinstance(node, dict) or not isinstance(node.get(p), dict):
            return
        node = node[p]
    last = parts[-1]
    if isinstance(node, dict) and isinstance(node.get(last), int) and not isinstance(node.get(last), bool):
        node[last] = node[last] - epoch


def spec_event(event: dict[str, Any], time_fields: tuple[str, ...], epoch: int) -> dict[str, Any]:
    """The record a trace spec sees: the line without `kind` and `seq`, times made relative to `epoch`."""
    import copy

    out = {k: copy.deepcopy(v) for k, v in event.items() if k not in ("kind", "seq")}
    for path in time_fields:
        _shift(out, path, epoch)
    return out


def trace_literal(events: tuple[dict[str, Any], ...], time_fields: tuple[str, ...], label: str = "trace") -> str:
    """One trace as a TLA+ sequence of event records."""
    epoch = min((e["now"] for e in events if isinstance(e.get("now"), int)), default=0)
    return "<<" + ",\n   ".join(
        tla_value(spec_event(e, time_fields, epoch), f"{label} event {e.get('seq', i + 1)}") for i, e in enumerate(events)
    ) + ">>"


def literal_of(trace: Trace, time_fields: tuple[str, ...]) -> str:
    """`trace_literal` of a trace, made once per trace and time fields (kept on the trace)."""
    key = tuple(time_fields)
    text = trace.literals.get(key)
    if text is None:
        text = trace.literals[key] = trace_literal(trace.events, key, label=trace.source)
    return text
