"""The trace-line JSON Schema, found in the checkout (or next to an installed package)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from impl.engine.errors import EngineError

_CANDIDATES = (
    Path(__file__).resolve().parents[2] / "traces" / "schema" / "trace-line.schema.json",
    Path.cwd() / "traces" / "schema" / "trace-line.schema.json",
)


@cache
def trace_line_schema() -> dict[str, Any]:
    """The schema of one trace line (`traces/schema/trace-line.schema.json`)."""
    for path in _CANDIDATES:
        if path.is_file():
            return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]
    raise EngineError(
        "cannot find traces/schema/trace-line.schema.json; run from the leaseproof checkout"
    )
