"""The board's HTML page: a table of the rows and an SVG chart of their scores, drawn on the server.

The page needs no JavaScript. Every string reaches the HTML through a Jinja2 template with
autoescaping on, the chart included: Python computes the chart's geometry (positions, ticks,
labels) and the template writes the SVG elements, so a team name is escaped the same way in the
table, in the chart's labels and in its hover titles.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import jinja2

from evaluation.challenge import GATED_SCORE, LEADERBOARD_TESTS
from evaluation.server._board import Board, BoardRow
from evaluation.server._page_cells import fixed, interval_text, is_gated, iso, minutes
from evaluation.server._page_chart import chart, chart_rows
from evaluation.server._store_reveals import visibility

#: Words kept in capitals in the tests' column headers.
ACRONYMS = frozenset({"MRR", "MRED"})
#: Reproduction state -> (CSS class, text with a symbol, so the badge reads without colour).
BADGES = {
    "reproduced": ("badge-reproduced", "\u2713 reproduced"),
    "not reproduced": ("badge-failed", "\u2717 not reproduced"),
    "pending": ("badge-pending", "\u25cb pending"),
    "hidden": ("badge-other", "\u2013 hidden"),
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
        visibility=visibility(board.public, board.revealed, board.published),
        chart=chart(chart_rows(board),
                    "Private leaderboard" if board.revealed else "Leaderboard"),
        generated_iso=iso(board.generated_at),
        generated_text=minutes(board.generated_at),
        gated_score=fixed(GATED_SCORE),
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
        score="hidden" if hidden else fixed(row.leaderboard_score),
        interval="" if hidden or row.interval is None else interval_text(row.interval),
        gated=is_gated(row.leaderboard_score),
        hidden=hidden,
        tests=tuple(fixed(values.get(name)) for name in tests),
        submissions=row.submissions,
        last_iso=iso(row.last_submitted),
        last_date=minutes(row.last_submitted).partition("T")[0],
        last_clock=minutes(row.last_submitted).partition("T")[2],
        badge_class=badge_class,
        badge_text=badge_text,
        flagged=row.flagged,
        # filled only on a revealed board (the store leaves it None before the reveal)
        private_score=fixed(row.private_score),
        private_interval=("" if row.private_interval is None
                          else interval_text(row.private_interval)),
    )


def _test_label(name: str) -> str:
    """A test's column header: words in lower case but for acronyms ("MRED country")."""
    return " ".join(w if w in ACRONYMS else w.lower() for w in name.split("_"))
