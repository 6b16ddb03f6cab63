"""The `leaseproof` command line: one sub-command per module, each registering its own parser.

Errors are caught once, here: a `LeaseproofError` or `ImplError` prints as one line with the
chain of its causes (control and bidi characters escaped: `safe_text.visible`) and exits 2;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

# Each module has `register(subparsers)`, adding a parser whose `func(args) -> int` runs it.
# The impl commands are imported by name only: the CLI is the one place that composes both halves.
COMMAND_MODULES = (
    "conformance.cli.check",
    "conformance.cli.traces",
    "conformance.cli.replay",
    "conformance.cli.mutate",
    "conformance.cli.interleave",
    "conformance.cli.guided",
    "impl.engine.cli",
    "impl.workqueue.cli",
)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser, with every sub-command that is installed."""
    parser = argparse.ArgumentParser(
        prog="leaseproof",
        description="Prove that lease-based job systems never run work twice at once and never strand it.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # not written yet; any other missing module is a real error
                continue
            raise
        module.register(sub)
    return parser


def describe(exc: BaseException) -> str:
    """`exc` and the chain of its causes, in one line."""
    parts = [str(exc) or type(exc).__name__]
    seen = {id(exc)}
    cause = exc.__cause__ or exc.__context__
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        text = str(cause) or type(cause).__name__
        if text not in parts[-1]:
            parts.append(text)
        cause = cause.__cause__ or cause.__context__
    return ": ".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    from conformance.errors import LeaseproofError
    from conformance.output.safe_text import visible
    from impl.errors import ImplError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (LeaseproofError, ImplError) as exc:
        # A message quotes input (a path, a name, a value): shown, never obeyed by the terminal.
        print(f"leaseproof: error: {visible(describe(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("leaseproof: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, and keep Python from complaining again
        # when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
