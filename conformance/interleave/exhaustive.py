"""Bounded exhaustive exploration: every schedule with at most `bound` preemptions, less those
that sleep sets prove equivalent to one already run (stateless search, as CHESS does).

Each run replays a prefix of choices, then goes on without preempting. After it, the deepest
step with a choice not yet tried (enabled, within the bound, not asleep) is the next prefix's
end. Sleep sets (Godefroid): once a thread's step was tried at a state, the later branches of
that state keep it asleep until a step that does not commute with it runs. Two steps commute
when they are points on different objects (locks, events, threads, one store): a reduction
that holds for code whose shared state is guarded by points (data-race free).

The bounded space's size is estimated before the search (Knuth's estimator: the mean, over
random runs within the bound, of the product of the number of choices at each step), and the
search says how many schedules it ran, how many branches sleep sets cut, and whether it ended.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from conformance.interleave.runtime import Controller, Run, Thread


@dataclass
class _Node:
    enabled: tuple[str, ...]
    current: str | None  # the thread that reached the point, if it could go on
    ops: dict[str, tuple[str, str]]  # each enabled thread's pending point: (kind, object)
    preempts: int  # preemptions before this step
    chosen: str
    done: set[str] = field(default_factory=set)
    sleep: set[str] = field(default_factory=set)


def _independent(a: tuple[str, str], b: tuple[str, str]) -> bool:
    return a[1] != b[1]


def _allowed(preempts: int, current: str | None, v: str, bound: int) -> bool:
    return preempts + (current is not None and v != current) <= bound


def _node_of(ctl: Controller, enabled: list[Thread]) -> tuple[tuple[str, ...], str | None, dict[str, tuple[str, str]]]:
    """The enabled threads' names, the one that reached the point (if enabled), and each one's
    pending point as (kind, object)."""
    names = tuple(t.name for t in enabled)
    cur = ctl.current.name if ctl.current is not None and ctl.current in enabled else None
    ops = {t.name: (t.point.kind, t.point.obj) if t.point else ("?", t.name) for t in enabled}
    return names, cur, ops


class _Guided:
    """One run of the search: the prefix, then no preemption (sleeping threads skipped)."""

    def __init__(self, search: "Exhaustive", prefix: list[str]) -> None:
        self.search, self.prefix = search, prefix
        self.pruned = False

    def begin(self) -> None:
        self._i = 0
        self._preempts = 0

    def choose(self, ctl: Controller, enabled: list[Thread]) -> Thread:
        i, self._i = self._i, self._i + 1
        stack = self.search.stack
        names, cur, ops = _node_of(ctl, enabled)
        by_name = {t.name: t for t in enabled}
        if i < len(self.prefix):
            node = stack[i]
            if node.enabled != names:
                ctl.diverged(f"step {i} enabled {', '.join(names)}, not {', '.join(node.enabled)} as before: "
                             "the scenario is not deterministic")
            pick = self.prefix[i]
        else:
            sleep: set[str] = set()
            if i > 0:
                prev = stack[i - 1]
                c = prev.chosen
                sleep = {v for v in (prev.sleep | prev.done) - {c}
                         if v in names and v in prev.ops and _independent(prev.ops[v], prev.ops[c])}
            free = [v for v in ([cur] if cur else []) + [n for n in names if n != cur]
                    if v not in sleep and _allowed(self._preempts, cur, v, self.search.bound)]
            if not free or self.pruned:
                # Every choice here is asleep or past the bound: this path's rest is covered by
                # another; it is run to its end without branching.
                self.pruned = True
                pick = cur or names[0]
                node = _Node(names, cur, ops, self._preempts, pick, done=set(names), sleep=set())
            else:
                pick = free[0]
                node = _Node(names, cur, ops, self._preempts, pick, done={pick}, sleep=sleep)
            stack.append(node)
        if cur is not None and pick != cur:
            self._preempts += 1
        return by_name[pick]

    def describe(self) -> str:
        return f"exhaustive --bound {self.search.bound}"


class _Probe:
    """A random run within the bound that multiplies up its number of choices (Knuth)."""

    def __init__(self, seed: int, bound: int) -> None:
        self.seed, self.bound = seed, bound

    def begin(self) -> None:
        self._rng = random.Random(self.seed)
        self._preempts = 0
        self.product = 1

    def choose(self, ctl: Controller, enabled: list[Thread]) -> Thread:
        cur = ctl.current if ctl.current in enabled else None
        allowed = [t for t in enabled if _allowed(self._preempts, cur and cur.name, t.name, self.bound)]
        self.product *= len(allowed)
        pick = allowed[self._rng.randrange(len(allowed))]
        if cur is not None and pick is not cur:
            self._preempts += 1
        return pick

    def describe(self) -> str:
        return f"probe --seed {self.seed}"


class Exhaustive:
    """The search's state between runs: `next()` gives the strategy of the next run (None once
    the bounded space is covered), `record(run)` takes its result."""

    def __init__(self, bound: int = 2) -> None:
        if bound < 0:
            raise ValueError(f"a preemption bound is at least 0, not {bound}")
        self.bound = bound
        self.stack: list[_Node] = []
        self.runs = 0
        self.pruned = 0
        self.exhausted = False
        self._prefix: list[str] | None = []
        self._last: _Guided | None = None

    def next(self) -> _Guided | None:
        if self._prefix is None:
            return None
        self._last = _Guided(self, self._prefix)
        return self._last

    def record(self, run: Run) -> None:
        self.runs += 1
        if self._last is not None and self._last.pruned:
            self.pruned += 1
        del self.stack[len(run.steps):]  # a failed run stops early: its later nodes were never made
        self._prefix = self._backtrack()
        if self._prefix is None:
            self.exhausted = True

    def _backtrack(self) -> list[str] | None:
        for i in range(len(self.stack) - 1, -1, -1):
            node = self.stack[i]
            for v in ([node.current] if node.current else []) + list(node.enabled):
                if v in node.done or v in node.sleep or not _allowed(node.preempts, node.current, v, self.bound):
                    continue
                node.done.add(v)
                node.chosen = v
                del self.stack[i + 1:]
                return [n.chosen for n in self.stack]
        return None

    def describe(self) -> str:
        state = "covered" if self.exhausted else "not covered"
        return (f"preemption bound {self.bound}: {self.runs} schedules run, {self.pruned} ended early by "
                f"sleep sets; the bounded space is {state}")


def estimate(products: list[int]) -> float:
    """Knuth's estimate of a tree's number of leaves from random probes' choice products."""
    return sum(products) / len(products) if products else 0.0


def probe(seed: int, bound: int) -> _Probe:
    """A strategy for one Knuth probe of the space within `bound` (its `product` after the run)."""
    return _Probe(seed, bound)
