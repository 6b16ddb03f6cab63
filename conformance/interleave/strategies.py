"""Strategies: which enabled thread goes on at each point of a run.

- `RandomWalk(seed)`: uniformly among the enabled threads.
- `PCT(seed, depth, steps)`: probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010):
  threads get random distinct priorities, the highest enabled one runs, and at `depth - 1`
  random steps the running thread drops below every other. Its k (`steps`) counts the steps
  with a choice (two threads enabled or more): on a virtual clock most steps have none. A bug of depth d (d ordering
  constraints) is found by one run with probability at least 1 / (n * k^(d-1)).
- `Replay(schedule)`: the threads a recorded run chose, step by step (a failure's replay).
- `Drawn(choices)`: the choices of a list Hypothesis drew, 0 being the thread that reached the
  point, so that a failing schedule shrinks towards fewer preemptions.
- Bounded exhaustive exploration is `exhaustive.py`.

A strategy never reads the wall clock or a global random source: the same seed gives the same
choices, and so the same run.
"""

from __future__ import annotations

import random
from conformance.interleave.runtime import Controller, Thread


def _current_first(ctl: Controller, enabled: list[Thread]) -> list[Thread]:
    """`enabled`, the thread that reached the point first (going on with it is no preemption)."""
    cur = ctl.current
    return ([cur] if cur in enabled else []) + [t for t in enabled if t is not cur]


class RandomWalk:
    """Each step, a uniformly random enabled thread."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._rng = random.Random(seed)

    def begin(self) -> None:
        self._rng = random.Random(self.seed)

    def choose(self, ctl: Controller, enabled: list[Thread]) -> Thread:
        return enabled[self._rng.randrange(len(enabled))]

    def describe(self) -> str:
        return f"random --seed {self.seed}"


class PCT:
    """Probabilistic concurrency testing with bug depth `depth` over runs of about `steps` steps."""

    def __init__(self, seed: int, depth: int = 3, steps: int = 2_000) -> None:
        if depth < 1:
            raise ValueError(f"a PCT depth is at least 1, not {depth}")
        self.seed, self.depth, self.steps = seed, depth, max(1, steps)
        self.begin()

    def begin(self) -> None:
        self._rng = random.Random(self.seed)
        self._priority: dict[str, float] = {}
        self._changes = sorted(self._rng.sample(range(1, self.steps + 1), min(self.depth - 1, self.steps)))
        self._step = 0

    def _of(self, t: Thread) -> float:
        # A new thread's priority is drawn when it is first seen: above every change point's
        # (1 .. depth - 1), distinct almost surely.
        if t.name not in self._priority:
            self._priority[t.name] = self.depth + self._rng.random()
        return self._priority[t.name]

    def choose(self, ctl: Controller, enabled: list[Thread]) -> Thread:
        best = max(enabled, key=self._of)
        if len(enabled) < 2:
            return best  # no choice here: not one of the run's k steps
        self._step += 1
        while self._changes and self._changes[0] <= self._step:
            # A change point: the thread about to run drops below all others.
            self._priority[best.name] = len(self._changes) / (self.depth + 1)
            self._changes.pop(0)
            best = max(enabled, key=self._of)
        return best

    def describe(self) -> str:
        return f"pct --seed {self.seed} --depth {self.depth} --steps {self.steps}"


class Replay:
    """The threads of a recorded schedule, in order; past its end, the thread that reached the
    point (or the first enabled). A step whose thread is not enabled fails the run (diverged)."""

    def __init__(self, schedule: list[str]) -> None:
        self.schedule = list(schedule)
        self._i = 0

    def begin(self) -> None:
        self._i = 0

    def choose(self, ctl: Controller, enabled: list[Thread]) -> Thread:
        i, self._i = self._i, self._i + 1
        if i >= len(self.schedule):
            return _current_first(ctl, enabled)[0]
        want = self.schedule[i]
        for t in enabled:
            if t.name == want:
                return t
        ctl.diverged(f"step {i} of the schedule is {want}, but the enabled threads are "
                     f"{', '.join(t.name for t in enabled)}: the code or the scenario changed since it was recorded")
        raise AssertionError("unreachable")

    def describe(self) -> str:
        return f"replay of {len(self.schedule)} steps"


class Drawn:
    """The choices of a list Hypothesis drew (`st.lists(st.integers(0, 7))`): at step i, entry
    i modulo the number of enabled threads, 0 being the thread that reached the point; past the
    list's end, 0. Hypothesis shrinks a failing list towards zeros and shorter, i.e. towards
    schedules with fewer preemptions. (Its `data.draw` cannot be called from the run's threads:
    Hypothesis keeps its context per thread, so the list is drawn before the run.)"""

    def __init__(self, choices: list[int]) -> None:
        self.choices = list(choices)
        self._i = 0

    def begin(self) -> None:
        self._i = 0

    def choose(self, ctl: Controller, enabled: list[Thread]) -> Thread:
        i, self._i = self._i, self._i + 1
        order = _current_first(ctl, enabled)
        pick = self.choices[i] % len(order) if i < len(self.choices) else 0
        return order[pick]

    def describe(self) -> str:
        return f"hypothesis ({len(self.choices)} drawn choices)"
