"""`leaseproof engine run`: several node processes sharing one store run a workload.

    parent: reset the tables, plan the workload, spawn one process per node, wait,
            export one trace per workflow, validate them, count
    node i: a pool of threads (threads.py) driving the fetch loop, the runs of the copies
            its queue holds, and the callers that start and signal the workflows the plan
            gives node i; it stops once every workflow of the plan is terminal in the store
            (or the deadline passes), logging the faults it injects or sees (stalls, leases
            that lapsed under it: `faults.py`) as lines of the traces

The store orders the trace: every event is recorded in the transaction that commits it.
"""

from __future__ import annotations

import json
import multiprocessing
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from impl.clock import WallClock
from impl.engine.errors import EngineError
from impl.engine.export import RunFigures, figures, write_traces
from impl.engine.faults import Stalls
from impl.engine.model import COMPLETED, Gates, Settings
from impl.engine.node import Node
from impl.engine.store import Store
from impl.engine.threads import NodeRuntime, workers_for
from impl.engine.urls import open_backend
from impl.engine.workload import Item, plan, signaller, stale_stall_ms, starter

_START_MARGIN_MS = 1_500  # time for the node processes to import and connect before t0


@dataclass(frozen=True)
class RunConfig:
    """Everything a run needs; plain data, so it crosses to the node processes."""

    store_url: str
    nodes: int = 2
    workflows: int = 200
    seed: int = 0
    # A 3 s lease: a MariaDB commit's tail latency under load reaches ~1 s on this machine's
    # disk, and a renewal or a queued copy later than its lease lets another node in.
    lease_ms: int = 3_000
    spread_ms: int = 5_000
    long_fraction: float = 0.25
    short_work_ms: int = 0
    waiting_fraction: float = 0.5
    stale_fraction: float = 0.0  # share of long waiting handlers whose first finishing write stalls
    deadline_s: float = 300.0
    prefix: str | None = None  # None: the URL's ?prefix=, else "lpe_"
    run_name: str = "engine-run"
    gates: Gates = Gates()

    def settings(self) -> Settings:
        """Engine settings scaled to the lease."""
        return Settings(
            lease_ms=self.lease_ms,
            # Renew half a lease before it lapses: that half is the slack for a slow commit.
            renew_interval_ms=max(self.lease_ms // 2, 1),
            poll_interval_ms=max(min(self.lease_ms // 10, 100), 5),
            result_poll_interval_ms=max(self.lease_ms, 10),
        )

    def table_prefix(self) -> str:
        """The prefix of the run's tables: `prefix`, else the URL's `?prefix=`, else `lpe_`."""
        if self.prefix is not None:
            return self.prefix
        from urllib.parse import parse_qs, urlparse

        return parse_qs(urlparse(self.store_url).query).get("prefix", ["lpe_"])[0]

    def node_names(self) -> list[str]:
        """The node names, n1 .. nN."""
        return [f"n{i + 1}" for i in range(self.nodes)]


@dataclass(frozen=True)
class RunSummary:
    """What a run did."""

    workflows: int
    completed: int
    failed: int
    seconds: float
    figures: RunFigures
    traces: int
    invalid_traces: int
    trace_dir: str

    @property
    def ok(self) -> bool:
        """All workflows completed, no overlapping runs, every trace valid."""
        return (
            self.completed == self.workflows
            and self.figures.overlapping_runs == 0
            and self.invalid_traces == 0
        )

    def lines(self) -> list[str]:
        """The summary, one fact a line."""
        f = self.figures
        return [
            f"workflows completed: {self.completed}/{self.workflows} (failed {self.failed}) in {self.seconds:.1f} s"
            f" ({self.completed / self.seconds if self.seconds else 0:.1f} workflows/s)",
            f"runs: {f.runs}, reruns: {f.reruns}, honoured leases: {f.honoured_leases}",
            f"overlapping runs seen: {f.overlapping_runs}",
            f"traces: {self.traces} written to {self.trace_dir}, {self.invalid_traces} invalid, {f.events} events",
        ]


def _node_main(cfg: RunConfig, name: str, items: list[Item], t0_ms: int) -> None:
    """One node process: run the node and its callers until the plan is done (its faults are
    lines of the traces: the stalls it injects, the lapses it sees)."""
    backend = open_backend(cfg.store_url, cfg.table_prefix(), create=False)
    try:
        settings = cfg.settings()
        store = Store(backend, lease_ms=settings.lease_ms, bump=cfg.gates.bump_task_version_on_honored_lease)
        clock = WallClock()
        node = Node(name, store, clock, gates=cfg.gates, settings=settings)
        # The node that starts a workflow runs its first copy: only it stalls before that
        # copy's finishing write (another node's own first remove must not stall too).
        rt = NodeRuntime(node, Stalls({i.wf: i.stall_finish_ms for i in items if i.start_node == name}),
                         workers=workers_for(backend))
        rt.start()

        def elapsed() -> int:
            return clock.now_ms() - t0_ms

        for item in items:
            if item.start_node == name:
                rt.submit(starter(node, item, elapsed, wait_result=True), f"start-{item.wf}")
            if item.signal_node == name:
                rt.submit(signaller(node, item, elapsed, poll_ms=settings.poll_interval_ms), f"signal-{item.wf}")
        wanted = {i.wf for i in items}
        deadline = time.monotonic() + cfg.deadline_s
        while time.monotonic() < deadline:
            done = {i.wf for i in backend.list_instances() if i.terminal}
            if wanted <= done:
                break
            time.sleep(0.2)
        rt.stop()
        for exc in rt.errors[:5]:
            print(f"{name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        if rt.errors:
            sys.exit(1)
    finally:
        backend.close()


def _validate(paths: list[Path]) -> int:
    """How many of the trace files fail the trace-line schema (or their own end count)."""
    import jsonschema

    from impl.engine.schema import trace_line_schema

    validator = jsonschema.Draft202012Validator(trace_line_schema())
    bad = 0
    for path in paths:
        lines = path.read_text(encoding="utf-8").splitlines()
        objs = [json.loads(ln) for ln in lines]
        ok = all(validator.is_valid(o) for o in objs)
        ok = ok and objs[0]["kind"] == "header" and objs[-1]["kind"] == "end"
        ok = ok and objs[-1]["count"] == len(objs) - 2
        bad += 0 if ok else 1
    return bad


def run_workload(cfg: RunConfig, trace_dir: Path | None) -> RunSummary:
    """Run `cfg` with one process per node; write traces to `trace_dir` if given."""
    if cfg.nodes < 1 or cfg.workflows < 0:
        raise EngineError(f"need at least one node and no negative workflow count (got {cfg.nodes}, {cfg.workflows})")
    backend = open_backend(cfg.store_url, cfg.table_prefix(), create=False)
    try:
        backend.drop_schema()
        backend.create_schema()
        names = cfg.node_names()
        items = plan(
            cfg.workflows,
            names,
            seed=cfg.seed,
            lease_ms=cfg.lease_ms,
            spread_ms=cfg.spread_ms,
            long_fraction=cfg.long_fraction,
            short_work_ms=cfg.short_work_ms,
            waiting_fraction=cfg.waiting_fraction,
            stale_fraction=cfg.stale_fraction,
            stall_ms=stale_stall_ms(cfg.settings()),
        )
        ctx = multiprocessing.get_context("spawn")
        t0 = WallClock().now_ms() + _START_MARGIN_MS
        procs = [ctx.Process(target=_node_main, args=(cfg, n, items, t0), name=n) for n in names]
        began = time.monotonic()
        for p in procs:
            p.start()
        for p in procs:
            p.join(cfg.deadline_s + 60)
            if p.is_alive():
                p.terminate()
                p.join()
        seconds = max(time.monotonic() - began - _START_MARGIN_MS / 1000, 1e-9)
        bad_exit = [p.name for p in procs if p.exitcode != 0]
        if bad_exit:
            raise EngineError(f"node processes {bad_exit} failed; run again with fewer workflows to see why")
        events = backend.read_events()
        instances = backend.list_instances()
        paths: list[Path] = []
        if trace_dir is not None:
            paths = write_traces(events, trace_dir, gates=cfg.gates, settings=cfg.settings(), nodes=names, run=cfg.run_name)
        return RunSummary(
            workflows=cfg.workflows,
            completed=sum(1 for i in instances if i.status == COMPLETED),
            failed=sum(1 for i in instances if i.status == "FAILED"),
            seconds=seconds,
            figures=figures(events),
            traces=len(paths),
            invalid_traces=_validate(paths),
            trace_dir=str(trace_dir) if trace_dir else "-",
        )
    finally:
        backend.close()


def summary_json(summary: RunSummary) -> dict[str, Any]:
    """The summary as a JSON-ready dict."""
    return {**asdict(summary), "ok": summary.ok}
