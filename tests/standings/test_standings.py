"""The standings of a board: pairwise intervals, tiers, rank intervals and win probabilities
against slow references; the Pareto front, first-place weights and Borda by hand; and the
tiers' calibration on simulated boards whose true differences are known."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from evaluation.errors import ConfigError
from evaluation.standings import (
    borda,
    first_place_weights,
    pareto_front,
    rank_intervals,
    read_board,
    region_share,
    simultaneous_differences,
    tiers,
    win_probabilities,
)
from tests._stats_reference import slow_first_place_weights

# ------------------------------------------------------------------------- slow references


def slow_win_probabilities(reps):
    n, b = reps.shape
    out = np.zeros((n, n))
    for i, j in itertools.product(range(n), range(n)):
        out[i, j] = sum(1.0 if reps[i, r] > reps[j, r] else 0.5 if reps[i, r] == reps[j, r]
                        else 0.0 for r in range(b)) / b
    return out


def slow_half_widths(reps, point, level):
    n, b = reps.shape
    se = np.zeros((n, n))
    for i, j in itertools.product(range(n), range(n)):
        se[i, j] = np.std(reps[i] - reps[j], ddof=1)
        se[i, j] = 0.0 if se[i, j] < 1e-12 else se[i, j]
    largest = []
    for r in range(b):
        t = [abs((reps[i, r] - reps[j, r]) - (point[i] - point[j])) / se[i, j]
             for i, j in itertools.product(range(n), range(n)) if se[i, j] > 0]
        largest.append(max(t) if t else 0.0)
    critical = np.sort(largest)[int(np.ceil(level * (b - 1)))]
    return critical * se


def slow_rank_intervals(beats):
    n = len(beats)
    return np.array([[1 + sum(beats[j][i] for j in range(n)),
                      n - sum(beats[i][j] for j in range(n))] for i in range(n)])


# ------------------------------------------------------------------------- pairwise

def test_win_probabilities_equal_the_slow_count_with_ties_as_half(rng):
    reps = rng.integers(0, 4, size=(5, 130)).astype(float)  # many ties
    got = win_probabilities(reps)
    np.testing.assert_allclose(got, slow_win_probabilities(reps), rtol=0, atol=1e-12)
    np.testing.assert_allclose(got + got.T, 1.0)
    np.testing.assert_allclose(np.diag(got), 0.5)


def test_simultaneous_intervals_equal_the_slow_max_t(rng):
    reps = rng.normal(size=(4, 150)) * np.array([[0.01], [0.02], [0.01], [0.03]])
    reps[3] = reps[1] + 0.5  # a pair whose difference never varies
    point = reps.mean(axis=1) + rng.normal(size=4) * 0.001
    pairs = simultaneous_differences(reps, point, 0.9)
    np.testing.assert_allclose(pairs.difference, point[:, None] - point[None, :])
    np.testing.assert_allclose(pairs.half_width, slow_half_widths(reps, point, 0.9),
                               rtol=1e-9, atol=1e-12)
    assert pairs.half_width[1, 3] == pytest.approx(0.0, abs=1e-12)
    assert pairs.critical > 1.645  # wider than one interval at 90 %: it covers six at once


# ------------------------------------------------------------------------- tiers and ranks

def test_rank_intervals_and_tiers_by_hand():
    # a beats c and d; b beats d; c beats d
    beats = np.zeros((4, 4), dtype=bool)
    beats[0, 2] = beats[0, 3] = beats[1, 3] = beats[2, 3] = True
    np.testing.assert_array_equal(rank_intervals(beats), [[1, 2], [1, 3], [2, 3], [4, 4]])
    np.testing.assert_array_equal(rank_intervals(beats), slow_rank_intervals(beats))
    # down the board a, b, c, d: b stays with a; c is beaten by a (new tier); d by c
    np.testing.assert_array_equal(tiers(np.arange(4), beats), [1, 1, 2, 3])


def _resample_counts(rng, n_users, n_boot):
    """How often each user is drawn in each of ``n_boot`` resamples, drawn as the harness draws
    them (``n_users`` draws with replacement, counted): a multinomial over thousands of users
    is 20x slower to sample."""
    drawn = rng.integers(0, n_users, size=(n_boot, n_users)) + n_users * np.arange(n_boot)[:, None]
    return np.bincount(drawn.ravel(), minlength=n_boot * n_users).reshape(n_boot, n_users)


def test_a_minimum_practical_difference_makes_a_real_but_small_difference_a_tie(rng):
    # b is a with 4 % of its hits lost: about 1.2 points lower, on the very same users
    a = rng.random(20_000) < 0.30
    users = np.vstack([a, a & (rng.random(20_000) > 0.04)])
    reps = users.astype(float) @ _resample_counts(rng, 20_000, 400).T / 20_000
    point = users.mean(axis=1)
    strict = read_board(point, reps)
    assert strict.tier.tolist() == [1, 2]  # significant at this scale
    assert 0.005 < point[0] - point[1] < 0.02
    loose = read_board(point, reps, min_difference=0.02)
    assert loose.tier.tolist() == [1, 1]  # but smaller than what matters
    assert loose.rank_interval.tolist() == [[1, 1], [2, 2]]  # the order itself is clear


def test_equal_scores_win_half_the_time_and_share_a_tier():
    reps = np.vstack([np.full(10, 0.5), np.full(10, 0.5), np.full(10, 0.2)])
    reading = read_board(reps[:, 0], reps)
    assert reading.win_probability[0].tolist() == [0.5, 0.5, 1.0]
    assert reading.tier.tolist() == [1, 1, 2]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"replicates": np.zeros((2, 1))}, r"n_boot >= 2"),
    ({"point": np.zeros(3)}, r"\(n_teams=3, n_boot >= 2\) and point \(3,\)"),
    ({"point": np.array([0.0, np.nan])}, "finite"),
    ({"groups": np.zeros((3, 2))}, r"groups must have one row per team \(2\)"),
    ({"level": 1.0}, "'level' parameter of read_board"),
    ({"min_difference": -0.1}, "'min_difference' parameter of read_board"),
])
def test_bad_input_is_refused_with_the_argument_named(kwargs, message):
    args = {"replicates": np.zeros((2, 5)), "point": np.zeros(2)}
    args.update(kwargs)
    with pytest.raises(ConfigError, match=message):
        read_board(args.pop("point"), args.pop("replicates"), **args)


# ------------------------------------------------------------------------- calibration

def _board(rng, hit_rates, n_users, n_boot):
    """Per-user hits of each team, the paired replicates and the point scores."""
    hits = (rng.random(size=(len(hit_rates), n_users)) < np.asarray(hit_rates)[:, None])
    return hits.astype(float) @ _resample_counts(rng, n_users, n_boot).T / n_users, \
        hits.mean(axis=1)


def _read_in_score_order(teams, reps, point, **kwargs):
    """The teams in board order (best score first) and the board read in that order."""
    order = np.argsort(-point, kind="stable")
    return [teams[i] for i in order], read_board(point[order], reps[order], **kwargs)


def test_identical_teams_share_a_tier_and_the_board_wide_error_is_controlled():
    rng = np.random.default_rng(7)
    boards, false_boards, split_identical, power = 200, 0, 0, 0
    rates = [0.30, 0.30, 0.30, 0.20, 0.20]  # three identical leaders, two clearly worse
    for _ in range(boards):
        reps, point = _board(rng, rates, 1000, 200)
        teams, s = _read_in_score_order(list("abcde"), reps, point, level=0.95)
        by_team = dict(zip(teams, s.tier))
        beats = {(teams[i], teams[j]) for i, j in zip(*np.nonzero(s.beats))}
        same = {"a", "b", "c"}, {"d", "e"}
        wrong = any((x in g and y in g) or (x in same[1] and y in same[0])
                    for x, y in beats for g in same)
        false_boards += wrong
        split_identical += len({by_team[t] for t in same[0]}) > 1
        power += all((x, y) in beats for x in same[0] for y in same[1])
    # the promised level: at most 5 % of boards with any false claim (binomial slack at 200)
    assert false_boards <= 18, false_boards
    assert split_identical <= 18, split_identical
    # a 10-point gap on 1,000 users: every pair across the gap is told apart on most boards
    assert power >= 0.8 * boards, power


def test_a_miscalibrated_level_is_caught_by_the_same_simulation():
    # the same check must be able to fail: a 50 % level makes false claims common
    rng = np.random.default_rng(7)
    false_boards = 0
    for _ in range(100):
        reps, point = _board(rng, [0.3] * 5, 600, 200)
        false_boards += _read_in_score_order(list("abcde"), reps, point,
                                             level=0.5)[1].beats.any()
    assert false_boards > 18


# ------------------------------------------------------------------------- groups

def test_pareto_front_against_the_definition(rng):
    g = rng.integers(0, 3, size=(12, 3)).astype(float)
    want = [not any((g[j] >= g[i]).all() and (g[j] > g[i]).any() for j in range(12))
            for i in range(12)]
    assert pareto_front(g).tolist() == want


@pytest.mark.parametrize("n_groups", [1, 2, 3])
def test_first_place_weights_equal_every_clip_to_the_bit(n_groups):
    # the teams that cannot cut a region (at least as good everywhere) are not asked: the
    # corners must be those of clipping by every team, to the bit
    rng = np.random.default_rng(n_groups)
    groups = np.linspace(0.3, 0, 40)[:, None] + rng.normal(0, 0.15, (40, n_groups))
    top = int(np.argmax(groups.sum(axis=1)))
    groups[(top + 1) % 40] = groups[top]  # a tie at the top: both first somewhere
    got = first_place_weights(groups)
    want = slow_first_place_weights(groups)
    assert [g is None for g in got] == [w is None for w in want]
    assert sum(g is not None for g in got) >= 2
    for g, w in zip(got, want):
        if g is not None:
            assert g.shape == w.shape and np.array_equal(g, w)


def test_first_place_weights_by_hand():
    g = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0.2, 0.2, 0.2]], dtype=float)
    regions = first_place_weights(g)
    a = {tuple(np.round(c, 9)) for c in regions[0]}
    third = round(1 / 3, 9)
    assert a == {(1, 0, 0), (0.5, 0.5, 0), (third, third, third), (0.5, 0, 0.5)}
    assert regions[3] is None  # 0.2 everywhere is never first: someone has a 1
    assert [round(region_share(r), 9) for r in regions] == [third, third, third, 0.0]


def test_first_place_regions_contain_exactly_the_weights_that_put_a_team_first(rng):
    g = rng.normal(size=(6, 3))
    regions = first_place_weights(g)
    assert sum(region_share(r) for r in regions) == pytest.approx(1.0)
    for w in rng.dirichlet(np.ones(3), size=300):
        winner = int(np.argmax(g @ w))
        r = regions[winner]
        assert r is not None
        # inside the convex region: w is a convex combination of its corners
        coef, *_ = np.linalg.lstsq(np.vstack([r.T, np.ones(len(r))]), np.append(w, 1),
                                   rcond=None)
        assert np.allclose(np.vstack([r.T, np.ones(len(r))]) @ coef, np.append(w, 1))
    for r, team in zip(regions, g):
        for corner in (r if r is not None else []):
            assert corner @ team >= (g @ corner).max() - 1e-9


def test_two_groups_give_a_segment():
    regions = first_place_weights(np.array([[1.0, 0.0], [0.0, 1.0]]))
    assert {tuple(c) for c in regions[0]} == {(1.0, 0.0), (0.5, 0.5)}
    with pytest.raises(ValueError, match="1 to 3 groups"):
        first_place_weights(np.zeros((2, 4)))


def test_borda_by_hand():
    # test 1: a = b > c; test 2: c > a > b
    points = borda(np.array([[1, 2], [1, 1], [0, 3]], dtype=float))
    assert points.tolist() == [1.5 + 1, 0.5 + 1 + 0, 0 + 2]
    assert borda(np.array([[1, np.nan], [0, 5]])).tolist() == [1, 0]


# ------------------------------------------------------------------------- a board's reading


def test_read_board_keeps_the_boards_order_and_reads_it_by_hand():
    # the board's order puts B (tied with A on score, ahead by the board's own tie rule) first
    point = np.array([0.5, 0.5, 0.2])
    reps = np.array([[0.50, 0.51, 0.49, 0.50], [0.50, 0.49, 0.51, 0.50],
                     [0.20, 0.21, 0.19, 0.20]])
    groups = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.5], [0.0, 0.0, 0.2]])  # A dominates C
    tests = np.array([[3.0, 1.0], [2.0, 2.0], [1.0, 1.0]])
    got = read_board(point, reps, groups, tests)
    assert got.tier.tolist() == [1, 1, 2]  # no reordering: the tiers run down the rows given
    assert got.rank_interval.tolist() == [[1, 2], [1, 2], [3, 3]]
    assert got.pareto.tolist() == [True, True, False]
    # three groups: A first where w1 >= w2, B where w2 >= w1: each half of the triangle
    assert got.first_place_share == pytest.approx([0.5, 0.5, 0.0])
    assert got.first_place.tolist() == [True, True, False]
    # Borda over two tests: A beats B and C on the first and ties C on the second (2 + 0.5),
    # B beats C, then A and C (1 + 2), C ties A on the second (0 + 0.5)
    assert got.borda_points.tolist() == [2.5, 3.0, 0.5]
    assert got.borda_rank.tolist() == [2, 1, 3]
    np.testing.assert_allclose(got.win_probability, [[0.5, 0.5, 1], [0.5, 0.5, 1], [0, 0, 0.5]])


def test_read_board_leaves_ineligible_teams_off_the_front_and_first_place():
    point = np.array([0.5, -100.0])
    reps = np.array([[0.5, 0.6], [-100.0, -100.0]])
    groups = np.array([[0.5, 0.5, 0.5], [0.9, 0.9, 0.9]])  # the gated team is better on all
    got = read_board(point, reps, groups, np.zeros((2, 1)), eligible=np.array([True, False]))
    assert got.pareto.tolist() == [True, False]
    assert got.first_place_share.tolist() == [1.0, 0.0]
    with pytest.raises(ConfigError, match="finite"):
        read_board(np.array([np.nan]), np.zeros((1, 3)), np.zeros((1, 3)), np.zeros((1, 1)))


def test_read_board_without_groups_or_tests_reads_the_score_alone():
    # compare reads its runs by their score only: no groups, no tests
    point = np.array([0.5, 0.4, 0.1])
    reps = np.array([[0.5, 0.52, 0.48], [0.4, 0.41, 0.39], [0.1, 0.12, 0.08]])
    got = read_board(point, reps, eligible=np.array([True, True, False]))
    with_groups = read_board(point, reps, np.zeros((3, 1)), np.zeros((3, 1)))
    for name in ("tier", "rank_interval", "win_probability", "beats"):
        np.testing.assert_array_equal(getattr(got, name), getattr(with_groups, name))
    assert got.pareto.tolist() == [True, True, False]  # nobody dominates on no groups
    assert not got.first_place.any() and (got.first_place_share == 0).all()
    assert got.borda_points.tolist() == [0, 0, 0] and got.borda_rank.tolist() == [1, 1, 1]
