"""Untrusted text made safe to show: every character that could draw, move or reorder what a
reader sees written out as a visible escape. Pure.

A model's path, a TLC message, a trace's file name or a value it logged reaches the terminal,
the JUnit XML and the HTML report. Raw, an ESC (`\\x1b[32mACCEPTED`) repaints a rejection
green, a carriage return overwrites its line, a bidi override (U+202E) reverses what follows, a
NUL makes the XML not well-formed (XML 1.0 forbids most C0 characters even as `&#0;`), and a
lone surrogate (JSON's `"\\ud800"`) cannot be written as UTF-8 at all. Each such character is
shown as a Python-style escape instead, so that the reader sees that it is there:

    >>> visible("n1\\x1b[32mACCEPTED\\x1b[0m \\u202eevil")
    'n1\\\\x1b[32mACCEPTED\\\\x1b[0m \\\\u202eevil'
    >>> visible("line one\\nline two", lines=True)
    'line one\\nline two'

Escaped: C0 controls (U+0000..U+001F, line feed and tab kept where `lines` says the format has
lines of its own), DEL and the C1 controls (U+007F..U+009F), the bidi controls (U+061C,
U+200E, U+200F, U+202A..U+202E, U+2066..U+2069), surrogates and U+FFFE/U+FFFF (no XML
character). A backslash is left as it is: TLA+ (`/\\`) and Windows paths are full of them,
and an escape can only ever spell out what was there.
"""

from __future__ import annotations

import re

BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_NOT_SHOWN = "\x00-\x08\x0b-\x1f\x7f-\x9f" + BIDI + "\ud800-\udfff\ufffe\uffff"
_UNSAFE_LINES = re.compile(f"[{_NOT_SHOWN}]")  # tab and line feed kept
_UNSAFE = re.compile(f"[\t\n{_NOT_SHOWN}]")


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: object, *, lines: bool = False) -> str:
    """`text` (any value, as `str()` shows it) with every control, bidi and non-character
    escaped (`\\x1b`, `\\u202e`); with `lines`, line feeds and tabs are kept as the layout of
    a multi-line text (a TLC message, a TLA+ definition)."""
    s = text if isinstance(text, str) else str(text)
    return (_UNSAFE_LINES if lines else _UNSAFE).sub(_escape, s)


def markup(text: object, *, lines: bool = False) -> str:
    """`visible(text)` with rich's markup escaped too (`[bold green]` shown as written), for a
    value inside an f-string given to `Console.print` with markup on."""
    from rich.markup import escape

    return escape(visible(text, lines=lines))
