"""Checking many traces in one TLC run, and splitting the verdicts back per trace.

    traces ──group by (system, constants)──► batches ──render──► TraceData + TraceRun + cfg
                                                                        │ one TLC run each
    verdict per trace ◄──read the PrintT lines (L / ACCEPT / DIFF)──────┘

A JVM start costs more than checking a short trace, so a batch holds up to `batch_size`
traces; `Init` picks the trace index `t`, and each trace is explored on its own. When TLC fails
on a batch (an evaluation error, a timeout), the batch is split in halves and re-checked until
the failing trace stands alone and gets its own `inconclusive` verdict, so that the verdicts of
a batch are always those of checking each trace alone.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from conformance.check.runner import Tlc, default_workers
from conformance.output.messages import parse_messages, walk
from conformance.output.values import format_value, parse_value
from conformance.output.verdict import Kind, Verdict, verdict_from_output
from conformance.tlc.command import TlcInvocation, tlc_command
from conformance.tlc.launcher import launcher
from conformance.tlc.process import run_tlc
from conformance.models.declared import assumptions, declared_constants
from conformance.traces.printer import printer_classes
from conformance.traces.reader import MODULE as READER_MODULE, VALUES_FILE, reader_for
from conformance.traces.system import System, constants_for, per_trace
from conformance.traces.to_tla import literal_of, tla_value
from conformance.traces.trace import Diff, Trace, TraceKind, TraceVerdict, excuses

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Batch:
    """Traces of one system checked in one TLC run: the constants they share, and those whose
    values differ between them (`varying`: one value per trace, in the batch's order)."""

    system: System
    constants: tuple[tuple[str, Any], ...]
    traces: tuple[Trace, ...]
    varying: tuple[tuple[str, tuple[Any, ...]], ...] = ()


def declared(system: System) -> frozenset[str]:
    """The constants the system's trace spec declares (its EXTENDS included): only those can
    take a value per trace (an INSTANCE substitutes declared constants, not the definitions a
    cfg may also override, such as the engine's RenewAhead)."""
    return _declared(system.spec_path)


@cache
def _declared(spec_path: Path) -> frozenset[str]:
    return frozenset(declared_constants(spec_path))


def assumed(system: System) -> tuple[str, ...] | None:
    """The ASSUMEs of the system's trace spec (its EXTENDS included), or None where they cannot
    be read surely (`declared.assumptions`). A constant bound per trace by an INSTANCE escapes
    them (TLC 2.15 checks no ASSUME of an instance), so `render_batch` checks them per trace;
    where they are unknown, no declared constant varies within a batch (`group` splits)."""
    return _assumed(system.spec_path)


@cache
def _assumed(spec_path: Path) -> tuple[str, ...] | None:
    found = assumptions(spec_path)
    return None if found is None else tuple(found)


def make_batch(system: System, traces: list[Trace] | tuple[Trace, ...]) -> Batch:
    """A batch of `traces`: each constant the traces' headers (or sizes) give alike is shared,
    a `numbered` one at its largest, the others vary per trace (declared constants only: `group`
    splits by the rest). The
    per-trace constants that the spec itself indexes with the trace number (`per_trace`) are
    left to `render_batch`."""
    each = per_trace(system)
    values = [{n: v for n, v in constants_for(system, t).items() if n not in each} for t in traces]
    names = sorted(values[0]) if values else []
    shared, varying = [], []
    for n in names:
        column = tuple(v[n] for v in values)
        # Alike as TLA+ (1 and true are equal in Python, not in TLA+).
        if len({json.dumps(c, sort_keys=True) for c in column}) == 1:
            shared.append((n, column[0]))
        elif "numbered" in system.constants[n]:
            # Room for every trace's entities is room for each: the largest, shared (`group`
            # keeps a batch's sizes within ROOM_SPREAD). Cheaper than an instance per trace.
            shared.append((n, max(column, key=len)))
        elif n in declared(system) and assumed(system) is not None:
            varying.append((n, column))
        else:
            raise ValueError(f"{n} is not a declared constant of {system.spec} and differs within a batch")
    return Batch(system, tuple(shared), tuple(traces), tuple(varying))


@dataclass(frozen=True)
class Prints:
    """What the trace spec printed: lines explained per trace, accepted traces, field diffs."""

    explained: dict[int, int]
    accepted: frozenset[int]
    diffs: dict[tuple[int, int], list[Diff]]
    # For an accepted trace whose spec keeps the fault lines it used (ConsumedExcused): the
    # fewest that any accepting behaviour needed (empty: one needed none).
    excused: dict[int, tuple[int, ...]] = field(default_factory=dict)


# TLC's heap for a trace batch, in MiB: a huge batch ends in an out-of-memory error (then the
# batch is split, and a trace too big alone is inconclusive), never in a machine out of memory.
TRACE_HEAP_MB = 2048
# TLC's thread stack for trace batches: its evaluation recurses deeper as a model's Entries grow
# (a work-queue trace of 600 messages overflowed the JVM's default 1 MiB at its third line and
# came out inconclusive; 2,000 messages pass with this). Only the pages used are committed.
TRACE_STACK = "-Xss64m"
# The JVM's first compiler only: a trace batch is a run of seconds, which the optimising
# compiler's own work (on other threads) does not pay back. On 150 command traces: 2.9 s of CPU
# against 6.7 s with both compilers.
TRACE_JIT = "-XX:TieredStopAtLevel=1"
# Events per batch at most, whatever `batch_size` says: the generated module's size (SANY's
# parse) and the search grow with it.
MAX_BATCH_EVENTS = 60_000
# A batch's traces share the largest of their `numbered` sets (Workers, Entries, ...) when the
# largest is at most this many times the smallest: spare room in a state's functions costs less
# than checking each trace by an instance with its own (on 150 command traces with Workers 8 to
# 32: 2.7 s of CPU shared at 32, against 3.5 s per trace), and less than a TLC run of its own
# (about 1 s of CPU): on a sample of recorded traces with two long Redis runs each, one batch
# per system (Workers 8 to 128, Entries 4 to 64) took 2.6 s of CPU for 59 command traces against
# 3.1 s in two runs at a spread of 4, and 4.35 s for 119 work-queue traces against 4.65 s. Beyond
# it, a new batch begins. Cheaper still is room per trace (`numbered` and `per_trace`, on a
# definition of the protocol spec), as the work queue and the command layer have it: 87 command
# traces took 3.2 s of TLC sharing Workers 128 and Commands 64, 2.3 s each with its own.
ROOM_SPREAD = 16


def group(traces: list[Trace], system: System, batch_size: int) -> list[Batch]:
    """A system's traces in batches of at most `batch_size` traces and `MAX_BATCH_EVENTS`
    events (a longer trace has a batch of its own). A declared constant that differs within a
    batch is given per trace (`render_batch`), so that runs with other settings, gates, nodes or
    sizes share a TLC run instead of each paying for its own JVM and parse; only a value given
    to an overridden definition (not a declared constant) splits the traces into groups.
    Smallest first (by `numbered` room, then events), so that the batches split by the event
    bound are alike; a batch's room spreads at most ROOM_SPREAD times (`make_batch`)."""
    # Room given per trace (numbered and per_trace) spreads nothing: each trace has its own.
    numbered = sorted(n for n, how in system.constants.items() if "numbered" in how and not how.get("per_trace"))
    varies = declared(system) if assumed(system) is not None else frozenset()
    fixed = sorted(set(system.constants) - varies - per_trace(system) - set(numbered))
    groups: dict[str, list[Trace]] = defaultdict(list)
    for t in traces:
        c = constants_for(system, t)
        groups[json.dumps([c[n] for n in fixed], sort_keys=True)].append(t)

    def room(t: Trace) -> tuple[int, ...]:
        c = constants_for(system, t)
        return tuple(len(c[n]) for n in numbered)

    out = []
    for members in groups.values():
        current: list[Trace] = []
        events, least = 0, ()  # least: the room of the batch's first (smallest) trace
        for t in sorted(members, key=lambda t: (room(t), len(t.events))):
            spread = current and any(r > ROOM_SPREAD * m for r, m in zip(room(t), least))
            if current and (spread or len(current) >= batch_size or events + len(t.events) > MAX_BATCH_EVENTS):
                out.append(make_batch(system, current))
                current, events = [], 0
            if not current:
                least = room(t)
            current.append(t)
            events += len(t.events)
        if current:
            out.append(make_batch(system, current))
    return out


@cache
def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("conformance.traces", "templates"), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)
    env.filters["tla_tuple"] = tuple_text
    return env


# The width of a generated line. TLC 2.15 runs PlusCal's translation check (pcal.Validator) on
# every module it loads, and its time grows steeply with a line's length: a batch of 1,046
# engine traces, its per-trace tuples a line each (up to 14 KB), took 1.1 s of SANY, and 0.5 s
# with the same tuples over lines of this width.
LINE_WIDTH = 100


def tuple_text(items: list[str]) -> str:
    """`<<a, b, ...>>` of the TLA+ texts `items`, a few to a line (continuations indented)."""
    lines: list[str] = []
    line = ""
    for item in items:
        if line and len(line) + len(item) + 2 > LINE_WIDTH:
            lines.append(line)
            line = item
        else:
            line = f"{line}, {item}" if line else item
    if line:
        lines.append(line)
    return "<<" + ",\n    ".join(lines) + ">>"


def constant_text(name: str, value: Any) -> str:
    """A constant's value as TLA+: lists become sets (of nodes, say), the rest as in traces."""
    if isinstance(value, list):
        return "{" + ", ".join(tla_value(v, f"constant {name}") for v in value) + "}"
    return tla_value(value, f"constant {name}")


def render_batch(batch: Batch, values_file: bool = False) -> dict[str, str]:
    """The generated files of a batch: TraceData.tla, TraceRun.tla, TraceRun.cfg; with
    `values_file`, the traces go to `reader.VALUES_FILE` (the same text), which TraceData reads
    through the TraceValues class instead of holding them.

    Constants shared by the batch are substituted in the cfg, as for any model. Where some vary
    per trace, TLC (2.15) cannot substitute a constant with anything that depends on the trace
    number, a variable; TraceRun then instantiates the trace spec once per trace number `i`,
    with each varying constant bound to trace i's value (`lp_Trace(i)`), and its Init and Next
    are trace i's when t = i: each trace is checked against the spec with its own constants,
    as alone. (The spec's own ASSUMEs are checked with the first trace's values.)"""
    literals = [literal_of(t, batch.system.time_fields) for t in batch.traces]
    constants = [(n, constant_text(n, v)) for n, v in batch.constants]
    # Per-trace constants the spec indexes itself: <<value for trace 1, ..., trace n>>, in the
    # batch's order (Traces[t]). A per-trace definition of the protocol spec (not a declared
    # constant, which a cfg may only replace with a constant) is replaced by the value of the
    # trace being checked: lp_<name>_each[t], t being every trace spec's trace number.
    each: list[tuple[str, str]] = []
    for n in sorted(per_trace(batch.system)):
        values = [constants_for(batch.system, t)[n] for t in batch.traces]
        column = tuple_text([constant_text(n, v) for v in values])
        if n in declared(batch.system):
            constants.append((n, column))
        else:
            each.append((n, column))
            constants.append((n, f"lp_{n}_each[t]"))
    varying = [(n, [constant_text(n, v) for v in column]) for n, column in batch.varying]
    env = _env()
    data = env.get_template("TraceData.tla.j2").render(count=len(literals), system=batch.system.name, traces=literals,
                                                       values_file=VALUES_FILE if values_file else None)
    files = {
        "TraceData.tla": data,
        "TraceRun.tla": env.get_template("TraceRun.tla.j2").render(spec=batch.system.spec, constants=constants, varying=varying,
                                                                    each=each, assumed=bool(varying and assumed(batch.system)),
                                                                    count=len(batch.traces)),
        "TraceRun.cfg": env.get_template("TraceRun.cfg.j2").render(constants=constants, varying=varying),
    }
    if varying and assumed(batch.system):
        files[ASSUME_MODULE + ".tla"] = env.get_template("TraceRunAssume.tla.j2").render(
            spec=batch.system.spec, assumptions=[_as_definition(k, text) for k, text in enumerate(assumed(batch.system) or (), 1)])
    if values_file:
        files[VALUES_FILE] = "<<\n" + ",\n".join(literals) + "\n>>\n"
    return files


# The generated module that restates the spec's ASSUMEs as definitions (`render_batch`).
ASSUME_MODULE = "TraceRunAssume"


def _as_definition(k: int, text: str) -> tuple[str, str]:
    """An ASSUME's text as a definition, and its name (lpA<k>): the keyword is replaced by the
    name and "==" in the same width, so that every line keeps its column (a junction list's
    bullets must align). A name that clashes with the spec's stops SANY, and so the batch: it
    is then split down to runs of one trace, which check the spec's ASSUMEs themselves."""
    keyword = re.match(r"ASSUMPTION|ASSUME|AXIOM", text)
    assert keyword is not None, text
    width = len(keyword.group(0))
    name = next((n for n in (f"lpA{k}", f"A{k}") if len(n) + 2 <= width), None)
    if name is None:
        raise ValueError(f"assumption {k} of a spec has no definition as wide as {keyword.group(0)!r}")
    return name, name + " " * (width - len(name) - 2) + "==" + text[width:]


def _balance(text: str) -> int:
    """Opening minus closing brackets of a TLA+ value, outside string literals."""
    depth, i, in_string = 0, 0, False
    while i < len(text):
        ch = text[i]
        if in_string:
            if ch == "\\":
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif text.startswith("<<", i):
            depth, i = depth + 1, i + 1
        elif text.startswith(">>", i):
            depth, i = depth - 1, i + 1
        elif ch in "[({":
            depth += 1
        elif ch in "])}":
            depth -= 1
        i += 1
    return depth


def printed_texts(output: str) -> Iterator[str]:
    """The text of each tuple a spec printed with PrintT, in order, joined where TLC wrapped a
    long one."""
    for message in walk(parse_messages(output)):
        pending: list[str] = []
        for line in message.body.splitlines():
            if not pending:
                if not line.lstrip().startswith("<<"):
                    continue
                if _bookkeeping(line.strip()) is not None:  # most lines: one short tuple
                    yield line.strip()
                    continue
            pending.append(line)
            text = "\n".join(pending)
            if _balance(text) <= 0:
                pending = []
                yield text


_NOT_A_VALUE = object()
_EXPLAINED = re.compile(r'<<"L", (-?\d+), (-?\d+)>>')
_ACCEPT = re.compile(r'<<"ACCEPT", (-?\d+)(?:, \{((?:-?\d+(?:, )?)*)\})?>>')
_DIFF_AT = re.compile(r'<<\s*"DIFF",\s*(-?\d+),\s*(-?\d+),')


def _bookkeeping(text: str) -> tuple[Any, ...] | None:
    """An L or ACCEPT line as TLC prints it (tla/TraceCheck.tla), read without the parser; None
    for any other text. An ACCEPT carries the fault lines its behaviour used (AcceptExcused), or
    None where the spec does not keep them (Accept)."""
    m = _EXPLAINED.fullmatch(text)
    if m is not None:
        return ("L", int(m[1]), int(m[2]))
    m = _ACCEPT.fullmatch(text)
    if m is None:
        return None
    used = None if m[2] is None else tuple(sorted(int(x) for x in m[2].split(", ") if x))
    return ("ACCEPT", int(m[1]), used)


def _printed(text: str) -> object:
    """One printed text as a value (`_NOT_A_VALUE` if it is some other text that began with <<)."""
    short = _bookkeeping(text)
    if short is not None:
        return short
    try:
        return parse_value(text)
    except Exception:
        return _NOT_A_VALUE


def read_prints(output: str) -> Prints:
    """The L / ACCEPT / DIFF lines a trace spec printed (see tla/TraceCheck.tla). Only the DIFF
    records of the line a trace stopped at (its first unexplained one) are kept: a verdict names
    those, and a batch prints thousands of others, from searches that went on to explain the line
    (parsing them all was most of the time spent reading a batch's output)."""
    explained: dict[int, int] = {}
    accepted: set[int] = set()
    excused: dict[int, tuple[int, ...]] = {}
    diff_texts: dict[tuple[int, int] | None, set[str]] = defaultdict(set)
    for text in printed_texts(output):
        short = _bookkeeping(text)
        if short is not None:
            if short[0] == "L":
                explained[short[1]] = max(explained.get(short[1], 0), short[2])
            else:
                accepted.add(short[1])
                used = short[2]
                if used is not None and (short[1] not in excused or (len(used), used) < (len(excused[short[1]]), excused[short[1]])):
                    excused[short[1]] = used
            continue
        at = _DIFF_AT.match(text)
        diff_texts[(int(at[1]), int(at[2])) if at else None].add(text)
    records: dict[tuple[int, int], set[tuple[Diff, ...]]] = defaultdict(set)
    for key, texts in diff_texts.items():
        if key is not None and key[1] != explained.get(key[0], 0) + 1:
            continue
        for text in texts:
            value = _printed(text)
            if not (isinstance(value, tuple) and len(value) == 4 and value[0] == "DIFF" and isinstance(value[3], dict)):
                continue
            if value[2] != explained.get(value[1], 0) + 1:
                continue
            records[(value[1], value[2])].add(tuple(Diff(str(field), format_value(pair[0]), format_value(pair[1]))
                                                    for field, pair in value[3].items()))
    # TLC's workers print the DIFFs of one line in the order they happen to reach them: the
    # records are put in a fixed order (each record's fields as printed), so that a verdict
    # never depends on thread scheduling.
    diffs: dict[tuple[int, int], list[Diff]] = {}
    for key, recs in records.items():
        out: list[Diff] = []
        for rec in sorted(recs, key=lambda r: sorted((d.field, str(d.expected), str(d.logged)) for d in r)):
            out.extend(d for d in rec if d not in out)
        diffs[key] = out
    return Prints(explained, frozenset(accepted), diffs, excused)


def verdicts_from_prints(batch: Batch, prints: Prints) -> list[TraceVerdict]:
    """One verdict per trace of a batch whose TLC run completed."""
    out = []
    for i, trace in enumerate(batch.traces, start=1):
        n = len(trace.events)
        if i in prints.accepted and prints.explained.get(i) == n:
            out.append(TraceVerdict(trace.source, TraceKind.ACCEPTED, explained=n,
                                    excused=excuses(trace, prints.excused.get(i, ()))))
            continue
        done = prints.explained.get(i, 0)
        event = trace.events[done] if done < n else trace.events[-1]
        out.append(TraceVerdict(trace.source, TraceKind.REJECTED, line=done + 1, op=event["op"], node=event["node"],
                                explained=done, diffs=tuple(prints.diffs.get((i, done + 1), ()))))
    return out


def batch_id(batch: Batch) -> str:
    """A short stable name for a batch (from its traces' sources), for kept files."""
    import hashlib

    return hashlib.sha1("\n".join(t.source for t in batch.traces).encode()).hexdigest()[:10]


def run_batch(batch: Batch, tlc: Tlc, workers: int, keep_dir: Path | None = None,
              heap_mb: int = TRACE_HEAP_MB) -> tuple[Verdict, str]:
    """Run TLC on one batch; its verdict (ok when it ran to the end) and raw output. The traces
    go through the TraceValues reader where it can be compiled, else as TLA+ text (`reader_for`);
    with the reader, TraceCheck's lines are printed by its Java override (`printer`)."""
    classes = reader_for(tlc.java, tlc.jar)
    printer = printer_classes(tlc.java, tlc.jar) if classes is not None else None
    launch = launcher(tlc.java, tlc.jar)
    files = render_batch(batch, values_file=classes is not None)
    with tempfile.TemporaryDirectory(prefix=f"leaseproof-traces-{batch.system.name}-") as tmp:
        run_dir = Path(tmp)
        for spec in batch.system.spec_path.parent.glob("*.tla"):
            shutil.copy2(spec, run_dir / spec.name)
        if classes is not None:
            shutil.copy2(READER_MODULE, run_dir / READER_MODULE.name)
        for name, text in files.items():
            (run_dir / name).write_text(text, encoding="utf-8")
        if keep_dir is not None:
            where = keep_dir / f"{batch.system.name}-{batch_id(batch)}"
            where.mkdir(parents=True, exist_ok=True)
            for name, text in files.items():
                (where / name).write_text(text, encoding="utf-8")
            (where / "traces.txt").write_text("".join(f"{i} {t.source}\n" for i, t in enumerate(batch.traces, 1)), encoding="utf-8")
        (run_dir / "tmp").mkdir()
        cmd = tlc_command(TlcInvocation(java=tlc.java, jar=tlc.jar, module_file="TraceRun.tla", cfg_file="TraceRun.cfg",
                                        workers=workers, metadir="states", check_deadlock=False, tmpdir=str(run_dir / "tmp"),
                                        java_options=("-XX:+UseParallelGC", f"-Xmx{heap_mb}m", TRACE_STACK, TRACE_JIT),
                                        classpath=(*(str(c) for c in (classes, printer) if c is not None), *launch.classpath),
                                        main_class=launch.main))
        raw = run_tlc(cmd, run_dir, batch.system.timeout)
    verdict = verdict_from_output(parse_messages(raw.output), exit_code=raw.exit_code, seconds=raw.seconds, timed_out=raw.timed_out)
    return verdict, raw.output


def inconclusive_reason(batch: Batch, verdict: Verdict, output: str) -> str:
    """Why TLC could not decide the one trace of `batch`: the trace, the line where TLC stopped
    (the first it had not explained) or, where it stopped before any line, the header's
    constants it was given, and TLC's whole message."""
    trace = batch.traces[0]
    if verdict.kind is Kind.TIMEOUT:
        what = f"TLC passed its {batch.system.timeout:.0f} s budget"
    else:
        what = f"TLC could not check it ({verdict.error_kind.value if verdict.error_kind else verdict.kind.value}): " \
               f"{' '.join((verdict.message or verdict.summary()).split())}"  # in full, on one line
    try:
        done = read_prints(output).explained.get(1, 0)
    except Exception:  # the output itself is what failed: say where from the trace's start
        done = 0
    if done < len(trace.events):
        event = trace.events[done]
        where = f"at event {done + 1} ({event['op']} by {event['node']}), after {done} explained"
    else:
        where = f"after all {done} events were explained"
    if done == 0:
        given = sorted(constants_for(batch.system, trace).items())
        where += "; with the constants its header gives: " + ", ".join(f"{n} = {constant_text(n, v)}" for n, v in given)
    return f"{trace.source}: {what}; TLC stopped {where}"


def check_batch(batch: Batch, tlc: Tlc, workers: int | None = None, keep_dir: Path | None = None,
                on_run: Callable[[Batch, Verdict], None] | None = None, heap_mb: int = TRACE_HEAP_MB) -> list[TraceVerdict]:
    """Verdicts for every trace of `batch`, bisecting when TLC fails on the batch as a whole."""
    n = workers or default_workers()
    verdict, output = run_batch(batch, tlc, n, keep_dir, heap_mb)
    if on_run is not None:
        on_run(batch, verdict)
    if verdict.kind is Kind.OK:
        return verdicts_from_prints(batch, read_prints(output))
    if len(batch.traces) == 1:
        return [TraceVerdict(batch.traces[0].source, TraceKind.INCONCLUSIVE, reason=inconclusive_reason(batch, verdict, output))]
    log.info("TLC failed on a batch of %d traces (%s); splitting it", len(batch.traces), verdict.summary())
    half = len(batch.traces) // 2
    return (check_batch(make_batch(batch.system, batch.traces[:half]), tlc, workers, None, on_run, heap_mb)
            + check_batch(make_batch(batch.system, batch.traces[half:]), tlc, workers, None, on_run, heap_mb))
