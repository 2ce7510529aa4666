"""The statistics of a run and of a board equal plain references to the last bit.

The references (``tests/_stats_reference.py``) draw the run's resamples plainly, recompute
the tests one replicate at a time and score each set of test values on its own: the run's
intervals, the paired replicates of ``compare``, the figures' replicates and the board's
must all rest on the same resamples (the same stream per fold, the same draw order) and the
same phase-2 arithmetic.
"""

from __future__ import annotations

import functools
import json
from types import SimpleNamespace

import numpy as np
import pytest

from evaluation.analysis import paired_bootstrap
from evaluation.analysis._groups import replicates, score_replicates
from evaluation.analysis._tiers import run_standings
from evaluation.challenge import (
    LATENT_DIVERSITY,
    LEADERBOARD_TESTS,
    MRED_GENDER,
    applicable_tests,
    bootstrap,
    paired_resamples,
    phase1_score,
    team_replicates,
)
from evaluation.challenge._bootstrap import _interval
from evaluation.metrics import (
    hit_rate_at_k,
    hit_rate_from_ranks,
    mrr_at_k,
    mrr_from_ranks,
    relevance_matrix,
)
from tests._stats_reference import (
    board,
    fold_mean_replicates,
    reference_counts,
    references,
    scalar_phase2,
    scalar_phase2_rows,
    slow_rank_intervals,
    slow_win_probabilities,
)

SIZES = (70, 53, 91)
#: The default groups, one group of all nine tests (a mean over more than eight values) and
#: two groups of unequal weights; each with a gate that some resamples fall under.
REFERENCES = {
    "default": references(0.45),
    "one group": references(0.45, {"all": list(LEADERBOARD_TESTS)}, {"all": 1.0}),
    "two groups": references(0.45, {"a": list(LEADERBOARD_TESTS[:8]),
                                     "b": [LEADERBOARD_TESTS[8]]}, {"a": 0.7, "b": 1.3}),
}
SKIPS = [None, {MRED_GENDER: "one group", LATENT_DIVERSITY: "no vectors"}]


@functools.cache
def _teams():
    """The four teams every test here scores (built once per process)."""
    return board(np.random.default_rng(11), skills=(0.5, 0.45, 0.3, 0.55), sizes=SIZES)


@pytest.fixture(scope="module")
def teams():
    return _teams()


@functools.cache
def plain_replicates(team: int, seed: int, n_boot: int, chunk: int,
                     names: tuple[str, ...]) -> dict[str, np.ndarray]:
    """``fold_mean_replicates`` of team ``team`` on the plain resamples of ``seed``: one
    replicate at a time, the slowest part of the references, computed once for every set of
    references (the tests' replicates do not depend on them; only the scores do)."""
    counts = reference_counts(seed, SIZES, n_boot, chunk)
    return fold_mean_replicates(_teams()[team], counts, names)


def reference_bootstrap(folds, refs, *, n_boot, seed, chunk, level, not_applicable):
    """The run's intervals from the plain replicates: each test's, then both scores'."""
    skip = not_applicable or {}
    names = [t for t in LEADERBOARD_TESTS if t not in skip]
    assert folds is _teams()[0]
    reps = plain_replicates(0, seed, n_boot, chunk, tuple(names))
    point = {t: float(np.mean([f.tests()[t][0] for f in folds])) for t in names}
    alpha, flagged = (1 - level) / 2, []
    out = {t: _interval(reps[t], point[t], alpha, flagged, t) for t in names}
    out.update({t: None for t in skip})
    scored = applicable_tests(skip)
    p1 = np.nanmean(np.column_stack([reps[t] for t in scored]), axis=1)
    p2 = scalar_phase2_rows(reps, scored, refs, not_applicable)
    return {"tests": out,
            "phase1_score": _interval(p1, phase1_score(point, scored), alpha, flagged,
                                      "phase1_score"),
            "phase2_score": _interval(p2, scalar_phase2(point, refs, not_applicable), alpha,
                                      flagged, "phase2_score"),
            "bias_dominated": flagged}


@pytest.mark.parametrize("skip", SKIPS)
@pytest.mark.parametrize("name", list(REFERENCES))
def test_the_runs_intervals_equal_the_plain_reference(teams, name, skip):
    refs = REFERENCES[name]
    for chunk, n_boot in ((17, 120), (50, 130)):
        got = bootstrap(teams[0], refs, n_boot=n_boot, seed=3, chunk=chunk, level=0.9,
                        not_applicable=skip)
        want = reference_bootstrap(teams[0], refs, n_boot=n_boot, seed=3, chunk=chunk,
                                   level=0.9, not_applicable=skip)
        assert json.dumps({k: got[k] for k in want}, sort_keys=True) == json.dumps(
            want, sort_keys=True)


@pytest.mark.parametrize("skip", SKIPS)
@pytest.mark.parametrize("name", list(REFERENCES))
def test_compares_paired_replicates_equal_the_plain_reference(teams, name, skip):
    refs = REFERENCES[name]
    reps, point = paired_bootstrap(teams, refs, n_boot=90, seed=2, chunk=30,
                                   not_applicable=skip)
    names = [t for t in LEADERBOARD_TESTS if t not in (skip or {})]
    plain = [plain_replicates(i, 2, 90, 30, tuple(names)) for i in range(len(teams))]
    plain_point = [{t: float(np.mean([f.tests()[t][0] for f in run])) for t in names}
                   for run in teams]
    scored = applicable_tests(skip)
    for t in names:
        np.testing.assert_array_equal(reps[t], np.array([p[t] for p in plain]), err_msg=t)
        np.testing.assert_array_equal(point[t], np.array([p[t] for p in plain_point]))
    np.testing.assert_array_equal(reps["phase1_score"], np.array(
        [np.nanmean(np.column_stack([p[t] for t in scored]), axis=1) for p in plain]))
    np.testing.assert_array_equal(reps["phase2_score"], np.array(
        [scalar_phase2_rows(p, scored, refs, skip) for p in plain]))
    np.testing.assert_array_equal(point["phase2_score"], np.array(
        [scalar_phase2(p, refs, skip) for p in plain_point]))


def fold_details(scores):
    """A fold's ``results.json`` details of its slice groups, from its per-user codes."""
    details = {}
    for test, codes in scores.slices.items():
        present = np.unique(codes[codes >= 0])
        details[test] = {"counts": {str(g): int((codes == g).sum()) for g in present}}
    return {"details": details}


@pytest.mark.parametrize("name", list(REFERENCES))
def test_the_figures_replicates_equal_the_plain_reference(teams, name):
    refs = REFERENCES[name]
    got = replicates([fold_details(s) for s in teams[1]], teams[1], n_boot=80, seed=6)
    plain = plain_replicates(1, 6, 80, 50, tuple(LEADERBOARD_TESTS))
    for t in LEADERBOARD_TESTS:
        np.testing.assert_array_equal(got.tests[t], plain[t], err_msg=t)
    np.testing.assert_array_equal(score_replicates(got, refs),
                                  scalar_phase2_rows(plain, LEADERBOARD_TESTS, refs))


@pytest.mark.parametrize("name", list(REFERENCES))
def test_the_boards_resamples_and_point_scores_equal_the_plain_reference(teams, name):
    refs = REFERENCES[name]
    resamples = paired_resamples(7, 140, SIZES)
    for got, want in zip(resamples.counts, reference_counts(7, SIZES, 140, 50)):
        np.testing.assert_array_equal(got, want)
    for team in teams:
        reps = team_replicates(team, resamples, refs)
        tests = {t: float(np.mean([f.tests()[t][0] for f in team])) for t in LEADERBOARD_TESTS}
        assert reps.tests == tests
        assert reps.score == scalar_phase2(tests, refs)  # the same bits


def test_compares_standings_equal_the_slow_reference(teams):
    refs = references(0.2)
    reps, point = paired_bootstrap(teams, refs, n_boot=60, seed=5)
    runs = [SimpleNamespace(run_id=f"run{i}", name=f"Model {i}", params={})
            for i in range(len(teams))]
    got = run_standings(runs, reps, point, level=0.9)
    order = sorted(range(len(teams)), key=lambda i: (-point["phase2_score"][i], f"run{i}"))
    assert [r["run_id"] for r in got["rows"]] == [f"run{i}" for i in order]
    slow = reps["phase2_score"][order]
    assert [r["rank_interval"] for r in got["rows"]] == slow_rank_intervals(
        slow, point["phase2_score"][order], 0.9).tolist()
    wins = slow_win_probabilities(slow)
    for a, row in enumerate(got["rows"]):
        assert row["score"] == point["phase2_score"][order[a]]
        assert row["win_probability"] == {f"run{order[b]}": wins[a, b]
                                          for b in range(len(order)) if b != a}


def test_hit_rate_and_mrr_equal_plain_means_of_the_first_hit():
    rng = np.random.default_rng(3)
    ranks = np.where(rng.random(3000) < 0.4, rng.integers(1, 40, 3000), 0)
    hits = np.array([1.0 if r > 0 else 0.0 for r in ranks])
    rr = np.array([1.0 / r if r > 0 else 0.0 for r in ranks])
    assert hit_rate_from_ranks(ranks) == float(np.mean(hits))
    assert mrr_from_ranks(ranks) == float(np.mean(rr))
    # the library's metrics on several relevant items: the first relevant item of each list
    # (per user), or every relevant item (global and per item)
    recs = rng.integers(0, 200, (300, 20))
    relevant = [set(rng.choice(200, 3, replace=False).tolist()) for _ in range(300)]
    matrix = relevance_matrix(np.repeat(np.arange(300), 3),
                              [i for r in relevant for i in sorted(r)], shape=(300, 200))
    for k in (1, 10, 20):
        first = [next((p + 1 for p, i in enumerate(row[:k]) if i in rel), 0)
                 for row, rel in zip(recs.tolist(), relevant)]
        assert hit_rate_at_k(recs, matrix, k) == float(np.mean([f > 0 for f in first]))
        assert mrr_at_k(recs, matrix, k) == float(np.mean([1.0 / f if f else 0.0
                                                           for f in first]))
        points = [next((p + 1 for p, i in enumerate(row[:k]) if i == item), 0)
                  for row, rel in zip(recs.tolist(), relevant) for item in sorted(rel)]
        assert mrr_at_k(recs, matrix, k, aggregate="global") == float(np.mean(
            [1.0 / p if p else 0.0 for p in points]))
        assert hit_rate_at_k(recs, matrix, k, aggregate="global") == float(np.mean(
            [1.0 if p else 0.0 for p in points]))
