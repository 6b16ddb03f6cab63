"""The command layer on the work queue: state records, idempotent submission, the attempt guard,
`put_if_owner`, SUBMITTING before the external call, cancellation.

A command's delivery runs `CommandProcessor.steps`, a generator that yields after each store
step: the real consumer drives it to the end in one handler call, the simulation one step at a
time, so a scheduler can interleave two deliveries between any two steps.

    delivery: guard_take (busy: not done) -> read the status
              terminal -> guard_release, ack
              PENDING -> put SUBMITTING -> external_call(key = cmd id) -> put PROCESSING
                      -> put SUCCEEDED | FAILED -> guard_release, ack
              SUBMITTING (a crashed attempt) -> external_call again, same key -> ...
              PROCESSING -> ask the external system -> put terminal -> guard_release, ack
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Generator
from typing import Protocol

from impl.clock import Clock
from impl.sync import REAL, Sync
from impl.workqueue.command_store import TERMINAL, CommandStore
from impl.workqueue.config import Gates, Settings
from impl.workqueue.core import Invocation
from impl.workqueue.errors import BadSettings, UnknownCommand
from impl.workqueue.store import QueueStore

ANSWERS = ("succeeded", "failed")


class CommandApp(Protocol):
    """The application's side of a command: the external system it calls."""

    def call(self, cmd: str, payload: str) -> str:
        """Call the external system with idempotency key `cmd`; answer `succeeded` or `failed`
        (it may also raise, or take longer than the visibility timeout)."""
        ...

    def check(self, cmd: str, payload: str) -> str:
        """Ask the external system how command `cmd` ended, for a delivery that finds it
        PROCESSING (an attempt crashed after the call); same answers as `call`."""
        ...


def counter_ids(prefix: str) -> Callable[[], str]:
    """Attempt ids `<prefix>-1`, `<prefix>-2`, ...: unique per node, deterministic in simulation."""
    it = itertools.count(1)
    return lambda: f"{prefix}-{next(it)}"


def check_guard_ttl(settings: Settings) -> None:
    """Refuse a guard TTL no longer than the heartbeat interval that renews it: a live attempt's
    guard would lapse between two renewals, and another attempt take over (`BadSettings`)."""
    if settings.guard_ttl_ms <= settings.heartbeat_interval_ms:
        raise BadSettings(
            f"guard_ttl_ms ({settings.guard_ttl_ms}) must be above the heartbeat interval "
            f"({settings.heartbeat_interval_ms} ms), or a live attempt's guard lapses between renewals")


class CommandClient:
    """Submitting and cancelling commands from node `node`."""

    def __init__(self, queue: QueueStore, store: CommandStore, node: str, clock: Clock,
                 settings: Settings, gates: Gates, attempt_ids: Callable[[], str] | None = None) -> None:
        self.queue, self.store, self.node, self.clock = queue, store, node, clock
        self.settings, self.gates = settings, gates
        self.attempt_ids = attempt_ids or counter_ids(f"{node}-cancel")

    def submit(self, cmd: str, payload: str = "") -> bool:
        """Submit command `cmd` (its id is the idempotency key). Creates its state PENDING if
        absent and always offers a message, so resubmitting the same id repairs a crash between
        the state write and the offer. Returns whether the state was created now."""
        created = self.store.submit_state(self.node, self.clock.now_ms(), cmd, self.settings.state_ttl_ms)
        if created or self.gates.submit_always_offers:
            self.queue.offer(self.node, self.clock.now_ms(), payload, cmd=cmd)
        return created

    def cancel(self, cmd: str) -> str:
        """Cancel `cmd`: `cancelled`, `busy` (a handler holds its guard: try again later) or
        `terminal` (already finished). Raises `UnknownCommand` for an id with no record."""
        outcome = self.store.cancel(self.node, self.clock.now_ms(), cmd, self.attempt_ids(),
                                    self.settings.guard_ttl_ms, self.settings.state_ttl_ms,
                                    take_guard=self.gates.cancel_takes_guard)
        if outcome == "missing":
            raise UnknownCommand(f"command {cmd!r} has no state record (never submitted, or its TTL ran out)")
        return outcome

    def status(self, cmd: str) -> str | None:
        """The command's status, or None."""
        return self.store.status(cmd)


class CommandProcessor:
    """Handles command deliveries for node `node` (the queue consumer's handler)."""

    def __init__(self, store: CommandStore, node: str, clock: Clock, settings: Settings, gates: Gates,
                 app: CommandApp, attempt_ids: Callable[[], str] | None = None, sync: Sync = REAL) -> None:
        self.store, self.node, self.clock = store, node, clock
        self.sync = sync  # the attempt's lock against its heartbeat's renewals (`impl/sync.py`)
        self.settings, self.gates, self.app = settings, gates, app
        self.attempt_ids = attempt_ids or counter_ids(node)
        check_guard_ttl(settings)
        # Test hook: runs just before each state write (after the owner check when the write is
        # the unguarded check-then-write), with the status, and before the external call's
        # step, with "external_call", so a test can let the guard change hands there.
        self.before_write: Callable[[str], None] | None = None

    def handle(self, inv: Invocation) -> bool:
        """Run one delivery to the end; True when its entry may be acked."""
        gen = self.steps(inv)
        try:
            while True:
                next(gen)
        except StopIteration as stop:
            return bool(stop.value)

    def _put(self, cmd: str, attempt: str, status: str,
             step: Callable[[Callable[[], bool]], bool]) -> Generator[None, None, bool]:
        """Write `status` for `attempt`; `step` runs the store's write (the attempt's end
        when it is refused)."""
        now = self.clock.now_ms
        if self.gates.atomic_put_if_owner:
            if self.before_write is not None:
                self.before_write(status)
            return step(lambda: self.store.put_if_owner(self.node, now(), cmd, attempt, status, self.settings.state_ttl_ms,
                                                        checked=self.gates.attempt_guard))
        # Unguarded calibration: read the owner, then write; the guard can change hands between.
        owner = self.store.guard_owner(cmd)
        yield
        if self.before_write is not None:
            self.before_write(status)
        if self.gates.attempt_guard and owner != attempt:
            return False
        return step(lambda: self.store.put_if_owner(self.node, now(), cmd, attempt, status, self.settings.state_ttl_ms,
                                                    checked=False))

    def steps(self, inv: Invocation) -> Generator[None, None, bool]:
        """One delivery of command `inv.cmd`, yielding after each store step; returns True when
        the entry can be acked. The steps follow `CommandQueue.tla`'s attempt:

            guard_take --busy--> end (not done: the entry stays pending)
                |taken: read the status
                +- terminal / no record ---------------------------> release, ack
                +- PENDING:    put SUBMITTING -> external_call -> put PROCESSING -> put terminal
                +- SUBMITTING: (a crashed attempt) external_call, same key -> ...
                +- PROCESSING: ask the external system -> put terminal
                                                          -> guard_release, ack
            a refused put or external call, or a guard renewal that finds the guard lost, ends
            the attempt at once: no further write, no release (the guard is someone else's),
            not done.
        """
        cmd = inv.cmd
        if cmd is None:
            return True  # not a command's message: nothing to do, ack it
        now = self.clock.now_ms
        attempt = self.attempt_ids()
        inv.attempt = attempt
        lost = [False]
        ended = [False]  # a refused write or external call ends the attempt, as a lost guard does
        # The heartbeat renews from its own thread: whatever ends the attempt (a refused write or
        # call, its guard release) and a renewal are one at a time, and no renewal comes after
        # the end (found on two-process runs: a guard_renew logged after guard_release, and
        # under load after a refused put).
        ending = self.sync.Lock()
        ended_all = [False]

        def ending_step(step: Callable[[], bool]) -> bool:
            with ending:
                # The heartbeat may have found the guard lost since the attempt last looked (a
                # two-process run under load logged put_if_owner after guard_renew lost): an
                # ended attempt takes no further step. Not with the atomic owner check off: that
                # calibration is the seed's old code, whose stale write must still go out.
                if self.gates.atomic_put_if_owner and (lost[0] or ended[0]):
                    return False
                ok = step()
                ended[0] = ended[0] or not ok
                return ok
        if self.gates.attempt_guard:
            if not self.store.guard_take(self.node, now(), cmd, attempt, self.settings.guard_ttl_ms):
                return False  # another delivery is working on it: leave the entry pending

            def renew_guard() -> None:
                with ending:
                    if not ended_all[0] and not lost[0] and not ended[0] and not self.store.guard_renew(
                            self.node, now(), cmd, attempt, self.settings.guard_ttl_ms):
                        lost[0] = True  # a stale attempt: it ends at its next step

            inv.on_heartbeat(renew_guard)
            yield

        def over() -> bool:
            return lost[0] or ended[0]

        def put(status: str) -> Generator[None, None, bool]:
            if over():
                return False
            ok = yield from self._put(cmd, attempt, status, ending_step)
            ended[0] = ended[0] or not ok
            return ok

        try:
            status = self.store.status(cmd)
            if self.gates.terminal_check and (status is None or status in TERMINAL):
                return not over()  # a duplicate delivery of a finished (or expired) command: only ack
            if status == "PENDING" or status is None:
                # SUBMITTING is durable before the external call, so a crash after it is retried.
                if not (yield from put("SUBMITTING")):
                    return False
                yield
                status = "SUBMITTING"
            if status == "SUBMITTING":
                if over():
                    return False
                if self.before_write is not None:
                    self.before_write("external_call")
                if not ending_step(lambda: self.store.external_call(self.node, now(), cmd, attempt,
                                                                     checked=self.gates.attempt_guard) >= 0):
                    return False  # the guard lapsed or passed on: a stale attempt calls nothing
                yield
                answer = self.app.call(cmd, inv.payload)
                if not (yield from put("PROCESSING")):
                    return False
                yield
            else:
                answer = self.app.check(cmd, inv.payload)
            if answer not in ANSWERS:
                raise ValueError(f"the command app answered {answer!r}; expected one of {ANSWERS}")
            if not (yield from put("SUCCEEDED" if answer == "succeeded" else "FAILED")):
                return False
            yield
            return not over()
        finally:
            with ending:
                ended_all[0] = True
                inv.renewers.clear()
                if self.gates.attempt_guard and not over():
                    # Also after the external system threw: the next delivery may retry at once.
                    self.store.guard_release(self.node, now(), cmd, attempt)
