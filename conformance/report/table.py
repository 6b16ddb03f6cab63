"""Outcomes as a terminal table (rich): one row per model, then the details of each failure.

Every text from input (a model's name and path, TLC's messages, a counterexample's values) goes
into a `Text` or through `safe_text.markup`: shown as written, its control and bidi characters
escaped, never read as rich markup (`[green]`) or obeyed by the terminal (`\x1b[32m`).
"""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from conformance.check.compare import Outcome, actual_label
from conformance.check.witness import Witness
from conformance.output.safe_text import markup, visible
from conformance.output.verdict import ErrorKind
from conformance.report.lanes import model_swimlane
from conformance.report.swimlane import STORE, Swimlane


def _num(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def shown(text: object, style: str = "") -> Text:
    """`text` as a table cell: escaped (`visible`), no markup read in it."""
    return Text(visible(text), style=style)


def workers_label(o: Outcome) -> str:
    """The TLC workers that checked a model; `1 (temporal)` where one was forced because it
    checks a temporal property (TLC 2.15 can miss a liveness violation with more)."""
    if o.workers is None:
        return "-"
    forced = o.model.properties and (o.model.workers or 0) != 1
    return f"{o.workers} (temporal)" if forced else str(o.workers)


def outcomes_table(outcomes: list[Outcome]) -> Table:
    """The summary table: model, expected, actual, distinct states, depth, seconds, result."""
    table = Table(title="leaseproof check", header_style="bold")
    for col, justify in (("model", "left"), ("expected", "left"), ("actual", "left"), ("distinct", "right"),
                         ("depth", "right"), ("length", "right"), ("workers", "right"), ("seconds", "right"),
                         ("result", "center")):
        # A model's name is how a user finds its file: fold it onto more lines, never cut it short.
        table.add_column(col, justify=justify, overflow="fold" if col == "model" else "ellipsis")  # type: ignore[arg-type]
    for o in outcomes:
        v = o.verdict
        length = str(len(v.counterexample)) if v.counterexample else "-"
        result = "[green]PASS[/]" if o.passed else "[bold red]FAIL[/]"
        table.add_row(shown(o.model.name), shown(o.model.expect.describe()), shown(actual_label(v)), _num(v.stats.distinct_states),
                      _num(v.stats.depth), length, workers_label(o), f"{v.stats.seconds:.1f}", result)
    return table


def witness_table(ws: list[Witness]) -> Table:
    """Per claimed property: the models that claim it, and the calibration that proves it can fail."""
    table = Table(title="property witnesses", header_style="bold")
    for col in ("module", "property", "claimed by", "witnessed by"):
        table.add_column(col, overflow="fold")
    for w in ws:
        if w.witnessed:
            by = markup(", ".join(w.witnesses))
        elif w.missing:
            by = "[bold red]UNWITNESSED[/]"
        else:
            by = f"[yellow]not run here: {markup(', '.join(w.not_run))}[/]"
        if w.failed_witnesses:
            by += f" [red](did not fail as expected: {markup(', '.join(w.failed_witnesses))})[/]"
        claimed = ", ".join(w.claimed_by[:3]) + (f" +{len(w.claimed_by) - 3}" if len(w.claimed_by) > 3 else "")
        table.add_row(shown(w.module), shown(w.property), shown(claimed), by)
    return table


def counterexample_table(sl: Swimlane, full: bool = False) -> Table:
    """A counterexample's swimlanes as a terminal table: one row per step, one column per lane,
    in each cell only what changed there (the marked step in red, with what broke). The first
    state's values are cut to a line each (each change below says what it was before), unless
    `full`."""
    table = Table(box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False)
    table.add_column("step", justify="right", no_wrap=True)
    table.add_column("action", overflow="fold")
    for lane in sl.lanes:
        table.add_column(shown(lane), overflow="fold", style="dim" if lane == STORE else None)
    for i, r in enumerate(sl.rows):
        cut = i == 0 and not full
        cells = []
        for lane in sl.lanes:
            cell = Text(no_wrap=cut, overflow="ellipsis" if cut else "fold")
            for j, c in enumerate(r.cell(lane)):
                cell.append(("\n" if j else "") + visible(c.text()), style="" if c.changed or i == 0 else "dim")  # --full: unchanged dim
            cells.append(cell)
        action = shown(r.action, style="bold")
        number = Text(f"{r.number}" + (" ✗" if r.marked else ""), style="bold red" if r.marked else "")
        if r.marked:
            action.append(f"\n{visible(r.note)}", style="red")
        if sl.loop_to is not None and i == len(sl.rows) - 1:
            back = sl.rows[sl.loop_to].number
            by = f" by {sl.loop_action}" if sl.loop_action else ""
            where = f" ({sl.loop_location})" if sl.loop_location else ""
            action.append(visible(f"\n↺ back to state {back}{by}{where} (a loop)", lines=True), style="magenta")
        elif sl.stutters and i == len(sl.rows) - 1:
            action.append("\n↺ stutters forever", style="magenta")
        table.add_row(number, action, *cells, end_section=True)
    return table


def print_report(console: Console, outcomes: list[Outcome], show_counterexamples: bool = True, full: bool = False) -> None:
    """The table, then for every failing model why it failed, and its counterexample as a table of
    the steps showing only what changed (`full`: every variable)."""
    console.print(outcomes_table(outcomes))
    for o in outcomes:
        for note in o.model.notes:
            console.print(f"[yellow]NOTE[/] {markup(o.model.name)}: {markup(note)}", highlight=False)
    for o in outcomes:
        if o.passed:
            continue
        console.print(f"[bold red]FAIL[/] {markup(o.model.name)} ({markup(o.model.path)})")
        for m in o.mismatches:
            console.print(f"  - {visible(m)}", markup=False, highlight=False)
        if o.verdict.message and o.verdict.error_kind is not ErrorKind.MODEL_FILE:  # a refused file: said above
            said = visible(o.verdict.message.strip(), lines=True).replace("\n", "\n    ")
            console.print("  TLC said: " + said, markup=False, highlight=False)
        sl = model_swimlane(o, full=full) if show_counterexamples else None
        if sl is not None:
            console.print(counterexample_table(sl, full=full))
    passed = sum(o.passed for o in outcomes)
    colour = "green" if passed == len(outcomes) else "red"
    console.print(f"[{colour}]{passed} of {len(outcomes)} models gave their expected verdict[/]")
