"""Traces as TLA+ text: a trace is untrusted input, so every value is rendered, never pasted.

Pure. JSON objects become records (or, where a key is not a plain identifier, the equal function
from strings: `e.op` reads both),
arrays sequences, strings escaped TLA+ strings, null the model value `Nil`. A string's
characters outside printable ASCII become `\\uXXXX` after its backslashes are doubled, so the
encoding stays one-to-one and nothing in a string can end it early.
"""

from __future__ import annotations

import re
from typing import Any

from conformance.errors import LeaseproofError

# TLC's integers are 32-bit.
TLC_INT_MIN, TLC_INT_MAX = -(2**31), 2**31 - 1
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RESERVED = {"ASSUME", "ASSUMPTION", "AXIOM", "CASE", "CHOOSE", "CONSTANT", "CONSTANTS", "DOMAIN", "ELSE", "ENABLED",
             "EXCEPT", "EXTENDS", "IF", "IN", "INSTANCE", "LET", "LOCAL", "MODULE", "OTHER", "SF_", "SUBSET", "THEN",
             "THEOREM", "UNCHANGED", "UNION", "VARIABLE", "VARIABLES", "WF_", "WITH", "TRUE", "FALSE", "BOOLEAN", "STRING"}


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
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.append("\\\\u%04x" % ord(ch) if ord(ch) <= 0xFFFF else "\\\\U%08x" % ord(ch))
    out.append('"')
    return "".join(out)


def tla_value(v: Any, where: str = "value") -> str:
    """A JSON value as TLA+ text; `where` names it in errors."""
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
            return tla_value(int(v), where)
        raise TraceEncodeError(f"{where}: {v} is not an integer, and TLA+ as TLC checks it has no decimals")
    if isinstance(v, str):
        return tla_string(v)
    if isinstance(v, list):
        return "<<" + ", ".join(tla_value(x, f"{where}[{i}]") for i, x in enumerate(v)) + ">>"
    if isinstance(v, dict):
        if not v:
            return "<< >>"
        if all(_IDENT.match(k) and k not in _RESERVED for k in v):
            return "[" + ", ".join(f"{k} |-> {tla_value(x, f'{where}.{k}')}" for k, x in v.items()) + "]"
        return "(" + " @@ ".join(f"{tla_string(k)} :> {tla_value(x, f'{where}.{k}')}" for k, x in v.items()) + ")"
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
