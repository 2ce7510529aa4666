"""The comparison printed for the organizer: a rich table, then the verdict and its reasons."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from evaluation.reproduce._compare import EQUAL_TOLERANCE, REPRODUCED, Comparison

#: How each status is shown.
_STYLES = {"equal": "green", "within": "yellow", "outside": "bold red", "missing": "bold red"}


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.6g}"


def comparison_table(comparison: Comparison) -> Table:
    """A row per fold and test: uploaded, reproduced, difference, status."""
    table = Table(title=f"reproduced vs uploaded (equal: |difference| <= {EQUAL_TOLERANCE:g}; "
                        f"within: inside the uploaded 95 % interval)")
    for name, justify in (("fold", "right"), ("test", "left"), ("uploaded", "right"),
                          ("reproduced", "right"), ("difference", "right"),
                          ("status", "left")):
        table.add_column(name, justify=justify)
    for row in comparison.rows:
        style = _STYLES.get(row.status, "")
        table.add_row(str(row.fold), row.test, _number(row.uploaded), _number(row.reproduced),
                      "—" if row.difference is None else f"{row.difference:+.3g}",
                      f"[{style}]{row.status}[/{style}]")
    return table


def print_comparison(comparison: Comparison, console: Console | None = None) -> None:
    """Print the table (when there are rows), the fingerprint check and the verdict."""
    console = console or Console(highlight=False)
    if comparison.rows and any(r.reproduced is not None for r in comparison.rows):
        console.print(comparison_table(comparison))
    console.print("model fingerprint (code and parameters): "
                  + ("[green]matches the upload[/green]" if comparison.fingerprint_matches
                     else "[bold red]differs from the upload[/bold red]"))
    style = "bold green" if comparison.verdict == REPRODUCED else "bold red"
    console.print(f"verdict: [{style}]{comparison.verdict}[/{style}]")
    for reason in comparison.reasons:
        console.print(f"  - {reason}", markup=False)
