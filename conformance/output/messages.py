"""TLC's `-tool` output as a list of typed messages.

With `-tool`, TLC wraps each message in markers:

    @!@!@STARTMSG 2110:1 @!@!@
    Invariant Inv is violated.
    @!@!@ENDMSG 2110 @!@!@

`code` says what the message is (see `Code`), `klass` its severity class (0 info, 1 error,
2 TLC bug, 3 warning, 4 state). Text printed outside any marker (SANY's parse and semantic
errors, Java's own failures) is kept as messages with `code` `Code.UNTAGGED`, in order, so no
output is lost.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import IntEnum

from conformance.errors import TlcOutputError


class Code(IntEnum):
    """The message codes that leaseproof reads (TLC 2.15's `EC` and `MP` numbers)."""

    UNTAGGED = -1
    PARSE_OR_SEMANTIC_FAILED = 3002
    GENERAL = 1000
    BAD_COMMAND_LINE = 1102
    ASSUMPTION_FALSE = 2104
    INVARIANT_VIOLATED_INITIAL = 2107
    INVARIANT_VIOLATED = 2110
    ACTION_PROPERTY_VIOLATED = 2112
    DEADLOCK = 2114
    TEMPORAL_VIOLATED = 2116
    NO_INITIAL_STATES = 2118
    BEHAVIOR_FOLLOWS = 2121
    BACK_TO_STATE = 2122
    ASSERT_FAILED = 2132
    SUCCESS = 2193
    SEARCH_DEPTH = 2194
    FINISHED = 2186
    STATS = 2199
    PROGRESS = 2200
    STATE = 2217
    STUTTERING = 2218
    VERSION = 2262
    METADIR_EXISTS = 2162


_MARKER = re.compile(r"@!@!@(?:STARTMSG (\d+):(\d+)|ENDMSG (\d+)) @!@!@")


@dataclass(frozen=True)
class Message:
    """One TLC message: its code, its class, its own text without markers, and nested messages.

    TLC nests messages: a general error (1000) can carry the message that explains it, e.g. an
    `Assert` failure (2132) or a cfg error (5006), in its text.
    """

    code: int
    klass: int
    body: str
    children: tuple["Message", ...] = ()


def walk(messages: Iterable[Message]) -> Iterator[Message]:
    """Every message, nested ones included, in the order TLC printed them (parents first)."""
    for message in messages:
        yield message
        yield from walk(message.children)


def parse_messages(output: str) -> list[Message]:
    """Split TLC's `-tool` output into messages, keeping untagged text as `UNTAGGED` messages.

    Markers may appear in the middle of a line (nested messages). A message cut off by a crash
    or a timeout is kept with the text it has. Raises `TlcOutputError` when a message is closed
    that was never opened, which TLC itself never prints.
    """
    top: list[Message] = []
    # Each open message: (code, klass, text parts, children).
    stack: list[tuple[int, int, list[str], list[Message]]] = []
    loose: list[str] = []

    def add_text(text: str) -> None:
        (stack[-1][2] if stack else loose).append(text)

    def flush_loose() -> None:
        text = "".join(loose).strip()
        if text:
            top.append(Message(Code.UNTAGGED, 0, text))
        loose.clear()

    def close() -> Message:
        code, klass, parts, children = stack.pop()
        return Message(code, klass, "".join(parts).strip().removesuffix(":").strip(), tuple(children))

    pos = 0
    for m in _MARKER.finditer(output):
        add_text(output[pos : m.start()])
        pos = m.end()
        if m.group(1) is not None:
            if not stack:
                flush_loose()
            stack.append((int(m.group(1)), int(m.group(2)), [], []))
        else:
            code = int(m.group(3))
            if not stack or stack[-1][0] != code:
                raise TlcOutputError(f"TLC output closes message {code} that was not open")
            done = close()
            (stack[-1][3] if stack else top).append(done)
    add_text(output[pos:])
    while stack:  # cut off: close what is open, innermost first
        done = close()
        (stack[-1][3] if stack else top).append(done)
    flush_loose()
    return top
