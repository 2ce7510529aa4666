"""The board page and the board JSON, byte for byte, of boards built from a seed.

The page's rendering is cached and precomputed in parts (rows and chart marks rendered once per
content); these tests pin its output to the bytes the plain template rendering gave for the
same boards, before any of that: a change of what the page shows changes these hashes on
purpose, a change of how it is made must not.

To regenerate after a deliberate change of the page or the JSON, run
``python -m tests.server.test_page_golden`` from the repository root and paste the printed
hashes into ``GOLDEN`` (after checking the page by eye and in the other page tests).
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

pytest.importorskip("jinja2", reason="the board page needs the server extra (jinja2)")
pytest.importorskip("fastapi")

from fastapi.responses import JSONResponse

from evaluation.challenge import LEADERBOARD_TESTS
from evaluation.server.api import board_json
from evaluation.server.core import (
    Board,
    BoardRow,
    BoardStandings,
    FactSheet,
    RowCosts,
    RowStanding,
)
from evaluation.server.page import render_board

START = datetime(2026, 5, 1, tzinfo=timezone.utc)
REPRODUCTION = ("pending", "reproduced", "not reproduced", "an unknown state")


def seeded_board(teams: int = 200, seed: int = 7, revealed: bool = False,
                 updating: bool = True) -> Board:
    """A board of ``teams`` rows with every kind of cell: baselines, a gated score, hostile and
    wide names, flagged rows, costs (trusted or not), left-out and being-computed rows."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(teams):
        baseline = i % 37 == 5
        score = float(1.5 - i * 0.005 + rng.normal(0, 0.001))
        tests = {name: float(rng.uniform(-0.1, 1)) for name in LEADERBOARD_TESTS}
        costs = None if i % 5 == 0 else RowCosts(
            1.0 + i, 70.5 * i, 1024.0 + i, (1.0,), (2.0,), (3.0,), i % 2 == 0)
        standing = RowStanding(
            values="trusted" if i % 3 else "self-reported",
            left_out="no values" if i % 50 == 7 else None, tier=1 + i // 20,
            rank_interval=(max(1, i - 3), i + 4), pareto=i % 4 == 0, first_place=i == 0,
            first_place_share=0.1, borda_rank=i + 1, costs=costs, being_computed=i % 41 == 3)
        rows.append(BoardRow(
            team=f"Team <{i}> \u00e9\u6f22" + ("\u202e<b>x</b>" if i % 17 == 0 else ""),
            is_baseline=baseline, submission_id=i + 1, rank=None if baseline else i + 1,
            leaderboard_score=-0.1 if i % 60 == 59 else score,
            interval=(score - 0.01, score + 0.01), phase1_score=score * 0.9, tests=tests,
            submissions=i % 9 + 1, best_submitted=START + timedelta(minutes=i),
            last_submitted=START + timedelta(minutes=2 * i),
            reproduction=REPRODUCTION[i % 4], flagged=i % 13 == 0,
            private_score=score - 0.01 if revealed else None,
            private_interval=(score - 0.02, score) if revealed else None,
            standing=standing))
    info = BoardStandings(score="leaderboard", level=0.95, min_difference=0.001, n_boot=1000,
                          seed=1, method="holm", compared=190, groups=("a", "b", "c"),
                          updating=updating, as_of=START, progress=(3, 10) if updating else None)
    return Board(competition="EvalRS <test>", phase="phase1", phases=("phase1", "phase 2&"),
                 public=True, rows=tuple(rows), generated_at=START + timedelta(days=1),
                 tests=tuple(LEADERBOARD_TESTS), revealed=revealed, standings=info)


def changed(board: Board) -> Board:
    """The board after an upload: one row's score and tests changed, a row's standing
    updated, a new team's row appended."""
    rows = list(board.rows)
    rows[10] = replace(rows[10], leaderboard_score=1.49, submissions=rows[10].submissions + 1,
                       tests={**rows[10].tests, LEADERBOARD_TESTS[0]: 0.5})
    rows[20] = replace(rows[20], standing=replace(rows[20].standing, being_computed=True))
    rows.append(replace(rows[-1], team="Newcomer", rank=len(rows) + 1, submission_id=9999))
    return replace(board, rows=tuple(rows))


def carried_with_facts(board: Board) -> Board:
    """A revealed board some of whose rows were carried from an earlier phase, with the fact
    sheets of some (hostile text and links included)."""
    rows = list(board.rows)
    for i in range(0, len(rows), 7):
        rows[i] = replace(rows[i], carried_from="warm<up>&" if i % 2 else "phase0")
    for i in range(1, len(rows), 11):
        rows[i] = replace(rows[i], fact_sheet=FactSheet(
            description=f"Method {i}: a < b & \"c\"\nsecond <line>\u00e9",
            code_url=f"https://example.org/t{i}?a=1&b=\"2\"", commit=f"{i:07x}"))
    return replace(board, rows=tuple(rows))


def boards() -> dict[str, Board]:
    """The boards pinned, by name."""
    plain = seeded_board()
    return {"seeded": plain, "revealed": seeded_board(revealed=True),
            "final": seeded_board(updating=False), "small": seeded_board(teams=3, seed=1),
            "changed": changed(plain),
            "carried": carried_with_facts(seeded_board(teams=40, revealed=True))}


def page_sha(board: Board) -> str:
    return hashlib.sha256(render_board(board).encode()).hexdigest()


def json_sha(board: Board) -> str:
    return hashlib.sha256(bytes(JSONResponse(board_json(board)).body)).hexdigest()


#: name -> (SHA-256 of the page, SHA-256 of the JSON), as rendered before the page was cached.
GOLDEN = {
    'seeded': ('d00705268b5defee45701fef9908658097e1183f045cd1822602dd6ac7aa5790',
        '27f38f062d9fd503db3954627c55a969ed2988e0ebfb5dd126aa9db1b81abc29'),
    'revealed': ('14878da248b1def0fd6da41d7d0cb525037cfe95eed09f9a54bf0aeda5591790',
        '6c39516c5901b1dd7d3102ab7f4f98520caf1f57b9e6c482d576b2213ad375e2'),
    'final': ('9d973698b872e1183b69b332c98a41c3a93451dd862c6250f12d2f3bb0836c7f',
        'dd9483e383c5de3d891f57a10662253c16265b3bf98329458b538317c105af57'),
    'small': ('9ab99c7befb7e7693f4087b96121d4c16973a9a8f7a7a739e4accdfa5192ac8e',
        'fe673798dcefb85637a084937b3d2ac4aa657ee6c4bf34813e9eee9cadaa9d09'),
    'changed': ('78ecf3fc5390286e80a90b8e2a3fe9a897bb69d2d687e9fbe5d694571fc60219',
        'ae1fd4ec8e24a286e99a7c05ac1232ebe15970eb735aa8573d8ae74d98afea86'),
    'carried': ('68a94fee6edb1c0fad5f039d78bf29e3b567522443eddbfe65deccc643896307',
        '24374879f6e60a137925f7982b060a5cf1fb21e5a2468c1ac81e940b1a5edae1'),
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_the_page_and_the_json_are_those_pinned(name):
    board = boards()[name]
    assert (page_sha(board), json_sha(board)) == GOLDEN[name]


def test_rendering_again_and_after_a_change_gives_the_pinned_bytes():
    made = boards()
    for name in ("seeded", "changed", "seeded", "revealed", "changed", "final"):
        assert page_sha(made[name]) == GOLDEN[name][0], name


if __name__ == "__main__":  # the hashes to paste into GOLDEN
    for key, value in boards().items():
        print(f"    {key!r}: ({page_sha(value)!r},\n        {json_sha(value)!r}),")
