"""The robustness certificate: Kendall's τ_b and its bootstrap interval against slow loops and
scipy on small boards with ties, the pairs kept, the first place and the fragility marks by
hand, and teams an alternative could not score."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from evaluation.errors import ConfigError
from evaluation.standings import (
    ProtocolReplicates,
    kendall_tau_b,
    read_board,
    robustness_certificate,
)

# ------------------------------------------------------------------------- slow references


def slow_tau_b(x, y):
    """τ_b by a loop over the pairs: (C - D) / sqrt(untied in x * untied in y)."""
    concordant = discordant = untied_x = untied_y = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
        untied_x += dx != 0
        untied_y += dy != 0
        concordant += dx * dy > 0
        discordant += dx * dy < 0
    if untied_x * untied_y == 0:
        return float("nan")
    return (concordant - discordant) / np.sqrt(untied_x * untied_y)


def slow_interval(official, alternative, level):
    """The percentile interval of the replicates' τ_b over the teams both protocols scored."""
    common = [t for t in official.teams if t in alternative.teams]
    io = [official.teams.index(t) for t in common]
    ia = [alternative.teams.index(t) for t in common]
    values = [slow_tau_b(official.replicates[r, io], alternative.replicates[r, ia])
              for r in range(min(len(official.replicates), len(alternative.replicates)))]
    values = [v for v in values if not np.isnan(v)]
    return tuple(np.quantile(values, [(1 - level) / 2, (1 + level) / 2]))


def protocol(teams, scores, replicates):
    return ProtocolReplicates(tuple(teams), np.asarray(scores, dtype=float),
                              np.asarray(replicates, dtype=float))


def tied_board(rng, n_teams, n_reps, levels=4):
    """Scores on a coarse grid, so that ties are frequent in points and replicates."""
    teams = [f"team{i}" for i in range(n_teams)]
    return protocol(teams, rng.integers(0, levels, n_teams),
                    rng.integers(0, levels, (n_reps, n_teams)))


# --------------------------------------------------------------------------------- τ_b


@pytest.mark.parametrize("n_teams", [2, 3, 5, 8])
def test_tau_b_matches_loops_and_scipy_with_ties(n_teams, scipy_stats):
    rng = np.random.default_rng(n_teams)
    x = rng.integers(0, 3, (300, n_teams)).astype(float)
    y = rng.integers(0, 4, (300, n_teams)).astype(float)
    got = kendall_tau_b(x, y)
    slow = np.array([slow_tau_b(a, b) for a, b in zip(x, y)])
    scipy = np.array([scipy_stats.kendalltau(a, b).statistic for a, b in zip(x, y)])
    np.testing.assert_array_equal(np.isnan(got), np.isnan(slow))
    assert np.isnan(got).any() and (~np.isnan(got)).any()  # all-tied rows occur, and others
    np.testing.assert_allclose(got, slow, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got, scipy, rtol=0, atol=1e-12)


def test_tau_b_of_one_row_and_of_continuous_scores(scipy_stats):
    assert kendall_tau_b(np.array([1.0, 2.0, 3.0]), np.array([1.0, 3.0, 2.0])) == \
        pytest.approx(1 / 3)
    assert np.isnan(kendall_tau_b(np.array([1.0]), np.array([2.0])))
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20, 60))
    y = x + rng.normal(size=(20, 60))
    scipy = [scipy_stats.kendalltau(a, b).statistic for a, b in zip(x, y)]
    np.testing.assert_allclose(kendall_tau_b(x, y), scipy, atol=1e-12)
    with pytest.raises(ConfigError, match="same shape"):
        kendall_tau_b(x, y[:, :5])


# ----------------------------------------------------------------------- the certificate


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tau_and_interval_match_the_slow_reference_with_ties(seed, scipy_stats):
    rng = np.random.default_rng(seed)
    official = tied_board(rng, 6, 40)
    alternative = tied_board(rng, 6, 40)
    tier = read_board(official.scores, official.replicates.T).tier
    cert = robustness_certificate(official, {"other": alternative}, tier, level=0.9)
    alt = cert.alternatives[0]
    assert alt.tau == pytest.approx(slow_tau_b(official.scores, alternative.scores),
                                    nan_ok=True)
    scipy = scipy_stats.kendalltau(official.scores, alternative.scores).statistic
    assert alt.tau == pytest.approx(scipy, nan_ok=True)
    assert alt.tau_interval == pytest.approx(slow_interval(official, alternative, 0.9))
    assert cert.level == 0.9 and cert.n_replicates == 40


def test_missing_teams_leave_tau_and_rank_last():
    rng = np.random.default_rng(3)
    official = protocol("abcde", [5, 4, 3, 2, 1], 5 - np.arange(5) + rng.normal(0, 0.01, (30, 5)))
    # "b" could not run the alternative; the others keep their order, plus a stranger "z"
    alternative = protocol("aecdz", [9, 1, 3, 2, 100],
                           np.array([9, 1, 3, 2, 100]) + rng.normal(0, 0.01, (30, 5)))
    cert = robustness_certificate(official, {"split": alternative}, [1, 2, 3, 4, 5])
    alt = cert.alternatives[0]
    assert alt.missing == ("b",) and alt.n_compared == 4
    assert alt.tau == pytest.approx(1.0) and alt.tau_interval == pytest.approx((1.0, 1.0))
    # the missing team ranks below the four that ran, its tier below their last
    assert alt.rank.tolist() == [1, 5, 2, 3, 4]
    assert alt.tier.tolist() == [1, 5, 2, 3, 4]
    # pairs told apart: all 10; those with "b" below it are kept (b is last), "b" above c, d,
    # e are not
    assert cert.n_told_apart == 10
    assert alt.pairs_kept == pytest.approx(7 / 10) == cert.stable_pair_share
    # the alternative tells every team that ran apart above the one that could not
    assert alt.pairs_reversed == pytest.approx(3 / 10) == cert.reversed_pair_share
    assert alt.same_leader and alt.first_place_probability == 1.0
    b = cert.fragility[1]
    assert (b.team, b.rank, b.tier, b.worst_rank, b.worst_tier) == ("b", 2, 2, 5, 5)
    assert b.missing_from == ("split",) and b.tiers_lost == 3
    assert b.falls_below == ("c", "d", "e") and b.fragile
    assert not any(f.fragile for f in cert.fragility if f.team != "b")


def test_pairs_kept_count_only_pairs_the_board_tells_apart():
    official = protocol("abcd", [4, 3, 2, 1], np.tile([4.0, 3.0, 2.0, 1.0], (5, 1)))
    tiers = [1, 1, 2, 2]  # told apart: a-c, a-d, b-c, b-d
    swapped_within = protocol("abcd", [3, 4, 1, 2], np.tile([3.0, 4.0, 1.0, 2.0], (5, 1)))
    swapped_across = protocol("abcd", [4, 2, 3, 1], np.tile([4.0, 2.0, 3.0, 1.0], (5, 1)))
    cert = robustness_certificate(official, {"within": swapped_within,
                                             "across": swapped_across}, tiers)
    within, across = cert.alternatives
    assert cert.n_told_apart == 4
    assert within.pairs_kept == 1.0 and across.pairs_kept == 3 / 4
    assert cert.stable_pair_share == 3 / 4
    # replicates that never vary tell every difference apart: the swap across tiers is real
    assert within.pairs_reversed == 0.0 and across.pairs_reversed == 1 / 4
    assert cert.reversed_pair_share == 1 / 4
    assert [f.falls_below for f in cert.fragility] == [(), ("c",), (), ()]
    assert not within.same_leader and within.first_place_probability == 0.0
    assert across.same_leader and across.first_place_probability == 1.0
    assert within.tau == pytest.approx(slow_tau_b([4, 3, 2, 1], [3, 4, 1, 2]))
    # worst ranks: b is 1st under "within", 3rd under "across"
    assert [f.worst_rank for f in cert.fragility] == [2, 3, 4, 4]
    assert [f.worst_rank_protocol for f in cert.fragility] == ["within", "across", "within",
                                                               "across"]


def test_first_place_probability_counts_replicates_with_the_same_top_teams():
    rng = np.random.default_rng(4)
    official, alternative = tied_board(rng, 4, 60, levels=3), tied_board(rng, 4, 60, levels=3)
    cert = robustness_certificate(official, {"alt": alternative}, [1, 1, 1, 1])
    same = [set(np.flatnonzero(o == o.max())) == set(np.flatnonzero(a == a.max()))
            for o, a in zip(official.replicates, alternative.replicates)]
    assert cert.alternatives[0].first_place_probability == pytest.approx(np.mean(same))
    assert np.isnan(cert.stable_pair_share) and cert.n_told_apart == 0


def test_alternative_tiers_are_the_boards_own():
    rng = np.random.default_rng(5)
    scores = np.linspace(1.0, 0.0, 8)
    official = protocol([f"t{i}" for i in range(8)], scores,
                        scores + rng.normal(0, 0.05, (200, 8)))
    shuffled = rng.permutation(8)
    alt_scores = scores[shuffled]
    alternative = protocol([f"t{i}" for i in range(8)], alt_scores,
                           alt_scores + rng.normal(0, 0.05, (200, 8)))
    cert = robustness_certificate(official, {"alt": alternative},
                                  read_board(scores, official.replicates.T).tier)
    order = np.argsort(-alt_scores, kind="stable")
    reading = read_board(alt_scores[order], alternative.replicates[:, order].T)
    expected = np.empty(8, dtype=int)
    expected[order] = reading.tier
    np.testing.assert_array_equal(cert.alternatives[0].tier, expected)
    assert [f.worst_tier for f in cert.fragility] == expected.tolist()


def test_no_alternatives_certify_the_official_board():
    official = protocol("ab", [2, 1], [[2, 1], [1, 2]])
    cert = robustness_certificate(official, {}, [1, 2])
    assert cert.alternatives == () and cert.stable_pair_share == 1.0
    assert [(f.worst_rank, f.worst_tier, f.worst_rank_protocol) for f in cert.fragility] == \
        [(1, 1, ""), (2, 2, "")]


def test_unequal_replicate_counts_pair_the_first_replicates():
    rng = np.random.default_rng(6)
    official, alternative = tied_board(rng, 5, 50), tied_board(rng, 5, 30)
    cert = robustness_certificate(official, {"alt": alternative}, [1, 2, 3, 4, 5])
    assert cert.n_replicates == 30
    assert cert.alternatives[0].tau_interval == pytest.approx(
        slow_interval(official, alternative, 0.95))


def test_bad_inputs_are_refused_by_name():
    with pytest.raises(ConfigError, match="each team must appear once"):
        protocol("aa", [1, 2], [[1, 2]])
    with pytest.raises(ConfigError, match=r"replicates \(n_replicates, 2\)"):
        protocol("ab", [1, 2], [[1, 2, 3]])
    with pytest.raises(ConfigError, match="finite"):
        protocol("ab", [1, np.nan], [[1, 2]])
    official = protocol("ab", [2, 1], [[2, 1]])
    with pytest.raises(ConfigError, match="one tier per official team"):
        robustness_certificate(official, {}, [1])
    with pytest.raises(ConfigError, match="'level' parameter of robustness_certificate"):
        robustness_certificate(official, {}, [1, 2], level=1.0)


def test_a_swap_the_alternative_cannot_tell_apart_is_not_a_reversal():
    rng = np.random.default_rng(7)
    scores = np.array([3.0, 2.0, 1.0])
    official = protocol("abc", scores, scores + rng.normal(0, 0.01, (200, 3)))
    # a noisy alternative puts b above a by a hair: the point order changes, nothing real
    noisy = np.array([2.0, 2.01, 1.0])
    alternative = protocol("abc", noisy, noisy + rng.normal(0, 0.5, (200, 3)))
    cert = robustness_certificate(official, {"noisy": alternative},
                                  read_board(scores, official.replicates.T).tier)
    alt = cert.alternatives[0]
    assert cert.n_told_apart == 3 and alt.pairs_kept == pytest.approx(2 / 3)
    assert alt.pairs_reversed == 0.0 and not any(f.fragile for f in cert.fragility)
