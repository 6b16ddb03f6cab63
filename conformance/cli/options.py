"""Options that several commands share, and their checks, made before any work starts.

`--allow-path DIR` (`check`, `replay`: the commands that load model files) widens where a
model file's module, cfg and Java classes may lie beyond the project root (`models/confine.py`).
Output folders (`--keep DIR`, `--html DIR`, the folder of `--junit FILE`) are made as
`mkdir -p` would, up front: one that cannot be made is a usage error in one line, not a
traceback after minutes of TLC.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from conformance.errors import LeaseproofError
from conformance.models.confine import Confinement


def add_allow_path(p: argparse.ArgumentParser) -> None:
    """Add the repeatable `--allow-path DIR`."""
    p.add_argument("--allow-path", action="append", default=[], type=Path, metavar="DIR",
                   help="a folder outside the project root that model files may take modules, cfgs and Java classes "
                        "from (repeatable; symlinks are followed before comparing)")


def confinement(root: Path, allowed: list[Path]) -> Confinement:
    """The project at `root` and the folders `--allow-path` gave; each must be a folder."""
    for folder in allowed:
        if not folder.is_dir():
            raise LeaseproofError(f"--allow-path {folder}: no such directory")
    return Confinement.project(root, allowed)


def output_dir(option: str, folder: Path) -> Path:
    """`folder`, made with its parents if it is not there (as `mkdir -p`); a usage error naming
    `option` when it cannot be (a file is in the way, no permission)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LeaseproofError(f"{option} {folder}: cannot make the folder ({exc.strerror or exc})") from None
    return folder
