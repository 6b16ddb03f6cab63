"""Writing NDJSON traces in the format of `traces/schema/trace-line.schema.json`.

A trace is a header line, one event line per committed store step (in commit order, `seq`
1, 2, ...), and an end line with the count, so that a truncated trace is detected. The events
themselves are recorded by the stores, inside the transaction that commits each step; this
module only turns a header and a list of events into a file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from impl.errors import TraceWriteError

FORMAT_VERSION = 1


def header(
    system: str,
    *,
    gates: Mapping[str, bool],
    settings: Mapping[str, Any],
    nodes: Iterable[str],
    run: str | None = None,
    features: Iterable[str] = (),
) -> dict[str, Any]:
    """The header line of a trace of `system` ("engine", "workqueue" or "command")."""
    line: dict[str, Any] = {
        "kind": "header",
        "format": FORMAT_VERSION,
        "system": system,
        "gates": dict(gates),
        "settings": dict(settings),
        "nodes": list(nodes),
    }
    if run is not None:
        line["run"] = run
    feats = sorted(set(features))
    if feats:
        line["features"] = feats
    return line


def render(head: Mapping[str, Any], events: Iterable[Mapping[str, Any]], *, store_seq: bool = False) -> str:
    """The whole trace as NDJSON text: header, events renumbered from 1 in order, end line.

    With `store_seq`, each event keeps the `seq` its store gave it (a commit number that counts
    every committed step, 1, 2, ...), so a step whose event is missing, or was written in a
    transaction of its own, leaves a gap the reader rejects instead of being renumbered away.
    """
    lines = [json.dumps(head, sort_keys=True)]
    count = 0
    for count, event in enumerate(events, start=1):
        line = {"kind": "event", **event, "seq": event["seq"] if store_seq else count}
        lines.append(json.dumps(line, sort_keys=True))
    lines.append(json.dumps({"kind": "end", "count": count}, sort_keys=True))
    return "\n".join(lines) + "\n"


def write(path: Path, head: Mapping[str, Any], events: Iterable[Mapping[str, Any]], *, store_seq: bool = False) -> Path:
    """Write a trace to `path` atomically (a reader never sees half a file); `store_seq` as `render`."""
    text = render(head, events, store_seq=store_seq)
    tmp = path.with_name(path.name + ".part")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        raise TraceWriteError(f"cannot write trace {path}: {exc.strerror}") from exc
    return path
