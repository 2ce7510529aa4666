"""The board's HTML page: a table of the rows and an SVG chart of their scores, drawn on the server.

The page needs no JavaScript. Every string reaches the HTML through a Jinja2 template with
autoescaping on, the chart included: Python computes the chart's geometry (positions, ticks,
labels) and the template writes the SVG elements, so a team name is escaped the same way in the
table, in the chart's labels and in its hover titles.
"""

from __future__ import annotations

import functools
import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone

import jinja2

from evaluation.challenge import GATED_SCORE, LEADERBOARD_TESTS
from evaluation.server._board import Board, BoardRow

#: Widest chart label, in character cells (a wide East Asian character takes two).
LABEL_CELLS = 26
#: The chart's geometry in SVG user units (the SVG scales to the page's width).
CHART_WIDTH = 960
PLOT_LEFT = 250
PLOT_RIGHT = 930
ROW_HEIGHT = 24
CHART_TOP = 34
AXIS_HEIGHT = 44

#: Words kept in capitals in the tests' column headers.
ACRONYMS = frozenset({"MRR", "MRED"})
#: Reproduction state -> (CSS class, text with a symbol, so the badge reads without colour).
BADGES = {
    "reproduced": ("badge-reproduced", "\u2713 reproduced"),
    "not reproduced": ("badge-failed", "\u2717 not reproduced"),
    "pending": ("badge-pending", "\u25cb pending"),
}


@dataclass(frozen=True)
class RowView:
    """One table row, every cell already formatted as text."""

    rank: str
    is_baseline: bool
    team: str
    score: str
    interval: str
    gated: bool
    hidden: bool
    tests: tuple[str, ...]
    submissions: int
    last_iso: str
    last_date: str
    last_clock: str
    badge_class: str
    badge_text: str
    flagged: bool
    private_score: str = "\u2014"
    private_interval: str = ""


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


def render_board(board: Board) -> str:
    """The HTML page of a board.

    Parameters
    ----------
    board : Board
        The phase's board, rows best first (baselines among the teams).

    Returns
    -------
    str
        A complete HTML document (UTF-8 text, no scripts), every user-supplied string escaped.
    """
    tests = tuple(board.tests) or LEADERBOARD_TESTS
    rows = tuple(_row_view(row, tests) for row in board.rows)
    hidden = any(row.leaderboard_score is None for row in board.rows)
    template = _environment().get_template("board.html")
    return template.render(
        board=board,
        tests=tests,
        test_labels={name: _test_label(name) for name in tests},
        rows=rows,
        scores_hidden=hidden and not board.public,
        chart=_chart(_chart_rows(board),
                     "Private leaderboard" if board.revealed else "Leaderboard"),
        generated_iso=_iso(board.generated_at),
        generated_text=_minutes(board.generated_at),
        gated_score=_fixed(GATED_SCORE),
    )


@functools.lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    """The templates shipped in the package, escaped everywhere, failing on an unknown name."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("evaluation.server", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _row_view(row: BoardRow, tests: Sequence[str]) -> RowView:
    """The table cells of a row."""
    hidden = row.leaderboard_score is None
    values = row.tests or {}
    badge_class, badge_text = BADGES.get(row.reproduction, ("badge-other", row.reproduction))
    return RowView(
        rank="\u2014" if row.rank is None else str(row.rank),
        is_baseline=row.is_baseline,
        team=row.team,
        score="hidden" if hidden else _fixed(row.leaderboard_score),
        interval="" if hidden or row.interval is None else _interval(row.interval),
        gated=_is_gated(row.leaderboard_score),
        hidden=hidden,
        tests=tuple(_fixed(values.get(name)) for name in tests),
        submissions=row.submissions,
        last_iso=_iso(row.last_submitted),
        last_date=_minutes(row.last_submitted).partition("T")[0],
        last_clock=_minutes(row.last_submitted).partition("T")[2],
        badge_class=badge_class,
        badge_text=badge_text,
        flagged=row.flagged,
        # filled only on a revealed board (the store leaves it None before the reveal)
        private_score=_fixed(row.private_score),
        private_interval="" if row.private_interval is None else _interval(row.private_interval),
    )


def _test_label(name: str) -> str:
    """A test's column header: words in lower case but for acronyms ("MRED country")."""
    return " ".join(w if w in ACRONYMS else w.lower() for w in name.split("_"))


def _fixed(value: float | None) -> str:
    """A number with 4 decimals ("\u2014" when missing; no "-0.0000")."""
    if value is None:
        return "\u2014"
    if not math.isfinite(value):
        return "n/a"
    text = f"{value:.4f}"
    return "0.0000" if text == "-0.0000" else text


def _interval(interval: tuple[float, float]) -> str:
    low, high = interval
    return f"[{_fixed(low)}, {_fixed(high)}]"


def _is_gated(score: float | None) -> bool:
    """Whether a score is the gate's fixed score (HIT_RATE below the references' threshold)."""
    return score is not None and score <= GATED_SCORE


def _utc(moment: datetime) -> datetime:
    """An aware UTC datetime (a naive one, as SQLite returns them, is taken as UTC)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def _iso(moment: datetime) -> str:
    """Machine-readable UTC time for a ``<time datetime=...>`` attribute."""
    return _utc(moment).strftime("%Y-%m-%dT%H:%M:%SZ")


def _minutes(moment: datetime) -> str:
    """UTC time to the minute, ISO 8601."""
    return _utc(moment).strftime("%Y-%m-%dT%H:%MZ")


# --- the chart ---------------------------------------------------------------------------------


def _plotted(row: BoardRow) -> bool:
    """Whether a row has a score to draw (hidden or non-finite scores are left out)."""
    return row.leaderboard_score is not None and math.isfinite(row.leaderboard_score)


def _chart_rows(board: Board) -> list[BoardRow]:
    """The rows as the chart plots them: on a revealed board, by their private scores (the
    order the table ranks them in), else by the public ones."""
    if not board.revealed:
        return list(board.rows)
    return [replace(row, leaderboard_score=row.private_score, interval=row.private_interval)
            for row in board.rows]


def _chart(rows: Sequence[BoardRow], what: str = "Leaderboard") -> Chart | None:
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
    values = []
    for row in rows:
        values.append(row.leaderboard_score)
        values.extend(row.interval or ())
    values = [v for v in values if math.isfinite(v) and not _is_gated(v)]
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
    gated = _is_gated(score)
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
    return prefix + _truncate(_printable(row.team), LABEL_CELLS - len(prefix))


def _title(row: BoardRow) -> str:
    """The hover text of a chart row: the full name and the numbers."""
    kind = "baseline" if row.is_baseline else "unranked" if row.rank is None else f"rank {row.rank}"
    if _is_gated(row.leaderboard_score):
        return f"{row.team} ({kind}): gated, score {_fixed(row.leaderboard_score)}"
    text = f"{row.team} ({kind}): score {_fixed(row.leaderboard_score)}"
    if row.interval is not None:
        text += f", 95 % interval {_interval(row.interval)}"
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
