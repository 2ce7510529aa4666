"""The cost–quality front's probability against a loop over replicates and the point front,
and the order of a board whose ties within a tier are broken by cost."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.errors import ConfigError
from evaluation.standings import cost_order, front_probability, pareto_front


def slow_front_probability(groups, costs, eligible):
    """Per replicate, the point Pareto front of the compared teams; the share of replicates."""
    n, _, n_boot = groups.shape
    compared = eligible & np.isfinite(costs).all(axis=1)
    hits = np.zeros(n)
    for r in range(n_boot):
        values = np.concatenate([groups[:, :, r], -costs], axis=1)
        hits[compared] += pareto_front(values[compared])
    return np.where(compared, hits / n_boot, np.nan)


@pytest.mark.parametrize("seed", [0, 1])
def test_front_probability_matches_a_loop_over_replicates(seed):
    rng = np.random.default_rng(seed)
    # coarse values: ties between teams are frequent, as the front's definition must handle
    groups = rng.integers(0, 4, (7, 2, 70)).astype(float)
    costs = rng.integers(1, 4, (7, 2)).astype(float)
    costs[3, 1] = np.nan  # a team whose memory was not measured
    eligible = np.array([True] * 6 + [False])
    got = front_probability(groups, costs, eligible=eligible)
    np.testing.assert_allclose(got, slow_front_probability(groups, costs, eligible))
    assert np.isnan(got[[3, 6]]).all() and (got[~np.isnan(got)] > 0).any()


@pytest.mark.parametrize("cost_noise", [False, True])
def test_a_large_boards_front_asks_the_leaders_first_with_the_same_answer(cost_noise):
    # beyond a few dozen teams, the leaders of the mean front are asked first and only the
    # rest of the pairs of every team: the shares must be those of asking every pair
    rng = np.random.default_rng(5)
    n, n_boot = 70, 40
    skill = np.linspace(3, 0, n)[:, None, None]
    groups = np.round(skill + rng.normal(0, 0.4, (n, 3, n_boot)))  # ties are frequent
    costs = rng.integers(1, 6, (n, 2)).astype(float)
    costs[5, 0] = np.nan
    eligible = rng.random(n) < 0.9
    if cost_noise:
        noisy = costs[:, :, None] + rng.integers(0, 2, (n, 2, n_boot))
        got = front_probability(groups, cost_replicates=noisy, eligible=eligible)
        compared = eligible & np.isfinite(costs).all(axis=1)
        hits = np.zeros(n)
        for r in range(n_boot):
            values = np.concatenate([groups[:, :, r], -noisy[:, :, r]], axis=1)
            hits[compared] += pareto_front(values[compared])
        want = np.where(compared, hits / n_boot, np.nan)
    else:
        got = front_probability(groups, costs, eligible=eligible)
        want = slow_front_probability(groups, costs, eligible)
    np.testing.assert_array_equal(got, want)
    assert 0 < np.nanmax(got) and np.nanmin(got) < 1


def test_front_probability_without_costs_is_the_groups_front_and_follows_cost_noise():
    rng = np.random.default_rng(2)
    groups = rng.normal(size=(6, 3, 50))
    without = front_probability(groups)
    np.testing.assert_allclose(without, slow_front_probability(groups, np.zeros((6, 0)),
                                                               np.ones(6, dtype=bool)))
    # constant replicates: the point front, with certainty
    point = np.repeat(rng.normal(size=(6, 3))[:, :, None], 5, axis=2)
    np.testing.assert_array_equal(front_probability(point),
                                  pareto_front(point[:, :, 0]).astype(float))
    # cost replicates replace the point costs: a cheaper team equal in quality dominates
    same = np.ones((2, 1, 4))
    cost_reps = np.array([[[1.0, 1.0, 3.0, 3.0]], [[2.0, 2.0, 2.0, 4.0]]])
    np.testing.assert_allclose(front_probability(same, np.zeros((2, 1)),
                                                 cost_replicates=cost_reps), [0.75, 0.25])


def test_front_probability_refuses_bad_shapes():
    with pytest.raises(ConfigError, match="group_replicates must have shape"):
        front_probability(np.zeros((3, 10)))
    with pytest.raises(ConfigError, match="costs must have shape"):
        front_probability(np.zeros((3, 1, 10)), np.zeros(3))
    with pytest.raises(ConfigError, match="cost_replicates must have shape"):
        front_probability(np.zeros((3, 1, 10)), cost_replicates=np.zeros((3, 1, 9)))
    with pytest.raises(ConfigError, match="one flag per team"):
        front_probability(np.zeros((3, 1, 10)), eligible=np.ones(2, dtype=bool))


def test_cost_order_reorders_within_tiers_only():
    tier = np.array([1, 1, 1, 2, 2, 3])
    seconds = np.array([30.0, 10.0, np.nan, 5.0, 5.0, 1.0])
    memory = np.array([1.0, 2.0, 1.0, 9.0, 3.0, 1.0])
    # tier 1: 10 s, 30 s, then the unmeasured team; tier 2: equal seconds, less memory first
    assert cost_order(tier, np.stack([seconds, memory], axis=1)).tolist() == [1, 0, 2, 4, 3, 5]
    # one cost; equal costs keep the official order
    assert cost_order(tier, np.array([2.0, 2.0, 1.0, 0.0, 0.0, 0.0])).tolist() == \
        [2, 0, 1, 3, 4, 5]
    with pytest.raises(ConfigError, match="one row per team"):
        cost_order(tier, np.zeros(4))
