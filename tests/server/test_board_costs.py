"""The board's costs: each compared team's probability of being on the cost–quality front
(from its group replicates and the costs the organizers measured, never self-reported ones),
on the rows, the CSV and the page; and ``tie_break = "cost"``, which orders the teams of one
tier by measured cost and says so on the page."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("sqlalchemy")

from evaluation.challenge import paired_resamples, team_replicates
from evaluation.server.page import board_csv, render_board
from evaluation.server.standings import with_standings
from evaluation.server.store import FoldCost, phase_board
from evaluation.standings import front_probability
from tests.server._helpers import (
    SIZES,
    Clock,
    FakeSource,
    open_store,
    sqlite_url,
    standings_competition,
    submit_teams,
    synthetic,
)


def costed(values, seconds: float, mib: float):
    """``values`` with the same measured costs on every fold."""
    return replace(values, costs=[FoldCost(seconds, 1.0, mib) for _ in values.folds])


def open_board_store(tmp_path, tie_break: str = "score"):
    competition = standings_competition()
    competition = replace(competition, board=replace(competition.board, tie_break=tie_break))
    return open_store(sqlite_url(tmp_path), competition, Clock())


def test_front_probability_from_group_replicates_and_measured_costs(tmp_path, rng):
    store = open_board_store(tmp_path)
    try:
        ids = submit_teams(store, [("Alpha", 1.3), ("Beta", 1.2), ("Gamma", 1.1),
                                   ("Delta", 1.0)])
        source = FakeSource({
            ids["Alpha"]: costed(synthetic(rng, 0.6), 90.0, 4000.0),
            ids["Beta"]: costed(synthetic(rng, 0.5), 5.0, 300.0),
            ids["Gamma"]: costed(synthetic(rng, 0.5), 50.0, 200.0),
            # measured by no one: the team reported its own costs
            ids["Delta"]: replace(costed(synthetic(rng, 0.4), 1.0, 10.0), costs_trusted=False)})
        board = with_standings(store, phase_board(store), source)
        compared = [r for r in board.rows if r.standing and r.standing.left_out is None]
        assert [r.team for r in compared] == ["Alpha", "Beta", "Gamma", "Delta"]
        refs = store.competition.phase("public").references
        reps = [team_replicates(source.by_id[ids[r.team]].folds, paired_resamples(3, 200, SIZES),
                                refs) for r in compared]
        costs = np.array([[91.0, 4000.0], [6.0, 300.0], [51.0, 200.0], [np.nan, np.nan]])
        expected = front_probability(np.array([t.group_replicates for t in reps]), costs)
        shown = [r.standing.front_probability for r in compared]
        assert shown[3] is None and np.isnan(expected[3])
        np.testing.assert_allclose(shown[:3], expected[:3])
        assert 0 < min(shown[:3]) and max(shown[:3]) == 1.0  # the cheapest is always on it
        lines = board_csv(board).splitlines()
        header = lines[0].split(",")
        beta = next(line for line in lines if ",Beta," in line).split(",")
        assert float(beta[header.index("front_probability")]) == shown[1]
        page = render_board(board)
        assert f"front {shown[1]:.0%}" in page and "cost\u2013quality front" in page
        assert "ordered by measured cost" not in page
    finally:
        store.engine.dispose()


def test_tie_break_by_cost_orders_each_tier_by_measured_cost(tmp_path, rng):
    store = open_board_store(tmp_path, tie_break="cost")
    try:
        # three teams of one skill (one tier, whatever their noise) and a far weaker one
        ids = submit_teams(store, [("Alpha", 1.3), ("Beta", 1.2), ("Gamma", 1.1),
                                   ("Weak", 0.5)])
        source = FakeSource({
            ids["Alpha"]: costed(synthetic(rng, 0.5), 80.0, 100.0),
            ids["Beta"]: replace(costed(synthetic(rng, 0.5), 1.0, 1.0), costs_trusted=False),
            ids["Gamma"]: costed(synthetic(rng, 0.5), 8.0, 100.0),
            ids["Weak"]: costed(synthetic(rng, -3.0), 0.5, 1.0)})
        official = phase_board(store)
        board = with_standings(store, official, source)
        assert board.standings is not None and board.standings.tie_break == "cost"
        tiers = {r.team: r.standing.tier for r in board.rows if r.standing}
        assert tiers["Alpha"] == tiers["Beta"] == tiers["Gamma"] < tiers["Weak"]
        teams = [r.team for r in board.rows if not r.is_baseline]
        # the cheapest measured team first; the one whose costs nobody measured last in its
        # tier; the weaker tier stays below
        assert teams == ["Gamma", "Alpha", "Beta", "Weak"]
        # the places keep their ranks: only which team holds them changed
        assert [r.rank for r in board.rows] == [r.rank for r in official.rows]
        assert "Teams in one tier are ordered by measured cost" in render_board(board)
    finally:
        store.engine.dispose()
