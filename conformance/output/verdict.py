"""From TLC's messages to a verdict: what a run of TLC showed, as data.

Every run ends in exactly one `Verdict`:

| kind       | when                                                                  |
|------------|-----------------------------------------------------------------------|
| `ok`       | TLC finished its search with no error and explored at least one state |
| `violated` | an invariant, action property, temporal property or `Assert` failed   |
| `deadlock` | a reachable state has no successor (and deadlock checking was on)     |
| `error`    | TLC could not check: parse, semantic, cfg, evaluation error, no initial states, a crash |
| `timeout`  | the run passed its time budget and was stopped                        |

Nothing that went wrong is ever `ok`: a run with no states, no success message, or output
that cannot be read is an `error` with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from conformance.output.counterexample import Counterexample, parse_back_to, parse_state, parse_variables
from conformance.output.messages import Code, Message, walk


class Kind(str, Enum):
    """What a TLC run showed."""

    OK = "ok"
    VIOLATED = "violated"
    DEADLOCK = "deadlock"
    ERROR = "error"
    TIMEOUT = "timeout"


class PropertyKind(str, Enum):
    """What kind of property a violation is of."""

    INVARIANT = "invariant"
    ACTION = "action property"
    TEMPORAL = "temporal"
    DEADLOCK = "deadlock"
    ASSERTION = "assertion"


class ErrorKind(str, Enum):
    """Why TLC could not check."""

    PARSE = "parse error"
    SEMANTIC = "semantic error"
    CFG = "cfg error"
    NO_INITIAL_STATES = "no initial states"
    EVALUATION = "evaluation error"
    ASSUMPTION = "assumption false"
    COMMAND_LINE = "bad command line"
    CRASH = "crash"
    MODEL_FILE = "model file refused"  # never reached TLC: the model file is invalid


@dataclass(frozen=True)
class Stats:
    """The search's figures (None where TLC did not print them)."""

    distinct_states: int | None = None
    states_generated: int | None = None
    depth: int | None = None
    seconds: float = 0.0


@dataclass(frozen=True)
class Verdict:
    """The outcome of one TLC run.

    `property` names the violated property (for temporal violations in a run that checked
    several, the caller names it: TLC 2.15 does not); `message` is TLC's own text for errors
    and assertion failures.
    """

    kind: Kind
    stats: Stats
    property: str | None = None
    property_kind: PropertyKind | None = None
    counterexample: Counterexample | None = None
    error_kind: ErrorKind | None = None
    message: str | None = None
    tlc_version: str | None = None
    exit_code: int | None = None

    def summary(self) -> str:
        """One line: the kind, and the property or the reason."""
        if self.kind is Kind.VIOLATED:
            length = f" in {len(self.counterexample)} states" if self.counterexample else ""
            return f"violated {self.property} ({self.property_kind.value if self.property_kind else '?'}){length}"
        if self.kind is Kind.DEADLOCK:
            length = f" after {len(self.counterexample)} states" if self.counterexample else ""
            return f"deadlock{length}"
        if self.kind is Kind.ERROR:
            first = (self.message or "").strip().splitlines()
            return f"error: {self.error_kind.value if self.error_kind else '?'}: {first[0] if first else 'no message'}"
        return self.kind.value


_STATS = re.compile(r"([\d,]+) states generated, ([\d,]+) distinct states found")
_DEPTH = re.compile(r"depth of the complete state graph search is (\d+)")
_VERSION = re.compile(r"TLC2 Version (\S+)")
_INVARIANT = re.compile(r"Invariant (\S+) is violated")
_ACTION_PROP = re.compile(r"Action property (\S+) is violated")

# Messages that report a problem with the cfg file or the model's names.
_CFG_CODES = {5006, 2222, 2223, 2224, 2225, 2226, 2227, 2228, 2229, 2230, 2231, 2232, 2233, 2234, 2235}
# (Not 2168: TLC 2.15 says "Loading ... operator override" under it when it takes a user's Java
# override class, which is no error.)
_EVAL_CODES = {2103, 2179, 2146, 2147, 2148, 2149, 2150, 2151, 2152, 2153, 2154, 2155, 2156, 2157, 2158,
               2159, 2160, 2161, 2163, 2164, 2165, 2166, 2167, 2169, 2170, 2171, 2172, 2173, 2174,
               2175, 2176, 2177, 2178, 2180, 2181, 2182, 2183, 2184, 2249, 2250, 2251}


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def read_stats(messages: list[Message], seconds: float) -> Stats:
    """Distinct and generated states (the last report wins) and the depth."""
    distinct = generated = depth = None
    for m in walk(messages):
        if m.code in (Code.STATS, Code.PROGRESS):
            s = _STATS.search(m.body)
            if s:
                generated, distinct = _int(s.group(1)), _int(s.group(2))
        elif m.code == Code.SEARCH_DEPTH:
            d = _DEPTH.search(m.body)
            if d:
                depth = int(d.group(1))
    return Stats(distinct, generated, depth, seconds)


def read_version(messages: list[Message]) -> str | None:
    """TLC's version from its banner (message 2262), e.g. "2.15"."""
    for m in walk(messages):
        if m.code == Code.VERSION:
            v = _VERSION.search(m.body)
            return v.group(1) if v else m.body.strip()
    return None


def read_counterexample(messages: list[Message]) -> Counterexample | None:
    """The behaviour TLC printed after a violation, if it printed one."""
    states = []
    back_to = back_action = back_location = None
    stutters = False
    for m in walk(messages):
        if m.code == Code.STATE:
            states.append(parse_state(m.body))
        elif m.code == Code.BACK_TO_STATE:
            back_to, back_action, back_location = parse_back_to(m.body)
        elif m.code == Code.STUTTERING:
            stutters = True
    if not states:
        return None
    return Counterexample(tuple(states), back_to, stutters, back_action, back_location)


def _initial_state_counterexample(body: str) -> Counterexample:
    from conformance.output.counterexample import State

    _, _, rest = body.partition("\n")
    return Counterexample((State(1, "Initial predicate", None, parse_variables(rest)),))


def _untagged(messages: list[Message]) -> str:
    return "\n".join(m.body for m in messages if m.code == Code.UNTAGGED)


def _sany_error(messages: list[Message]) -> tuple[ErrorKind, str]:
    """Parse or semantic error, and SANY's explanation without its noise (stack, file list)."""
    text = _untagged(messages)
    lines = [ln.strip() for ln in text.splitlines()]
    if any(m in text for m in ("Parse Error", "Lexical error", "Could not parse")):
        keep = []
        for ln in lines:
            if ln.startswith("Residual stack trace"):
                break
            if ln and not ln.startswith(("Parsing file", "***Parse Error***")):
                keep.append(ln)
        tail = [ln for ln in lines if ln.startswith("Could not parse")]
        return ErrorKind.PARSE, "; ".join(keep + tail) or "SANY could not parse the spec"
    keep = [ln for ln in lines if ln and not ln.startswith(("Parsing file", "Semantic processing", "Semantic errors", "*** Errors"))]
    # SANY prints a location line, then what is wrong there: pair them up.
    return ErrorKind.SEMANTIC, "; ".join(keep) or "SANY reported a semantic error"


def verdict_from_output(
    messages: list[Message],
    *,
    exit_code: int | None,
    seconds: float,
    timed_out: bool = False,
    behaviours: bool = True,
) -> Verdict:
    """Decide the verdict of a run from its parsed messages, exit code and whether it timed out.

    `behaviours` is false for an ASSUME-only spec (no Init, Next or Spec): there TLC evaluates
    the assumptions and explores no state, and its success with 0 states is an `ok`."""
    stats = read_stats(messages, seconds)
    version = read_version(messages)
    base = {"stats": stats, "tlc_version": version, "exit_code": exit_code}
    if timed_out:
        return Verdict(Kind.TIMEOUT, message=f"stopped after {seconds:.0f} s", **base)

    everything = list(walk(messages))
    codes = {m.code for m in everything}
    by_code = {m.code: m for m in everything}

    # Violations first: they are what a run is for, and some arrive nested in a general error.
    if Code.INVARIANT_VIOLATED_INITIAL in codes:
        m = by_code[Code.INVARIANT_VIOLATED_INITIAL]
        name = _INVARIANT.search(m.body)
        return Verdict(Kind.VIOLATED, property=name.group(1) if name else None, property_kind=PropertyKind.INVARIANT,
                       counterexample=_initial_state_counterexample(m.body), **base)
    if Code.INVARIANT_VIOLATED in codes:
        name = _INVARIANT.search(by_code[Code.INVARIANT_VIOLATED].body)
        return Verdict(Kind.VIOLATED, property=name.group(1) if name else None, property_kind=PropertyKind.INVARIANT,
                       counterexample=read_counterexample(messages), **base)
    if Code.ACTION_PROPERTY_VIOLATED in codes:
        name = _ACTION_PROP.search(by_code[Code.ACTION_PROPERTY_VIOLATED].body)
        return Verdict(Kind.VIOLATED, property=name.group(1) if name else None, property_kind=PropertyKind.ACTION,
                       counterexample=read_counterexample(messages), **base)
    if Code.TEMPORAL_VIOLATED in codes:
        return Verdict(Kind.VIOLATED, property=None, property_kind=PropertyKind.TEMPORAL,
                       counterexample=read_counterexample(messages), **base)
    if Code.DEADLOCK in codes:
        return Verdict(Kind.DEADLOCK, property_kind=PropertyKind.DEADLOCK, counterexample=read_counterexample(messages), **base)
    if Code.ASSERT_FAILED in codes:
        text = by_code[Code.ASSERT_FAILED].body
        said = text.partition("\n")[2].strip().strip('"') or text
        return Verdict(Kind.VIOLATED, property=said, property_kind=PropertyKind.ASSERTION, message=text,
                       counterexample=read_counterexample(messages), **base)

    # Then the reasons TLC could not check.
    if Code.PARSE_OR_SEMANTIC_FAILED in codes:
        kind, detail = _sany_error(messages)
        return Verdict(Kind.ERROR, error_kind=kind, message=detail, **base)
    cfg = [m for m in everything if m.code in _CFG_CODES]
    if cfg:
        return Verdict(Kind.ERROR, error_kind=ErrorKind.CFG, message=cfg[0].body, **base)
    if Code.ASSUMPTION_FALSE in codes:
        return Verdict(Kind.ERROR, error_kind=ErrorKind.ASSUMPTION, message=by_code[Code.ASSUMPTION_FALSE].body, **base)
    if Code.NO_INITIAL_STATES in codes:
        return Verdict(Kind.ERROR, error_kind=ErrorKind.NO_INITIAL_STATES, message=by_code[Code.NO_INITIAL_STATES].body, **base)
    evaluation = [m for m in everything if m.code in _EVAL_CODES]
    if evaluation:
        return Verdict(Kind.ERROR, error_kind=ErrorKind.EVALUATION, message="\n".join(m.body for m in evaluation), **base)
    if Code.BAD_COMMAND_LINE in codes:
        return Verdict(Kind.ERROR, error_kind=ErrorKind.COMMAND_LINE, message=by_code[Code.BAD_COMMAND_LINE].body, **base)

    if Code.SUCCESS in codes and exit_code == 0:
        if not behaviours:
            return Verdict(Kind.OK, **base)
        if not stats.distinct_states:
            # TLC 2.15 reports success for an initial predicate no state satisfies.
            return Verdict(Kind.ERROR, error_kind=ErrorKind.NO_INITIAL_STATES,
                           message="TLC found no initial state: the initial predicate is unsatisfiable with these constants", **base)
        return Verdict(Kind.OK, **base)

    errors = [m for m in everything if m.klass == 1] or [m for m in everything if m.code == Code.UNTAGGED]
    detail = "\n".join(m.body for m in errors[-3:]).strip() or "no output"
    return Verdict(Kind.ERROR, error_kind=ErrorKind.CRASH, message=f"TLC ended without a verdict (exit code {exit_code}): {detail}", **base)
