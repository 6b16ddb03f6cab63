"""Exporting a run's trace: the events the scripts appended to the Redis trace list (already in
commit order), with a header, as NDJSON through `impl.trace.write`."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from impl import trace
from impl.workqueue.config import Gates, Settings
from impl.workqueue.store import Steps


def export(path: Path, steps: Steps, *, system: str, settings: Settings, gates: Gates,
           nodes: Iterable[str], run: str | None = None, features: Iterable[str] = ()) -> Path:
    """Write the trace recorded under `steps`' prefix to `path`; `system` is `workqueue` or
    `command` (a command run's trace holds its deliveries' queue ops too)."""
    events = steps.events()
    names = list(dict.fromkeys([*nodes, *(ev["node"] for ev in events)]))
    head = trace.header(system, gates=gates.as_dict(), settings=settings.as_dict(),
                        nodes=names or ["none"], run=run, features=features)
    return trace.write(path, head, events)
