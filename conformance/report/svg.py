"""A `Swimlane` as an SVG picture. Pure: the layout (where each lane, row and line goes) is
computed here, and drawn by `templates/swimlane.svg.j2` with autoescaping on, so that a TLA+ value
or a trace field (untrusted: `<script>` in a trace is text) never becomes markup; and every
text a template writes has its control and bidi characters escaped first (`safe_text.visible`:
autoescaping leaves a U+202E that reverses a row, or a NUL no XML reader takes).

    step | action            | n1              | n2              | store
    -----+-------------------+-----------------+-----------------+-------------
     1   | Initial predicate | seen[n1] = 0    | seen[n2] = 0    | x = 0        .
     2   | Step              | seen[n1]: 0 > 1 |                 | x: 0 > 1     |  loop
     3 X | Step              |                 | seen[n2]: 1 > 2 | x: 1 > 2   --'

Every lane has the same width in every row (lines too long for it are cut, with the whole
text in a tooltip), and a row is as tall as its fullest cell, so the lanes stay aligned in a
behaviour of any length; only the values that changed are drawn.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from functools import cache

import jinja2
from markupsafe import Markup

from conformance.output.safe_text import visible
from conformance.report.swimlane import Change, Swimlane

CHAR_W = 7.25  # the width of a character of the 12 px monospace font, near enough (a little over: highlights cover the text)
LINE_H = 16
PAD = 8
HEAD_H = 30
NUM_W = 56
ACTION_W = 330  # at most, as for a lane
ACTION_MIN = 150
LANE_W = 310  # at most: a longer change is cut, and whole in its tooltip
LANE_MIN = 90
NOTE_H = 20  # the marked row's line saying what broke
LOOP_W = 220  # room on the right for a lasso's arrow and its label


@dataclass(frozen=True)
class Line:
    """One change drawn in a cell: its shown text, the whole text (a tooltip), and whether it is
    a change of an earlier value (highlighted) or a first value."""

    x: float
    y: float
    text: str
    full: str
    changed: bool
    width: float


@dataclass(frozen=True)
class RowBox:
    """A row's place and contents."""

    index: int
    number: int
    action: str
    action_full: str
    y: float
    height: float
    lines: tuple[Line, ...]
    marked: bool
    note: tuple[str, ...]  # what broke, wrapped to the row's width
    note_full: str


@dataclass(frozen=True)
class Layout:
    """Where everything of a swimlane goes."""

    width: float
    height: float
    lanes_right: float  # the right edge of the last lane (a loop is drawn past it)
    lanes: tuple[tuple[str, float], ...]  # name, x of the lane's left edge
    rows: tuple[RowBox, ...]
    loop: tuple[float, float, float, str] | None  # x, y from (last row), y to, label
    stutter: tuple[float, float] | None  # x, y of the last row's self-loop
    title: str


def _cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: max(1, chars - 1)] + "\u2026"


def lane_widths(sl: Swimlane) -> list[int]:
    """Each lane's width, the same in every row: as wide as its longest change, between
    LANE_MIN (a node that never changes, a short value) and LANE_W (longer is cut)."""
    out = []
    for lane in sl.lanes:
        longest = max((len(visible(c.text())) for r in sl.rows for c in r.cell(lane)), default=0)
        text = max(longest, len(visible(lane))) * CHAR_W + 2 * PAD + 4
        out.append(int(min(LANE_W, max(LANE_MIN, text))))
    return out


def layout(sl: Swimlane) -> Layout:
    """Place every lane, row and change of `sl`."""
    widths = lane_widths(sl)
    action_w = int(min(ACTION_W, max(ACTION_MIN, max((len(visible(r.action)) for r in sl.rows), default=0) * CHAR_W + 2 * PAD + 8)))
    lane_x = [NUM_W + action_w + sum(widths[:i]) for i in range(len(sl.lanes))]
    action_chars = int((action_w - 2 * PAD) / CHAR_W)
    lanes_right = NUM_W + action_w + sum(widths)
    rows: list[RowBox] = []
    y = float(HEAD_H)
    for i, r in enumerate(sl.rows):
        lines: list[Line] = []
        tallest = 1
        for lane, x, w in zip(sl.lanes, lane_x, widths):
            changes: tuple[Change, ...] = r.cell(lane)
            chars = int((w - 2 * PAD) / CHAR_W)
            tallest = max(tallest, len(changes))
            for j, c in enumerate(changes):
                # Escaped before it is measured and cut: `\x1b` takes four characters' room.
                whole = visible(c.text())
                shown = _cut(whole, chars)
                lines.append(Line(x + PAD, y + PAD + (j + 1) * LINE_H - 4, shown, whole, c.changed,
                                  len(shown) * CHAR_W + 4))
        note_text, action = visible(r.note), visible(r.action)
        note = tuple(textwrap.wrap(note_text, int((lanes_right - NUM_W - 2 * PAD) / CHAR_W) - 2)) if r.marked else ()
        height = tallest * LINE_H + 2 * PAD + NOTE_H * len(note)
        rows.append(RowBox(i, r.number, _cut(action, action_chars), action, y, height, tuple(lines), r.marked,
                           note, note_text))
        y += height
    loop = stutter = None
    if sl.loop_to is not None and rows:
        label = f"back to {sl.rows[sl.loop_to].number}" + (f" by {sl.loop_action}" if sl.loop_action else "")
        last, to = rows[-1], rows[sl.loop_to]
        loop = (lanes_right, last.y + last.height / 2, to.y + to.height / 2, _cut(label, int((LOOP_W - 54) / CHAR_W)))
    elif sl.stutters and rows:
        stutter = (lanes_right, rows[-1].y + rows[-1].height / 2)
    width = lanes_right + (LOOP_W if loop or stutter else PAD)
    return Layout(width, y + PAD, lanes_right, tuple(zip(sl.lanes, lane_x)), tuple(rows), loop, stutter, sl.title)


def _shown(value: object) -> object:
    # Each `{{ }}`'s value before autoescaping; markup already made (an inline SVG) went through here.
    return visible(value, lines=True) if isinstance(value, str) and not isinstance(value, Markup) else value


@cache
def environment() -> jinja2.Environment:
    """The report templates, autoescaped and with every text's control and bidi characters
    escaped (HTML and SVG alike: what they show is untrusted)."""
    return jinja2.Environment(loader=jinja2.PackageLoader("conformance.report", "templates"), finalize=_shown,
                              autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def swimlane_svg(sl: Swimlane, element_id: str = "swimlane") -> str:
    """`sl` as an `<svg>` element (inline: for an HTML page, or a file of its own)."""
    return environment().get_template("swimlane.svg.j2").render(L=layout(sl), sl=sl, id=element_id,
                                                                 NUM_W=NUM_W, LANE_W=LANE_W,
                                                                 HEAD_H=HEAD_H, PAD=PAD, LINE_H=LINE_H, NOTE_H=NOTE_H, LOOP_W=LOOP_W)
