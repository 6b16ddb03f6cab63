"""Which skipped traces a check allows: a skip fails unless the command names every feature
that made it.

A trace is skipped when its header claims a feature its system file declares out of scope
(`out_of_scope:`): the spec cannot say anything about it. Left unchecked, such a claim would
turn any trace, a double run included, into a quiet pass; so a skip fails the check unless the
command allows each out-of-scope feature the trace claims, by name:

    leaseproof traces check --allow-skip direct_calls --allow-skip concurrent_calls out/traces
    pytest --leaseproof-traces out/traces --leaseproof-allow-skip direct_calls

A name no loaded system file declares out of scope is refused (`UnknownSkipFeature`), so that a
typo never allows everything, nor silently nothing. Pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.errors import LeaseproofError
from conformance.traces.system import System
from conformance.traces.trace import Trace, TraceKind, TraceVerdict


class UnknownSkipFeature(LeaseproofError):
    """A feature allowed to be skipped (`--allow-skip`, `--leaseproof-allow-skip`) that no loaded
    system file declares out of scope; the message names the ones that are."""


@dataclass(frozen=True)
class Skip:
    """A skipped trace: the out-of-scope features that made it skip, and whether the command
    allows every one of them."""

    source: str
    features: tuple[str, ...]
    allowed: bool

    def refused(self, allowed: Iterable[str]) -> tuple[str, ...]:
        """The features of this skip that `allowed` leaves out (all of them when it claims none:
        a skip nobody can attribute to a feature is never allowed)."""
        ok = set(allowed)
        return tuple(f for f in self.features if f not in ok) or self.features or ("(no declared feature)",)

    def note(self, allowed: Iterable[str], flag: str = "--allow-skip") -> str:
        """`allowed (direct_calls)` or `fails: reset not allowed (FLAG reset allows it)`, for the
        end of a trace's line."""
        if self.allowed:
            return f"allowed ({', '.join(self.features)})"
        refused = self.refused(allowed)
        return f"fails: {', '.join(refused)} not allowed ({' '.join(f'{flag} {f}' for f in refused)} allows it)"


def declared(systems: Mapping[str, System]) -> dict[str, list[str]]:
    """Every feature some system file declares out of scope, with the systems that do."""
    out: dict[str, list[str]] = {}
    for name, system in sorted(systems.items()):
        for feature in system.out_of_scope:
            out.setdefault(feature, []).append(name)
    return dict(sorted(out.items()))


def allowed_features(names: Iterable[str], systems: Mapping[str, System], flag: str = "--allow-skip") -> frozenset[str]:
    """`names` as a set, once each is known to be a feature some system file declares out of
    scope; `UnknownSkipFeature` naming the first that is not, and the known ones."""
    known = declared(systems)
    for name in names:
        if name not in known:
            have = ", ".join(f"{f} ({', '.join(s)})" for f, s in known.items()) or "none"
            raise UnknownSkipFeature(f"{flag} {name!r}: no system file declares that feature out of scope, so it allows "
                                     f"nothing; the features declared out of scope are: {have}")
    return frozenset(names)


def skip_features(item: Any, systems: Mapping[str, System]) -> tuple[str, ...]:
    """The out-of-scope features a trace claims (the reason it was skipped), sorted; () for an
    item that is not a trace of a loaded system."""
    if not isinstance(item, Trace) or item.system not in systems:
        return ()
    claimed = item.header.get("features", ())
    if not isinstance(claimed, list | tuple):
        return ()
    return tuple(sorted(set(map(str, claimed)) & set(systems[item.system].out_of_scope)))


def judge(items: Sequence[Any], verdicts: Sequence[TraceVerdict], systems: Mapping[str, System],
          allowed: Iterable[str]) -> list[Skip]:
    """Each skipped verdict (with the item it was given for, in the same order) judged: allowed
    when it was skipped for at least one feature and `allowed` holds all of them."""
    ok = set(allowed)
    out = []
    for item, v in zip(items, verdicts, strict=True):
        if v.kind is TraceKind.SKIPPED:
            features = skip_features(item, systems)
            out.append(Skip(v.source, features, bool(features) and set(features) <= ok))
    return out


def counts(skips: Iterable[Skip], allowed: Iterable[str]) -> dict[str, dict[str, int]]:
    """`{"allowed": {feature: traces}, "failed": {feature: traces}}`: allowed skips by each of
    their features, failed ones by each feature that was not allowed."""
    ok, bad = Counter[str](), Counter[str]()
    allowed = frozenset(allowed)
    for s in skips:
        if s.allowed:
            ok.update(s.features)
        else:
            bad.update(s.refused(allowed))
    return {"allowed": dict(sorted(ok.items())), "failed": dict(sorted(bad.items()))}


def skip_line(skips: Sequence[Skip], allowed: Iterable[str], flag: str = "--allow-skip") -> str | None:
    """One line on the skips, by feature, or None when there were none: `skips: 20 allowed
    (direct_calls 20), 1 failed (reset 1); FLAG FEATURE allows a feature's skips`."""
    if not skips:
        return None
    by = counts(skips, allowed)
    n_ok = sum(s.allowed for s in skips)

    def part(n: int, word: str, features: dict[str, int]) -> str:
        return f"{n} {word}" + (f" ({', '.join(f'{f} {k}' for f, k in features.items())})" if n else "")

    line = f"skips: {part(n_ok, 'allowed', by['allowed'])}, {part(len(skips) - n_ok, 'failed', by['failed'])}"
    if n_ok < len(skips):
        line += f"; {flag} FEATURE allows a feature's skips"
    return line
