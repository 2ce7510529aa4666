"""The board's chart: each row's score as a dot with its 95 % interval, laid out for the SVG.

Python computes the geometry (positions, ticks, labels); the page's template writes the SVG
elements, so every string in the chart is escaped like the rest of the page.
"""

from __future__ import annotations

import functools
import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace

from evaluation.server.core import Board, BoardRow
from evaluation.server.page._cells import fixed, interval_text, is_gated

#: Widest chart label, in character cells (a wide East Asian character takes two).
LABEL_CELLS = 26
#: The chart's geometry in SVG user units (the SVG scales to the page's width).
CHART_WIDTH = 960
PLOT_LEFT = 250
PLOT_RIGHT = 930
ROW_HEIGHT = 24
CHART_TOP = 34
AXIS_HEIGHT = 44


@dataclass(frozen=True)
class Mark:
    """One row of the chart: a dot (or a gated mark) with its interval as a whisker."""

    y: float
    label: str
    title: str
    is_baseline: bool
    gated: bool
    x: float
    low: float | None
    high: float | None
    low_clipped: bool


@dataclass(frozen=True)
class Tick:
    """An axis tick: its position and its label."""

    x: float
    label: str


@dataclass(frozen=True)
class Chart:
    """The chart's geometry; ``marks`` follow the table's order, top to bottom."""

    width: int
    height: int
    top: int
    row_height: int
    plot_left: int
    plot_right: int
    axis_y: float
    marks: tuple[Mark, ...]
    ticks: tuple[Tick, ...]
    zero_x: float | None
    any_gated: bool
    label: str


def _plotted(row: BoardRow) -> bool:
    """Whether a row has a score to draw (hidden or non-finite scores are left out)."""
    return row.leaderboard_score is not None and math.isfinite(row.leaderboard_score)


def chart_rows(board: Board) -> list[BoardRow]:
    """The rows as the chart plots them: on a revealed board, by their private scores (the
    order the table ranks them in), else by the public ones. A baseline without a private
    score stays on a revealed chart with its public score, named so ("(public score)")."""
    if not board.revealed:
        return list(board.rows)
    return [_private(row) for row in board.rows]


def _private(row: BoardRow) -> BoardRow:
    """The row as a revealed chart plots it."""
    if row.is_baseline and row.private_score is None:
        return replace(row, team=f"{row.team} (public score)")
    return replace(row, leaderboard_score=row.private_score, interval=row.private_interval)


def chart(rows: Sequence[BoardRow], what: str = "Leaderboard") -> Chart | None:
    """The chart of the rows that have a score, in the table's order (None when there is none).

    ``what`` names the plotted scores in the chart's accessible label.
    """
    shown = [row for row in rows if _plotted(row)]
    if not shown:
        return None
    low, high, step = _domain(shown)

    def scale(value: float) -> float:
        return PLOT_LEFT + (value - low) / (high - low) * (PLOT_RIGHT - PLOT_LEFT)

    marks = tuple(
        _mark(row, CHART_TOP + (i + 0.5) * ROW_HEIGHT, scale, low, high)
        for i, row in enumerate(shown)
    )
    axis_y = CHART_TOP + len(shown) * ROW_HEIGHT + 6
    count = round((high - low) / step)
    ticks = tuple(
        Tick(x=round(scale(low + k * step), 2), label=_tick_label(low + k * step, step))
        for k in range(count + 1)
    )
    teams = sum(not row.is_baseline for row in shown)
    return Chart(
        width=CHART_WIDTH,
        height=int(axis_y + AXIS_HEIGHT),
        top=CHART_TOP,
        row_height=ROW_HEIGHT,
        plot_left=PLOT_LEFT,
        plot_right=PLOT_RIGHT,
        axis_y=axis_y,
        marks=marks,
        ticks=ticks,
        zero_x=round(scale(0.0), 2) if low < 0 < high else None,
        any_gated=any(mark.gated for mark in marks),
        label=(
            f"{what} scores with 95 % intervals: {teams} team(s) and "
            f"{len(shown) - teams} baseline(s), best first, on an axis from "
            f"{_tick_label(low, step)} to {_tick_label(high, step)}."
        ),
    )


def _domain(rows: Sequence[BoardRow]) -> tuple[float, float, float]:
    """The axis's ends and tick step: round numbers around every score and interval end.

    Gated scores (and interval ends at the gate) stay out, so one gated submission does not
    squash every other score against the axis's right end.
    """
    ends: list[float] = []
    for row in rows:
        if row.leaderboard_score is not None:  # the chart's rows all have one (``_plotted``)
            ends.append(row.leaderboard_score)
        ends.extend(row.interval or ())
    values = [v for v in ends if math.isfinite(v) and not is_gated(v)]
    if not values:
        return 0.0, 1.0, 0.2
    low, high = min(values), max(values)
    # Equal scores (or a single one) get a span of their own; else a margin keeps the extreme
    # dots off the axis's ends.
    pad = 0.1 * max(abs(low), 1.0) if high - low < 1e-9 else 0.04 * (high - low)
    low, high = low - pad, high + pad
    step = _nice_step((high - low) / 5)
    return math.floor(low / step) * step, math.ceil(high / step) * step, step


def _nice_step(rough: float) -> float:
    """The smallest of 1, 2 or 5 times a power of ten that is at least ``rough``."""
    power = 10.0 ** math.floor(math.log10(rough))
    for factor in (1.0, 2.0, 5.0, 10.0):
        if factor * power >= rough * (1 - 1e-9):
            return factor * power
    return 10.0 * power  # pragma: no cover - the loop always returns


def _tick_label(value: float, step: float) -> str:
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    text = f"{value:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def _mark(row: BoardRow, y: float, scale, low: float, high: float) -> Mark:
    """A chart row: gated scores sit at the axis's left end as a gated mark, whiskers clipped."""
    score = row.leaderboard_score
    gated = is_gated(score)
    x = PLOT_LEFT if gated else scale(score)
    whisker_low = whisker_high = None
    clipped = False
    if row.interval is not None and not gated and all(math.isfinite(v) for v in row.interval):
        a, b = row.interval
        clipped = a < low
        whisker_low, whisker_high = scale(max(a, low)), scale(min(b, high))
    return Mark(
        y=round(y, 2),
        label=_label(row),
        title=_title(row),
        is_baseline=row.is_baseline,
        gated=gated,
        x=round(x, 2),
        low=None if whisker_low is None else round(whisker_low, 2),
        high=None if whisker_high is None else round(whisker_high, 2),
        low_clipped=clipped,
    )


def _label(row: BoardRow) -> str:
    """A chart label: the rank and the team's name, cut to fit the label column."""
    prefix = "" if row.is_baseline or row.rank is None else f"{row.rank}. "
    return prefix + _fitted(row.team, LABEL_CELLS - len(prefix))


@functools.lru_cache(maxsize=4096)
def _fitted(team: str, cells: int) -> str:
    """A team's name, printable and cut to ``cells`` display cells (kept: a board is drawn
    again after every upload with the same names)."""
    return _truncate(_printable(team), cells)


def _title(row: BoardRow) -> str:
    """The hover text of a chart row: the full name and the numbers."""
    kind = "baseline" if row.is_baseline else "unranked" if row.rank is None else f"rank {row.rank}"
    if is_gated(row.leaderboard_score):
        return f"{row.team} ({kind}): gated, score {fixed(row.leaderboard_score)}"
    text = f"{row.team} ({kind}): score {fixed(row.leaderboard_score)}"
    if row.interval is not None:
        text += f", 95 % interval {interval_text(row.interval)}"
    return text


def _printable(text: str) -> str:
    """The text without control and format characters (a bidi override would reorder the
    label's neighbours); whitespace runs become one space."""
    kept = "".join(
        " " if ch.isspace() else ch
        for ch in text
        if ch.isspace() or unicodedata.category(ch) not in ("Cc", "Cf")
    )
    return " ".join(kept.split())


def _cells(ch: str) -> int:
    """Display width of a character: 2 for wide East Asian ones, 0 for combining marks."""
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def _truncate(text: str, cells: int) -> str:
    """The text cut to ``cells`` display cells, the last one an ellipsis when it was cut."""
    if sum(_cells(ch) for ch in text) <= cells:
        return text
    kept, used = [], 0
    for ch in text:
        width = _cells(ch)
        if used + width > cells - 1:
            break
        kept.append(ch)
        used += width
    return "".join(kept).rstrip() + "\u2026"
