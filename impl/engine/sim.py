"""The deterministic simulation driver: nodes as objects in one process, one step at a time.

Every node's activities are fibers (`effects.py`). At each step the simulation lists what can
happen now, in a fixed order, and a seeded `random.Random` picks one:

    - a fiber whose next effect is a `Call` (a store transaction or read): run it;
    - a fiber whose `Sleep` is over: wake it;
    - a node with a task in its queue: the taker takes it and starts a run fiber (a copy a
      planned take stall holds back waits, and the node's other copies are taken).

The virtual clock moves only when nothing can happen now, to the earliest wake-up, so no fiber
ever runs late (the model's `NoLongPauses`) unless a pause or crash is injected. The same seed
and the same calls replay the same run and record the same trace, byte for byte.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from impl.clock import VirtualClock
from impl.engine.backend import Backend, MemoryBackend
from impl.engine.effects import Call, Fiber, Sleep
from impl.engine.errors import EngineBug
from impl.engine.faults import Stalls, stall_line
from impl.engine.model import Gates, Settings
from impl.engine.monitor import RunMonitor
from impl.engine.node import Node
from impl.engine.store import Store
from impl.engine.workflows import DEFAULT_REGISTRY, Registry


@dataclass
class SimFiber:
    """A fiber in the simulation: its node, its pending effect, and how it ended."""

    node: str
    label: str
    gen: Fiber[Any]
    ident: int
    effect: Call | Sleep | None = None
    wake_at: int = 0
    done: bool = False
    value: Any = None
    error: BaseException | None = None
    on_done: Callable[[SimFiber], None] | None = field(default=None, repr=False)
    stalled: bool = False  # its call waits out an injected stall (its window's end is logged when made)


class Simulation:
    """Nodes sharing one store, stepped by a seeded scheduler under a virtual clock.

    >>> sim = Simulation(seed=1)
    >>> h = sim.spawn("n1", sim.nodes["n1"].start("wf1", "approval", {}), "start")
    >>> sim.run_until(lambda: h.done)
    True
    """

    def __init__(
        self,
        backend: Backend | None = None,
        *,
        nodes: tuple[str, ...] = ("n1", "n2"),
        seed: int = 0,
        gates: Gates | None = None,
        settings: Settings | None = None,
        workflows: Registry = DEFAULT_REGISTRY,
        fetch_loops: bool = True,
        start_ms: int = 0,
        decisions: Any = None,
        node_backends: Mapping[str, Backend] | None = None,
        stalls: Stalls | None = None,
        take_stalls: dict[str, int] | None = None,
    ) -> None:
        self.gates = gates or Gates()
        self.settings = settings or Settings()
        self.backend = backend or MemoryBackend()
        bump = self.gates.bump_task_version_on_honored_lease

        def store_on(b: Backend) -> Store:
            if decisions is None:
                return Store(b, lease_ms=self.settings.lease_ms, bump=bump)
            return Store(b, lease_ms=self.settings.lease_ms, bump=bump, decisions=decisions)

        self.store = store_on(self.backend)
        # `node_backends`: each node's own connection to the one store (as separate processes
        # would have); `backend` is then one of them, used for reads.
        stores = {n: store_on(b) for n, b in (node_backends or {}).items()}
        self.clock = VirtualClock(start_ms)
        self.rng = random.Random(seed)
        self.monitor = RunMonitor()
        # Pauses whose windows are open (fault lines, faults.py): node -> the workflows whose
        # traces got its start line; its end line goes there once the pause is over.
        self._pause_lines: dict[str, set[str]] = {}
        # Injected stalls of a thread before some calls (faults.Stalls): the fiber waits, its
        # node goes on.
        self.stalls = stalls
        self.node_names = nodes
        # Planned stalls of a taker on one copy (wf -> ms): the first time a copy of wf is
        # queued on a node, that copy is not taken for so long (the thread meant for it is
        # held up), so it waits queued, past its backstop lease if the stall is longer; the
        # node's other copies are taken as usual.
        self.take_stalls = dict(take_stalls or {})
        self.held_copies: dict[tuple[str, str], int] = {}  # (node, wf) -> taken no sooner
        self.nodes = {
            n: Node(n, stores.get(n, self.store), self.clock, gates=self.gates, settings=self.settings, workflows=workflows,
                    monitor=self.monitor)
            for n in nodes
        }
        self.fibers: list[SimFiber] = []
        self.paused_until: dict[str, int] = {n: 0 for n in nodes}
        self.crashed: set[str] = set()
        self.steps = 0
        self.crashes = 0  # node crashes injected so far (per workflow, in `faults`)
        self.errors: list[tuple[str, BaseException]] = []
        self._ids = 0
        self._fetch_loops = fetch_loops
        for n in nodes:
            if fetch_loops:
                self.spawn(n, self.nodes[n].fetch_loop(), "fetch_loop")

    # -- fibers ----------------------------------------------------------------------------

    def spawn(self, node: str, gen: Fiber[Any], label: str = "") -> SimFiber:
        """Add a fiber on `node`; it takes its first step when the scheduler picks it."""
        self._ids += 1
        f = SimFiber(node=node, label=label, gen=gen, ident=self._ids)
        self._advance(f, None, first=True)
        self.fibers.append(f)
        return f

    def _advance(self, f: SimFiber, value: Any, *, first: bool = False) -> None:
        try:
            effect = next(f.gen) if first else f.gen.send(value)
        except StopIteration as stop:
            f.done, f.value = True, stop.value
            return
        except Exception as exc:  # a fiber's error is recorded, not swallowed: tests assert on it
            f.done, f.error = True, exc
            self.errors.append((f.label, exc))
            return
        f.effect = effect
        if isinstance(effect, Sleep):
            f.wake_at = self.clock.now_ms() + effect.ms
        elif self.stalls is not None:
            # A stalled thread: its call is made only once the stall is over, a window its
            # fault lines show (faults.stall_line).
            held_up = self.stalls.before(effect)
            f.wake_at = self.clock.now_ms() + held_up
            if held_up > 0:
                f.stalled = True
                stall_line(self.nodes[f.node], effect, "start")

    def _usable(self, node: str) -> bool:
        return node not in self.crashed and self.paused_until[node] <= self.clock.now_ms()

    def _choices(self) -> list[tuple[str, Any]]:
        now = self.clock.now_ms()
        choices: list[tuple[str, Any]] = []
        for f in self.fibers:
            if f.done or not self._usable(f.node):
                continue
            if f.wake_at <= now and isinstance(f.effect, Call | Sleep):
                choices.append(("fiber", f))
        for n in self.node_names:
            if self._usable(n) and len(self.nodes[n].queue) and self._takeable(n, now):
                choices.append(("take", n))
        return choices

    def _held(self, node: str, now: int) -> Callable[[str], bool]:
        """Whether a copy of a workflow queued on `node` is held back at `now` (a take stall)."""
        return lambda wf: self.held_copies.get((node, wf), 0) > now

    def _takeable(self, node: str, now: int) -> bool:
        """Whether `node` has a queued copy its taker may take now (holding back a copy whose
        planned take stall begins now)."""
        ids = self.nodes[node].queue.ids()
        if not self.take_stalls and not self.held_copies:
            return True
        for wf in sorted(ids & self.take_stalls.keys()):
            self.held_copies[(node, wf)] = now + self.take_stalls.pop(wf)
            self.nodes[node].store.line(node, now, wf, "stall", "start")  # the taker is held up on it
        held = self._held(node, now)
        return any(not held(wf) for wf in ids)

    def _next_wake(self) -> int | None:
        times = [f.wake_at for f in self.fibers if not f.done and f.node not in self.crashed
                 and (isinstance(f.effect, Sleep) or (isinstance(f.effect, Call) and f.wake_at > self.clock.now_ms()))]
        times += [t for n, t in self.paused_until.items() if t > self.clock.now_ms() and n not in self.crashed]
        times += [t for (n, wf), t in self.held_copies.items()
                  if t > self.clock.now_ms() and n not in self.crashed and self.nodes[n].queue.contains(wf)]
        times = [max(t, self.clock.now_ms()) for t in times]
        return min(times) if times else None

    def choices(self) -> list[tuple[str, Any]]:
        """What can happen now, in a fixed order: `("fiber", f)` or `("take", node)`."""
        return self._choices()

    def step(self, pick: Callable[[int], int] | None = None) -> bool:
        """Take one step (or move the clock to the next wake-up); False when nothing is left.

        `pick(n)` chooses among the `n` things that can happen now (default: the seeded
        random); a Hypothesis test passes its own, so it can explore and shrink schedules.
        """
        self._pauses_over()
        choices = self._choices()
        if not choices:
            wake = self._next_wake()
            if wake is None:
                return False
            if wake > self.clock.now_ms():
                self.clock.advance(wake - self.clock.now_ms())
            else:
                # Something is due now yet nothing is runnable: only a paused node; move on.
                self.clock.advance(1)
            return True
        index = pick(len(choices)) if pick is not None else self.rng.randrange(len(choices))
        kind, what = choices[index]
        self.steps += 1
        if kind == "take":
            node = self.nodes[what]
            item = node.queue.take_first(self._held(what, self.clock.now_ms())) if self.held_copies else node.take()
            if item is None:
                raise EngineBug(f"{what}'s queue was listed as non-empty but gave nothing")
            if self.held_copies.pop((what, item.task.task_id), None) is not None:
                node.store.line(what, self.clock.now_ms(), item.task.task_id, "stall", "end")  # taken at last
            self.spawn(what, node.run(item), f"run:{item.task.task_id}")
        else:
            f: SimFiber = what
            effect = f.effect
            if f.stalled:
                f.stalled = False
                stall_line(self.nodes[f.node], effect, "end")
            value = effect.fn() if isinstance(effect, Call) else None
            self._advance(f, value)
        self.fibers = [f for f in self.fibers if not f.done]
        return True

    def quiescent(self) -> bool:
        """Whether nothing is left to do but poll: no fiber but the fetch loops (every caller,
        signal and run has ended), no copy queued or held back, no node paused."""
        now = self.clock.now_ms()
        return (all(f.done or f.label == "fetch_loop" for f in self.fibers)
                and not any(len(node.queue) for node in self.nodes.values())
                and not self.held_copies and all(t <= now for t in self.paused_until.values()))

    def step_where(self, want: Callable[[str, Any], bool]) -> bool:
        """Take the first of the current choices that `want(kind, what)` accepts; False if none.

        This is how a test or a replay picks a named step (a node's take, one fiber's next
        effect) instead of an index: `sim.step_where(lambda k, w: k == "take" and w == "n1")`.
        """
        for i, (kind, what) in enumerate(self._choices()):
            if want(kind, what):
                self.step(lambda n, i=i: i)
                return True
        return False

    def run_until(self, done: Callable[[], bool], max_steps: int = 100_000) -> bool:
        """Step until `done()` holds (True) or nothing is left or `max_steps` pass (False)."""
        for _ in range(max_steps):
            if done():
                return True
            if not self.step():
                return done()
        return done()

    # -- faults ----------------------------------------------------------------------------

    def crash(self, node: str, restart: bool = True) -> None:
        """Kill `node`: its fibers, queue, runs and futures are lost; restart it empty.

        The crash is a fault line in every workflow the node held a copy, a run, a call or a
        caller's future of (a crash of a node holding nothing of a workflow changes nothing in
        that workflow's trace)."""
        self.crashes += 1
        for wf in sorted(self._held_by(node, callers=True)):
            self.store.line(node, self.clock.now_ms(), wf, "crash", "injected")
        self._pause_lines.pop(node, None)  # its pause is over: it is gone
        for f in self.fibers:
            if f.node == node and not f.done:
                f.gen.close()
                f.done = True
        self.nodes[node].crash()
        self.held_copies = {k: t for k, t in self.held_copies.items() if k[0] != node}  # its copies are gone
        if restart:
            if self._fetch_loops:
                self.spawn(node, self.nodes[node].fetch_loop(), "fetch_loop")
        else:
            self.crashed.add(node)

    def cancel(self, f: SimFiber) -> None:
        """End one fiber where it stands (a caller that fails between its two writes)."""
        if not f.done:
            f.gen.close()
            f.done = True
        self.fibers = [g for g in self.fibers if not g.done]

    def pause(self, node: str, ms: int) -> None:
        """Freeze `node` for `ms` of virtual time (a GC pause, a stalled caller): a fault window in
        the trace of every workflow it holds a copy or a run of (its start line now, its end line
        once the pause is over)."""
        self.paused_until[node] = max(self.paused_until[node], self.clock.now_ms() + ms)
        fresh = self._held_by(node) - self._pause_lines.get(node, set())
        for wf in sorted(fresh):
            self.store.line(node, self.clock.now_ms(), wf, "pause", "start")
        self._pause_lines.setdefault(node, set()).update(fresh)

    def _held_by(self, node: str, callers: bool = False) -> set[str]:
        """The workflows `node` holds a copy (queued or held back) or a run of (whose lease a
        pause may let lapse); with `callers`, also a call in flight or a caller's future of
        (what its crash loses)."""
        held = set(self.nodes[node].queue.ids())
        kinds = ("run:", "start:", "signal:") if callers else ("run:",)
        held |= {f.label.split(":", 1)[1] for f in self.fibers if f.node == node and not f.done and f.label.startswith(kinds)}
        return held | self.nodes[node].awaited() if callers else held

    def _pauses_over(self) -> None:
        """Log the end line of every pause window whose pause is over."""
        now = self.clock.now_ms()
        for node in sorted(n for n in self._pause_lines if self.paused_until[n] <= now):
            for wf in sorted(self._pause_lines.pop(node)):
                self.store.line(node, now, wf, "pause", "end")
