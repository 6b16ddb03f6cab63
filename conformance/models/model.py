"""A model file, loaded and checked: which spec, which constants, what to check, what to expect.

The format is described in `models/README.md` and enforced by `model.schema.json`; the rules
a schema cannot say (the module exists, the expected property is one that is checked) are
checked here. Every problem is a `ModelFileError` that names the file and the field.

A model gives its constants and checks in YAML, or reuses a user's cfg verbatim (`cfg:`),
optionally adding invariants and properties. Either way the cfg is read (`cfg.py`) into the
same fields, so that both forms are checked alike.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from conformance.errors import ModelFileError
from conformance.models import cfg as cfglang
from conformance.models.confine import Confinement
from conformance.models.declared import declared_constants, defined_operators
from conformance.models.schema import field_path, schema_errors

DEFAULT_TIMEOUT = 600.0
# What is staged beside the module for TLC (its folder and subfolders): bounded, since a model
# file may name a module anywhere, and its folder could be a whole tree.
STAGED_SUFFIXES = (".tla", ".class")
MAX_STAGED_FILES = 2_000
MAX_STAGED_BYTES = 64 * 1024 * 1024
SKIPPED_DIRS = {"states", "__pycache__", "node_modules", "build", "dist"}
MAX_CFG_BYTES = 1_000_000
# What a model's name may hold (the schema's `name` pattern): files are named after it.
MODEL_NAME = re.compile(r"[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Constant:
    """One constant's value in the cfg.

    `kind`: int, bool, string, model_value (value: the model value's name, the constant's own
    for `Name = Name`), model_values (a set of them: the names), set (any other set:
    a `cfg.CfgSet`), override (`Name <- Def`: value is Def), or tla (an expression, defined in a
    wrapper module). `module` scopes an assignment or override to one module (`[Mod]`).
    """

    kind: str
    value: Any
    module: str | None = None


@dataclass(frozen=True)
class Expect:
    """The verdict a model must give."""

    verdict: str  # ok | violated | deadlock
    property: str | None = None
    length: int | None = None
    distinct_states: int | None = None

    def describe(self) -> str:
        """`ok`, `deadlock`, or `violated Name`."""
        return f"violated {self.property}" if self.verdict == "violated" else self.verdict


@dataclass(frozen=True)
class Model:
    """A loaded model file."""

    name: str
    path: Path
    module: str
    module_path: Path
    expect: Expect
    why: str
    specification: str | None = "Spec"
    init: str | None = None
    next: str | None = None
    constants: dict[str, Constant] = field(default_factory=dict)
    invariants: tuple[str, ...] = ()
    properties: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    action_constraints: tuple[str, ...] = ()
    symmetry: str | None = None
    view: str | None = None
    check_deadlock: bool = True
    workers: int | None = None
    timeout: float = DEFAULT_TIMEOUT
    quick: bool = False
    # A user's cfg, run verbatim (`cfg:`), and what the model file adds to it.
    cfg_path: Path | None = None
    cfg_text: str | None = None
    added_invariants: tuple[str, ...] = ()
    added_properties: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # warnings for the report (symmetry with a temporal property, ...)
    # The files TLC needs beside the module: relative to its folder (subfolders kept).
    spec_files: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        # The staged files go into the run directory and their folders on TLC's classpath: a
        # path that leaves the module's folder would put something else there (a bug, not input).
        for f in self.spec_files:
            if f.is_absolute() or ".." in f.parts:
                raise ValueError(f"{self.name}: a staged file must lie under the module's folder, got {f}")

    @property
    def assumptions_only(self) -> bool:
        """An ASSUME-only spec: no behaviour to explore, only its assumptions to evaluate."""
        return self.specification is None and self.init is None

    @property
    def spec_dir(self) -> Path:
        """The module's folder: what is staged for TLC (`spec_files`) is relative to it."""
        return self.module_path.parent

    @property
    def library_dirs(self) -> tuple[Path, ...]:
        """The subfolders (relative) holding modules, for TLC's library path (EXTENDS finds them)."""
        return tuple(sorted({f.parent for f in self.spec_files if f.suffix == ".tla" and f.parent != Path(".")}))

    @property
    def class_dirs(self) -> tuple[Path, ...]:
        """The folders (relative) holding Java override classes, for TLC's classpath."""
        return tuple(sorted({f.parent for f in self.spec_files if f.suffix == ".class"}))


def _set_item(raw: Any) -> cfglang.CfgValue:
    if isinstance(raw, bool) or isinstance(raw, int):
        return raw
    if isinstance(raw, str):
        return cfglang.ModelValueName(raw)
    if isinstance(raw, list):
        return cfglang.CfgSet(tuple(_set_item(x) for x in raw))
    if "string" in raw:
        return cfglang.CfgString(cfg_string(raw["string"]))
    return cfglang.ModelValueName(raw["model_value"])


def _value(name: str, raw: Any, module: str | None = None) -> Constant:
    if isinstance(raw, bool):
        return Constant("bool", raw, module)
    if isinstance(raw, int):
        return Constant("int", raw, module)
    if isinstance(raw, list):
        if all(isinstance(x, str) for x in raw):
            return Constant("model_values", tuple(raw), module)
        return Constant("set", _set_item(raw), module)
    if "string" in raw:
        cfg_string(raw["string"])  # refused here if a cfg cannot hold it
        return Constant("string", raw["string"], module)
    mv = raw["model_value"]
    return Constant("model_value", name if mv is True else mv, module)


def _constant(name: str, raw: Any) -> Constant:
    if isinstance(raw, dict) and "tla" in raw:
        return Constant("tla", raw["tla"])
    if isinstance(raw, dict) and "override" in raw:
        return Constant("override", raw["override"], raw.get("module"))
    if isinstance(raw, dict) and "value" in raw:
        return _value(name, raw["value"], raw["module"])
    return _value(name, raw)


def _from_cfg(item: cfglang.Assignment | cfglang.Override) -> Constant:
    """A cfg's assignment or override as the same `Constant` the YAML form gives."""
    if isinstance(item, cfglang.Override):
        return Constant("override", item.definition, item.module)
    v = item.value
    if isinstance(v, bool):
        return Constant("bool", v, item.module)
    if isinstance(v, int):
        return Constant("int", v, item.module)
    if isinstance(v, cfglang.CfgString):
        return Constant("string", v.literal[1:-1], item.module)  # TLC 2.15 keeps a cfg string's backslashes
    if isinstance(v, cfglang.ModelValueName):
        return Constant("model_value", v.name, item.module)
    if all(isinstance(x, cfglang.ModelValueName) for x in v.items):
        return Constant("model_values", tuple(x.name for x in v.items), item.module)  # type: ignore[union-attr]
    return Constant("set", v, item.module)


def cfg_string(s: str) -> str:
    """`s` as a string literal of a TLC 2.15 cfg, which keeps what stands between the quotes as
    written, backslashes included; `ModelFileError` for a string no cfg can hold."""
    if any(ch in s for ch in '"\\\n\r'):
        # TLC 2.15's cfg lexer wants TLA+ escapes but keeps them undecoded in the value (`"a\\\\b"`
        # is four characters there): no cfg string means a quote, a backslash or a line break.
        raise ModelFileError(f"the string {s[:40]!r}: a TLC 2.15 cfg cannot hold a double quote, a backslash or a "
                             "line break in a string; give it as {tla: ...}")
    return f'"{s}"'


def find_module(module: str, model_path: Path, tla_dirs: tuple[Path, ...]) -> Path | None:
    """The file of `module`: a path (`specs/foo/MC.tla`, from the model file's folder, then
    from each of `tla_dirs`' parents), or a name looked up beside the model file, then in each
    of `tla_dirs`."""
    if module.endswith(".tla"):
        given = Path(module)
        bases = [Path("/")] if given.is_absolute() else [model_path.parent, *(d.parent for d in tla_dirs)]
        for base in bases:
            candidate = base / given
            if candidate.is_file():
                return candidate
        return None
    for d in (model_path.parent, *tla_dirs):
        candidate = d / f"{module}.tla"
        if candidate.is_file():
            return candidate
    return None


def staged_files(folder: Path) -> tuple[Path, ...]:
    """The .tla and .class files under `folder` (relative), hidden and output folders left out;
    `ModelFileError` past the bounds."""
    found: list[Path] = []
    size = 0
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIPPED_DIRS
                             and not d.endswith((".tlc-meta", ".egg-info")))
        for f in sorted(filenames):
            path = Path(dirpath, f)
            if path.suffix in STAGED_SUFFIXES and path.is_file() and not path.is_symlink():
                found.append(path.relative_to(folder))
                size += path.stat().st_size
        if len(found) > MAX_STAGED_FILES or size > MAX_STAGED_BYTES:
            raise ModelFileError(f"the module's folder {folder} holds over {MAX_STAGED_FILES:,} .tla/.class files or "
                                 f"{MAX_STAGED_BYTES // 2**20} MiB of them: put the spec in a folder of its own")
    return tuple(found)


def _names(raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    return (raw,) if isinstance(raw, str) else tuple(raw)


def _read_cfg(path: Path) -> str:
    try:
        if path.stat().st_size > MAX_CFG_BYTES:
            raise ModelFileError(f"the cfg {path} is over {MAX_CFG_BYTES:,} bytes")
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ModelFileError(f"no cfg file {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelFileError(f"cannot read the cfg {path} ({exc})") from None


# What a cfg gives, so that a model file reusing one (`cfg:`) may not give it again.
FROM_CFG = ("constants", "gates", "specification", "init", "next", "symmetry", "view", "constraint",
            "action_constraint", "assumptions_only")


def parse_model(data: Any, path: Path, tla_dirs: tuple[Path, ...], confinement: Confinement | None = None) -> Model:
    """Check parsed YAML `data` of the file at `path` and turn it into a `Model`.

    With a `confinement` (the command line always gives one), the cfg, the module and the
    module's folder must resolve inside it (`confine.py`), or the file is refused before either
    is read; without one, they may be anywhere (a test's or a library caller's own files)."""
    if not isinstance(data, dict):
        raise ModelFileError(f"{path}: a model file must be a YAML mapping, found {type(data).__name__}")
    errors = schema_errors(data)
    if errors:
        e = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ModelFileError(f"{path}: field {field_path(e)}: {e.message}{more}")

    def bad(field_name: str, message: str, kind: type[ModelFileError] = ModelFileError) -> ModelFileError:
        return kind(f"{path}: field {field_name}: {message}")

    cfg_path = cfg_text = None
    parsed: cfglang.CfgFile | None = None
    if "cfg" in data:
        given = Path(data["cfg"])
        cfg_path = given if given.is_absolute() else path.parent / given
        try:
            if confinement is not None:
                confinement.check("the cfg", cfg_path)
            cfg_text = _read_cfg(cfg_path)
            parsed = cfglang.parse_cfg(cfg_text)
        except ModelFileError as exc:
            raise bad("cfg", str(exc), type(exc)) from None
        for name in FROM_CFG:
            if name in data:
                raise bad(name, f"comes from the cfg ({data['cfg']}): give it there, or give the whole model in YAML "
                                "without `cfg`")
    module = data.get("module") or (str(cfg_path.resolve().with_suffix(".tla")) if cfg_path is not None else None)
    if module is None:
        raise bad("module", "give the module (a name or a path to its .tla), or a `cfg` beside a module of its name")
    module_path = find_module(module, path, tla_dirs)
    if module_path is None:
        where = ", ".join(str(d) for d in (path.parent, *tla_dirs))
        shown = module if module.endswith(".tla") else f"{module}.tla"
        raise bad("module", f"no module {shown} in {where}")
    if not re.fullmatch(cfglang.IDENT, module_path.stem):
        raise bad("module", f"{module_path.name!r}: a module name is letters, digits and underscores, with a letter")
    try:
        if confinement is not None:
            # The folder too: it is what is staged (and its .class files go on TLC's classpath),
            # and a folder reached through a link may lie elsewhere than the file it holds.
            confinement.check("the module", module_path)
            confinement.check("the module's folder", module_path.parent)
        spec_files = staged_files(module_path.parent)
    except ModelFileError as exc:
        raise bad("module", str(exc), type(exc)) from None

    notes: list[str] = []
    if parsed is not None:
        invariants = tuple(dict.fromkeys([*parsed.invariants, *data.get("invariants", ())]))
        properties = tuple(dict.fromkeys([*parsed.properties, *data.get("properties", ())]))
        added_inv = tuple(i for i in data.get("invariants", ()) if i not in parsed.invariants)
        added_props = tuple(p for p in data.get("properties", ()) if p not in parsed.properties)
        constants: dict[str, Constant] = {}
        for item in parsed.constants:
            key = item.name if item.module is None else f"{item.name}@{item.module}"
            constants[key] = _from_cfg(item)
        spec, init, nxt = parsed.specification, parsed.init, parsed.next
        constraints, action_constraints = tuple(parsed.constraints), tuple(parsed.action_constraints)
        symmetry, view = parsed.symmetry, parsed.view
        check_deadlock = data.get("check_deadlock", True)
        if parsed.check_deadlock is not None:
            if "check_deadlock" in data and data["check_deadlock"] != parsed.check_deadlock:
                raise bad("check_deadlock", f"the cfg says CHECK_DEADLOCK {str(parsed.check_deadlock).upper()}")
            check_deadlock = parsed.check_deadlock
            notes.append(f"the cfg's CHECK_DEADLOCK {str(parsed.check_deadlock).upper()} is a later TLC's keyword: "
                         f"TLC 2.15 runs without it{' and with -deadlock' if not check_deadlock else ''}")
    else:
        if "specification" in data and ("init" in data or "next" in data):
            raise bad("specification", "give either specification or init and next, not both")
        if ("init" in data) != ("next" in data):
            raise bad("init" if "next" in data else "next", "init and next go together")
        if data.get("assumptions_only") and any(k in data for k in ("specification", "init", "next")):
            raise bad("assumptions_only", "an ASSUME-only model has no specification, init or next")
        invariants = tuple(data.get("invariants", ()))
        properties = tuple(data.get("properties", ()))
        added_inv = added_props = ()
        constants = {}
        for n, v in data.get("constants", {}).items():
            try:
                constants[n] = _constant(n, v)
            except ModelFileError as exc:
                raise bad(f"constants.{n}", str(exc)) from None
        for gate, on in data.get("gates", {}).items():
            if gate in constants:
                raise bad(f"gates.{gate}", "also given under constants")
            constants[gate] = Constant("bool", on)
        if data.get("assumptions_only"):
            spec = init = nxt = None
        elif "init" in data:
            spec, init, nxt = None, data["init"], data["next"]
        else:
            spec, init, nxt = data.get("specification", "Spec"), None, None
        constraints, action_constraints = _names(data.get("constraint")), _names(data.get("action_constraint"))
        symmetry, view = data.get("symmetry"), data.get("view")
        check_deadlock = data.get("check_deadlock", True)
        for name, c in constants.items():
            if c.kind == "int" and c.value < 0:
                raise bad(f"constants.{name}", f"TLC 2.15's cfg has no negative numbers: give {{tla: \"{c.value}\"}}")

    exp = data["expect"]
    if exp["verdict"] == "violated":
        prop = exp.get("property")
        if prop is None:
            raise bad("expect.property", "a model expected to be violated must name the property")
        if prop not in invariants and prop not in properties:
            raise bad("expect.property", f"{prop} is neither in invariants nor in properties, so it is never checked")
    elif "property" in exp:
        raise bad("expect.property", f"only a violated verdict names a property (verdict is {exp['verdict']})")
    if exp["verdict"] == "deadlock" and not check_deadlock:
        raise bad("check_deadlock", "a model expected to deadlock must leave deadlock checking on")
    if symmetry and properties:
        # TLC 2.15 checks it, with its own warning: a report must say so, not refuse it.
        notes.append(f"SYMMETRY {symmetry} with a temporal property: TLC may miss a liveness violation under "
                     "symmetry reduction (its own warning); check liveness without it to be sure")
    if spec is None and init is None and (invariants or properties):
        raise bad("invariants" if invariants else "properties",
                  "an ASSUME-only model (no specification, init or next) has no behaviour to check them on")

    where = "cfg" if parsed is not None else None
    _check_names(constants, module_path, spec_files, data, bad, where)
    name = data.get("name", path.stem)
    if not MODEL_NAME.fullmatch(name):
        # The schema checks a given name; one taken from the file's name is checked here. Files
        # are written under it (`NAME.cfg`, `NAME.out`): no line break, no path separator.
        raise bad("name", f"{name!r} (the file's name without .yaml when no name is given) is not a model name: "
                          "letters, digits, `_`, `.` and `-` only; rename the file or give `name:`")

    return Model(
        name=name,
        path=path,
        module=module_path.stem,
        module_path=module_path,
        expect=Expect(exp["verdict"], exp.get("property"), exp.get("length"), exp.get("distinct_states")),
        why=" ".join(data["why"].split()),
        specification=spec,
        init=init,
        next=nxt,
        constants=constants,
        invariants=invariants,
        properties=properties,
        constraints=constraints,
        action_constraints=action_constraints,
        symmetry=symmetry,
        view=view,
        check_deadlock=check_deadlock,
        workers=data.get("workers"),
        timeout=float(data.get("timeout", DEFAULT_TIMEOUT)),
        quick=bool(data.get("quick", False)),
        cfg_path=cfg_path,
        cfg_text=cfg_text,
        added_invariants=added_inv,
        added_properties=added_props,
        notes=tuple(notes),
        spec_files=spec_files,
    )


def _check_names(constants: dict[str, Constant], module_path: Path, spec_files: tuple[Path, ...], data: dict[str, Any],
                 bad: Any, cfg_field: str | None) -> None:
    """Refuse a constant the module neither declares nor defines: TLC 2.15 ignores an assignment
    to such a name without a word, and the model would check something else than it says."""
    by_module: dict[str | None, set[str]] = {}

    def names_of(module: str | None) -> set[str] | None:
        if module not in by_module:
            if module is None:
                target: Path | None = module_path
            else:
                hits = [f for f in spec_files if f.name == f"{module}.tla"]
                target = module_path.parent / hits[0] if hits else None
            if target is None:
                return None  # a standard module, or one TLC finds elsewhere: it says if the name is wrong
            by_module[module] = declared_constants(target) | defined_operators(target)
        return by_module[module]

    for key, c in constants.items():
        name = key.split("@", 1)[0]
        known = names_of(c.module)
        if known is None or name in known:
            continue
        owner = c.module or module_path.stem
        if cfg_field is not None:
            where = cfg_field
        else:
            where = f"{'gates' if key in data.get('gates', {}) else 'constants'}.{name}"
        close = difflib.get_close_matches(name, sorted(known), n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise bad(where, f"{owner} declares no constant and defines no operator {name} (TLC would ignore it){hint}")


def load_model(path: Path, tla_dirs: tuple[Path, ...] = (), confinement: Confinement | None = None) -> Model:
    """Read and check the model file at `path`; modules are looked up beside it, then in
    `tla_dirs`; with a `confinement`, the files it names must lie inside it (`parse_model`)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ModelFileError(f"{path}: no such model file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelFileError(f"{path}: cannot read the model file ({exc})") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ModelFileError(f"{path}: not valid YAML{where}: {getattr(exc, 'problem', None) or exc}") from None
    return parse_model(data, path, tla_dirs, confinement)
