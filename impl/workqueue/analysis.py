"""What a trace says about a run: overlapping invocations (must be 0), reclaims, commands done,
external calls per command. Pure functions of the recorded events (server commit order)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

TERMINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}


def duplicate_invocations(events: Iterable[Mapping[str, Any]], dead_nodes: Iterable[str] = ()) -> int:
    """How many `invoke_start started` events began while another invocation of the same entry
    was still running (on any live node). A dead node's invocations end with it."""
    dead = set(dead_nodes)
    running: Counter[str] = Counter()
    by_node: Counter[tuple[str, str]] = Counter()
    dups = 0
    for ev in events:
        op, entry, node = ev.get("op"), ev.get("entry"), ev.get("node")
        if op == "invoke_start" and ev.get("outcome") == "started":
            if node in dead:
                continue
            if running[entry] > 0:
                dups += 1
            running[entry] += 1
            by_node[(entry, node)] += 1
        elif op == "invoke_end" and by_node[(entry, node)] > 0:
            running[entry] -= 1
            by_node[(entry, node)] -= 1
    return dups


def max_concurrent_per_node(events: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """The most invocations each node had running at once (to compare with `concurrency`)."""
    now: Counter[str] = Counter()
    peak: Counter[str] = Counter()
    for ev in events:
        if ev.get("op") == "invoke_start" and ev.get("outcome") == "started":
            now[ev["node"]] += 1
            peak[ev["node"]] = max(peak[ev["node"]], now[ev["node"]])
        elif ev.get("op") == "invoke_end":
            now[ev["node"]] -= 1
    return dict(peak)


def terminal_changes(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """Commands whose status changed after it was terminal (must be empty)."""
    seen: dict[str, str] = {}
    bad: list[str] = []
    for ev in events:
        cmd = ev.get("cmd")
        command = (ev.get("state") or {}).get("command")
        if cmd is None or not isinstance(command, dict):
            continue
        status = command.get("status")
        prev = seen.get(cmd)
        if prev in TERMINAL and status != prev and cmd not in bad:
            bad.append(cmd)
        seen[cmd] = status
    return bad


def summary(events: list[Mapping[str, Any]], statuses: Mapping[str, str] | None = None,
            external_calls: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The run's figures: ops by name, reclaims, duplicate invocations, commands by status,
    external calls per command (min / max / mean)."""
    ops = Counter(ev["op"] for ev in events)
    out: dict[str, Any] = {
        "events": len(events),
        "offers": ops["offer"],
        "acks": sum(1 for ev in events if ev["op"] == "ack" and ev["outcome"] == "acked"),
        "reclaims": ops["reclaim"],
        "invocations": sum(1 for ev in events if ev["op"] == "invoke_start" and ev["outcome"] == "started"),
        "duplicates_dropped": sum(1 for ev in events if ev["op"] == "invoke_start" and ev["outcome"] == "duplicate_dropped"),
        "rejected": sum(1 for ev in events if ev["op"] == "invoke_start" and ev["outcome"] == "rejected"),
        "duplicate_invocations": duplicate_invocations(events),
        "terminal_changes": len(terminal_changes(events)),
    }
    if statuses is not None:
        out["commands"] = dict(sorted(Counter(statuses.values()).items()))
        out["commands_done"] = sum(1 for s in statuses.values() if s in TERMINAL)
    if external_calls:
        calls = list(external_calls.values())
        out["external_calls"] = {"total": sum(calls), "min": min(calls), "max": max(calls),
                                 "mean": round(sum(calls) / len(calls), 3)}
        # A repeat call with the same key is expected after an earlier call failed to finish (it
        # threw, or its attempt went stale); any other repeat means two attempts got past the guard.
        out["external_calls"]["unexplained_repeats"] = len(unexplained_calls(events))
    return out


def order_problems(events: Iterable[Mapping[str, Any]], dead_nodes: Iterable[str] = ()) -> list[str]:
    """Local ordering rules of WorkQueue.tla, checked per (node, entry), a quick sanity check
    of a trace before TLC sees it: a node renews, drops a duplicate of, or ends only an
    invocation it runs; it acks only after a `done` end and releases only after another end.
    Returns one message per broken rule (empty when the trace keeps them)."""
    dead = set(dead_nodes)
    running: Counter[tuple[str, str]] = Counter()
    ended: dict[tuple[str, str], str] = {}
    problems: list[str] = []
    for i, ev in enumerate(events, start=1):
        op, node, entry = ev.get("op"), ev.get("node"), ev.get("entry")
        if entry is None or node in dead:
            continue
        key = (node, entry)
        if op == "invoke_start":
            if ev.get("outcome") == "started":
                running[key] += 1
            elif ev.get("outcome") == "duplicate_dropped" and running[key] == 0:
                problems.append(f"event {i}: {node} dropped a duplicate of {entry} it does not run")
        elif op == "invoke_end":
            if running[key] == 0:
                problems.append(f"event {i}: {node} ended an invocation of {entry} it does not run")
            else:
                running[key] -= 1
                ended[key] = (ev.get("args") or {}).get("result", "")
        elif op == "renew" and running[key] == 0:
            problems.append(f"event {i}: {node} renewed {entry} with no invocation running")
        elif op == "ack" and ended.pop(key, None) != "done":
            problems.append(f"event {i}: {node} acked {entry} without a done invocation end")
        elif op == "release" and ended.pop(key, "done") == "done":
            problems.append(f"event {i}: {node} released {entry} without a not-done invocation end")
    return problems


def command_order_problems(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """Attempt rules of CommandQueue.tla, checked per attempt id: an attempt writes, calls,
    renews or releases only after taking the guard, and takes no step after a refused write
    or a lost renewal (it has ended). Returns one message per broken rule."""
    took: set[str] = set()
    ended: set[str] = set()
    problems: list[str] = []
    for i, ev in enumerate(events, start=1):
        op = ev.get("op")
        attempt = (ev.get("args") or {}).get("attempt")
        if attempt is None or op == "cancel":
            continue
        if attempt in ended:
            problems.append(f"event {i}: attempt {attempt} took a step ({op}) after it ended")
            continue
        if op == "guard_take":
            if ev.get("outcome") == "taken":
                took.add(attempt)
            continue
        if attempt not in took:
            problems.append(f"event {i}: attempt {attempt} did {op} without taking the guard")
        if (op, ev.get("outcome")) in {("put_if_owner", "refused"), ("guard_renew", "lost"),
                                       ("guard_release", "released"), ("guard_release", "lost")}:
            ended.add(attempt)
    return problems


def stale_writes(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """CommandQueue.tla's NoStaleWrite, over a trace: every committed state write whose attempt
    did not own the guard when it committed (the state after shows another owner, or none).
    Meaningful with the attempt guard on (without it, no write has a guard). One message each."""
    bad = []
    for i, ev in enumerate(events, start=1):
        if ev.get("op") == "put_if_owner" and ev.get("outcome") == "written":
            attempt = (ev.get("args") or {}).get("attempt")
            owner = ((ev.get("state") or {}).get("guard") or {}).get("owner")
            if owner != attempt:
                bad.append(f"event {i}: {attempt} wrote {(ev.get('args') or {}).get('status')} to {ev.get('cmd')} "
                           f"while the guard was {owner!r}'s")
    return bad


def stale_calls(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """TraceCommandQueue.tla's NoStaleCall, over a trace: an external call made by an attempt
    that did not own the guard (the script's owner check skipped). One message each."""
    bad = []
    for i, ev in enumerate(events, start=1):
        if ev.get("op") == "external_call" and ev.get("outcome") == "called":
            attempt = (ev.get("args") or {}).get("attempt")
            owner = ((ev.get("state") or {}).get("guard") or {}).get("owner")
            if owner != attempt:
                bad.append(f"event {i}: {attempt} called {ev.get('cmd')} while the guard was {owner!r}'s")
    return bad


def restarts(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """CommandQueue.tla's NoRestart: a SUBMITTING write to a command that had been terminal."""
    terminal: set[str] = set()
    bad = []
    for i, ev in enumerate(events, start=1):
        cmd = ev.get("cmd")
        command = (ev.get("state") or {}).get("command")
        if ev.get("op") == "put_if_owner" and ev.get("outcome") == "written" and \
                (ev.get("args") or {}).get("status") == "SUBMITTING" and cmd in terminal:
            bad.append(f"event {i}: {cmd} restarted (SUBMITTING) after it was terminal")
        if isinstance(command, dict) and command.get("status") in TERMINAL and cmd is not None:
            terminal.add(cmd)
    return bad


def call_windows(events: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """The attempts inside their call window now (CommandQueue.tla's CallWindow), each with its
    command: opened by a SUBMITTING write or an external call, closed by the PROCESSING write
    or by the attempt's end (a refused write or call, a lost guard, a release)."""
    open_: dict[str, str] = {}
    for ev in events:
        args = ev.get("args") or {}
        attempt, cmd, op, outcome = args.get("attempt"), ev.get("cmd"), ev.get("op"), ev.get("outcome")
        if attempt is None or cmd is None:
            continue
        opens = (op == "put_if_owner" and outcome == "written" and args.get("status") == "SUBMITTING") or \
            (op == "external_call" and outcome == "called")
        closes = (op == "put_if_owner" and (outcome == "refused" or args.get("status") == "PROCESSING")) or \
            (op == "external_call" and outcome == "refused") or \
            (op == "guard_renew" and outcome == "lost") or op == "guard_release"
        if opens:
            open_[attempt] = cmd
        elif closes:
            open_.pop(attempt, None)
    return open_


def unexplained_calls(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """ExternalOnce as the implementation can keep it (its external system is idempotent by
    key, CommandQueue.tla's ExternalIdempotent): a command's external call is repeated only
    when every earlier call of it failed to finish: its attempt ended without writing
    PROCESSING (a refused write or call, a lost renewal, a release), its guard passed to
    another attempt (a stale caller), or its handler threw. One message per unexplained call:
    a repeat after an earlier caller had its answer, or while one still held on."""
    callers: dict[str, list[str]] = {}
    failed: set[str] = set()
    answered: set[str] = set()
    throws: Counter[str] = Counter()
    bad = []
    for i, ev in enumerate(events, start=1):
        op, cmd, outcome = ev.get("op"), ev.get("cmd"), ev.get("outcome")
        args = ev.get("args") or {}
        a = args.get("attempt")
        if op == "external_call" and outcome == "called":
            done = [b for b in callers.get(cmd, []) if b in answered]
            live = [b for b in callers.get(cmd, []) if b not in answered and b not in failed]
            if done:
                bad.append(f"event {i}: {a} called {cmd} again after {done[0]} had its answer")
            elif len(live) > throws[cmd]:
                bad.append(f"event {i}: {a} called {cmd} while {live[0]} still held on to its call")
            callers.setdefault(cmd, []).append(a)
        elif op == "put_if_owner" and outcome == "written" and args.get("status") == "PROCESSING":
            answered.add(a)
        elif op == "guard_take" and outcome == "taken":
            failed.update(b for b in callers.get(cmd, []) if b != a and b not in answered)  # stale now
        elif (op, outcome) in {("put_if_owner", "refused"), ("external_call", "refused"), ("guard_renew", "lost")} \
                or op == "guard_release":
            if a not in answered:
                failed.add(a)
        elif op == "invoke_end" and args.get("result") == "threw" and cmd is not None:
            throws[cmd] += 1
    return bad
