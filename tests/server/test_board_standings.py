"""The board's paired statistics on the server: they follow the board's rows and order, leave
out (with the reason) the rows they cannot compare, compute each submission's replicates once
(an upload costs only the new team's), and nothing for a board whose scores are hidden."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

import numpy as np
import pytest

pytest.importorskip("sqlalchemy")

from evaluation.challenge import paired_resamples, team_replicates
from evaluation.server.db import add_team
from evaluation.server.page import STANDING_COLUMNS, board_csv
from evaluation.server.standings import (
    BASELINE,
    NO_VALUES,
    OTHER_USERS,
    cache_of,
    team_standing,
    with_standings,
)
from evaluation.server.store import phase_board, submit
from evaluation.standings import read_board
from tests.server._helpers import (
    SIZES,
    Clock,
    FakeSource,
    computed,
    encode,
    open_store,
    sqlite_url,
    standings_competition,
    submit_teams,
    synthetic,
    variant,
)


@pytest.fixture
def store(tmp_path):
    store = open_store(sqlite_url(tmp_path), standings_competition(), Clock())
    yield store
    store.engine.dispose()


def test_the_statistics_follow_the_boards_rows_and_leave_out_what_they_cannot_compare(
        store, rng):
    ids = submit_teams(store, [("Alpha", 1.3), ("Beta", 1.2), ("Gamma", 1.1), ("Delta", 1.05),
                               ("Old client", 1.0), ("Elsewhere", 0.9), ("Own values", 0.8)])
    source = FakeSource({ids["Alpha"]: synthetic(rng, 0.6, trusted=True),
                         ids["Beta"]: replace(synthetic(rng, 0.4), costs_trusted=False),
                         ids["Own values"]: synthetic(rng, 0.9, trusted=False),
                         ids["Gamma"]: synthetic(rng, 0.4),
                         ids["Delta"]: synthetic(rng, 0.1),
                         ids["Elsewhere"]: synthetic(rng, 0.5, hashes=("x", "y"))})
    board = with_standings(store, phase_board(store), source)
    by_team = {row.team: row for row in board.rows}
    assert [r.team for r in board.rows] == [r.team for r in phase_board(store).rows]  # same order
    assert board.standings is not None and board.standings.compared == 4
    assert board.standings.groups == ("accuracy", "fairness", "behavioural")
    assert by_team["Old client"].standing.left_out == NO_VALUES
    assert by_team["Old client"].standing.values == "missing"
    assert by_team["Elsewhere"].standing.left_out == OTHER_USERS
    # values the organizers did not compute never give statistics, however good
    assert by_team["Own values"].standing.left_out == NO_VALUES
    assert by_team["Own values"].standing.values == "self-reported"
    assert by_team["Own values"].standing.tier is None
    assert all(r.standing.left_out == BASELINE for r in board.rows if r.is_baseline)
    assert by_team["Alpha"].standing.values == "trusted"
    assert by_team["Beta"].standing.values == "trusted"
    compared = [r for r in board.rows if r.standing.left_out is None]
    assert [r.team for r in compared] == ["Alpha", "Beta", "Gamma", "Delta"]
    # the same reading as the engine on the rows' own scores, in the board's order
    resamples = paired_resamples(3, 200, SIZES)
    refs = store.competition.phase("public").references
    reps = [team_replicates(source.by_id[ids[r.team]].folds, resamples, refs) for r in compared]
    reading = read_board(np.array([r.leaderboard_score for r in compared]),
                         np.array([t.replicates for t in reps]),
                         np.array([t.group_scores for t in reps]),
                         np.array([list(t.tests.values()) for t in reps]))
    assert [r.standing.tier for r in compared] == reading.tier.tolist()
    assert [list(r.standing.rank_interval) for r in compared] == reading.rank_interval.tolist()
    assert [r.standing.borda_rank for r in compared] == reading.borda_rank.tolist()
    assert [r.standing.pareto for r in compared] == reading.pareto.tolist()
    costs = by_team["Alpha"].standing.costs
    assert costs.train_seconds == 10.5 and costs.train_seconds_per_fold == (10.0, 11.0)
    assert costs.trusted and not by_team["Beta"].standing.costs.trusted
    # the CSV carries them
    lines = board_csv(board).splitlines()
    header = lines[0].split(",")
    start = header.index(STANDING_COLUMNS[0])
    assert header[start:start + len(STANDING_COLUMNS)] == list(STANDING_COLUMNS)
    alpha = next(line for line in lines if ",Alpha," in line).split(",")
    assert alpha[header.index("tier")] == str(by_team["Alpha"].standing.tier)
    assert alpha[header.index("user_values")] == "trusted"
    assert alpha[header.index("costs")] == "trusted"
    old = next(line for line in lines if ",Old client," in line)
    assert "not yet computed by the organizers" in old


def test_an_upload_computes_only_the_new_teams_replicates(store, rng):
    ids = submit_teams(store, [("Alpha", 1.3), ("Beta", 1.2)])
    source = FakeSource({ids["Alpha"]: synthetic(rng, 0.6),
                         ids["Beta"]: synthetic(rng, 0.4, trusted=False)})
    first = with_standings(store, phase_board(store), source)
    assert sorted(sum(source.asked, [])) == sorted(ids.values())
    asked = list(source.asked)
    again = with_standings(store, phase_board(store), source)
    assert source.asked == asked  # nothing read again
    assert again.standings == first.standings
    team, _ = add_team(store, "Gamma", "g@example.org")
    new = submit(store, team.id, encode(variant("run-gamma", 1.25))).submission_id
    computed(store, new)
    source.by_id[new] = synthetic(rng, 0.5)
    board = with_standings(store, phase_board(store), source)
    assert source.asked[-1] == [new]
    assert board.standings.compared == 2  # Beta's own values are not compared
    assert len(cache_of(store).resamples) == 1  # drawn once
    # a reproduction's trusted values replace the upload's: that team is computed again
    source.by_id[ids["Beta"]] = replace(source.by_id[ids["Beta"]], trusted=True)
    board = with_standings(store, phase_board(store), source)
    assert source.asked[-1] == [ids["Beta"]]
    assert {r.team: r.standing.values for r in board.rows if not r.is_baseline}["Beta"] == \
        "trusted"
    assert board.standings.compared == 3


def test_a_hidden_board_computes_and_shows_nothing(store, rng):
    store.clock.now = datetime(2028, 1, 5, tzinfo=timezone.utc)  # the hidden final phase
    ids = submit_teams(store, [("Alpha", 1.3), ("Beta", 1.2)])
    source = FakeSource({i: synthetic(rng, 0.5) for i in ids.values()})
    hidden = phase_board(store, "final")
    assert with_standings(store, hidden, source) == hidden
    assert source.listed == 0 and source.asked == []
    page = team_standing(store, hidden, "Alpha", source)
    assert page is not None and page.standings is None and page.opponents == ()
    assert page.row.leaderboard_score is None
    assert source.listed == 0
    # an organizer's view of the same board has scores: the statistics are computed
    shown = with_standings(store, phase_board(store, "final", admin=True), source)
    assert shown.standings is not None and shown.standings.compared == 2


def test_a_teams_page_has_its_win_probabilities_and_place_on_the_front(store, rng):
    ids = submit_teams(store, [("Alpha", 1.3), ("Beta", 1.2), ("Gamma", 1.1)])
    source = FakeSource({ids["Alpha"]: synthetic(rng, 0.7), ids["Beta"]: synthetic(rng, 0.4),
                         ids["Gamma"]: synthetic(rng, 0.1)})
    page = team_standing(store, phase_board(store), "Beta", source)
    assert [o.team for o in page.opponents] == ["Alpha", "Gamma"]
    board = with_standings(store, phase_board(store), source)
    reading = cache_of(store).readings[("public", False)][1]
    i = reading.teams.index("Beta")
    for o in page.opponents:
        j = reading.teams.index(o.team)
        assert o.win_probability == reading.reading.win_probability[i, j]
    assert [m.team for m in page.teams] == ["Alpha", "Beta", "Gamma"]
    assert page.groups == board.standings.groups
    assert {m.team: m.pareto for m in page.teams} == {
        r.team: r.standing.pareto for r in board.rows if not r.is_baseline}
    assert team_standing(store, phase_board(store), "Nobody", source) is None


def test_a_revealed_board_compares_the_private_scores_with_the_private_values(store, rng):
    ids = submit_teams(store, [("Alpha", 1.3), ("Beta", 1.2), ("Gamma", 1.1)])
    source = FakeSource({i: synthetic(rng, 0.5) for i in ids.values()})
    calls = []
    values = source.values
    source.values = lambda phase, batch, private: calls.append(private) or values(
        phase, batch, private)
    public = phase_board(store)
    # the private ranking (as a reveal orders it): Gamma, then Alpha; Beta has no private score
    private = {"Gamma": 0.9, "Alpha": 0.4}
    rows = sorted(public.rows, key=lambda r: (r.team not in private, -private.get(r.team, 0)))
    revealed = replace(public, revealed=True, rows=tuple(
        replace(r, private_score=private.get(r.team)) for r in rows))
    board = with_standings(store, revealed, source)
    assert calls == [True]
    assert board.standings.score == "private_score" and board.standings.compared == 2
    by_team = {r.team: r.standing for r in board.rows}
    assert by_team["Beta"].left_out == "no private score"
    assert by_team["Gamma"].rank_interval[0] == 1  # the private order, first
