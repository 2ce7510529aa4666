"""The board's HTML page: a table of the rows and an SVG chart of their scores, drawn on the server.

The page needs no JavaScript. Every string reaches the HTML through a Jinja2 template with
autoescaping on, the chart included: Python computes the chart's geometry (positions, ticks,
labels) and the template writes the SVG elements, so a team name is escaped the same way in the
table, in the chart's labels and in its hover titles.

A board of 200 teams has thousands of cells, and it is made afresh after every upload while
most of its rows stay as they were: each table row (``_row.html``) and each chart mark
(``_chart_mark.html``) is rendered by its own template, once per content (the row's cells, or
the mark's geometry, and the page settings they use), and kept in a bounded cache; the page
joins them. A row whose content changed is rendered anew, so the page is the same, byte for
byte, as one rendered whole.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from urllib.parse import urlencode

import jinja2
from markupsafe import Markup

from evaluation.challenge import GATED_SCORE, LEADERBOARD_TESTS
from evaluation.server.core import Board, BoardRow, BoardStandings, RowCosts, guarantee
from evaluation.server.db import visibility
from evaluation.server.page._cells import fixed, interval_text, is_gated, iso, minutes
from evaluation.server.page._chart import Chart, Mark, chart, chart_rows

#: What a row whose statistics are being computed shows.
BEING_COMPUTED = "statistics being computed"
#: Words kept in capitals in the tests' column headers.
ACRONYMS = frozenset({"MRR", "MRED"})
#: Words of test names shortened in the column headers, which break between words only: the
#: narrow columns then fit a 1280-pixel window.
SHORT_WORDS = {"POPULARITY": "pop."}
#: Reproduction state -> (CSS class, text with a symbol, so the badge reads without colour).
BADGES = {
    "reproduced": ("badge-reproduced", "\u2713 reproduced"),
    "not reproduced": ("badge-failed", "\u2717 not reproduced"),
    "pending": ("badge-pending", "\u25cb pending"),
    "hidden": ("badge-other", "\u2013 hidden"),
}
#: Rendered table rows and chart marks kept (a few boards of a few hundred rows each).
RENDERED_KEPT = 4096


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
    team_href: str = ""
    tier_band: str = ""
    ranks: str = ""
    left_out: str = ""
    values: str = ""
    costs: tuple[str, ...] = ()
    costs_note: str = ""
    status: str = ""
    carried_from: str = ""
    harness: str = ""


@dataclass(frozen=True)
class FactSheetView:
    """A row's fact sheet as the page shows it: the team, the description's paragraphs (its
    line breaks), the link to the code and the commit; all escaped by the template."""

    team: str
    paragraphs: tuple[str, ...]
    code_url: str
    commit: str


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
    hidden = any(row.leaderboard_score is None for row in board.rows)
    # on a revealed board only (the store leaves them None before the reveal); claims too
    fact_sheets = tuple(_fact_sheet_view(row) for row in board.rows if row.fact_sheet)
    # the teams' claims (scores the organizers did not compute) are shown apart, unranked
    claims = () if hidden else tuple(r for r in board.rows if not r.computed)
    board = replace(board, rows=tuple(r for r in board.rows if r not in claims))
    rows = _with_standings(board, tuple(_row_view(row, tests) for row in board.rows))
    claim_rows = tuple(_row_view(row, tests) for row in claims)
    scores_hidden = hidden and not board.public
    show_costs = any(r.costs for r in rows)
    drawn = chart(chart_rows(board), "Private leaderboard" if board.revealed else "Leaderboard")
    settings = _RowSettings(revealed=board.revealed, scores_hidden=scores_hidden,
                            show_costs=show_costs,
                            colspan=7 + len(tests) + board.revealed + show_costs)
    template = _environment().get_template("board.html")
    return template.render(
        board=board,
        tests=tests,
        test_labels={name: _test_label(name) for name in tests},
        rows=rows,
        table_rows=_table_rows(rows, settings),
        claim_rows=_table_rows(claim_rows, settings) if claim_rows else None,
        guarantee=guarantee(board) if claim_rows else "",
        scores_hidden=scores_hidden,
        visibility=visibility(board.public, board.revealed, board.published),
        chart=drawn,
        chart_marks=_chart_marks(drawn),
        generated_iso=iso(board.generated_at),
        generated_text=minutes(board.generated_at),
        gated_score=fixed(GATED_SCORE),
        standings=board.standings if board.standings and board.standings.compared else None,
        standings_text=standings_text(board),
        standings_status=standings_status(board.standings),
        show_costs=show_costs,
        fact_sheets=fact_sheets,
    )


def _fact_sheet_view(row: BoardRow) -> FactSheetView:
    sheet = row.fact_sheet
    assert sheet is not None  # the caller picks the rows with one
    return FactSheetView(team=row.team, code_url=sheet.code_url, commit=sheet.commit,
                         paragraphs=tuple(p for p in sheet.description.split("\n") if p))


@dataclass(frozen=True)
class _RowSettings:
    """What a table row's HTML depends on besides its cells."""

    revealed: bool
    scores_hidden: bool
    show_costs: bool
    colspan: int


def _table_rows(rows: Sequence[RowView], settings: _RowSettings) -> Markup:
    """The table's rows as HTML, each rendered once per content (``_row_html``)."""
    return Markup("\n".join(_row_html(row, settings) for row in rows))


@functools.lru_cache(maxsize=RENDERED_KEPT)
def _row_html(row: RowView, settings: _RowSettings) -> str:
    """One table row (with its tier band) as HTML, escaped by the template."""
    return _environment().get_template("_row.html").render(
        row=row, revealed=settings.revealed, scores_hidden=settings.scores_hidden,
        show_costs=settings.show_costs, colspan=settings.colspan, gated_score=fixed(GATED_SCORE))


def _chart_marks(drawn: Chart | None) -> Markup:
    """The chart's marks as SVG, each rendered once per geometry (``_mark_svg``)."""
    if drawn is None:
        return Markup("")
    return Markup("\n".join(_mark_svg(mark, drawn.width, drawn.row_height, drawn.plot_left)
                             for mark in drawn.marks))


@functools.lru_cache(maxsize=RENDERED_KEPT)
def _mark_svg(mark: Mark, width: int, row_height: int, plot_left: int) -> str:
    """One chart mark as SVG, escaped by the template."""
    return _environment().get_template("_chart_mark.html").render(
        mark=mark, width=width, row_height=row_height, plot_left=plot_left)


@functools.lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    """The templates shipped in the package, escaped everywhere, failing on an unknown name."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("evaluation.server.page", "templates"),
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
        carried_from=row.carried_from or "",
        harness=_harness(row) if not hidden else "",
    )


def _harness(row: BoardRow) -> str:
    """Which harness version scored the row, and the previous version's score after a
    rescore (empty when not known)."""
    if row.harness_version is None:
        return ""
    text = f"harness {row.harness_version}"
    if row.previous_score is not None:
        text += (f" (was {fixed(row.previous_score)} under "
                 f"{row.previous_harness_version or 'an unknown version'})")
    return text


def _with_standings(board: Board, rows: tuple[RowView, ...]) -> tuple[RowView, ...]:
    """The rows with their statistics' cells: the tier bands (a heading where a tier starts),
    rank intervals, why a row is left out, whose values, the costs, and the team page link."""
    compared = board.standings is not None and board.standings.compared > 0
    out, tier = [], 0
    for view, row in zip(rows, board.rows):
        standing = row.standing
        changes: dict = {"team_href": team_href(board.phase, row.team)}
        if standing is not None and standing.being_computed:
            changes["status"] = BEING_COMPUTED
        if standing is not None and standing.costs is not None:
            changes["costs"] = cost_lines(standing.costs, labels=False)
            changes["costs_note"] = "trusted" if standing.costs.trusted else "self-reported"
        if compared and standing is not None:
            if standing.tier is not None and standing.tier != tier:
                tier = standing.tier
                changes["tier_band"] = tier_heading(tier)
            if standing.rank_interval is not None:
                best, worst = standing.rank_interval
                changes["ranks"] = str(best) if best == worst else f"{best}\u2013{worst}"
            changes["left_out"] = "" if row.is_baseline else standing.left_out or ""
            changes["values"] = standing.values if standing.left_out is None else ""
        out.append(replace(view, **changes))
    return tuple(out)


def standings_status(info: BoardStandings | None) -> str:
    """The line above the board (and on a team's page) while the statistics are not final
    (empty when they are)."""
    if info is None:
        return ""
    if info.unavailable:
        return info.unavailable[:1].upper() + info.unavailable[1:] + "."
    if not info.updating:
        return ""
    done = "" if info.progress is None else \
        f" ({info.progress[0]} of {info.progress[1]} teams done)"
    if info.as_of is None or not info.compared:
        return f"The statistics are being computed{done}; they are shown here once ready."
    return (f"The statistics are being updated{done}: those shown are as of "
            f"{minutes(info.as_of)} UTC, on the rows that have not changed since.")


def tier_heading(tier: int) -> str:
    """The band above the first row of a tier."""
    if tier == 1:
        return "Tier 1: cannot be told apart from the leader"
    return f"Tier {tier}: told apart from the tier above; cannot be told apart from its first team"


def standings_text(board: Board) -> str:
    """The sentence that says how to read the tiers and rank intervals (empty without)."""
    info = board.standings
    if info is None or not info.compared:
        return ""
    ties = (f" Differences below {info.min_difference:g} count as ties however significant."
            if info.min_difference else "")
    return (f"Tiers group the teams that cannot be told apart: a team opens a new tier when "
            f"the first team of the tier above beats it. The range under each rank is the "
            f"places the team may really hold among the {info.compared} teams compared. Both "
            f"come from a paired bootstrap over the test users ({info.n_boot} replicates), "
            f"with at most a {1 - info.level:.0%} chance of any wrong call on the whole "
            f"board.{ties}{_sentence(' Compared: ', info.scope)}"
            f"{_sentence(' Test users: ', info.compared_users)}")


def _sentence(label: str, text: str) -> str:
    """``label`` and ``text`` ending with a full stop; nothing for an empty ``text``."""
    if not text:
        return ""
    return label + (text if text.endswith(".") else text + ".")


@functools.lru_cache(maxsize=RENDERED_KEPT)
def team_href(phase: str, team: str) -> str:
    """The link to a team's page (its name and phase in the query string, encoded)."""
    return "/team?" + urlencode({"phase": phase, "name": team})


def cost_lines(costs: RowCosts, labels: bool = True) -> tuple[str, ...]:
    """A row's costs, means over folds, as short lines: training, prediction, peak memory
    (a dash where unknown; without ``labels``, the values alone, for the board's column)."""
    values = ("\u2014" if costs.train_seconds is None else seconds(costs.train_seconds),
              "\u2014" if costs.predict_seconds is None else seconds(costs.predict_seconds),
              "\u2014" if costs.peak_rss_mib is None else f"{costs.peak_rss_mib:,.0f} MiB")
    if not labels:
        return values
    return tuple(f"{label} {value}" for label, value in zip(("train", "predict", "peak"),
                                                             values))


def seconds(value: float) -> str:
    """A duration: seconds below a minute, else minutes, else hours."""
    if value < 60:
        return f"{value:.1f} s"
    if value < 3600:
        return f"{value / 60:.1f} min"
    return f"{value / 3600:.1f} h"


def _test_label(name: str) -> str:
    """A test's column header: words in lower case but for acronyms ("MRED country"), long
    words shortened ("MRED track pop."; the header's title holds the whole name)."""
    return " ".join(w if w in ACRONYMS else SHORT_WORDS.get(w, w.lower())
                    for w in name.split("_"))
