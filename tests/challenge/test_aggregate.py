"""Leaderboard aggregation: the macro-score formula, references files, bootstrap CIs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evaluation.challenge import (
    GATED_SCORE,
    IN_MR_ONLY,
    LEADERBOARD_TESTS,
    LEFT_OUT,
    References,
    UserScores,
    aggregate,
    bootstrap,
    load_references,
    normalise,
    phase1_score,
    phase2_score,
)
from evaluation.errors import ConfigError, DataError

BASE = dict.fromkeys(LEADERBOARD_TESTS, 0.0)
BEST = dict.fromkeys(LEADERBOARD_TESTS, 1.0)


def refs(threshold=0.1, **kw) -> References:
    return References(baseline=dict(BASE), best=dict(BEST), hit_rate_threshold=threshold, **kw)


def test_shipped_lfm_references_are_the_published_2022_values():
    r = load_references("lfm")
    assert r.hit_rate_threshold == 0.015
    assert r.baseline["HIT_RATE"] == 0.018763 and r.best["HIT_RATE"] == 0.264642
    assert r.baseline["BEING_LESS_WRONG"] == 0.2744871 and r.best["MRED_GENDER"] == -0.000032
    assert r.weights == {"accuracy": 1.0, "fairness": 1.5, "behavioural": 1.5}
    # the references themselves score 0 (baseline) and 1 (best)
    assert phase2_score(r.baseline, r) == pytest.approx(0.0, abs=1e-12)
    assert phase2_score(r.best, r) == pytest.approx(1.0)


def test_phase1_is_the_plain_mean_of_the_nine_tests():
    tests = {t: float(i) for i, t in enumerate(LEADERBOARD_TESTS)}
    assert phase1_score(tests) == pytest.approx(sum(range(9)) / 9)


def test_phase2_weights_on_hand_made_values():
    # normalised values: accuracy (0.5, 0.3) -> 0.4, fairness all 0.2, behavioural (1, 0) -> 0.5
    tests = {"HIT_RATE": 0.5, "MRR": 0.3, "BEING_LESS_WRONG": 1.0, "LATENT_DIVERSITY": 0.0}
    tests |= {t: 0.2 for t in LEADERBOARD_TESTS[2:7]}
    expected = (1 * 0.4 + 1.5 * 0.2 + 1.5 * 0.5) / 4
    assert phase2_score(tests, refs()) == pytest.approx(expected)


def test_phase2_normalisation_uses_baseline_and_best():
    baseline = {t: -0.01 for t in LEADERBOARD_TESTS} | {"HIT_RATE": 0.02, "MRR": 0.002}
    best = {t: -0.002 for t in LEADERBOARD_TESTS} | {"HIT_RATE": 0.22, "MRR": 0.042}
    r = References(baseline=baseline, best=best, hit_rate_threshold=0.015)
    x = dict(baseline) | {"HIT_RATE": 0.12, "MRR": 0.012, "MRED_GENDER": -0.006}
    norm = normalise(x, r)
    assert norm["HIT_RATE"] == pytest.approx((0.12 - 0.02) / (0.22 - 0.02))  # 0.5
    assert norm["MRR"] == pytest.approx((0.012 - 0.002) / 0.04)  # 0.25
    assert norm["MRED_GENDER"] == pytest.approx((-0.006 + 0.01) / 0.008)  # 0.5
    expected = (1 * (0.5 + 0.25) / 2 + 1.5 * (0.5 / 5) + 1.5 * 0.0) / 4
    assert phase2_score(x, r) == pytest.approx(expected)


def test_hit_rate_gate_gives_minus_100():
    tests = dict(BEST) | {"HIT_RATE": 0.0999}
    assert phase2_score(tests, refs(threshold=0.1)) == GATED_SCORE == -100.0
    # exactly at the threshold passes the gate
    assert phase2_score(dict(BEST) | {"HIT_RATE": 0.1}, refs(threshold=0.1)) > 0


def test_custom_weights_and_groups_are_data():
    r = refs(groups={"acc": ["HIT_RATE"], "beh": ["LATENT_DIVERSITY"]},
             weights={"acc": 3.0, "beh": 1.0})
    assert phase2_score({"HIT_RATE": 1.0, "LATENT_DIVERSITY": 0.0}, r) == pytest.approx(0.75)


def test_aggregate_mean_std_and_scores_over_folds():
    f0 = dict(BASE) | {"HIT_RATE": 0.2, "MRR": 0.1}
    f1 = dict(BASE) | {"HIT_RATE": 0.4, "MRR": 0.3}
    out = aggregate([f0, f1], refs())
    assert out["mean"]["HIT_RATE"] == pytest.approx(0.3)
    assert out["std"]["HIT_RATE"] == pytest.approx(np.std([0.2, 0.4], ddof=1))
    assert out["phase1_score"] == pytest.approx((0.3 + 0.2) / 9)
    assert out["phase2_score"] == pytest.approx(1 * (0.3 + 0.2) / 2 / 4)
    assert out["gated"] is False
    # a gated mean: each fold above, the mean below the threshold cannot happen; one fold low
    low = aggregate([f0 | {"HIT_RATE": 0.05}, f0 | {"HIT_RATE": 0.1}], refs())
    assert low["gated"] is True and low["phase2_score"] == -100.0
    assert aggregate([f0], None)["phase2_score"] is None
    assert aggregate([f0], None)["std"]["HIT_RATE"] == 0.0


def test_missing_test_is_a_clear_error():
    with pytest.raises(ConfigError, match="MRR"):
        phase1_score({"HIT_RATE": 0.1})


def test_references_loader_names_the_file(tmp_path):
    bad = tmp_path / "refs.json"
    bad.write_text("{not json")
    with pytest.raises(DataError, match="refs.json"):
        load_references(bad)
    bad.write_text(json.dumps({"baseline": BASE, "best": BEST}))
    with pytest.raises(DataError, match=r"refs.json.*hit_rate_threshold"):
        load_references(bad)
    bad.write_text(json.dumps({"baseline": BASE, "best": BASE, "hit_rate_threshold": 0.1}))
    with pytest.raises(DataError, match=r"refs.json.*best equals baseline"):
        load_references(bad)
    partial = {k: v for k, v in BEST.items() if k != "MRR"}
    bad.write_text(json.dumps({"baseline": BASE, "best": partial, "hit_rate_threshold": 0.1}))
    with pytest.raises(DataError, match=r"'best' lacks a value for \['MRR'\]"):
        load_references(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        load_references(tmp_path / "nope.json")
    good = tmp_path / "good.json"
    good.write_text(json.dumps(refs().to_dict()))
    assert load_references(good).best == BEST


# --------------------------------------------------------------------------- per-user tests


def random_user_scores(rng, n, hr=0.3) -> UserScores:
    """Random users whose hit probability differs between slice groups (as in real data)."""
    slices = {
        "MRED_COUNTRY": rng.integers(-2, 5, n),
        "MRED_USER_ACTIVITY": rng.integers(0, 3, n),
        "MRED_TRACK_POPULARITY": rng.integers(0, 4, n),
        "MRED_ARTIST_POPULARITY": rng.integers(0, 4, n),
        "MRED_GENDER": rng.integers(-1, 3, n),
    }
    p = hr + sum(0.05 * np.maximum(c, 0) for c in slices.values()) - 0.25
    hit = rng.random(n) < p
    rank = rng.integers(1, 101, n)
    rr = np.where(hit, 1.0 / rank, 0.0)
    blw = np.where(~hit & (rng.random(n) < 0.9), rng.random(n), np.nan)
    ld = np.where(rng.random(n) < 0.95, rng.normal(-0.2, 0.1, n), np.nan)
    return UserScores(hit=hit, rr=rr, slices=slices, blw=blw, ld=ld)


def slow_tests(s: UserScores) -> dict[str, float]:
    """Per-user Python loops: the obvious definitions of design §4."""
    n = len(s)
    out = {"HIT_RATE": sum(bool(h) for h in s.hit) / n, "MRR": sum(s.rr) / n}
    for name, codes in s.slices.items():
        considered = [u for u in range(n) if codes[u] != LEFT_OUT]
        mr = sum(1 - s.hit[u] for u in considered) / len(considered)
        devs = []
        for g in sorted({int(c) for c in codes if c >= 0}):
            members = [u for u in range(n) if codes[u] == g]
            devs.append(abs(sum(1 - s.hit[u] for u in members) / len(members) - mr))
        out[name] = -sum(devs) / len(devs)
    blw = [v for v in s.blw if not np.isnan(v)]
    ld = [v for v in s.ld if not np.isnan(v)]
    out["BEING_LESS_WRONG"] = sum(blw) / len(blw)
    out["LATENT_DIVERSITY"] = sum(ld) / len(ld)
    return out


def test_user_scores_match_a_slow_reference(rng):
    s = random_user_scores(rng, 500)
    fast = {k: float(v[0]) for k, v in s.tests().items()}
    slow = slow_tests(s)
    assert fast.keys() == slow.keys()
    for k in slow:
        assert fast[k] == pytest.approx(slow[k], rel=1e-12, abs=1e-15), k


def test_user_scores_codes_on_a_hand_made_slice():
    # users: hit, miss, miss, miss; codes: group 0, group 0, in MR only, left out
    s = UserScores(hit=np.array([True, False, False, False]), rr=np.array([0.5, 0, 0, 0]),
                   slices={"MRED_GENDER": np.array([0, 0, IN_MR_ONLY, LEFT_OUT])},
                   blw=np.array([np.nan, 0.2, 0.4, np.nan]), ld=np.full(4, -0.7))
    t = {k: float(v[0]) for k, v in s.tests().items()}
    # MR over the 3 considered users = 2/3; group 0 MR = 1/2
    assert t["MRED_GENDER"] == pytest.approx(-abs(0.5 - 2 / 3))
    assert t["HIT_RATE"] == 0.25 and t["MRR"] == 0.125
    assert t["BEING_LESS_WRONG"] == pytest.approx(0.3)


def test_user_scores_round_trip_arrays(rng):
    s = random_user_scores(rng, 50)
    back = UserScores.from_arrays(s.to_arrays())
    for k, v in s.tests().items():
        np.testing.assert_array_equal(back.tests()[k], v)


def test_bootstrap_ci_contains_point_estimate_and_shrinks(rng):
    r = References(baseline={t: v - 0.05 for t, v in slow_tests(
        random_user_scores(np.random.default_rng(1), 2000)).items()},
        best={t: v + 0.05 for t, v in slow_tests(
            random_user_scores(np.random.default_rng(1), 2000)).items()},
        hit_rate_threshold=0.01)

    def widths(n):
        folds = [random_user_scores(rng, n) for _ in range(2)]
        point = aggregate([{k: float(v[0]) for k, v in f.tests().items()} for f in folds], r)
        ci = bootstrap(folds, r, n_boot=300, seed=3)
        for t in ["HIT_RATE", "MRR", "BEING_LESS_WRONG", "LATENT_DIVERSITY", "MRED_COUNTRY"]:
            lo, hi = ci["tests"][t]
            assert lo <= point["mean"][t] <= hi, t
        lo, hi = ci["phase2_score"]
        assert lo <= point["phase2_score"] <= hi
        lo1, hi1 = ci["phase1_score"]
        assert lo1 <= point["phase1_score"] <= hi1
        return {t: ci["tests"][t][1] - ci["tests"][t][0] for t in ci["tests"]} | {
            "phase2": hi - lo}

    small, large = widths(400), widths(6400)
    for t in small:
        assert large[t] < small[t] / 2, t  # ~1/sqrt(16) = 1/4 in theory


def test_bootstrap_is_seeded(rng):
    folds = [random_user_scores(rng, 300) for _ in range(3)]
    a = bootstrap(folds, n_boot=50, seed=7)
    assert a == bootstrap(folds, n_boot=50, seed=7)
    assert a != bootstrap(folds, n_boot=50, seed=8)
    # seed=0 is a seed like any other
    assert bootstrap(folds, n_boot=50, seed=0) == bootstrap(folds, n_boot=50, seed=0)


def test_bootstrap_rejects_bad_arguments(rng):
    folds = [random_user_scores(rng, 10)]
    with pytest.raises(ConfigError, match="n_boot"):
        bootstrap(folds, n_boot=1)
    with pytest.raises(ConfigError, match="level"):
        bootstrap(folds, level=95)
    with pytest.raises(ConfigError, match="at least one fold"):
        bootstrap([])


def test_bias_dominated_interval_is_flagged_and_reaches_the_point():
    from evaluation.challenge._bootstrap import _interval

    # every replicate below the point estimate: the bias exceeds the spread
    values = np.linspace(-0.040, -0.035, 200)
    flagged: list[str] = []
    lo, hi = _interval(values, -0.030, 0.025, flagged, "MRED_COUNTRY")
    assert flagged == ["MRED_COUNTRY"]
    assert lo <= -0.030 <= hi
    # replicates straddling the point: no flag, the plain bias-corrected interval
    flagged.clear()
    lo, hi = _interval(np.linspace(-1, 1, 201), 0.0, 0.025, flagged, "HIT_RATE")
    assert flagged == [] and lo < 0 < hi


def test_bootstrap_bits_do_not_depend_on_chunking(rng):
    # Integer columns are exact in BLAS; real-valued ones use a fixed summation order, so the
    # replicates (and intervals) repeat to the last bit whatever the product's shape.
    folds = [random_user_scores(rng, 500) for _ in range(2)]
    assert bootstrap(folds, n_boot=40, seed=5, chunk=40) == \
        bootstrap(folds, n_boot=40, seed=5, chunk=7)
