"""Fibers: the engine's activities as generators that yield what they want done.

An activity (a start, a signal, a fetch, a handler run) is a generator. It yields `Call(fn)`
for each store transaction (or read) and `Sleep(ms)` to let time pass, and receives the call's
result back. It never blocks and never reads the clock itself, so two drivers can run it:

    simulation (sim.py)   one Call is one step, chosen by a seeded scheduler; Sleep waits
                          for a virtual clock that moves only when nothing else can run
    production            `drive` below: each Call runs at once, each Sleep really sleeps
                          (threads.py gives each activity a thread)
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar, Union

T = TypeVar("T")


@dataclass(frozen=True)
class Call:
    """Run `fn()` (one store transaction or read) and send its result back into the fiber."""

    fn: Callable[[], Any]
    label: str = ""
    subject: str = ""  # the workflow a worker's call acts on (a stall plan aims at it: faults.Stalls)


@dataclass(frozen=True)
class Sleep:
    """Let `ms` milliseconds pass before the fiber continues."""

    ms: int


Effect = Union[Call, Sleep]
Fiber = Generator[Effect, Any, T]


class Stopped(Exception):
    """Raised into a fiber by `drive` when its driver is shutting down."""


def drive(
    fiber: Fiber[T], sleep: Callable[[int], None] | None = None, stall: Callable[[Call], int] | None = None
) -> T:
    """Run `fiber` to completion now: calls run at once, sleeps go to `sleep(ms)`.

    `sleep` may raise `Stopped` to end the fiber early (the production driver's shutdown).
    Without `sleep`, sleeps are skipped, which suits a test that only wants the steps.
    `stall(call)` is how many ms the thread stalls before the call (an injected fault).
    """
    value: Any = None
    try:
        effect = next(fiber)
        while True:
            if isinstance(effect, Call):
                held_up = stall(effect) if stall is not None else 0
                if held_up > 0 and sleep is not None:
                    sleep(held_up)
                value = effect.fn()
            else:
                if sleep is not None:
                    sleep(effect.ms)
                value = None
            effect = fiber.send(value)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
