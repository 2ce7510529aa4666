"""The comparison printed for the organizer: a rich table, then the verdict and its reasons."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console, JustifyMethod
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
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("fold", "right"), ("test", "left"), ("uploaded", "right"), ("reproduced", "right"),
        ("difference", "right"), ("status", "left"))
    for name, justify in columns:
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


#: How each verdict of a batch row is shown.
_VERDICT_STYLES = {REPRODUCED: "green", "not reproduced": "bold red", "error": "bold magenta"}


def batch_table(results) -> Table:
    """A row per reproduction of ``reproduce --many`` (``RowResult`` objects)."""
    table = Table(title="reproductions (differing: values not equal to the upload's within "
                        f"{EQUAL_TOLERANCE:g}; worst: the largest reproduced - uploaded)")
    batch_columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("submission", "right"), ("checkout", "left"), ("verdict", "left"),
        ("fingerprint ok", "left"), ("differing", "right"), ("worst", "right"),
        ("seconds", "right"), ("log", "left"))
    for name, justify in batch_columns:
        # the paths fold over several lines; the short columns are never cut
        path = name in ("checkout", "log")
        table.add_column(name, justify=justify, overflow="fold" if path else "ellipsis",
                         no_wrap=not path, min_width=12 if path else len(name))
    for r in results:
        style = _VERDICT_STYLES.get(r.verdict, "")
        table.add_row(str(r.submission), _short(r.checkout), f"[{style}]{r.verdict}[/{style}]",
                      "—" if r.fingerprint_ok is None else ("yes" if r.fingerprint_ok else
                                                            "[bold red]no[/bold red]"),
                      "—" if r.differing is None else str(r.differing),
                      "—" if r.worst_difference is None else f"{r.worst_difference:+.3g}",
                      f"{r.seconds:.1f}", _short(r.log))
    return table


def _short(path: str) -> str:
    """``path`` relative to the current folder when inside it (the JSON report has it whole)."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path


def print_batch(results, console: Console | None = None) -> None:
    """Print the batch's table, then each row's reasons against its verdict."""
    if console is None:
        console = Console(highlight=False)
        if not console.is_terminal:  # a log file or a pipe: room for the paths on one line
            console.width = max(console.width, 160)
    results = list(results)
    console.print(batch_table(results))
    for r in results:
        for reason in r.reasons:
            console.print(f"  submission {r.submission} ({r.verdict}): {reason}", markup=False,
                          soft_wrap=True)
