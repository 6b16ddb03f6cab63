"""The model file's JSON Schema (`model.schema.json`), validated with the patterns it means.

JSON Schema's `pattern` is an ECMA-262 regular expression, in which `$` is the end of the text.
The `jsonschema` package runs it with Python's `re.search`, whose `$` also matches before a
final line feed: `name: "inmem_overlap\\n"` passed `^[A-Za-z0-9_.-]+$` and wrote file names
with a newline in them. The validator here keeps `jsonschema` (its messages name the field and
say what is wrong) but matches each pattern as `jsonschema-rs` does, with ECMA-262's `$`; the
schema keeps plain patterns, which editors read the same way.

    >>> [e.message for e in schema_errors({"name": "x\\n", "expect": {"verdict": "ok"}, "why": "a trailing newline"})]
    ["'x\\\\n' does not match '^[A-Za-z0-9_.-]+$'"]
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
import jsonschema_rs
from jsonschema.validators import extend


@cache
def _ecma(pattern: str) -> jsonschema_rs.Validator:
    return jsonschema_rs.validator_for({"type": "string", "pattern": pattern})


def _matches(pattern: str, text: str) -> bool:
    try:
        return bool(_ecma(pattern).is_valid(text))
    except UnicodeEncodeError:  # a lone surrogate (YAML's "\ud800"): no text a name may be
        return False


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[jsonschema.ValidationError]:
    if validator.is_type(instance, "string") and not _matches(pattern, instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


# Draft 2020-12 with ECMA-262's `$`; `propertyNames` validates keys through `pattern` too.
EcmaValidator = extend(jsonschema.Draft202012Validator, {"pattern": _pattern})


@cache
def model_schema() -> dict[str, Any]:
    """The model file's schema."""
    return json.loads(resources.files("conformance.models").joinpath("model.schema.json").read_text())


def schema_errors(data: Any) -> list[jsonschema.ValidationError]:
    """Every way `data` breaks the model file's schema, in the order of the fields' paths."""
    return sorted(EcmaValidator(model_schema()).iter_errors(data), key=lambda e: list(e.absolute_path))


def field_path(error: jsonschema.ValidationError) -> str:
    """Where an error is, as `expect.verdict` (`(top level)` for the file itself)."""
    return ".".join(str(p) for p in error.absolute_path) or "(top level)"
