"""Scenarios of the queue's real consumer (`consumer.py`: poller, heartbeat thread, handler
pool) for controlled interleavings.

Each scenario takes `sync`, a controlled `impl/sync.py` (`conformance/interleave`), and runs
real consumers with it on the twin (fakeredis, the very Lua scripts, its clock the run's
virtual clock). Handlers take their time through `sync.sleep`. At every point it checks that
no entry runs twice at once and that no consumer runs more handlers than its permits; it
waits until every message is acked, closes the consumers and, when `sync.trace_dir` is set,
writes the trace there.

    long_handlers    two consumers, handlers longer than a visibility timeout (4.5 heartbeats)
    self_reclaim     one consumer whose heartbeat lags (a logged fault window) for a handler as
                     long as the visibility timeout, a permit free: the entry comes back to its
                     own poller as the handler finishes
    close_while_active   two consumers; one closes while its handlers run (and renews until they return)
    past_max_processing  two consumers, one handler past max_processing_ms (it keeps renewing)
    stale_owner      two consumers lagging for 1.5 visibility timeouts while one runs a long
                     handler: the other takes the entry over, and the stale owner's renewal
                     meets it when the lag ends
    not_done_first   two consumers whose handlers say "not done" the first time: released
                     entries come back after a visibility timeout, to either
    pool_at_bound    one consumer at its permit bound, more messages than permits
    executor_rejects one consumer whose executor refuses every hand-off for its first 50 ms (a
                     saturated executor, `ThreadExecutor.reject_all`; each refusal a `reject`
                     fault line): the refused entries stay pending and come back after a
                     visibility timeout, so every permit must come back with each refusal
    ack_fails        two consumers, the run's first ack fails (the fault plan: an `ack_fail`
                     line, nothing commits): the entry stays pending and is acked on its
                     redelivery, so the failed ack must still end its invocation
    steady_intake    one consumer, one permit, a new message every poll interval for 1.5 s
                     while the first one, not done first, waits for its retry (Fairness)

Each with the tests' short settings and, `_defaults`, with `Settings()`.

The command layer's scenarios (`CommandScenario`) run command processors as the consumers'
handlers, an external system that takes its time, and a client that submits and cancels:

    commands         two consumers, three commands, one cancelled while its attempt runs
    commands_stale   the same with both heartbeats lagging past the guard TTL: a stale
                     attempt's guard renewal races its refused put and its release
    commands_guard_held  as commands_stale, with a guard TTL twice the visibility timeout: the
                     peer reclaims the entries while their guards are live and must find them busy
    commands_guard_taken_over  the stale attempts are still in their external call when the lag
                     ends, after the peer took their guards over: their renewals, puts and
                     releases meet a guard that is the peer's
    commands_cancelled_queued  two consumers, two commands, one cancelled before any consumer
                     starts (its message still queued): its delivery finds it terminal and only
                     acks; it must stay CANCELLED, as its client was told
    commands_stale_write  two consumers, one command; the attempt about to write PROCESSING
                     stalls there (after its owner read, when the write is the two-step one), its
                     process paused past the guard TTL: the peer reclaims the entry, takes the
                     guard and finishes the command, and the stale write must be refused
    commands_stale_call  the same stall just before the external call: the stale call must be refused
    commands_call_throws  every command's first external call throws after one consumer's lag
                     let the peer take its guards over: its early guard releases meet the peer's
    commands_resubmitted  one consumer, a command submitted twice at once; its first attempt
                     stalls (heartbeat lagging, poller going on) while its own next attempt takes
                     the lapsed guard: the stale write must be refused (the node's, not the attempt's)
    commands_resubmitted_after  every command submitted again once finished: nothing runs again
    commands_offer_lost  the client's first offer fails after its state write: its resubmit offers
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from impl.workqueue import recording
from impl.workqueue.command_store import TERMINAL, CommandStore
from impl.workqueue.commands import CommandClient, CommandProcessor
from impl.workqueue.config import Gates, Settings
from impl.workqueue.consumer import Consumer, heartbeat_period_ms
from impl.workqueue.core import Invocation
from impl.workqueue.errors import StoreFault
from impl.workqueue.sim import REAL_SERVER_SCALE, scaled_for_real_server
from impl.workqueue.sim_redis import RedisTimeWarp, fake_client, virtual_time
from impl.workqueue.store import GROUP, QueueStore

SHORT = Settings(visibility_timeout_ms=300, max_processing_ms=2_000, concurrency=2, guard_ttl_ms=300, poll_interval_ms=20)
DEFAULT = Settings()
_PATIENCE = 40  # visibility timeouts (virtual) before an unfinished run fails the scenario


@dataclass(frozen=True)
class QueueScenario:
    """One scenario's shape: consumers, messages, how long each handler takes (in heartbeat
    periods), and which messages are not done on their first delivery."""

    name: str
    consumers: tuple[str, ...] = ("a", "b")
    messages: int = 3
    periods: float = 4.5  # a handler's length, in heartbeat periods
    not_done_first: tuple[int, ...] = ()
    lag: bool = False  # every consumer's heartbeat lags (`Consumer.lag_heartbeat`) until the queue drains
    lag_ms: int = 0  # ... or for this long only
    close_at_ms: int = 0  # the first consumer closes this long after the start (its handler still running)
    reject_ms: int = 0  # every consumer's executor refuses every hand-off for this long from the start
    ack_faults: int = 0  # the run's first acks (by any consumer) that fail without committing
    # A steady intake: the producer offers one more message every poll interval for this long;
    # each message not done first must be done again before it ends (retries are not starved).
    intake_ms: int = 0
    patience: int = _PATIENCE  # visibility timeouts (virtual) the queue has to drain
    settings: Settings = SHORT
    gates: Gates = Gates()
    redis_url: str = ""  # a real Redis server (`on_real_redis`); empty: fakeredis, the default

    def __call__(self, sync: Any) -> dict[str, Any]:
        return run(self, sync)


class _Handlers:
    """The scenario's handlers: each sleeps its time; the table of running entries is the
    invariant's (an entry in two handlers at once is a double invocation)."""

    def __init__(self, sc: QueueScenario, sync: Any) -> None:
        self.sc, self.sync = sc, sync
        self.running: dict[str, list[str]] = {}
        self.calls: dict[str, int] = {}
        self.doubles: list[str] = []

    def handler(self, name: str) -> Callable[[Invocation], bool]:
        def handle(inv: Invocation) -> bool:
            who = self.running.setdefault(inv.entry, [])
            if who:
                self.doubles.append(f"{inv.entry} by {name} while {who} runs it")
            who.append(name)
            k = self.calls[inv.payload] = self.calls.get(inv.payload, 0) + 1
            try:
                self.sync.sleep(self.sc.periods * heartbeat_period_ms(self.sc.settings) / 1000)
            finally:
                who.remove(name)
            return not (k == 1 and int(inv.payload.removeprefix("m")) in self.sc.not_done_first)
        return handle


_RUN_IDS = itertools.count(1)


@contextlib.contextmanager
def _store(url: str, sync: Any) -> Iterator[QueueStore]:
    """The run's queue store: on a private fakeredis server that reads the virtual clock, or,
    with `url`, on a real Redis server under a key prefix of its own, the scripts' clock moved
    along with the virtual one (`RedisTimeWarp`, at every move), its keys deleted after."""
    if not url:
        with virtual_time(sync.clock):
            yield QueueStore(fake_client(), "interleave", explicit_ids=True)
        return
    import redis

    client = redis.Redis.from_url(url)
    queue = QueueStore(client, f"interleave-{os.getpid()}-{next(_RUN_IDS)}", explicit_ids=True)
    try:
        warp = RedisTimeWarp(client, queue.prefix, queue.stream, GROUP)
        warp.start(sync.clock.now_ms())
        sync.on_time(warp.advance)
        yield queue
    finally:
        queue.delete_keys()
        client.close()


def on_real_redis(sc: Any, url: str) -> Any:
    """Scenario `sc` on the real Redis server at `url`: its settings and its own times scaled
    by `REAL_SERVER_SCALE` (as the simulations on a real server are), so that the real
    milliseconds a step takes, which the server's clock counts too, decide nothing."""
    k = REAL_SERVER_SCALE
    times = {f.name: getattr(sc, f.name) * k for f in dataclasses.fields(sc) if f.name.endswith("_ms")}
    if isinstance(sc, CommandScenario):
        times["cancel"] = (sc.cancel[0], sc.cancel[1] * k)
    return dataclasses.replace(sc, name=f"{sc.name}_redis", redis_url=url, settings=scaled_for_real_server(sc.settings), **times)


def run(sc: QueueScenario, sync: Any) -> dict[str, Any]:
    """Run scenario `sc` on `sync`'s threads; returns how often each message was handled."""
    with _store(sc.redis_url, sync) as queue:
        client = queue.client
        shared = sync.calls(queue, "redis")
        for i in range(sc.messages):
            queue.offer("producer", sync.clock.now_ms(), f"m{i}")
        if sc.ack_faults:
            queue.faults.fail("ack", None, times=sc.ack_faults)  # logged as `ack_fail` lines as they fire
        h = _Handlers(sc, sync)
        consumers = [Consumer(shared, n, h.handler(n), settings=sc.settings, gates=sc.gates, clock=sync.clock, sync=sync)
                     for n in sc.consumers]
        sync.invariant(lambda: _checks(h, consumers, sc))
        sync.observe(lambda: _describe(client, queue, h))
        for c in consumers:
            # A shut-down (or saturated) executor: the consumer logs each refusal as a `reject` line.
            c.executor.reject_all = sc.reject_ms > 0
            c.start()
            if sc.lag:
                c.lag_heartbeat()
        if sc.reject_ms:
            sync.sleep(sc.reject_ms / 1000)
            for c in consumers:
                c.executor.reject_all = False
        if sc.lag and sc.lag_ms:
            sync.sleep(sc.lag_ms / 1000)
            for c in consumers:
                c.resume_heartbeat()
        if sc.close_at_ms:
            sync.sleep(sc.close_at_ms / 1000)
            consumers[0].close(timeout_s=_PATIENCE * sc.settings.visibility_timeout_ms / 1000)
        if sc.intake_ms:
            _intake(sc, sync, queue, h)
        deadline = sync.clock.now_ms() + sc.patience * sc.settings.visibility_timeout_ms
        while queue.stream_length() > 0:
            if sync.clock.now_ms() > deadline:
                raise AssertionError(f"{queue.stream_length()} messages left unacked after "
                                     f"{sc.patience} visibility timeouts (virtual)")
            sync.sleep(sc.settings.poll_interval_ms / 1000)
        for c in consumers:
            if sc.lag:
                c.resume_heartbeat()
            if not c.close(timeout_s=_PATIENCE * sc.settings.visibility_timeout_ms / 1000):
                raise AssertionError(f"consumer {c.name} still ran handlers at its close's timeout")
        errors = [repr(e) for c in consumers for e in c.errors if not _injected(e)]
        if errors:
            raise AssertionError(f"the consumers' threads failed: {errors}")
        if getattr(sync, "trace_dir", None):
            recording.export(Path(sync.trace_dir) / f"{sc.name}.ndjson", queue, system="workqueue",
                             settings=sc.settings, gates=sc.gates, nodes=["producer", *sc.consumers], run=sc.name)
        return dict(sorted(h.calls.items()))


def _intake(sc: QueueScenario, sync: Any, queue: QueueStore, h: _Handlers) -> None:
    """The producer's steady intake (`sc.intake_ms`); then every message not done first must
    have been handled again: a poll tries `reclaim` first once in `fairness_ratio + 1`, so a
    retry waits a visibility timeout and a few polls, not until the intake stops."""
    end = sync.clock.now_ms() + sc.intake_ms
    k = sc.messages
    while sync.clock.now_ms() < end:
        queue.offer("producer", sync.clock.now_ms(), f"m{k}")
        k += 1
        sync.sleep(sc.settings.poll_interval_ms / 1000)
    starved = [f"m{i}" for i in sc.not_done_first if h.calls.get(f"m{i}", 0) < 2]
    if starved:
        raise AssertionError(f"retries starved behind a steady intake of {sc.intake_ms} ms: {starved} not "
                             f"handled again ({k - sc.messages} new messages offered meanwhile)")


def _injected(exc: BaseException) -> bool:
    """Whether `exc` is a fault the scenario's plan injected (its consumer notes the failed
    step, as it would a lost connection's): not a failure of the threads."""
    return isinstance(exc, StoreFault) and str(exc).startswith("injected fault:")


def _describe(client: Any, queue: QueueStore, h: _Handlers) -> str:
    """The pending entries (owner, idle ms) and the handlers running (a failure's schedule)."""
    rows = client.xpending_range(queue.stream, GROUP, "-", "+", 100)
    pel = ", ".join(f"{r['message_id'].decode()} {r['consumer'].decode()} idle {r['time_since_delivered']}" for r in rows)
    runs = ", ".join(f"{e} by {'+'.join(w)}" for e, w in sorted(h.running.items()) if w)
    return f"pending [{pel}] running [{runs}]"


def _checks(h: _Handlers, consumers: list[Consumer], sc: QueueScenario) -> None:
    # Under a lag (a logged fault) a peer may take an entry over while its holder still runs it:
    # at-least-once, excused by the lag's lines; the trace check says whether it was allowed.
    if h.doubles and not sc.lag:
        raise AssertionError(f"an entry invoked twice at once: {h.doubles[0]}")
    for c in consumers:
        if c.executor.running > sc.settings.concurrency:
            raise AssertionError(f"{c.name} runs {c.executor.running} handlers with {sc.settings.concurrency} permits")


def _named(**kw: Any) -> QueueScenario:
    return QueueScenario(**kw)


long_handlers = _named(name="long_handlers")
long_handlers_defaults = _named(name="long_handlers_defaults", settings=DEFAULT)
self_reclaim = _named(name="self_reclaim", consumers=("a",), messages=1, periods=3.0, lag=True)
self_reclaim_defaults = _named(name="self_reclaim_defaults", consumers=("a",), messages=1, periods=3.0, lag=True,
                               settings=DEFAULT)
close_while_active = _named(name="close_while_active", messages=2, close_at_ms=150)
past_max_processing = _named(name="past_max_processing", messages=1, periods=25.0)
stale_owner = _named(name="stale_owner", messages=1, periods=12.0, lag=True, lag_ms=450)
not_done_first = _named(name="not_done_first", consumers=("a", "b"), messages=2, periods=1.5, not_done_first=(0, 1))
pool_at_bound = _named(name="pool_at_bound", consumers=("a",), messages=5, periods=1.0)
pool_at_bound_defaults = _named(name="pool_at_bound_defaults", consumers=("a",), messages=5, periods=1.0,
                                settings=DEFAULT)
executor_rejects = _named(name="executor_rejects", consumers=("a",), messages=3, periods=1.0, reject_ms=50)
# The failed ack's entry is redelivered a VT after its invocation ended: 10 VTs are plenty (the
# gate off, a run renews the leaked record until the deadline, and a shorter one ends sooner).
# One consumer, one permit, handlers a little longer than the poll interval, and a new message
# every poll interval for 1.5 s: the backlog never empties, and the first message, not done on
# its first delivery, must be retried meanwhile (Fairness).
steady_intake = _named(name="steady_intake", consumers=("a",), messages=1, periods=0.3, not_done_first=(0,),
                       intake_ms=1_500, settings=dataclasses.replace(SHORT, concurrency=1))
ack_fails = _named(name="ack_fails", messages=2, periods=1.0, ack_faults=1, patience=10)


@dataclass(frozen=True)
class CommandScenario:
    """Commands through the queue: how many, which one is cancelled and when, how long the
    external call takes (in heartbeat periods), and a lag window over every consumer."""

    name: str
    consumers: tuple[str, ...] = ("a", "b")
    commands: int = 3
    cancel: tuple[int, int] = (1, 50)  # (command index, ms after the submissions); (-1, 0): none
    call_periods: float = 2.5
    lag_ms: int = 0
    laggers: tuple[str, ...] = ()  # the consumers whose heartbeat lags (none named: every one)
    cancel_queued: bool = False  # the cancel comes before any consumer starts (the message queued)
    # The first attempt about to write this status stalls just before the write (the
    # processor's `before_write` hook: after its owner read when the write is the two-step one),
    # its consumer paused meanwhile (a logged window), for `stall_ms`.
    stall_before: str = ""
    stall_ms: int = 0
    # False: only the stalled attempt's heartbeat lags (a logged window) and its poller goes on,
    # so its own consumer may start another attempt of the command meanwhile.
    stall_pauses: bool = True
    # The client submits each command a second time: "at_once", right after the first (a
    # second message while the first is delivered), or "after" every command finished (the
    # queue drains again, and nothing may run again or change).
    resubmit: str = ""
    offer_faults: int = 0  # the client's first offers fail (after the state write): it submits again
    call_throws: bool = False  # each command's first external call throws (after its time)
    settings: Settings = SHORT
    gates: Gates = Gates()
    redis_url: str = ""  # a real Redis server (`on_real_redis`); empty: fakeredis, the default

    def __call__(self, sync: Any) -> dict[str, Any]:
        return run_commands(self, sync)


class _App:
    """The external system: each call takes its time (virtual) and succeeds; calls, and the
    questions how a command ended (`check`), are counted."""

    def __init__(self, sync: Any, ms: float, throws_first: bool = False) -> None:
        self.sync, self.ms, self.throws_first = sync, ms, throws_first
        self.calls: dict[str, int] = {}
        self.checks: dict[str, int] = {}

    def call(self, cmd: str, payload: str) -> str:
        self.calls[cmd] = self.calls.get(cmd, 0) + 1
        first = self.calls[cmd] == 1
        self.sync.sleep(self.ms / 1000)
        if self.throws_first and first:
            raise ConnectionError(f"the external system failed on {cmd}'s first call")
        return "succeeded"

    def check(self, cmd: str, payload: str) -> str:
        self.checks[cmd] = self.checks.get(cmd, 0) + 1
        return "succeeded"


def run_commands(sc: CommandScenario, sync: Any) -> dict[str, Any]:
    """Run command scenario `sc` on `sync`'s threads; returns each command's final status."""
    with _store(sc.redis_url, sync) as queue:
        client = queue.client
        cstore = CommandStore(client, queue.prefix, faults=queue.faults)
        shared_queue, shared_cmds = sync.calls(queue, "redis"), sync.calls(cstore, "redis")
        app = _App(sync, sc.call_periods * heartbeat_period_ms(sc.settings), sc.call_throws)
        consumers = []
        stalls: list[str] = []  # the consumers whose attempt stalled before its write (one at most)
        for n in sc.consumers:
            proc = CommandProcessor(shared_cmds, n, sync.clock, sc.settings, sc.gates, app, sync=sync)
            consumer = Consumer(shared_queue, n, proc.handle, settings=sc.settings, gates=sc.gates,
                                clock=sync.clock, sync=sync)
            if sc.stall_before:
                proc.before_write = _stall(sc, sync, consumer, stalls)
            consumers.append(consumer)
        sync.observe(lambda: f"{cstore.statuses()} calls {app.calls}")
        cli = CommandClient(shared_queue, shared_cmds, "client", sync.clock, sc.settings, sc.gates)
        cmds = [f"c{i}" for i in range(sc.commands)]
        index, at = sc.cancel
        told = ""  # what the client's cancel answered
        if not sc.cancel_queued:
            for c in consumers:
                c.start()
        queue.faults.fail("offer", "client", sc.offer_faults)
        for cmd in cmds:
            _submit(cli, cmd)
            if sc.resubmit == "at_once":
                _submit(cli, cmd)
        if sc.cancel_queued:
            told = cli.cancel(cmds[index])
            for c in consumers:
                c.start()
        if sc.lag_ms:
            for c in consumers:
                if not sc.laggers or c.name in sc.laggers:
                    c.lag_heartbeat()
        if index >= 0 and not sc.cancel_queued:
            sync.sleep(at / 1000)
            told = cli.cancel(cmds[index])
        if sc.lag_ms:
            sync.sleep(max(0, sc.lag_ms - (at if index >= 0 else 0)) / 1000)
            for c in consumers:
                c.resume_heartbeat()
        _drain(sc, sync, queue, cstore, cmds)
        finished = {c: cstore.status(c) for c in cmds}  # every one terminal: TerminalIsStable from here on
        if sc.resubmit == "after":
            called = dict(app.calls)
            for cmd in cmds:
                _submit(cli, cmd)
            _drain(sc, sync, queue, cstore, cmds)
            if app.calls != called:
                raise AssertionError(f"finished commands were called again after their resubmission: "
                                     f"calls {called} -> {app.calls}")
        for c in consumers:
            if not c.close(timeout_s=_PATIENCE * sc.settings.visibility_timeout_ms / 1000):
                raise AssertionError(f"consumer {c.name} still ran handlers at its close's timeout")
        errors = [repr(e) for c in consumers for e in c.errors]
        if errors:
            raise AssertionError(f"the consumers' threads failed: {errors}")
        changed = {c: f"{s} -> {cstore.status(c)}" for c, s in finished.items() if cstore.status(c) != s}
        if changed:  # a late attempt (still running as the queue drained) wrote over a finished command
            raise AssertionError(f"finished commands changed status after the queue drained: {changed}")
        if not sc.lag_ms and not stalls and not sc.resubmit and not sc.call_throws:  # without a fault, near-exactly-once: one external call per command
            twice = {c: k for c, k in app.calls.items() if k > 1}
            if twice:
                raise AssertionError(f"external calls made twice without a fault: {twice}")
        if told == "cancelled" and cstore.status(cmds[index]) != "CANCELLED":
            # The client was told its command is cancelled: no attempt may finish it otherwise.
            raise AssertionError(f"{cmds[index]} was cancelled (the client was told so) and ended "
                                 f"{cstore.status(cmds[index])}; external calls {app.calls}, checks {app.checks}")
        if getattr(sync, "trace_dir", None):
            recording.export(Path(sync.trace_dir) / f"{sc.name}.ndjson", queue, system="command",
                             settings=sc.settings, gates=sc.gates, nodes=["client", *sc.consumers], run=sc.name)
        return {c: cstore.status(c) for c in cmds}


def _submit(cli: CommandClient, cmd: str) -> None:
    """The client submits `cmd`, and again while its offer fails (a caller's retry: the id is
    the idempotency key, so the state written before the failed offer is met)."""
    while True:
        try:
            cli.submit(cmd, f"job {cmd}")
            return
        except StoreFault:
            continue


def _drain(sc: CommandScenario, sync: Any, queue: QueueStore, cstore: CommandStore, cmds: list[str]) -> None:
    """Wait until every message is acked and every command terminal (virtual time)."""
    deadline = sync.clock.now_ms() + _PATIENCE * sc.settings.visibility_timeout_ms
    while queue.stream_length() > 0 or any(cstore.status(c) not in TERMINAL for c in cmds):
        if sync.clock.now_ms() > deadline:
            raise AssertionError(f"commands unfinished after {_PATIENCE} visibility timeouts (virtual): "
                                 f"{cstore.statuses()}, {queue.stream_length()} messages left")
        sync.sleep(sc.settings.poll_interval_ms / 1000)


def _stall(sc: CommandScenario, sync: Any, consumer: Consumer, stalls: list[str]) -> Callable[[str], None]:
    """The `before_write` hook of `consumer`'s processor: the run's first write of
    `sc.stall_before` waits `sc.stall_ms` first, its whole process paused meanwhile (poller and
    heartbeat, as a long GC pause would: `chaos.Stalls`' pause, a logged window that excuses
    the lapses of its entry and its guard)."""
    polling = [True]
    if sc.stall_pauses:
        consumer.may_poll = lambda: polling[0]

    def before_write(status: str) -> None:
        if status != sc.stall_before or stalls:
            return
        stalls.append(consumer.name)
        polling[0] = False  # before the window opens: no poll of the consumer inside it
        consumer.lag_heartbeat("pause" if sc.stall_pauses else "heartbeat_lag")
        sync.sleep(sc.stall_ms / 1000)
        consumer.resume_heartbeat()
        polling[0] = True
    return before_write


commands = CommandScenario(name="commands")
commands_stale = CommandScenario(name="commands_stale", call_periods=4.5, lag_ms=450)
# The guard outlives the visibility timeout: the peer reclaims the lagging consumer's entry
# while that attempt's guard is still live, so its guard_take must find it busy, and the stale
# attempt's renewal, put and release meet a guard that is still its own or already the peer's.
commands_guard_held = CommandScenario(name="commands_guard_held", call_periods=4.5, lag_ms=450,
                                      settings=dataclasses.replace(SHORT, guard_ttl_ms=600))
# The stale attempts are still in their external call when the lag ends, after the peer took
# their guards over: their renewals, then their puts and releases, meet the peer's guard.
commands_guard_taken_over = CommandScenario(name="commands_guard_taken_over", call_periods=10.0, lag_ms=700)
commands_cancelled_queued = CommandScenario(name="commands_cancelled_queued", commands=2, cancel=(1, 0),
                                            cancel_queued=True)
# The stall outlasts the guard TTL and VT (300 ms), a peer's reclaim (a second one, a VT
# later, when the first found the guard on its expiry's own ms) and its whole attempt (a call
# of 100 ms): a stale write, let through, lands after the command finished.
commands_stale_write = CommandScenario(name="commands_stale_write", commands=1, cancel=(-1, 0), call_periods=1.0,
                                       stall_before="PROCESSING", stall_ms=1_000)
# A command resubmitted at once (two messages) on one consumer, whose first attempt stalls past
# the guard TTL before writing PROCESSING while its poller goes on: the same consumer's next
# attempt, on the second message, takes the lapsed guard and is in its call when the first one
# wakes, whose write must be refused (the guard is its node's, but not its attempt's). Once
# finished, the command is resubmitted again and must neither run nor change.
commands_resubmitted = CommandScenario(name="commands_resubmitted", consumers=("a",), commands=1, cancel=(-1, 0),
                                       call_periods=10.0, stall_before="PROCESSING", stall_ms=700,
                                       stall_pauses=False, resubmit="at_once")
commands_resubmitted_after = CommandScenario(name="commands_resubmitted_after", commands=2, cancel=(-1, 0),
                                             resubmit="after")
# The client's first offer fails after its state write: its resubmission must still offer.
commands_offer_lost = CommandScenario(name="commands_offer_lost", commands=2, cancel=(-1, 0), offer_faults=1)
# The stale attempt stalls (its process paused past the guard TTL) just before its external
# call; the peer takes the guard over: the stale call must be refused.
commands_stale_call = CommandScenario(name="commands_stale_call", commands=1, cancel=(-1, 0), call_periods=3.0,
                                      stall_before="external_call", stall_ms=700)
# Every command's first external call throws once its time is up, after the lag let the peer
# take the guard over: the failed attempt's early guard release meets the peer's guard.
commands_call_throws = CommandScenario(name="commands_call_throws", cancel=(-1, 0), call_periods=6.5, lag_ms=700,
                                       laggers=("a",), call_throws=True)
