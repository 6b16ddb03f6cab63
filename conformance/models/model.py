"""A model file, loaded and checked: which spec, which constants, what to check, what to expect.

The format is described in `models/README.md` and enforced by `model.schema.json`; the rules
a schema cannot say (the module exists, the expected property is one that is checked) are
checked here. Every problem is a `ModelFileError` that names the file and the field.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from conformance.errors import ModelFileError
from conformance.models.declared import declared_constants

DEFAULT_TIMEOUT = 600.0


@dataclass(frozen=True)
class Constant:
    """One constant's value: `kind` is int, bool, model_values (a set), string, model_value or tla."""

    kind: str
    value: Any


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
    constraint: str | None = None
    action_constraint: str | None = None
    symmetry: str | None = None
    view: str | None = None
    check_deadlock: bool = True
    workers: int | None = None
    timeout: float = DEFAULT_TIMEOUT
    quick: bool = False

    @property
    def spec_dirs(self) -> tuple[Path, ...]:
        """Directories whose .tla files the run needs: the module's own, then the project's tla/."""
        return (self.module_path.parent,)


@cache
def _schema() -> dict[str, Any]:
    return json.loads(resources.files("conformance.models").joinpath("model.schema.json").read_text())


def _field_path(error: jsonschema.ValidationError) -> str:
    return ".".join(str(p) for p in error.absolute_path) or "(top level)"


def _constant(name: str, raw: Any) -> Constant:
    if isinstance(raw, bool):
        return Constant("bool", raw)
    if isinstance(raw, int):
        return Constant("int", raw)
    if isinstance(raw, list):
        return Constant("model_values", tuple(raw))
    if "string" in raw:
        return Constant("string", raw["string"])
    if "model_value" in raw:
        return Constant("model_value", name)
    return Constant("tla", raw["tla"])


def find_module(module: str, model_path: Path, tla_dirs: tuple[Path, ...]) -> Path | None:
    """The file of `module`: beside the model file first, then in each of `tla_dirs`."""
    for d in (model_path.parent, *tla_dirs):
        candidate = d / f"{module}.tla"
        if candidate.is_file():
            return candidate
    return None


def parse_model(data: Any, path: Path, tla_dirs: tuple[Path, ...]) -> Model:
    """Check parsed YAML `data` of the file at `path` and turn it into a `Model`."""
    if not isinstance(data, dict):
        raise ModelFileError(f"{path}: a model file must be a YAML mapping, found {type(data).__name__}")
    errors = sorted(jsonschema.Draft202012Validator(_schema()).iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ModelFileError(f"{path}: field {_field_path(e)}: {e.message}{more}")

    def bad(field_name: str, message: str) -> ModelFileError:
        return ModelFileError(f"{path}: field {field_name}: {message}")

    module_path = find_module(data["module"], path, tla_dirs)
    if module_path is None:
        where = ", ".join(str(d) for d in (path.parent, *tla_dirs))
        raise bad("module", f"no module {data['module']}.tla in {where}")
    if "specification" in data and ("init" in data or "next" in data):
        raise bad("specification", "give either specification or init and next, not both")
    if ("init" in data) != ("next" in data):
        raise bad("init" if "next" in data else "next", "init and next go together")

    exp = data["expect"]
    invariants = tuple(data.get("invariants", ()))
    properties = tuple(data.get("properties", ()))
    check_deadlock = data.get("check_deadlock", True)
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
    if data.get("symmetry") and properties:
        raise bad("symmetry", "TLC cannot check temporal properties under symmetry reduction")

    constants = {n: _constant(n, v) for n, v in data.get("constants", {}).items()}
    for gate, on in data.get("gates", {}).items():
        if gate in constants:
            raise bad(f"gates.{gate}", "also given under constants")
        constants[gate] = Constant("bool", on)
    declared = declared_constants(module_path)
    for name in constants:
        if name not in declared:
            section = "gates" if name in data.get("gates", {}) else "constants"
            close = difflib.get_close_matches(name, sorted(declared), n=1)
            hint = f"; did you mean {close[0]}?" if close else f"; it declares {', '.join(sorted(declared)) or 'none'}"
            raise bad(f"{section}.{name}", f"{data['module']} declares no constant {name} (TLC would ignore it){hint}")

    uses_init = "init" in data
    return Model(
        name=data.get("name", path.stem),
        path=path,
        module=data["module"],
        module_path=module_path,
        expect=Expect(exp["verdict"], exp.get("property"), exp.get("length"), exp.get("distinct_states")),
        why=" ".join(data["why"].split()),
        specification=None if uses_init else data.get("specification", "Spec"),
        init=data.get("init"),
        next=data.get("next"),
        constants=constants,
        invariants=invariants,
        properties=properties,
        constraint=data.get("constraint"),
        action_constraint=data.get("action_constraint"),
        symmetry=data.get("symmetry"),
        view=data.get("view"),
        check_deadlock=check_deadlock,
        workers=data.get("workers"),
        timeout=float(data.get("timeout", DEFAULT_TIMEOUT)),
        quick=bool(data.get("quick", False)),
    )


def load_model(path: Path, tla_dirs: tuple[Path, ...] = ()) -> Model:
    """Read and check the model file at `path`; modules are looked up beside it, then in `tla_dirs`."""
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
    return parse_model(data, path, tla_dirs)
