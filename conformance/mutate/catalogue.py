"""A mutant catalogue: named, small edits of a system's real source, and the checks to run on them.

A catalogue is a YAML file (`mutants/<system>.yaml`):

    system: engine
    checks:                      # what `leaseproof mutate` runs on each mutant, in a scratch copy
      tests:    {run: [python, -m, pytest, -q, -x, tests/engine], timeout_s: 600,
                 quick: [python, -m, pytest, -q, -x, tests/engine/test_store.py]}  # for --quick
      traces:   {run: [bash, -c, "... {out} ..."], timeout_s: 600}
    mutants:
      - name: fetch_boundary_off_by_one
        file: impl/engine/decide.py
        find: "row.run_after <= now"       # must occur exactly `count` times (default 1)
        replace: "row.run_after < now"
        breaks: a lease that expires now is not yet taken over
        class: a lease boundary off by one
        blind: {traces: "why this check cannot see it"}   # optional
        equivalent: "why no behaviour changes"            # optional: shown, never dropped
        quick: [traces]          # optional: in the --quick subset, the checks that must kill it
                                 # (true: every check not declared blind to it)

Everything here is pure: loading validates every field and names the file and the mutant in
its error; `apply` edits a text and fails (`MutantError`) when the edit does not apply as
declared, so a mutant that no longer matches the source is an error, never a quiet pass.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from conformance.errors import LeaseproofError

NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")  # whole (fullmatch): `$` would let a final line feed through
MAX_MUTANTS = 500  # a catalogue is read from the user's files: bound what it may claim
MAX_TIMEOUT_S = 3 * 3600


class CatalogueError(LeaseproofError):
    """A mutant catalogue is unreadable or invalid; the message names the file and the field."""


class MutantError(LeaseproofError):
    """A mutant does not apply to the source as declared (its text is gone, or ambiguous)."""


@dataclass(frozen=True)
class Check:
    """One check a catalogue runs on each mutant: an argv (placeholders `{python}`, `{out}`)
    and how long it may take."""

    name: str
    run: tuple[str, ...]
    timeout_s: float = 900.0
    quick: tuple[str, ...] | None = None  # a narrower command for the --quick subset

    def argv(self, python: str, out: Path) -> list[str]:
        """The command, with `{python}` and `{out}` (a scratch output directory) filled in."""
        return [a.replace("{python}", python).replace("{out}", str(out)) for a in self.run]

    def quick_variant(self) -> Check:
        """This check as the --quick subset runs it (its `quick` command, if it has one)."""
        return Check(self.name, self.quick, self.timeout_s) if self.quick else self


@dataclass(frozen=True)
class Mutant:
    """One named edit of one file."""

    name: str
    system: str
    file: str
    find: str
    replace: str
    breaks: str
    bug_class: str
    count: int = 1
    blind: dict[str, str] = field(default_factory=dict)  # check -> why it cannot observe this mutant
    equivalent: str | None = None
    # In the --quick subset (the default test run's) when not empty: the checks that must kill it
    # there (only those run on it; `true` in the YAML is every check of the catalogue).
    quick: tuple[str, ...] = ()

    def apply(self, text: str) -> str:
        """`text` with the edit made; `MutantError` when `find` occurs other than `count` times."""
        found = text.count(self.find)
        if found != self.count:
            raise MutantError(f"mutant {self.name}: {self.find!r} occurs {found} times in {self.file}, "
                              f"expected {self.count}; update the catalogue to the source")
        return text.replace(self.find, self.replace)


@dataclass(frozen=True)
class Catalogue:
    """A system's mutants and the checks to run on them."""

    system: str
    path: Path
    checks: dict[str, Check]
    mutants: tuple[Mutant, ...]
    quick_subset: bool = False  # this is the --quick subset (see `quick`)

    def quick(self) -> Catalogue:
        """The --quick subset: the mutants marked quick, each check as its quick variant (a
        mutant's row then holds only the checks it names as the ones to kill it)."""
        return Catalogue(self.system, self.path, {n: c.quick_variant() for n, c in self.checks.items()},
                         tuple(m for m in self.mutants if m.quick), quick_subset=True)

    def select(self, names: list[str] | None) -> list[Mutant]:
        """The mutants named (all when None); `CatalogueError` for an unknown name."""
        if not names:
            return list(self.mutants)
        known = {m.name: m for m in self.mutants}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise CatalogueError(f"{self.path}: no mutant {', '.join(map(repr, unknown))}; known: {sorted(known)}")
        return [known[n] for n in names]


def _text(where: str, value: Any, *, limit: int = 10_000, empty: bool = False) -> str:
    if not isinstance(value, str) or (not value and not empty) or len(value) > limit:
        raise CatalogueError(f"{where}: expected {'a' if empty else 'a non-empty'} string of at most {limit} characters")
    return value


def _check(path: Path, name: str, raw: Any) -> Check:
    where = f"{path}: checks.{name}"
    if not NAME.fullmatch(name) or not isinstance(raw, dict):
        raise CatalogueError(f"{where}: a check is a lower_case name with {{run: [...], timeout_s: N}}")
    run = raw.get("run")
    if not isinstance(run, list) or not run or not all(isinstance(a, str) for a in run):
        raise CatalogueError(f"{where}.run: expected a non-empty list of strings (the command's argv)")
    timeout = raw.get("timeout_s", 900)
    if not isinstance(timeout, int | float) or not 0 < timeout <= MAX_TIMEOUT_S:
        raise CatalogueError(f"{where}.timeout_s: expected seconds in (0, {MAX_TIMEOUT_S}]")
    quick = raw.get("quick")
    if quick is not None and (not isinstance(quick, list) or not quick or not all(isinstance(a, str) for a in quick)):
        raise CatalogueError(f"{where}.quick: expected a non-empty list of strings (the --quick command's argv)")
    extra = sorted(set(raw) - {"run", "timeout_s", "quick"})
    if extra:
        raise CatalogueError(f"{where}: unknown field(s) {extra}; known: ['quick', 'run', 'timeout_s']")
    return Check(name, tuple(run), float(timeout), tuple(quick) if quick else None)


def _mutant(path: Path, system: str, i: int, raw: Any, checks: Collection[str]) -> Mutant:
    """One mutant's fields, validated; `checks` are the names it may name (quick, blind)."""
    if not isinstance(raw, dict):
        raise CatalogueError(f"{path}: mutants[{i}]: expected a mapping")
    name = raw.get("name")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise CatalogueError(f"{path}: mutants[{i}].name: expected a lower_case name, got {name!r}")
    where = f"{path}: mutant {name}"
    known = {"name", "file", "find", "replace", "breaks", "class", "count", "blind", "equivalent", "quick"}
    extra = sorted(set(raw) - known)
    if extra:
        raise CatalogueError(f"{where}: unknown field(s) {extra}; known: {sorted(known)}")
    file = _text(f"{where}.file", raw.get("file"), limit=300)
    if file.startswith("/") or ".." in Path(file).parts:
        raise CatalogueError(f"{where}.file: expected a path inside the project, got {file!r}")
    count = raw.get("count", 1)
    if not isinstance(count, int) or not 1 <= count <= 100:
        raise CatalogueError(f"{where}.count: expected an integer in [1, 100]")
    blind = raw.get("blind", {})
    if not isinstance(blind, dict) or not all(isinstance(k, str) and isinstance(v, str) and v for k, v in blind.items()):
        raise CatalogueError(f"{where}.blind: expected {{check: reason}}")
    unknown = sorted(set(blind) - set(checks))
    if unknown:
        raise CatalogueError(f"{where}.blind: no check {unknown}; the catalogue's checks: {sorted(checks)}")
    equivalent = raw.get("equivalent")
    if equivalent is not None:
        equivalent = _text(f"{where}.equivalent", equivalent, limit=1000)
    quick = raw.get("quick", False)
    if quick is True:
        quick = [c for c in checks if c not in blind]
    elif quick is False:
        quick = []
    elif not isinstance(quick, list) or not quick or not all(isinstance(c, str) for c in quick):
        raise CatalogueError(f"{where}.quick: expected true, false or a list of the checks that must kill it")
    if sorted(set(quick) - set(checks)):
        raise CatalogueError(f"{where}.quick: no check {sorted(set(quick) - set(checks))}; "
                             f"the catalogue's checks: {sorted(checks)}")
    if quick and equivalent is not None:
        raise CatalogueError(f"{where}.quick: a mutant declared equivalent cannot be killed")
    if set(quick) & set(blind):
        raise CatalogueError(f"{where}.quick: {sorted(set(quick) & set(blind))} declared blind to it cannot kill it")
    find = _text(f"{where}.find", raw.get("find"))
    replace = _text(f"{where}.replace", raw.get("replace"), empty=True)
    if find == replace:
        raise CatalogueError(f"{where}: find and replace are the same text")
    return Mutant(name, system, file, find, replace, _text(f"{where}.breaks", raw.get("breaks"), limit=1000),
                  _text(f"{where}.class", raw.get("class"), limit=200), count, dict(blind), equivalent,
                  tuple(dict.fromkeys(quick)))


def yaml_mapping(path: Path, text: str, expected: str) -> dict[str, Any]:
    """A catalogue file's YAML mapping; `CatalogueError` saying what was `expected` otherwise."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CatalogueError(f"{path}: not valid YAML ({exc})") from None
    if not isinstance(raw, dict):
        raise CatalogueError(f"{path}: expected a mapping with {expected}")
    return raw


def parse_catalogue(path: Path, text: str) -> Catalogue:
    """A catalogue from its YAML text; `CatalogueError` naming the field that is wrong."""
    raw = yaml_mapping(path, text, "system, checks and mutants")
    system = raw.get("system")
    if not isinstance(system, str) or not NAME.fullmatch(system):
        raise CatalogueError(f"{path}: system: expected a lower_case name")
    raw_checks = raw.get("checks")
    if not isinstance(raw_checks, dict) or not raw_checks:
        raise CatalogueError(f"{path}: checks: expected at least one check")
    checks = {name: _check(path, name, c) for name, c in raw_checks.items()}
    raw_mutants = raw.get("mutants")
    if not isinstance(raw_mutants, list) or not raw_mutants or len(raw_mutants) > MAX_MUTANTS:
        raise CatalogueError(f"{path}: mutants: expected a list of 1 to {MAX_MUTANTS} mutants")
    mutants = tuple(_mutant(path, system, i, m, checks) for i, m in enumerate(raw_mutants))
    seen: set[str] = set()
    for m in mutants:
        if m.name in seen:
            raise CatalogueError(f"{path}: mutant {m.name} is named twice")
        seen.add(m.name)
    return Catalogue(system, path, checks, mutants)


def load_catalogues(root: Path) -> dict[str, Catalogue]:
    """Every catalogue under `root/mutants/`, by system."""
    out: dict[str, Catalogue] = {}
    for path in sorted((root / "mutants").glob("*.yaml")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CatalogueError(f"{path}: cannot read it ({exc})") from None
        cat = parse_catalogue(path, text)
        if cat.system in out:
            raise CatalogueError(f"{path}: system {cat.system} already has a catalogue ({out[cat.system].path})")
        out[cat.system] = cat
    if not out:
        raise CatalogueError(f"no mutant catalogue under {root / 'mutants'}")
    return out
