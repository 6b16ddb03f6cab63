"""Outcomes as a terminal table (rich): one row per model, then the details of each failure."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from conformance.check.compare import Outcome, actual_label
from conformance.check.witness import Witness
from conformance.output.counterexample import Counterexample
from conformance.output.values import format_value
from conformance.output.verdict import ErrorKind


def _num(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


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
        table.add_row(o.model.name, o.model.expect.describe(), actual_label(v), _num(v.stats.distinct_states),
                      _num(v.stats.depth), length, workers_label(o), f"{v.stats.seconds:.1f}", result)
    return table


def witness_table(ws: list[Witness]) -> Table:
    """Per claimed property: the models that claim it, and the calibration that proves it can fail."""
    table = Table(title="property witnesses", header_style="bold")
    for col in ("module", "property", "claimed by", "witnessed by"):
        table.add_column(col, overflow="fold")
    for w in ws:
        if w.witnessed:
            shown = ", ".join(w.witnesses)
        elif w.missing:
            shown = "[bold red]UNWITNESSED[/]"
        else:
            shown = f"[yellow]not run here: {', '.join(w.not_run)}[/]"
        if w.failed_witnesses:
            shown += f" [red](did not fail as expected: {', '.join(w.failed_witnesses)})[/]"
        claimed = ", ".join(w.claimed_by[:3]) + (f" +{len(w.claimed_by) - 3}" if len(w.claimed_by) > 3 else "")
        table.add_row(w.module, w.property, claimed, shown)
    return table


def counterexample_lines(cx: Counterexample, max_width: int = 160) -> list[str]:
    """A counterexample as text: each state's action, then only the variables that changed."""
    lines: list[str] = []
    previous: dict[str, object] = {}
    for s in cx.states:
        where = f" ({s.location})" if s.location else ""
        lines.append(f"  {s.index}: {s.action}{where}")
        for name, value in s.variables.items():
            if name not in previous or previous[name] != value:
                text = format_value(value)
                if len(text) > max_width:
                    text = text[: max_width - 3] + "..."
                lines.append(f"       {name} = {text}")
        previous = s.variables
    if cx.back_to is not None:
        by = f" by {cx.back_action}" if cx.back_action else ""
        where = f" ({cx.back_location})" if cx.back_location else ""
        lines.append(f"  back to state {cx.back_to}{by}{where} (a loop)")
    if cx.stutters:
        lines.append("  then stutters forever")
    return lines


def print_report(console: Console, outcomes: list[Outcome], show_counterexamples: bool = True) -> None:
    """The table, then for every failing model why it failed (and its counterexample)."""
    console.print(outcomes_table(outcomes))
    for o in outcomes:
        for note in o.model.notes:
            console.print(f"[yellow]NOTE[/] {o.model.name}: {note}", highlight=False)
    for o in outcomes:
        if o.passed:
            continue
        console.print(f"[bold red]FAIL[/] {o.model.name} ({o.model.path})")
        for m in o.mismatches:
            console.print(f"  - {m}", markup=False, highlight=False)
        if o.verdict.message and o.verdict.error_kind is not ErrorKind.MODEL_FILE:  # a refused file: said above
            console.print("  TLC said: " + o.verdict.message.strip().replace("\n", "\n    "), markup=False, highlight=False)
        if show_counterexamples and o.verdict.counterexample:
            for line in counterexample_lines(o.verdict.counterexample):
                console.print(line, markup=False, highlight=False)
    passed = sum(o.passed for o in outcomes)
    colour = "green" if passed == len(outcomes) else "red"
    console.print(f"[{colour}]{passed} of {len(outcomes)} models gave their expected verdict[/]")
