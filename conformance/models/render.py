"""A model rendered for TLC: the cfg text, and a wrapper module when a constant is an expression.

Pure: `render_model` returns texts and file names; writing them is the runner's job. A model
that reuses a user's cfg (`cfg:`) gets that text verbatim, with the model file's additions
appended (and, to check one temporal property at a time, its PROPERTY sections cut out).

    >>> from conformance.models.model import Constant
    >>> format_constant(Constant("model_values", ("n1", "n2")))
    '= {n1, n2}'
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import jinja2

from conformance.models.cfg import format_cfg_value, without_sections
from conformance.models.model import Constant, Model, cfg_string


@dataclass(frozen=True)
class Rendered:
    """What TLC is given: the module to check (`main`), its cfg, and extra module files."""

    main: str
    cfg_name: str
    cfg: str
    extra_modules: dict[str, str]


@cache
def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("conformance.models", "templates"),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # TLA+ and cfg, not HTML; values are formatted by format_value
    )


def format_constant(c: Constant, name: str = "") -> str:
    """The right-hand side of a constant in a cfg: `= value`, `<- Def` or, for expressions,
    `<- lp_name`; `[Mod]` before the value where it is scoped to module Mod."""
    scope = f"[{c.module}] " if c.module else ""
    if c.kind == "bool":
        return f"= {scope}TRUE" if c.value else f"= {scope}FALSE"
    if c.kind == "int":
        return f"= {scope}{c.value}"
    if c.kind == "model_values":
        return f"= {scope}" + "{" + ", ".join(c.value) + "}"
    if c.kind == "set":
        return f"= {scope}{format_cfg_value(c.value)}"
    if c.kind == "string":
        return f"= {scope}{cfg_string(c.value)}"
    if c.kind == "model_value":
        return f"= {scope}{c.value or name}"
    if c.kind == "override":
        return f"<- {scope}{c.value}"
    if c.kind == "tla":
        return f"<- lp_{name}"
    raise ValueError(f"unknown constant kind {c.kind}")


def render_model(model: Model, properties: tuple[str, ...] | None = None, *, invariants: bool = True) -> Rendered:
    """Render `model`, checking `properties` (default: all of the model's temporal properties)
    and, unless `invariants` is false, its invariants."""
    if model.cfg_text is not None:
        return _render_cfg(model, properties, invariants)
    props = model.properties if properties is None else properties
    definitions = [(n, c.value) for n, c in model.constants.items() if c.kind == "tla"]
    main = f"LP_{model.module}" if definitions else model.module
    constants = [(n.split("@", 1)[0], format_constant(c, n.split("@", 1)[0])) for n, c in model.constants.items()]
    cfg = _env().get_template("model.cfg.j2").render(model=model, constants=constants, properties=props,
                                                     invariants=model.invariants if invariants else ())
    extra: dict[str, str] = {}
    if definitions:
        extra[f"{main}.tla"] = _env().get_template("wrapper.tla.j2").render(model=model, wrapper=main, definitions=definitions)
    return Rendered(main=main, cfg_name=f"{model.name}.cfg", cfg=cfg, extra_modules=extra)


def _render_cfg(model: Model, properties: tuple[str, ...] | None, invariants: bool) -> Rendered:
    """A user's cfg verbatim; what TLC 2.15 does not read (CHECK_DEADLOCK) cut out, and the
    model file's additions (or the one property of a re-check) appended."""
    assert model.cfg_text is not None and model.cfg_path is not None
    cut = {"CHECK_DEADLOCK"}
    if properties is not None:
        cut |= {"PROPERTY", "PROPERTIES"}
    if not invariants:
        cut |= {"INVARIANT", "INVARIANTS"}
    text = without_sections(model.cfg_text, cut)
    add_inv = model.added_invariants if invariants else ()
    add_props = model.added_properties if properties is None else properties
    if add_inv or add_props:
        lines = [f"\\* Added by leaseproof from {model.path.name}:"]
        lines += [f"INVARIANT {i}" for i in add_inv] + [f"PROPERTY {p}" for p in add_props]
        text = text.rstrip("\n") + "\n" + "\n".join(lines) + "\n"
    return Rendered(main=model.module, cfg_name=f"{model.name}.cfg", cfg=text, extra_modules={})
