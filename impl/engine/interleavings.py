"""Scenarios of the threaded node runtime (`threads.py`) for controlled interleavings.

Each scenario takes `sync`, a controlled `impl/sync.py` (`conformance/interleave`: its threads
run one at a time, a strategy picking who goes on at every point, on a virtual clock), builds
real nodes on a real store with it, and drives them from its own thread the way an in-process
caller would. It checks the run monitor's invariant at every point, waits for every caller's
answer, stops the runtimes and, when `sync.trace_dir` is set, writes the store's traces there.

    start_signal_fetch      one node: a start, a signal and the fetch loop on one workflow at once
                            (_in_memory: the signal schedules in memory, as the start does)
    renewals_under_signals  one node: a handler across its renewals while signals bump the row
    two_nodes               a start on n1, signals from n2, both fetch loops, a handler across
                            renewals and a finish stalled past its lease
    stranded_start          n1 crashes between its start's two writes (a stall, then the crash)
                            and n2 starts the workflow again: the stranded start's recovery
                            (stalled_start: n1 is only stalled, past a lease, and comes back)
    failing                 two nodes, a workflow that fails its first delivery (a retry) and one
                            that always fails (retries, then a dead letter); failing_stale: the
                            retry and the dead letter each stall past their lease first
    stale_remove            n1's run ends with wf1 waiting and its remove stalls past its lease:
                            n2 leases and runs it meanwhile, so the stale remove meets n2's live
                            lease (_sqlite: the same on SQLite, its SQL's version guards)
    signals_while_due       a workflow that needs eight approvals, signalled eight times in a row
                            while its row is due: a signal lands between a fetch loop's read of
                            the row and its fetch
    busy_sqlite_nodes       two SQLite nodes (one worker each) with six workflows whose handlers
                            span renewals, store calls taking 5 ms: a woken run competes with
                            the node's starts, signals and fetches for its one thread

Each comes with the tests' short settings and the defaults (`Settings()`); `store` is
`memory` (the twin) or `sqlite` (a file under the trace folder, or a temporary one).

Besides the run monitor's invariant (no workflow run twice at once), every scenario checks at
each store write the half of a step that lives in memory and that no trace line shows: an
in-memory schedule's backstop write and a fetch's lease are made only when no copy of the
workflow is queued on that node (`tla/Engine.tla`'s ScheduleInMemory and Fetch; a trace
explains a copy that is there by the taker's having taken it, so only this check sees a
check-write-push made without the workflow's lock).
"""

from __future__ import annotations

import tempfile
import contextlib
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from impl.engine.backend import MemoryBackend
from impl.engine.effects import Sleep
from impl.engine.errors import UnknownWorkflow
from impl.engine.export import write_traces
from impl.engine.faults import Stalls
from impl.engine.model import COMPLETED, FAILED, WORKFLOW_OWNER, Gates, Settings, TaskKey
from impl.engine.node import Node, WorkflowFailed
from impl.engine.store import Store
from impl.engine.threads import NodeRuntime, workers_for
from impl.engine.urls import open_backend

SHORT = Settings(lease_ms=200, renew_interval_ms=60, poll_interval_ms=20, result_poll_interval_ms=20,
                 result_polling_time_limit_ms=5_000)
DEFAULT = Settings()
_WAIT_S = 0.005  # the scenario's thread looks at its callers' boxes this often (virtual time)
_PATIENCE_MS = 120_000  # virtual: a caller unanswered by then fails the scenario


@dataclass(frozen=True)
class EngineScenario:
    """One scenario's shape: which nodes, how many workflows and how long their handlers run,
    whose calls, which settings, gates and store, and how long a store call takes."""

    name: str
    workflows: int = 1
    signals: int = 1  # one caller's signals to each workflow, one after another
    signal_node: str = "n1"
    signal_delay_ms: int = 0  # the signalling caller waits this long (virtual) before its first signal
    needs: int = 1  # the approvals a workflow waits for (every signal, `signals`, keeps it going)
    nodes: tuple[str, ...] = ("n1",)
    work_ms: int = 0  # each handler run's length (the engine sleeps it, renewing its lease)
    stall_ms: int = 0  # wf1's finishing call stalls this long (past its lease)
    # The first node's start of wf1 stalls this long between its two writes, and the last node
    # starts wf1 again meanwhile: it finds the start stranded (an instance, no row). With
    # `crash_in_start` the first node crashes inside the stall.
    start_stall_ms: int = 0
    # (workflow, call, ms): whichever node makes that call of the workflow first stalls this long
    # before it (a stale retry or dead letter, once its lease lapsed, meets another node's lease).
    stall_calls: tuple[tuple[str, str, int], ...] = ()
    crash_in_start: bool = False
    # Each workflow's type, in order (the rest are approvals): `flaky` fails its first delivery
    # (a retry), `poison` every one (retries, then a dead letter and a FAILED instance).
    kinds: tuple[str, ...] = ()
    cost_ms: float = 0  # each store call's time (virtual): the node's other fibers go on meanwhile
    settings: Settings = SHORT
    store: str = "memory"
    gates: Gates = Gates()

    def __call__(self, sync: Any) -> dict[str, Any]:
        return run(self, sync)


@contextlib.contextmanager
def _backend(sc: EngineScenario, sync: Any) -> Iterator[Any]:
    """The run's store: the twin, or a SQLite file in the trace folder (kept with the traces)
    or in a temporary folder (removed after the run)."""
    if sc.store == "memory":
        yield MemoryBackend()
        return
    if getattr(sync, "trace_dir", None):
        folder = Path(sync.trace_dir)
        folder.mkdir(parents=True, exist_ok=True)
        yield open_backend(f"sqlite:///{folder / 'engine.db'}")
        return
    with tempfile.TemporaryDirectory(prefix="interleave-") as tmp:
        backend = open_backend(f"sqlite:///{Path(tmp) / 'engine.db'}")
        try:
            yield backend
        finally:
            backend.close()


class StepGuards:
    """`store`, checking the in-memory guard of the steps it commits for a node: no copy of the
    workflow queued on that node at an in-memory schedule's write or a fetch's lease. What it
    saw wrong is kept in `broken` (the scenario's invariant raises it at the next point)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.queues: dict[str, Any] = {}  # node name -> its ExecutionQueue
        self.broken: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def schedule(self, node: str, now: Any, request: Any, *, in_memory: bool = False,
                 honour_check: bool = True) -> Any:
        if in_memory:
            self._no_copy(node, request.task_id, "schedule_in_memory", "ScheduleInMemory")
        return self._store.schedule(node, now, request, in_memory=in_memory, honour_check=honour_check)

    def fetch(self, node: str, now: Any, seen: Any) -> Any:
        queued = self._queued(node, seen.task_id)
        leased = self._store.fetch(node, now, seen)
        if leased is not None and queued:  # a fetch that leased nothing took no step
            self._broken(node, seen.task_id, "fetch", "Fetch")
        return leased

    def _queued(self, node: str, wf: str) -> bool:
        queue = self.queues.get(node)
        return queue is not None and queue.contains(wf)

    def _no_copy(self, node: str, wf: str, op: str, action: str) -> None:
        if self._queued(node, wf):
            self._broken(node, wf, op, action)

    def _broken(self, node: str, wf: str, op: str, action: str) -> None:
        self.broken.append(f"{node}'s {op} of {wf} was made with a copy of {wf} queued on {node} "
                               f"(tla/Engine.tla's {action} needs none: the check, the write and the push "
                               "are one step under the workflow's lock)")

    def check(self) -> None:
        """Raise what was seen wrong (an invariant of the scenario)."""
        if self.broken:
            raise AssertionError(f"StepGuards: {self.broken[0]}")


def _signal_when_there(node: Node, wf: str, times: int, delay_ms: int = 0) -> Generator[Any, Any, Any]:
    """A caller signalling a workflow that another caller is starting, `times` times, one
    call after another (the spec's callers make one call at a time per node and workflow),
    the first after `delay_ms`: it tries again until the instance exists (what a caller does
    on `UnknownWorkflow`)."""
    if delay_ms:
        yield Sleep(delay_ms)
    for _ in range(times):
        while True:
            try:
                yield from node.signal(wf, "approve", {"by": node.name})
                break
            except UnknownWorkflow:
                yield Sleep(5)


def _wait(sync: Any, boxes: list[dict[str, Any]], what: str) -> None:
    _until(sync, lambda: all(b["done"] for b in boxes), f"{what}: a caller was not answered")


def _until(sync: Any, done: Callable[[], bool], failure: str) -> None:
    deadline = sync.clock.now_ms() + _PATIENCE_MS
    while not done():
        if sync.clock.now_ms() > deadline:
            raise AssertionError(f"{failure} within {_PATIENCE_MS} ms (virtual)")
        sync.sleep(_WAIT_S)


def _quiescent(store: Store, wfs: list[str], nodes: dict[str, Node], monitors: list[Any],
               runtimes: dict[str, NodeRuntime]) -> bool:
    return (not any(rt.stalled() for rt in runtimes.values())  # a stalled call is still to come
            and all((t := store.get_task(TaskKey(WORKFLOW_OWNER, wf))) is None or t.status == FAILED for wf in wfs)
            and not any(len(n.queue) for n in nodes.values())
            and not any(m.running() for m in monitors))


def run(sc: EngineScenario, sync: Any) -> dict[str, Any]:
    """Run scenario `sc` on `sync`'s threads; returns what each caller was told."""
    with _backend(sc, sync) as backend:
        return _run(sc, sync, backend)


def _run(sc: EngineScenario, sync: Any, backend: Any) -> dict[str, Any]:
    store = Store(backend, lease_ms=sc.settings.lease_ms, bump=sc.gates.bump_task_version_on_honored_lease)
    guards = StepGuards(store)
    shared = sync.calls(guards, "store", cost_ms=sc.cost_ms)  # every transaction a point
    nodes = {n: Node(n, shared, sync.clock, gates=sc.gates, settings=sc.settings, sync=sync) for n in sc.nodes}
    guards.queues = {name: node.queue for name, node in nodes.items()}
    monitors = [n.monitor for n in nodes.values()]
    sync.invariant(lambda: _one_run_at_a_time(monitors))
    sync.invariant(guards.check)
    wfs = [f"wf{i + 1}" for i in range(sc.workflows)]
    sync.observe(lambda: _describe(store, wfs, monitors))
    stalls = _stall_plan(sc)
    every = bool(sc.stall_calls)  # one plan for every node: whoever makes the call first stalls
    runtimes = {n: NodeRuntime(node, stalls if every or n == sc.nodes[0] else None, workers=workers_for(backend))
                for n, node in nodes.items()}
    for rt in runtimes.values():
        rt.start()
    first = nodes[sc.nodes[0]]
    signaller = nodes[sc.signal_node]
    input: dict[str, Any] = {"work_ms": sc.work_ms} if sc.work_ms else {}
    if not sc.signals:
        input["approved"] = True  # no signal comes: the first run completes it
    if sc.needs > 1:
        input["needs"] = sc.needs
    kind = {wf: sc.kinds[i] if i < len(sc.kinds) else "approval" for i, wf in enumerate(wfs)}
    starts = {wf: runtimes[first.name].submit(first.start(wf, kind[wf], input), f"start {wf}") for wf in wfs}
    signals = [runtimes[signaller.name].submit(_signal_when_there(signaller, wf, sc.signals, sc.signal_delay_ms), f"signals {wf}")
               for wf in wfs if sc.signals]
    asked = {wf: first for wf in wfs}  # the node whose start answered each workflow's caller
    if sc.start_stall_ms or sc.crash_in_start:
        assert stalls is not None
        _until(sync, lambda: "wf1" in stalls.stalled, "the start did not reach its second write")
        if sc.crash_in_start:
            _crash(first, runtimes.pop(first.name), ["wf1"], sync)
            del nodes[first.name]
        again = nodes[sc.nodes[-1]]
        starts["wf1"] = runtimes[again.name].submit(again.start("wf1", "approval", input), "start wf1 again")
        asked["wf1"] = again
    _wait(sync, [*starts.values(), *signals], "starts and signals")
    told: dict[str, Any] = {f"start {wf}": _told(box) for wf, box in starts.items()}
    results = {wf: runtimes[asked[wf].name].submit(asked[wf].result(box["value"]), f"result {wf}")
               for wf, box in starts.items() if "value" in box}
    _wait(sync, list(results.values()), "results")
    told.update({f"result {wf}": _told(box) for wf, box in results.items()})
    # Drained before the stop: no row left (but dead letters), no copy queued, no run going on (the fetch loops
    # only). The trace says so, and TraceEngine then requires every caller answered, every
    # signal scheduled and the work done at its end.
    _until(sync, lambda: _quiescent(store, wfs, nodes, monitors, runtimes), "the run did not drain (a row, a queued copy or a run left)")
    for rt in runtimes.values():
        rt.stop()
    # A poison workflow's caller is told it failed (WorkflowFailed): that is its answer, not a
    # fault of the runtime (what each caller was told is checked below and by the trace).
    errors = [repr(e) for rt in runtimes.values() for e in rt.errors if not isinstance(e, WorkflowFailed)]
    if errors:
        raise AssertionError(f"the runtimes' fibers failed: {errors}")
    wrong = {wf: told[f"result {wf}"] for wf in results
             if told[f"result {wf}"] != ("error WorkflowFailed" if kind[wf] == "poison" else "value")}
    if wrong:
        raise AssertionError(f"callers told the wrong result: {wrong}")
    unfinished = {wf: inst.status if inst else None for wf in wfs
                  if (inst := store.get_instance(wf)) is None or inst.status != (FAILED if kind[wf] == "poison" else COMPLETED)}
    if unfinished:
        raise AssertionError(f"workflows not completed: {unfinished}")
    if getattr(sync, "trace_dir", None):
        write_traces(backend.read_events(), Path(sync.trace_dir), gates=sc.gates, settings=sc.settings,
                     nodes=list(sc.nodes), run=sc.name, drained=True)
    return told


def _stall_plan(sc: EngineScenario) -> Stalls | None:
    """The scenario's injected stalls: its calls' (`stall_calls`), or wf1's start between its
    two writes (with a crash, a stall no one outlives), or wf1's finishing call; or none."""
    if sc.stall_calls:
        return Stalls({wf: ms for wf, _, ms in sc.stall_calls}, {wf: (op,) for wf, op, _ in sc.stall_calls})
    if sc.start_stall_ms or sc.crash_in_start:
        return Stalls({"wf1": _PATIENCE_MS if sc.crash_in_start else sc.start_stall_ms}, {"wf1": ("schedule_in_memory",)})
    return Stalls({"wf1": sc.stall_ms}) if sc.stall_ms else None


def _crash(node: Node, runtime: NodeRuntime, wfs: list[str], sync: Any) -> None:
    """`node` crashes: a crash line in each workflow it held a call of, its runtime's threads
    stop (its fibers end where they stand) and its memory is lost. It does not come back."""
    for wf in wfs:
        node.store.line(node.name, sync.clock.now_ms, wf, "crash", "injected")
    runtime.stop()
    node.crash()


def _told(box: dict[str, Any]) -> str:
    if "error" in box:
        return f"error {type(box['error']).__name__}"
    return "stopped" if box.get("stopped") else "value"


def _describe(store: Store, wfs: list[str], monitors: list[Any]) -> str:
    """Each workflow's instance and task row, and its runs in progress (a failure's schedule
    prints it after each step)."""
    parts = []
    running: dict[str, int] = {}
    for m in monitors:
        for wf, k in m.running().items():
            running[wf] = running.get(wf, 0) + k
    for wf in wfs:
        inst = store.get_instance(wf)
        task = store.get_task(TaskKey(WORKFLOW_OWNER, wf))
        i = f"{inst.status} v{inst.version}" if inst else "-"
        t = f"{task.status} v{task.version} until {task.run_after}" if task else "no row"
        parts.append(f"{wf} {i}, {t}, {running.get(wf, 0)} running")
    return "; ".join(parts)


def _one_run_at_a_time(monitors: list[Any]) -> None:
    running: dict[str, int] = {}
    for m in monitors:
        for wf, k in m.running().items():
            running[wf] = running.get(wf, 0) + k
    double = {wf: k for wf, k in running.items() if k > 1}
    if double:
        raise AssertionError(f"NoOverlappingRuns: {double} run at once")


def _named(**kw: Any) -> Callable[[Any], dict[str, Any]]:
    return EngineScenario(**kw)


start_signal_fetch = _named(name="start_signal_fetch")
start_signal_fetch_defaults = _named(name="start_signal_fetch_defaults", settings=DEFAULT)
start_signal_fetch_sqlite = _named(name="start_signal_fetch_sqlite", store="sqlite")
start_signal_fetch_in_memory = _named(name="start_signal_fetch_in_memory", cost_ms=5,
                                      gates=Gates(force_signal_workflow_exec_in_scheduler=False))
renewals_under_signals = _named(name="renewals_under_signals", signals=3, work_ms=500, cost_ms=1)
renewals_under_signals_defaults = _named(name="renewals_under_signals_defaults", signals=3, work_ms=2_500,
                                         cost_ms=1, settings=DEFAULT)
two_nodes = _named(name="two_nodes", nodes=("n1", "n2"), signal_node="n2", signals=2, work_ms=500,
                   stall_ms=300, cost_ms=1)
two_nodes_defaults = _named(name="two_nodes_defaults", nodes=("n1", "n2"), signal_node="n2", signals=2,
                            work_ms=2_500, stall_ms=1_500, cost_ms=1, settings=DEFAULT)
busy_sqlite_nodes = _named(name="busy_sqlite_nodes", nodes=("n1", "n2"), signal_node="n2", workflows=6, signals=1,
                           work_ms=500, cost_ms=5, store="sqlite")
stranded_start = _named(name="stranded_start", nodes=("n1", "n2"), signals=0, crash_in_start=True, cost_ms=1)
stalled_start = _named(name="stalled_start", nodes=("n1", "n2"), signals=0, start_stall_ms=300, work_ms=500, cost_ms=1)
failing = _named(name="failing", nodes=("n1", "n2"), workflows=2, signals=0, kinds=("flaky", "poison"), cost_ms=1)
failing_stale = _named(name="failing_stale", nodes=("n1", "n2"), workflows=2, signals=0, kinds=("flaky", "poison"),
                       cost_ms=1, stall_calls=(("wf1", "reschedule_retry", 300), ("wf2", "mark_failed", 300)))
stranded_start_defaults = _named(name="stranded_start_defaults", nodes=("n1", "n2"), signals=0, crash_in_start=True,
                                 cost_ms=1, settings=DEFAULT)
signals_in_memory = _named(name="signals_in_memory", signals=3, work_ms=500, cost_ms=1,
                           gates=Gates(force_signal_workflow_exec_in_scheduler=False))
signals_in_memory_two_nodes = _named(name="signals_in_memory_two_nodes", nodes=("n1", "n2"), signals=2, work_ms=500,
                                     cost_ms=1, gates=Gates(force_signal_workflow_exec_in_scheduler=False))
# n1's run ends with the workflow waiting (no signal yet) and its remove stalls past the
# lease: n2 leases the row and runs it (a handler as long as n1's) while n1's stale remove
# meets n2's live lease (a row another node leased since). The signal comes much later.
stale_remove = _named(name="stale_remove", nodes=("n1", "n2"), signal_node="n2", signal_delay_ms=1_500, work_ms=500,
                      stall_ms=300, cost_ms=1)
stale_remove_sqlite = _named(name="stale_remove_sqlite", nodes=("n1", "n2"), signal_node="n2", signal_delay_ms=1_500,
                             work_ms=500, stall_ms=300, cost_ms=1, store="sqlite")
# A workflow waiting for eight approvals, signalled eight times in a row from n2 once its start's
# run is over (runs are instant): each signal's row is due at once and both nodes' fetch loops
# race for it, so a signal lands between a fetch loop's read of the due row and its fetch, which
# meets a changed row (another version, still due).
signals_while_due = _named(name="signals_while_due", nodes=("n1", "n2"), signal_node="n2", signals=8, needs=8,
                           signal_delay_ms=50, cost_ms=1)
