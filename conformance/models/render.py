"""A model rendered for TLC: the cfg text, and a wrapper module when a constant is an expression.

Pure: `render_model` returns texts and file names; writing them is the runner's job.

    >>> from conformance.models.model import Constant
    >>> format_constant(Constant("model_values", ("n1", "n2")))
    '= {n1, n2}'
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import jinja2

from conformance.models.model import Constant, Model
from conformance.output.values import format_value


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
    """The right-hand side of a constant in a cfg: `= value` or, for expressions, `<- lp_name`."""
    if c.kind == "bool":
        return "= TRUE" if c.value else "= FALSE"
    if c.kind == "int":
        return f"= {c.value}"
    if c.kind == "model_values":
        return "= {" + ", ".join(c.value) + "}"
    if c.kind == "string":
        return "= " + format_value(c.value)
    if c.kind == "model_value":
        return f"= {name}"
    if c.kind == "tla":
        return f"<- lp_{name}"
    raise ValueError(f"unknown constant kind {c.kind}")


def render_model(model: Model, properties: tuple[str, ...] | None = None) -> Rendered:
    """Render `model`, checking `properties` (default: all of the model's temporal properties)."""
    props = model.properties if properties is None else properties
    definitions = [(n, c.value) for n, c in model.constants.items() if c.kind == "tla"]
    main = f"LP_{model.module}" if definitions else model.module
    constants = [(n, format_constant(c, n)) for n, c in model.constants.items()]
    cfg = _env().get_template("model.cfg.j2").render(model=model, constants=constants, properties=props)
    extra: dict[str, str] = {}
    if definitions:
        extra[f"{main}.tla"] = _env().get_template("wrapper.tla.j2").render(model=model, wrapper=main, definitions=definitions)
    return Rendered(main=main, cfg_name=f"{model.name}.cfg", cfg=cfg, extra_modules=extra)
