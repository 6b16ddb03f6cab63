"""Finding model files under `models/` and picking the ones named on the command line."""

from __future__ import annotations

import difflib
from pathlib import Path

from conformance.errors import UnknownModel


def model_files(models_dir: Path) -> list[Path]:
    """Every model file under `models_dir`, sorted by path."""
    return sorted(p for p in models_dir.rglob("*.yaml") if p.is_file())


def select(models_dir: Path, names: list[str]) -> list[Path]:
    """The model files that `names` denote, in the order given; all of them when `names` is empty.

    A name is a path to a model file, a model's name (`inmem_overlap`), a system directory
    (`engine`), or a path relative to `models_dir` (`engine/inmem_overlap`).
    """
    every = model_files(models_dir)
    if not names:
        return every
    chosen: list[Path] = []
    for name in names:
        as_path = Path(name)
        if as_path.suffix == ".yaml" and as_path.is_file():
            hits = [as_path]
        elif (models_dir / name).is_dir():
            hits = model_files(models_dir / name)
        else:
            rel = name.removesuffix(".yaml")
            hits = [p for p in every if p.stem == rel or p.relative_to(models_dir).with_suffix("").as_posix() == rel]
        if not hits:
            known = sorted({p.stem for p in every})
            close = difflib.get_close_matches(name, known, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else f"; known models: {', '.join(known) or 'none'}"
            raise UnknownModel(f"no model {name!r} under {models_dir}{hint}")
        chosen.extend(h for h in hits if h not in chosen)
    return chosen
