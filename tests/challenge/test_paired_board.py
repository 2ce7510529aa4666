"""A board's paired replicates: the run's own resamples, each team scored on them, checked
against a slow reference that rebuilds every resample by hand and loops over replicates and
users; the board's rank intervals and win probabilities from them; the point scores equal the
server's; and pairing is what tells apart two teams that differ on a few users."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.challenge import (
    LEADERBOARD_TESTS,
    References,
    UserScores,
    _scores,
    bootstrap,
    fold_streams,
    paired_resamples,
    phase2_score,
    resample_counts,
    team_replicates,
)
from evaluation.errors import ConfigError
from evaluation.server.core import recompute
from evaluation.standings import read_board, simultaneous_differences
from tests._stats_reference import (
    board,
    fold_users,
    references,
    slow_rank_intervals,
    slow_win_probabilities,
)

# ------------------------------------------------------------------------- slow reference


def slow_tests(scores: UserScores, drawn: list[int]) -> dict[str, float]:
    """Each leaderboard test of the users ``drawn`` (a user as often as drawn), by loops."""
    out = {"HIT_RATE": sum(bool(scores.hit[u]) for u in drawn) / len(drawn),
           "MRR": sum(float(scores.rr[u]) for u in drawn) / len(drawn)}
    for test, codes in scores.slices.items():
        in_mr = [u for u in drawn if codes[u] >= -1]
        miss_rate = sum(not scores.hit[u] for u in in_mr) / len(in_mr)
        gaps = []
        for g in sorted({int(codes[u]) for u in drawn if codes[u] >= 0}):
            members = [u for u in drawn if codes[u] == g]
            gaps.append(abs(sum(not scores.hit[u] for u in members) / len(members) - miss_rate))
        out[test] = -sum(gaps) / len(gaps)
    for test, values in (("BEING_LESS_WRONG", scores.blw), ("LATENT_DIVERSITY", scores.ld)):
        kept = [float(values[u]) for u in drawn if not np.isnan(values[u])]
        out[test] = sum(kept) / len(kept)
    return out


def slow_replicates(teams, seed: int, n_boot: int, refs: References) -> np.ndarray:
    """Each team's phase-2 score on each resample, the resamples built by hand from the
    run's own counts (``resample_counts`` on the folds' streams)."""
    n_folds = len(teams[0])
    counts = []
    for f, stream in enumerate(fold_streams(seed, n_folds)):
        rng = np.random.default_rng(stream)
        counts.append(np.concatenate([c for _, c in resample_counts(rng, len(teams[0][f]),
                                                                    n_boot)]))
    out = np.zeros((len(teams), n_boot))
    for i, team in enumerate(teams):
        for b in range(n_boot):
            per_fold = []
            for f in range(n_folds):
                drawn = [u for u in range(len(team[f])) for _ in range(counts[f][b, u])]
                per_fold.append(slow_tests(team[f], drawn))
            means = {t: sum(p[t] for p in per_fold) / n_folds for t in LEADERBOARD_TESTS}
            out[i, b] = phase2_score(means, refs)
    return out


# ------------------------------------------------------------------------- the tests


def test_the_resamples_are_the_runs_own_counts():
    resamples = paired_resamples(7, 120, (33, 20))
    for f, stream in enumerate(fold_streams(7, 2)):
        rng = np.random.default_rng(stream)
        expected = np.concatenate([c for _, c in resample_counts(rng, (33, 20)[f], 120)])
        np.testing.assert_array_equal(resamples.counts[f], expected)
        assert resamples.counts[f].dtype == np.uint8
    assert resamples.fold_sizes == (33, 20)
    assert resamples.nbytes == 120 * 53


def test_replicates_rank_intervals_and_win_probabilities_equal_the_slow_reference(rng):
    teams = board(rng, skills=(0.8, 0.6, 0.6, 0.25, 0.05), sizes=(60, 80))
    refs, seed, n_boot = references(), 3, 60
    resamples = paired_resamples(seed, n_boot, [len(f) for f in teams[0]])
    got = [team_replicates(t, resamples, refs) for t in teams]
    reps = np.array([g.replicates for g in got])
    slow = slow_replicates(teams, seed, n_boot, refs)
    np.testing.assert_allclose(reps, slow, rtol=1e-12, atol=1e-13)
    # the score of each replicate is phase2_score's of its group means, to the bit: the
    # weighted groups added one after the other, divided by the weights' total
    weights = list(refs.weights.values())
    for g in got:
        weighted = 0.0
        for w, row in zip(weights, g.group_replicates):
            weighted = weighted + w * row
        np.testing.assert_array_equal(g.replicates, weighted / sum(weights))

    point = np.array([g.score for g in got])
    order = np.argsort(-point, kind="stable")
    reading = read_board(point[order], reps[order], np.array([g.group_scores for g in got])[order],
                         np.array([[g.tests[t] for t in LEADERBOARD_TESTS] for g in got])[order],
                         level=0.9)
    np.testing.assert_array_equal(reading.win_probability, slow_win_probabilities(slow[order]))
    np.testing.assert_array_equal(reading.rank_interval,
                                  slow_rank_intervals(slow[order], point[order], 0.9))
    assert len(set(map(tuple, reading.rank_interval))) > 1  # the board is not all one tier


def test_point_scores_and_group_scores_equal_the_servers(rng):
    teams = board(rng, skills=(0.5, 0.3, 0.1), sizes=(50, 50, 60, 45))
    refs = references(threshold=0.2)
    resamples = paired_resamples(0, 10, [len(f) for f in teams[0]])
    for team in teams:
        got = team_replicates(team, resamples, refs)
        fold_tests = [{t: float(v[0]) for t, v in f.tests().items()} for f in team]
        server = recompute(fold_tests, refs)
        assert got.score == server.leaderboard_score  # the same bits
        assert got.tests == server.tests
        norm = {t: (server.tests[t] - refs.baseline[t]) / (refs.best[t] - refs.baseline[t])
                for t in LEADERBOARD_TESTS}
        expected = [np.mean([norm[t] for t in members]) for members in refs.groups.values()]
        np.testing.assert_array_equal(got.group_scores, expected)
        assert got.groups == tuple(refs.groups)
    # the gate: a team under the threshold scores the gated score on every resample it
    # stays under it
    gated = team_replicates(teams[2], resamples, refs)
    assert gated.score == -100.0 and (gated.replicates == -100.0).all()


def test_pairing_tells_apart_teams_that_unpaired_resamples_cannot(rng):
    # B is A with 1 % of the users' misses turned into hits: B is better on every resample that
    # draws one of those users, but the users' spread (hit or miss) dwarfs the gap
    n = 2000
    a = [fold_users(rng, n, 0.5) for _ in range(2)]
    b = []
    for fold in a:
        hit = fold.hit.copy()
        turned = np.flatnonzero(~hit)[: n // 100]
        hit[turned] = True
        rr = fold.rr.copy()
        rr[turned] = 0.5
        blw = fold.blw.copy()
        blw[turned] = np.nan
        b.append(UserScores(hit=hit, rr=rr, slices=fold.slices, blw=blw, ld=fold.ld))
    refs = references()
    shared = paired_resamples(1, 400, (n, n))
    paired = [team_replicates(t, shared, refs) for t in (b, a)]
    unpaired = [team_replicates(b, paired_resamples(2, 400, (n, n)), refs),
                team_replicates(a, paired_resamples(3, 400, (n, n)), refs)]

    def read(reps):
        point = np.array([r.score for r in reps])
        return read_board(point, np.array([r.replicates for r in reps]),
                          np.array([r.group_scores for r in reps]),
                          np.array([[r.tests[t] for t in LEADERBOARD_TESTS] for r in reps]))

    assert paired[0].score > paired[1].score
    assert read(paired).tier.tolist() == [1, 2]
    assert read(paired).rank_interval.tolist() == [[1, 1], [2, 2]]
    assert read(unpaired).tier.tolist() == [1, 1]
    assert read(unpaired).rank_interval.tolist() == [[1, 2], [1, 2]]
    point = np.array([r.score for r in paired])
    half = simultaneous_differences(np.array([r.replicates for r in unpaired]), point, 0.95)
    assert half.half_width[0, 1] > 3 * simultaneous_differences(
        np.array([r.replicates for r in paired]), point, 0.95).half_width[0, 1]


def test_folds_on_other_users_are_refused(rng):
    teams = board(rng, skills=(0.5,), sizes=(30, 31))
    with pytest.raises(ConfigError, match=r"\(30, 31\) users per fold.*\(30, 32\)"):
        team_replicates(teams[0], paired_resamples(0, 5, (30, 32)), references())
    with pytest.raises(ConfigError, match="n_boot"):
        paired_resamples(0, 1, (30,))


def test_the_callers_values_keep_no_design_matrix(rng):
    # a store may keep decoded values between boards: the sums' design matrices (the bulk of
    # the memory) must not stay attached to them
    team = board(rng, skills=(0.5,))[0]
    team_replicates(team, paired_resamples(0, 5, [len(f) for f in team]), references())
    assert all("_design_cache" not in f.__dict__ for f in team)


def test_a_runs_interval_on_kept_resamples_is_the_one_drawn_afresh(rng):
    # a scoring worker keeps the resamples between uploads: the run's own bootstrap on them
    # gives the same intervals to the bit, and resamples drawn for other folds are refused
    team = board(rng, skills=(0.4,), sizes=(130, 120))[0]
    sizes = [len(f) for f in team]
    drawn = bootstrap(team, references(), n_boot=120, seed=5)
    kept = bootstrap(team, references(), n_boot=120, seed=5,
                     resamples=paired_resamples(5, 120, sizes))
    assert kept == drawn
    other_seed = bootstrap(team, references(), n_boot=120, seed=6)
    assert other_seed["phase2_score"] != drawn["phase2_score"]
    for seed, n_boot, folds in ((6, 120, sizes), (5, 121, sizes), (5, 120, [130, 121])):
        with pytest.raises(ConfigError, match="kept resamples"):
            bootstrap(team, references(), n_boot=120, seed=5,
                      resamples=paired_resamples(seed, n_boot, folds))


def test_the_sums_over_hit_users_equal_the_full_product_to_the_bit(rng, monkeypatch):
    # a team's 0/1 sums come from its hit users and the totals kept for the users: exact
    # integers, so the same as the product over every user, whatever the team's sets are
    sizes = (300,)
    resamples = paired_resamples(4, 60, sizes)
    counts, kept = resamples.counts[0], resamples.kept_sums[0]
    teams = board(rng, skills=(0.3, 0.0, 1.0, 0.6), sizes=sizes)
    n = sizes[0]
    odd = teams[3][0]
    # BLW measured on a few missed users only (the gather of those measured), LD missing
    # on a few (the gather of those missing), other slice codes than the other teams'
    codes = {t: rng.integers(-2, 3, n).astype(np.int32) for t in odd.slices}
    teams[3][0] = UserScores(hit=odd.hit, rr=odd.rr, slices=codes,
                             blw=np.where(rng.random(n) < 0.1, 0.5, np.nan),
                             ld=np.where(rng.random(n) < 0.02, np.nan, 0.1))
    monkeypatch.setattr(_scores, "_MAX_KEPT_SUMS", 7)  # the fourth team's codes clear them
    for team in teams:
        scores = team[0]
        layout = scores._design()
        full = counts.astype(np.float64) @ layout["binary"].T.astype(np.float64)
        got = _scores._counted_binary_sums(scores, counts, kept)
        assert got.dtype == np.float64 and np.array_equal(got, full)
    assert 0 < len(kept) <= 7


def test_a_kept_sum_is_read_not_made_again(rng):
    resamples = paired_resamples(4, 30, (200,))
    teams = board(rng, skills=(0.3, 0.5), sizes=(200,))
    _scores._counted_binary_sums(teams[0][0], resamples.counts[0], resamples.kept_sums[0])
    made = dict(resamples.kept_sums[0])
    _scores._counted_binary_sums(teams[1][0], resamples.counts[0], resamples.kept_sums[0])
    assert resamples.kept_sums[0].keys() == made.keys()
    assert all(resamples.kept_sums[0][k] is made[k] for k in made)
