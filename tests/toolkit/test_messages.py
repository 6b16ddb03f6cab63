"""Splitting TLC's -tool output into messages."""

from __future__ import annotations

import pytest

from conformance.errors import TlcOutputError
from conformance.output.messages import Code, parse_messages, walk


def test_messages_untagged_text_and_nesting() -> None:
    out = (
        "@!@!@STARTMSG 2262:0 @!@!@\nTLC2 Version 2.15\n@!@!@ENDMSG 2262 @!@!@\n"
        "Parsing file Foo.tla\n"
        "@!@!@STARTMSG 1000:1 @!@!@\nTLC threw an unexpected exception.\n"
        ": @!@!@STARTMSG 5006:0 @!@!@\nTLC found an error in the configuration file at line 6\n"
        "@!@!@ENDMSG 5006 @!@!@\n@!@!@ENDMSG 1000 @!@!@\n"
    )
    top = parse_messages(out)
    assert [m.code for m in top] == [2262, Code.UNTAGGED, 1000]
    assert top[1].body == "Parsing file Foo.tla"
    assert [m.code for m in top[2].children] == [5006]
    assert top[2].body == "TLC threw an unexpected exception."
    assert [m.code for m in walk(top)] == [2262, Code.UNTAGGED, 1000, 5006]


def test_a_message_cut_off_by_a_kill_is_kept() -> None:
    top = parse_messages("@!@!@STARTMSG 2200:0 @!@!@\nProgress(3) at ...")
    assert [(m.code, m.body) for m in top] == [(2200, "Progress(3) at ...")]


def test_closing_a_message_never_opened_is_an_error() -> None:
    with pytest.raises(TlcOutputError, match="closes message 2110"):
        parse_messages("@!@!@ENDMSG 2110 @!@!@\n")


def test_empty_output_has_no_messages() -> None:
    assert parse_messages("") == []
