"""Protocol results as tables: rich tables for the terminal, tidy frames for pandas.

``rich`` is imported when a result is first rendered, not when the protocols are imported, so
that the command line (which imports them through the runner) starts faster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd


def fmt(value: Any) -> str:
    """A metric value as printed: four decimals, ``-`` when there is none."""
    return "-" if value is None else f"{value:.4f}"


def metric_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[str]],
                 caption: str | None = None) -> Any:
    """A rich ``Table``: a left-aligned first column, right-aligned value columns."""
    from rich.table import Table  # lazy: see the module docstring

    table = Table(title=title, caption=caption)
    table.add_column(columns[0])
    for column in columns[1:]:
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(*row)
    return table


def with_extra(table: Any, extra: Any | None) -> Any:
    """``table`` alone, or a rich ``Group`` of ``table`` then ``extra`` (e.g. a leakage audit)."""
    if extra is None:
        return table
    from rich.console import Group  # lazy: see the module docstring

    return Group(table, extra)


def show(result: Any) -> None:
    """Print ``result`` (anything with ``__rich__``) on the terminal."""
    from rich.console import Console  # lazy: see the module docstring

    Console().print(result)


def metric_frame(groups: Iterable[tuple[str, Mapping[str, float]]]) -> pd.DataFrame:
    """A tidy frame of metric values: one row per (group, metric), columns group/metric/value."""
    rows = [(group, name, value) for group, values in groups for name, value in values.items()]
    return pd.DataFrame(rows, columns=["group", "metric", "value"]).astype({"value": "float64"})
