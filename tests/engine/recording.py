"""Recording the engine tests' traces when `LEASEPROOF_TRACE_DIR` is set.

`scripts/record_traces.sh` runs the tests with `--leaseproof-traces <dir>` (the pytest plugin,
which sets `LEASEPROOF_TRACE_DIR=<dir>`: tests/conftest.py); every store a test's nodes used is
then exported, one trace per workflow, for the plugin and `leaseproof traces check`:

    <dir>/engine-tests/<test>-<wf>-<hash>.ndjson              the designed engine
    <dir>-gates-off/engine-tests-gates-off/<test>-<wf>-<hash>.ndjson  a protecting gate off (see
                                                              UNSAFE_GATES): rejected wherever
                                                              the test shows its bug, so kept
                                                              out of <dir>, which must pass

A store whose nodes use swapped decisions (the mutant catalogue, `impl/engine/mutants.py`), or
whose nodes were built while a bug was planted in the engine's code (`planting`, used by
`known_bad.py`), is not exported: those traces are written on purpose elsewhere.

Two things tests do lie outside `tla/Engine.tla`'s callers, and their traces say so in the
header's `features` (the checker skips them, with the reason):

- `direct_calls`: the test called the store, the scheduler or the execution queue itself
  instead of starting and signalling through a node (a caller the spec does not have);
- `concurrent_calls`: one node had two starts, or two signals, of one workflow in flight at
  once (the spec's callers make one call at a time per node and workflow).

The header comes from the nodes the test built (`Node.__init__` is wrapped while recording):
their names, gates (with the store's bump setting, which is the one that acts) and settings.
The faults are lines of the traces (`impl/engine/faults.py`): a crash the test injects through
its simulation (`Simulation.crash`) and the lapses the nodes saw are logged where they happened,
and the header counts none of them.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from collections.abc import Hashable, Iterator
from typing import Any

from conformance.pytest_plugin import safe_name
from impl import trace
from impl.engine import decide
from impl.engine.export import by_workflow, engine_header, features
from impl.engine.model import Gates, Settings
from impl.engine.node import Node
from impl.engine.queue import ExecutionQueue
from impl.engine.scheduler import Scheduler
from impl.engine.sqlbackend import _SqlBackend
from impl.engine.store import Store

ENV = "LEASEPROOF_TRACE_DIR"

# Gates whose absence lets the engine run a workflow twice or strand it (the models'
# calibrations): traces of runs without them go apart, since a test may show the bug.
UNSAFE_GATES = ("honour_check", "bump_task_version_on_honored_lease", "automatic_lease_renewal",
                "renew_adopts_rerun", "recover_stranded_start")

_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_TESTS_DIR = str(Path(__file__).resolve().parent.parent)

STORE_OPS = ("create_instance", "update_instance", "schedule", "fetch", "renew", "remove",
             "reschedule_retry", "mark_failed", "run_start", "run_end")
SCHEDULER_CALLS = ("schedule_with_outcome", "schedule", "schedule_in_memory", "lease", "fetch",
                   "renew_lease", "remove", "reschedule_for_retry", "mark_as_failed")
QUEUE_CALLS = ("schedule", "offer")


def trace_dir() -> Path | None:
    """Where to record, or None when recording is off."""
    value = os.environ.get(ENV, "").strip()
    return Path(value) if value else None


def store_of(backend: Any) -> Hashable:
    """The store a backend connects to: a SQL store by its URL and table prefix (on SQLite and
    MariaDB each node has a backend of its own over the same tables, and their lines make one
    set of traces), the twin and an in-memory SQLite by the object."""
    url = getattr(backend, "url", None)
    if not isinstance(url, str) or url.startswith("memory") or url.endswith(":memory:"):
        return id(backend)
    return (url, getattr(backend, "prefix", ""))


@dataclass
class StoreRun:
    """What a test did on one store: its nodes, their gates and settings."""

    backend: Any
    index: int = 0
    nodes: list[str] = field(default_factory=list)
    gates: Gates | None = None
    settings: Settings | None = None
    mutant: bool = False
    features: set[str] = field(default_factory=set)
    in_flight: dict[tuple[str, str, str], int] = field(default_factory=dict)
    written: bool = False


class Recorder:
    """Collects the backends a test's nodes used, and writes their traces once."""

    def __init__(self, directory: Path, test_id: str) -> None:
        self.directory = directory
        self.test_id = test_id
        self.run = _SAFE.sub("_", test_id).strip("_")
        self.runs: dict[Hashable, StoreRun] = {}
        self.count = 0

    def saw_node(self, node: Node) -> None:
        """A node was built: remember its store and its configuration."""
        store = node.store
        key = store_of(store.backend)
        r = self.runs.get(key)
        if r is None:
            self.count += 1
            r = self.runs[key] = StoreRun(store.backend, self.count)
        if node.name not in r.nodes:
            r.nodes.append(node.name)
        if r.gates is None:
            r.gates = replace(node.gates, bump_task_version_on_honored_lease=store.bump)
            r.settings = node.settings
        r.mutant = r.mutant or store.decide is not decide or _planting > 0

    def saw_direct_call(self, backend: Any) -> None:
        """A test called a store, scheduler or queue operation itself."""
        r = self.runs.get(store_of(backend))
        if r is not None:
            r.features.add("direct_calls")

    def call_begins(self, node: Node, wf: str, kind: str) -> None:
        """A start or signal of `wf` on `node` began; two at once are `concurrent_calls`."""
        r = self.runs.get(store_of(node.store.backend))
        if r is None:
            return
        key = (node.name, wf, kind)
        r.in_flight[key] = r.in_flight.get(key, 0) + 1
        if r.in_flight[key] > 1:
            r.features.add("concurrent_calls")

    def call_ends(self, node: Node, wf: str, kind: str) -> None:
        """That call returned, failed or was killed by a crash."""
        r = self.runs.get(store_of(node.store.backend))
        if r is not None:
            r.in_flight[(node.name, wf, kind)] -= 1

    def flush(self, backend: Any | None = None) -> list[Path]:
        """Write the traces of `backend` (default: every backend not yet written)."""
        paths: list[Path] = []
        for key, r in list(self.runs.items()):
            if r.written or (backend is not None and key != store_of(backend)):
                continue
            r.written = True
            # Written once: a later run on the same tables (made again) is a run of its own.
            del self.runs[key]
            if r.mutant or r.gates is None or r.settings is None:
                continue
            events = r.backend.read_events()
            if not events:
                continue
            unsafe = any(not getattr(r.gates, g) for g in UNSAFE_GATES)
            # Beside the directory, not in it: the plugin checks all of <dir>, which must pass.
            where = (self.directory.with_name(self.directory.name + "-gates-off") / "engine-tests-gates-off" if unsafe
                     else self.directory / "engine-tests")
            names = sorted(set(r.nodes) | {e.node for e in events})
            run = self.run if self.count == 1 else f"{self.run}-store{r.index}"
            for wf, evs in by_workflow(events).items():
                head = engine_header(r.gates, r.settings, names, f"{run}/{wf}",
                                     sorted(set(features(evs)) | r.features))
                # Readable, and with a hash of the full test id: ids that differ only in a
                # replaced character (`job/1`, `job_1`) never share a file (the plugin's names).
                store = "" if self.count == 1 else f"-store{r.index}"
                path = where / (safe_name(f"{self.test_id}{store}-{wf}", "trace", 150) + ".ndjson")
                paths.append(trace.write(path, head, (e.line() for e in evs), store_seq=True))
        return paths


_active: Recorder | None = None
_planting = 0  # > 0 while a test has a bug planted in impl/engine (known_bad.py)


@contextlib.contextmanager
def planting() -> Iterator[None]:
    """While inside, nodes built belong to a broken engine: their stores are not exported."""
    global _planting
    _planting += 1
    try:
        yield
    finally:
        _planting -= 1


@contextlib.contextmanager
def not_recorded() -> Iterator[None]:
    """While inside, nodes built are not exported either: runs that are not the designed
    engine's, such as a replay of a TLC counterexample (a calibration's gates, and the model's
    hidden faults, which its replay does not log as lines)."""
    with planting():
        yield


def active() -> Recorder | None:
    """The recorder of the running test, if recording is on."""
    return _active


def start(test_id: str, monkeypatch: Any) -> Recorder | None:
    """Begin recording for one test (wraps `Node.__init__`); None when off."""
    global _active
    directory = trace_dir()
    if directory is None:
        return None
    rec = Recorder(directory, test_id)
    init = Node.__init__

    def recording_init(self: Node, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        rec.saw_node(self)

    monkeypatch.setattr(Node, "__init__", recording_init)
    for cls, names, backend_of in ((Store, STORE_OPS, lambda o: o.backend),
                                   (Scheduler, SCHEDULER_CALLS, lambda o: o.store.backend),
                                   (ExecutionQueue, QUEUE_CALLS, lambda o: o.scheduler.store.backend)):
        for name in names:
            monkeypatch.setattr(cls, name, _direct_call_watch(rec, getattr(cls, name), backend_of))
    for kind in ("start", "signal"):
        monkeypatch.setattr(Node, kind, _call_watch(rec, getattr(Node, kind), kind))
    # A store whose tables are dropped or whose connection closes before the test ends (a
    # replay's scratch store) is written first, while its events can still be read.
    for name, every in (("drop_schema", True), ("close", False)):
        monkeypatch.setattr(_SqlBackend, name, _flush_first(rec, getattr(_SqlBackend, name), every))
    _active = rec
    return rec


def _direct_call_watch(rec: Recorder, method: Any, backend_of: Any) -> Any:
    """`method`, noting calls made straight from a test file (not through a node)."""

    @functools.wraps(method)
    def watched(self: Any, *args: Any, **kwargs: Any) -> Any:
        if sys._getframe(1).f_code.co_filename.startswith(_TESTS_DIR):
            rec.saw_direct_call(backend_of(self))
        return method(self, *args, **kwargs)

    return watched


def _flush_first(rec: Recorder, method: Any, every: bool) -> Any:
    """`method` of a SQL backend, after the backend's traces are written (once); `every`: the
    traces of every store, as dropping the tables takes them from each connection to them."""

    def flushing(self: Any, *args: Any, **kwargs: Any) -> Any:
        if every:
            rec.flush()
        elif store_of(self) in rec.runs and not rec.runs[store_of(self)].written:
            rec.flush(self)
        return method(self, *args, **kwargs)

    return flushing


def _call_watch(rec: Recorder, method: Any, kind: str) -> Any:
    """`Node.start` or `Node.signal` (fibers), counting the calls of a node in flight."""

    @functools.wraps(method)
    def watched(self: Node, wf: str, *args: Any, **kwargs: Any) -> Any:
        rec.call_begins(self, wf, kind)
        try:
            return (yield from method(self, wf, *args, **kwargs))
        finally:
            rec.call_ends(self, wf, kind)

    return watched


def stop() -> None:
    """Write what is left and end recording for this test."""
    global _active
    if _active is not None:
        _active.flush()
    _active = None
