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

from evaluation.server._board import Board, BoardRow

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
    submission (UTC, ISO 8601), reproduction, flagged.
    """
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(["phase", "rank", "team", "baseline", "submission_id", "score",
                     "score_low", "score_high", "phase1_score", "private_score", "private_low",
                     "private_high", *(f"public:{t}" for t in board.tests), "submissions",
                     "last_submitted", "reproduction", "flagged"])
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
            "yes" if row.flagged else "no"]


def _number(value: float | int | None) -> str:
    """A number as CSV text (empty when None): full precision, never a team's text."""
    return "" if value is None else repr(value)


def _pair(pair: tuple[float, float] | None) -> tuple[str, str]:
    return ("", "") if pair is None else (_number(pair[0]), _number(pair[1]))
