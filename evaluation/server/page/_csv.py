"""The board as CSV: one line per row, safe to open in a spreadsheet.

A text cell that a spreadsheet would read as a formula (it starts with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return) is prefixed with ``'``: a team named ``=HYPERLINK(...)``
stays text. Numbers are written by the server (``repr`` of a float), never from a team's text,
so a negative score stays a number.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable

from evaluation.server.core import Board, BoardRow, BoardStandings, RowStanding

#: The first characters that make a spreadsheet read a cell as a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_text(text: str) -> str:
    """``text`` as a CSV cell no spreadsheet evaluates: prefixed with ``'`` when it starts
    with one of ``FORMULA_STARTS``."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def board_csv(board: Board) -> str:
    """The board as CSV text (header line first; empty cells where a score is hidden).

    The columns: phase, rank, team, baseline, submission id, the public score and its interval,
    the phase-1 score, the private score and its interval (filled after a reveal), one column
    per leaderboard test (``public:<test>``: the public folds' values), submissions, last
    submission (UTC, ISO 8601), reproduction, flagged, computed ("yes": scores the organizers
    computed from the uploaded predictions, the rows the board's guarantee covers; "no": the
    team's own claim, unverified, never ranked nor compared), the phase the submission was
    carried from (empty: uploaded to this phase), the fact sheet given at final selection
    (description, code URL, commit; filled once the phase is revealed); then the paired
    statistics (empty
    where the board has none, e.g. hidden scores): tier, the rank interval (best, worst), whose
    per-user values the row has (trusted, self-reported or missing: only trusted ones, the
    organizers', are ever compared) and why a row was left out ("not yet computed by the
    organizers", other test users, ...), Pareto membership, whether some group weights would
    rank it first and their share of all weights, the Borda rank; and the costs, means over
    folds (seconds to train and to predict, peak memory in MiB), marked trusted or
    self-reported; last, how current the row's statistics are
    ("current"; "as of <time>" while the board's are being updated; "being computed";
    "unavailable", the reason in ``left_out``); and the harness version that computed the
    row's scores, with, after an organizers' rescore, the previous version and its scores
    (until the organizers drop them).
    """
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(["phase", "rank", "team", "baseline", "submission_id", "score",
                     "score_low", "score_high", "phase1_score", "private_score", "private_low",
                     "private_high", *(f"public:{t}" for t in board.tests), "submissions",
                     "last_submitted", "reproduction", "flagged", "computed",
                     *CARRY_AND_FACT_COLUMNS, *STANDING_COLUMNS, *VERSION_COLUMNS])
    writer.writerows(_line(board, row) for row in board.rows)
    return out.getvalue()


def _line(board: Board, row: BoardRow) -> Iterable[str]:
    tests = row.tests or {}
    return [safe_text(board.phase), _number(row.rank), safe_text(row.team),
            "yes" if row.is_baseline else "no", _number(row.submission_id),
            _number(row.leaderboard_score), *_pair(row.interval), _number(row.phase1_score),
            _number(row.private_score), *_pair(row.private_interval),
            *(_number(tests.get(t)) for t in board.tests), str(row.submissions),
            row.last_submitted.isoformat(), safe_text(row.reproduction),
            "yes" if row.flagged else "no", "yes" if row.computed else "no",
            *_carry_and_facts(row), *_standing(row.standing),
            _freshness(board.standings, row.standing),
            safe_text(row.harness_version or ""), safe_text(row.previous_harness_version or ""),
            _number(row.previous_score), _number(row.previous_phase1_score)]


#: The phase a row's submission was carried from, and its fact sheet (after the reveal).
CARRY_AND_FACT_COLUMNS = ("carried_from", "fact_description", "fact_code_url", "fact_commit")


def _carry_and_facts(row: BoardRow) -> list[str]:
    """The carry's and the fact sheet's cells (a team's text: never read as a formula)."""
    sheet = row.fact_sheet
    return [safe_text(row.carried_from or ""),
            *((safe_text(sheet.description), safe_text(sheet.code_url), sheet.commit)
              if sheet is not None else ("", "", ""))]


#: The columns of the paired statistics and the costs, and how current the statistics are.
STANDING_COLUMNS = ("tier", "rank_best", "rank_worst", "user_values", "left_out", "pareto",
                    "first_place", "first_place_share", "borda_rank", "train_seconds",
                    "predict_seconds", "peak_rss_mib", "costs", "statistics")


#: The harness version of a row's scores, and the previous version's (after a rescore).
VERSION_COLUMNS = ("harness_version", "previous_harness_version", "previous_score",
                   "previous_phase1_score")


def _standing(standing: RowStanding | None) -> list[str]:
    """The statistics' cells of a row (empty when the board has none), but the last."""
    if standing is None:
        return [""] * (len(STANDING_COLUMNS) - 1)
    costs = standing.costs
    return [_number(standing.tier), *_pair(standing.rank_interval), standing.values,
            safe_text(standing.left_out or ""), _yes_no(standing.pareto),
            _yes_no(standing.first_place), _number(standing.first_place_share),
            _number(standing.borda_rank),
            *((_number(costs.train_seconds), _number(costs.predict_seconds),
               _number(costs.peak_rss_mib), "trusted" if costs.trusted else "self-reported")
              if costs is not None else ("", "", "", ""))]


def _freshness(info: BoardStandings | None, standing: RowStanding | None) -> str:
    """How current a row's statistics are: "current", "as of <time>" (from an earlier board,
    being updated), "being computed", "unavailable" (empty without statistics)."""
    if info is None or standing is None:
        return ""
    if standing.being_computed:
        return "being computed"
    if info.unavailable and standing.left_out == info.unavailable:
        return "unavailable"
    if (info.updating or info.unavailable) and info.as_of is not None:
        return "as of " + info.as_of.isoformat()
    return "current"


def _yes_no(value: bool | None) -> str:
    return "" if value is None else ("yes" if value else "no")


def _number(value: float | int | None) -> str:
    """A number as CSV text (empty when None): full precision, never a team's text."""
    return "" if value is None else repr(value)


def _pair(pair: tuple[float, float] | tuple[int, int] | None) -> tuple[str, str]:
    return ("", "") if pair is None else (_number(pair[0]), _number(pair[1]))
