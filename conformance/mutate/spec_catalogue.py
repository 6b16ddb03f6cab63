"""A spec mutant catalogue: edits of a system's TLA+ modules, and the models that must catch them.

A catalogue is a YAML file (`mutants/specs/<system>.yaml`):

    system: command
    models: [seed_external_once, seed_safety]   # the models each mutant is checked with (by name)
    operators:                                  # optional: mutants made from the module itself
      module: CommandQueue                      # tla/CommandQueue.tla (or a path ending .tla)
      use: [drop_guard, drop_change, flip_compare, drop_fairness]   # default: all four
      actions: [GuardTake, ExternalCall]        # optional: only these definitions
      equivalent: {drop_guard_ack_1: "why no behaviour changes"}
    mutants:                                    # optional: named edits, each a bug class
      - name: call_without_owner_check
        module: CommandQueue
        find: "CallRefused(w) == CallChecksGuard /\\ AttemptGuard /\\ guard[cmdOf[w]] /= w"
        replace: "CallRefused(w) == FALSE"
        class: a check dropped before the external call
        breaks: a stale attempt calls the remote after its guard passed on
        equivalent: "..."                       # optional
        quick: [seed_safety]                    # optional: in --quick, the models that must catch it

The mutants are the code mutants' (`catalogue.Mutant`, the file being the module's path) and the
models play the checks' part, so the matrix, its JSON and `--compare` are the same. Loading is
pure and validates every field, naming the file and the mutant in its error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.mutate.catalogue import (MAX_MUTANTS, NAME, CatalogueError, Mutant, _mutant, _text,
                                         yaml_mapping)
from conformance.mutate.spec_operators import CLASSES, OPERATORS, generate

MAX_MODELS = 50


@dataclass(frozen=True)
class SpecCatalogue:
    """A system's spec mutants (named and generated) and the models they are checked with."""

    system: str
    path: Path
    models: tuple[str, ...]
    mutants: tuple[Mutant, ...]
    quick_subset: bool = False

    def quick(self) -> SpecCatalogue:
        """The --quick subset: the mutants marked quick (each checked only with the models it names)."""
        return SpecCatalogue(self.system, self.path, self.models, tuple(m for m in self.mutants if m.quick),
                             quick_subset=True)

    @property
    def checks(self) -> dict[str, None]:
        """The models, as the matrix's columns (`run.runs_on` reads the names)."""
        return dict.fromkeys(self.models)


def module_file(root: Path, module: str, where: str) -> str:
    """The module's path relative to `root`: `tla/<module>.tla`, or the path given (inside the project)."""
    rel = module if module.endswith(".tla") else f"tla/{module}.tla"
    if rel.startswith("/") or ".." in Path(rel).parts:
        raise CatalogueError(f"{where}: expected a module name or a path inside the project, got {module!r}")
    if not (root / rel).is_file():
        raise CatalogueError(f"{where}: no module {rel} in {root}")
    return rel


def _names(where: str, raw: Any, *, limit: int) -> list[str]:
    if not isinstance(raw, list) or not raw or len(raw) > limit or not all(isinstance(x, str) and x for x in raw):
        raise CatalogueError(f"{where}: expected a list of 1 to {limit} names")
    return list(dict.fromkeys(raw))


def _named(path: Path, root: Path, system: str, i: int, raw: Any, models: list[str]) -> Mutant:
    """A named mutant: a code mutant's fields (`catalogue._mutant` validates them) with `module`
    for `file`, and the catalogue's models for its checks."""
    if not isinstance(raw, dict):
        raise CatalogueError(f"{path}: mutants[{i}]: expected a mapping")
    where = f"{path}: mutant {raw.get('name')!r}"
    for field in ("file", "blind"):
        if field in raw:
            raise CatalogueError(f"{where}: unknown field {field!r} (a spec mutant names its module)")
    module = _text(f"{where}.module", raw.get("module"), limit=300)
    fields = {k: v for k, v in raw.items() if k != "module"} | {"file": module_file(root, module, f"{where}.module")}
    return _mutant(path, system, i, fields, models)


def _generated(path: Path, root: Path, system: str, raw: Any) -> list[Mutant]:
    where = f"{path}: operators"
    if not isinstance(raw, dict):
        raise CatalogueError(f"{where}: expected a mapping with module (and use, actions, equivalent)")
    extra = sorted(set(raw) - {"module", "use", "actions", "equivalent"})
    if extra:
        raise CatalogueError(f"{where}: unknown field(s) {extra}; known: ['actions', 'equivalent', 'module', 'use']")
    file = module_file(root, _text(f"{where}.module", raw.get("module"), limit=300), f"{where}.module")
    use = _names(f"{where}.use", raw.get("use", list(OPERATORS)), limit=len(OPERATORS))
    if sorted(set(use) - set(OPERATORS)):
        raise CatalogueError(f"{where}.use: no operator {sorted(set(use) - set(OPERATORS))}; known: {list(OPERATORS)}")
    actions = raw.get("actions")
    only = set(_names(f"{where}.actions", actions, limit=500)) if actions is not None else None
    equivalent = raw.get("equivalent", {}) or {}
    if not isinstance(equivalent, dict) or not all(isinstance(k, str) and isinstance(v, str) and v
                                                   for k, v in equivalent.items()):
        raise CatalogueError(f"{where}.equivalent: expected {{mutant: why no behaviour changes}}")
    try:
        text = (root / file).read_text(encoding="utf-8")
        edits = generate(text, tuple(use), only)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CatalogueError(f"{where}: cannot mutate {file}: {exc}") from None
    stale = sorted(set(equivalent) - {e.name for e in edits})
    if stale:
        raise CatalogueError(f"{where}.equivalent: no generated mutant {stale}: update the catalogue to the module")
    return [Mutant(e.name, system, file, e.find, e.replace, f"{e.definition}: {e.what}", CLASSES[e.operator],
                   equivalent=equivalent.get(e.name)) for e in edits]


def parse_spec_catalogue(path: Path, text: str, root: Path) -> SpecCatalogue:
    """A spec catalogue from its YAML text (its modules read under `root`); `CatalogueError`
    naming the field that is wrong."""
    raw = yaml_mapping(path, text, "system, models, and operators or mutants")
    extra = sorted(set(raw) - {"system", "models", "operators", "mutants"})
    if extra:
        raise CatalogueError(f"{path}: unknown field(s) {extra}; known: ['models', 'mutants', 'operators', 'system']")
    system = raw.get("system")
    if not isinstance(system, str) or not NAME.fullmatch(system):
        raise CatalogueError(f"{path}: system: expected a lower_case name")
    models = _names(f"{path}: models", raw.get("models"), limit=MAX_MODELS)
    raw_mutants = raw.get("mutants") or []
    if not isinstance(raw_mutants, list) or len(raw_mutants) > MAX_MUTANTS:
        raise CatalogueError(f"{path}: mutants: expected a list of at most {MAX_MUTANTS} mutants")
    mutants = [_named(path, root, system, i, m, models) for i, m in enumerate(raw_mutants)]
    if raw.get("operators") is not None:
        mutants += _generated(path, root, system, raw["operators"])
    if not mutants:
        raise CatalogueError(f"{path}: no mutant: give mutants, operators, or both")
    seen: set[str] = set()
    for m in mutants:
        if m.name in seen:
            raise CatalogueError(f"{path}: mutant {m.name} is named twice (a named mutant may not take a generated one's name)")
        seen.add(m.name)
    return SpecCatalogue(system, path, tuple(models), tuple(mutants))


def load_spec_catalogues(root: Path) -> dict[str, SpecCatalogue]:
    """Every spec catalogue under `root/mutants/specs/`, by system."""
    out: dict[str, SpecCatalogue] = {}
    for path in sorted((root / "mutants" / "specs").glob("*.yaml")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CatalogueError(f"{path}: cannot read it ({exc})") from None
        cat = parse_spec_catalogue(path, text, root)
        if cat.system in out:
            raise CatalogueError(f"{path}: system {cat.system} already has a spec catalogue ({out[cat.system].path})")
        out[cat.system] = cat
    if not out:
        raise CatalogueError(f"no spec mutant catalogue under {root / 'mutants' / 'specs'}")
    return out
