"""compare: paired bootstrap, swap test, Holm and BH corrections, end to end on tiny runs."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import itertools
import json
import math
import shutil
import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from reclist.reclist import rec_test
from rich.console import Console

from evaluation import EvalRSRecList
from evaluation.analysis import (
    ADDITIVE_TESTS,
    bc_interval,
    benjamini_hochberg,
    compare,
    holm,
    load_results,
    paired_bootstrap,
    swap_test,
)
from evaluation.analysis._tiers import run_standings
from evaluation.baselines import PopularityModel, RandomModel
from evaluation.challenge import (
    BEING_LESS_WRONG,
    HIT_RATE,
    LATENT_DIVERSITY,
    LEADERBOARD_TESTS,
    MRED_COUNTRY,
    MRR,
    UserScores,
    bootstrap,
)
from evaluation.cli import main
from evaluation.errors import ConfigError, PredictionWarning
from evaluation.runner import EvalRSRunner
from evaluation.standings import read_board

# --------------------------------------------------------------------------- helpers


@contextlib.contextmanager
def quiet():
    """Silence the runner's reminder that the baselines recommend heard tracks."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PredictionWarning)
        yield


def user_scores(hit, rr=None, blw=None, ld=None, country=None) -> UserScores:
    """Per-user contributions of one fold from plain lists."""
    n = len(hit)
    hit = np.asarray(hit, dtype=bool)
    rr = np.where(hit, 1.0, 0.0) if rr is None else np.asarray(rr, dtype=np.float64)
    blw = np.full(n, np.nan) if blw is None else np.asarray(blw, dtype=np.float64)
    ld = np.zeros(n) if ld is None else np.asarray(ld, dtype=np.float64)
    slices = {} if country is None else {MRED_COUNTRY: np.asarray(country, dtype=np.int32)}
    return UserScores(hit=hit, rr=rr, slices=slices, blw=blw, ld=ld)


def swapped(a: UserScores, b: UserScores, mask) -> tuple[UserScores, UserScores]:
    """The two runs after exchanging the users in ``mask`` (a slow, obvious reference)."""
    m = np.asarray(mask, dtype=bool)

    def pick(x, y):
        return np.where(m, y, x)

    return (UserScores(hit=pick(a.hit, b.hit), rr=pick(a.rr, b.rr), slices=a.slices,
                       blw=pick(a.blw, b.blw), ld=pick(a.ld, b.ld)),
            UserScores(hit=pick(b.hit, a.hit), rr=pick(b.rr, a.rr), slices=b.slices,
                       blw=pick(b.blw, a.blw), ld=pick(b.ld, a.ld)))


def fold_mean_difference(base: list[UserScores], other: list[UserScores], test: str) -> float:
    """other - baseline of ``test``, each averaged over folds, from ``UserScores.tests``."""
    return float(np.mean([o.tests()[test][0] for o in other])
                 - np.mean([b.tests()[test][0] for b in base]))


# --------------------------------------------------------------------------- corrections


def test_holm_and_bh_hand_computed():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted 0.005, 0.01, 0.03, 0.04 -> 4*0.005, 3*0.01, 2*0.03, 1*0.04 = .02 .03 .06 .04,
    # then the running maximum: .02 .03 .06 .06
    np.testing.assert_allclose(holm(p), [0.03, 0.06, 0.06, 0.02])
    # m p / rank = .02 .02 .04 .04, then the running minimum from the top: the same
    np.testing.assert_allclose(benjamini_hochberg(p), [0.02, 0.04, 0.04, 0.02])
    # capped at 1; NaN stays NaN and is no member of the family (m = 2 here)
    np.testing.assert_allclose(holm([0.6, np.nan, 0.7]), [1.0, np.nan, 1.0])
    np.testing.assert_allclose(benjamini_hochberg([0.6, np.nan, 0.02]), [0.6, np.nan, 0.04])
    assert holm([]).shape == (0,)


def test_bh_matches_scipy_and_holm_a_slow_reference(rng):
    scipy_stats = pytest.importorskip("scipy.stats")
    for m in (1, 2, 7, 40):
        p = rng.uniform(0, 1, m) ** 3
        p[rng.integers(0, m)] = p[0]  # ties
        np.testing.assert_allclose(benjamini_hochberg(p),
                                   scipy_stats.false_discovery_control(p, method="bh"),
                                   rtol=1e-12)
        order = sorted(range(m), key=lambda i: p[i])
        slow = np.empty(m)
        running = 0.0
        for rank, i in enumerate(order):
            running = max(running, min(1.0, (m - rank) * p[i]))
            slow[i] = running
        np.testing.assert_allclose(holm(p), slow, rtol=1e-12)


def test_corrections_refuse_bad_p_values():
    with pytest.raises(ConfigError, match=r"\[0, 1\]"):
        holm([0.2, 1.5])
    with pytest.raises(ConfigError, match="one-dimensional"):
        benjamini_hochberg([[0.1, 0.2]])


# --------------------------------------------------------------------------- swap test


def test_swap_test_hand_computed_three_users():
    base = [user_scores([0, 0, 1])]
    other = [user_scores([1, 1, 1])]
    out = swap_test(base, other)
    # difference 2/3; of the 8 swaps, swapping neither or both of users 0 and 1 keeps
    # |difference| = 2/3 (user 2 is a tie either way): 4 of 8
    assert out[HIT_RATE]["difference"] == pytest.approx(2 / 3)
    assert out[HIT_RATE]["p"] == 0.5
    assert out[HIT_RATE]["exact"] and out[HIT_RATE]["permutations"] == 8
    assert set(out) == set(ADDITIVE_TESTS)


def test_swap_test_exact_equals_enumeration_of_swapped_runs(rng):
    # two folds (4 + 3 users: 128 swaps to enumerate), BLW left out (NaN) for different users
    # in the two runs
    base, other = [], []
    for n in (4, 3):
        blw_a = np.where(rng.random(n) < 0.3, np.nan, rng.normal(size=n))
        blw_b = np.where(rng.random(n) < 0.3, np.nan, rng.normal(size=n))
        base.append(user_scores(rng.random(n) < 0.4, rr=rng.random(n), blw=blw_a,
                                ld=rng.normal(size=n)))
        other.append(user_scores(rng.random(n) < 0.6, rr=rng.random(n), blw=blw_b,
                                 ld=rng.normal(size=n)))
    out = swap_test(base, other)
    for test in ADDITIVE_TESTS:
        observed = fold_mean_difference(base, other, test)
        assert out[test]["difference"] == pytest.approx(observed, rel=1e-12)
        hits = 0
        for bits in itertools.product((0, 1), repeat=7):
            masks = [bits[:4], bits[4:]]
            pairs = [swapped(a, b, m) for a, b, m in zip(base, other, masks)]
            d = fold_mean_difference([p[0] for p in pairs], [p[1] for p in pairs], test)
            hits += abs(d) >= abs(observed) - 1e-12
        assert out[test]["p"] == pytest.approx(hits / 2 ** 7, abs=1e-15), test


def test_swap_test_monte_carlo_agrees_with_exact_and_is_seeded(rng):
    n = 14
    base = [user_scores(rng.random(n) < 0.3, rr=rng.random(n), blw=rng.normal(size=n),
                        ld=rng.normal(size=n))]
    other = [user_scores(rng.random(n) < 0.7, rr=rng.random(n), blw=rng.normal(size=n),
                         ld=rng.normal(size=n))]
    exact = swap_test(base, other)
    drawn = swap_test(base, other, permutations=20000, seed=3, exact_max_users=0)
    again = swap_test(base, other, permutations=20000, seed=3, exact_max_users=0)
    for test in ADDITIVE_TESTS:
        p = exact[test]["p"]
        assert not drawn[test]["exact"]
        # (1 + hits) / (1 + B) against the exact p: within 4 standard errors
        assert abs(drawn[test]["p"] - p) <= 4 * math.sqrt(p * (1 - p) / 20000) + 1e-4
        assert drawn[test]["p"] == again[test]["p"]


# --------------------------------------------------------------------------- paired bootstrap


def test_paired_bootstrap_hand_computed_three_users():
    # per-user HIT_RATE differences (other - baseline): +1, 0, -1 ... and +1
    base = [user_scores([0, 1, 1])]
    other = [user_scores([1, 1, 0])]
    reps, point = paired_bootstrap([base, other], n_boot=20000, seed=5)
    assert point[HIT_RATE].tolist() == [2 / 3, 2 / 3]
    diff = reps[HIT_RATE][1] - reps[HIT_RATE][0]
    # the same resampled users for both runs: each replicate's difference is the mean of
    # three of the per-user differences (+1, 0, -1), a multiple of 1/3 in [-1, 1]
    assert np.allclose(diff * 3, np.round(diff * 3)) and np.abs(diff).max() <= 1
    # exact bootstrap law over the 27 equally likely resamples
    law = [np.mean(s) for s in itertools.product((1, 0, -1), repeat=3)]
    for value in (-1, -2 / 3, -1 / 3, 0, 1 / 3):
        expected = np.mean(np.array(law) <= value + 1e-12)
        got = np.mean(diff <= value + 1e-12)
        assert abs(got - expected) <= 4 * math.sqrt(expected * (1 - expected) / 20000) + 1e-9
    # a symmetric law around a zero difference: no evidence either way; -1 and +1 each have
    # probability 1/27 > 2.5 %, so they are the interval's ends
    ci = bc_interval(diff, 0.0, 0.95)
    assert ci["ci_low"] == pytest.approx(-1) and ci["ci_high"] == pytest.approx(1)
    assert ci["p"] == pytest.approx(1.0, abs=0.03)


def test_paired_bootstrap_is_independent_of_the_order_of_users_pairs(rng):
    # pairing: the same users resampled in both runs, so a run compared with itself never
    # differs on any replicate, for the MRED tests too
    n = 40
    run = [user_scores(rng.random(n) < 0.5, rr=rng.random(n), ld=rng.normal(size=n),
                       country=rng.integers(-2, 3, n))]
    reps, _ = paired_bootstrap([run, run], n_boot=200, seed=1)
    for test, values in reps.items():
        np.testing.assert_array_equal(values[0], values[1], err_msg=test)
    p = bc_interval(reps[MRED_COUNTRY][1] - reps[MRED_COUNTRY][0], 0.0, 0.95)["p"]
    assert p == 1.0


def test_bc_interval_p_value_floor_and_inversion():
    values = np.linspace(1, 2, 999)  # every replicate above 0
    out = bc_interval(values, 1.5, 0.95)
    assert out["p"] == pytest.approx(2 / 1000)
    assert out["ci_low"] > 0 and not out["bias_dominated"]
    # symmetric replicates around 0.1 with point 0.1: p is the percentile p-value
    values = np.random.default_rng(0).normal(0.1, 0.1, 4000)
    out = bc_interval(values, float(np.median(values)), 0.95)
    share = np.mean(values < 0)
    assert out["p"] == pytest.approx(2 * share, rel=0.05)
    assert (out["p"] < 0.05) == (out["ci_low"] > 0)


# --------------------------------------------------------------------------- tiny runs


def test_bc_interval_excludes_zero_exactly_when_p_is_below_one_minus_level():
    # replicates with ties (rounded) and without, points in the tails: the interval shown
    # and the p-value never disagree, and a bias-dominated statistic has no p-value
    rng = np.random.default_rng(1)
    checked = 0
    for i in range(600):
        b = int(rng.choice([50, 200, 1000]))
        shift, sd = rng.normal(0, 0.05), abs(rng.normal(0.03, 0.02)) + 1e-4
        values = rng.normal(shift, sd, b)
        if i % 3 == 0:
            values = np.round(values, 2)
        point = shift + rng.normal(0, 3 * sd)
        for level in (0.9, 0.95):
            out = bc_interval(values, point, level)
            if out["bias_dominated"]:
                assert math.isnan(out["p"])
                continue
            excluded = not out["ci_low"] <= 0 <= out["ci_high"]
            assert excluded == (out["p"] < 1 - level), (i, level, out)
            checked += 1
    assert checked > 400


def test_bc_interval_bias_dominated_has_no_p_value():
    values = np.linspace(-1, 1, 1001)
    out = bc_interval(values, 0.999, 0.95)  # nearly every replicate below the point
    assert out["bias_dominated"] and math.isnan(out["p"])
    assert out["ci_low"] <= 0.999 <= out["ci_high"]  # widened to reach the point estimate


@pytest.fixture(scope="module")
def two_runs(tiny, tmp_path_factory):
    """Run directories of two baselines on the tiny synthetic data (4 folds of 150 users)."""
    results = tmp_path_factory.mktemp("compare") / "results"
    runner = EvalRSRunner(tiny, results_dir=results, progress=False, verbose=False,
                          reports=False, n_boot=100)
    with quiet():  # the baselines recommend heard tracks; the runner says so
        popularity = runner.evaluate(PopularityModel())
        random = runner.evaluate(RandomModel())
    return results / popularity.run_id, results / random.run_id


def test_compare_two_baselines_end_to_end(two_runs):
    pop, rnd = (load_results(p) for p in two_runs)
    cmp = compare([pop, rnd], baseline=0, n_boot=300, seed=0)
    frame = cmp.to_frame()
    assert list(frame.columns[:13]) == [
        "model", "test", "estimate", "baseline_estimate", "difference", "ci_low", "ci_high",
        "p_bootstrap", "p_permutation", "p", "p_holm", "p_bh", "significant"]
    names = [*LEADERBOARD_TESTS, "phase1_score", "phase2_score"]
    assert frame["test"].tolist() == names and set(frame["model"]) == {"RandomModel"}
    assert cmp.family_size == 11 and cmp.family.startswith("11 tests = 1 model x 11 tests")
    rows = frame.set_index("test")
    for t in LEADERBOARD_TESTS:
        assert rows.loc[t, "estimate"] == pytest.approx(rnd.test_means[t], rel=1e-12)
        assert rows.loc[t, "baseline_estimate"] == pytest.approx(pop.test_means[t], rel=1e-12)
    assert rows.loc["phase1_score", "estimate"] == pytest.approx(rnd.phase1_score)
    assert rows.loc["phase2_score", "estimate"] == pytest.approx(rnd.leaderboard_score)
    np.testing.assert_allclose(rows["difference"], rows["estimate"] - rows["baseline_estimate"])
    # the interval holds the estimate; p is the permutation p of an additive test only
    assert (rows["ci_low"] <= rows["difference"]).all()
    assert (rows["difference"] <= rows["ci_high"]).all()
    additive = rows.index.isin(ADDITIVE_TESTS)
    assert rows.loc[additive, "p_permutation"].notna().all()
    assert rows.loc[~additive, "p_permutation"].isna().all()
    np.testing.assert_array_equal(rows["p"], np.where(additive, rows["p_permutation"],
                                                      rows["p_bootstrap"]))
    np.testing.assert_array_equal(rows["p_holm"], holm(rows["p"].to_numpy()))
    np.testing.assert_array_equal(rows["p_bh"], benjamini_hochberg(rows["p"].to_numpy()))
    # significant by Holm, but for the score the standings rank by: as they tell the runs
    # apart (the relation of the tiers)
    ranked = rows.index == cmp.standings["score"]
    assert (rows["significant"] == (rows["p_holm"] <= 0.05))[~ranked].all()
    assert rows.loc[ranked, "significant"].tolist() == [bool(cmp.standings["rows"][0]["beats"])]
    # the random model's hit rate is far below popularity's on 600 users: a clear effect
    assert rows.loc[HIT_RATE, "difference"] < 0 and rows.loc[HIT_RATE, "significant"]
    assert rows["higher_is_better"].all()
    # swap p for additive tests matches a direct call
    direct = swap_test([pop.user_scores(f) for f in range(4)],
                       [rnd.user_scores(f) for f in range(4)], seed=0)
    for t in (MRR, BEING_LESS_WRONG, LATENT_DIVERSITY):
        assert rows.loc[t, "p_permutation"] == direct[t]["p"]


@pytest.mark.parametrize("skip", [{}, {MRED_COUNTRY: "one group", LATENT_DIVERSITY: "no vectors"}])
def test_paired_bootstrap_reproduces_the_runs_own_intervals(two_runs, skip):
    pop, rnd = (load_results(p) for p in two_runs)
    folds = [[r.user_scores(f) for f in range(r.num_folds)] for r in (pop, rnd)]
    reps, point = paired_bootstrap(folds, pop.references, n_boot=150, seed=9,
                                   not_applicable=skip)
    assert not set(skip) & set(reps)
    for i in range(2):
        own = bootstrap(folds[i], pop.references, n_boot=150, seed=9, not_applicable=skip)
        for t, interval in own["tests"].items():
            if t in skip:
                continue
            got = bc_interval(reps[t][i], point[t][i], 0.95)
            assert [got["ci_low"], got["ci_high"]] == interval, t
        for s in ("phase1_score", "phase2_score"):
            got = bc_interval(reps[s][i], point[s][i], 0.95)
            assert [got["ci_low"], got["ci_high"]] == own[s], s


def test_compare_is_deterministic(two_runs):
    a = compare(list(two_runs), n_boot=200, seed=4).to_frame()
    b = compare(list(two_runs), n_boot=200, seed=4).to_frame()
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    c = compare(list(two_runs), n_boot=200, seed=5).to_frame()
    assert not np.array_equal(a["ci_low"].to_numpy(), c["ci_low"].to_numpy())


def test_compare_baseline_as_path_or_run(two_runs):
    by_index = compare(list(two_runs), baseline=1, n_boot=200).to_frame()
    by_path = compare([two_runs[0]], baseline=two_runs[1], n_boot=200).to_frame()
    by_run = compare(list(two_runs), baseline=load_results(two_runs[1]), n_boot=200).to_frame()
    assert set(by_index["model"]) == {"PopularityModel"}
    pd.testing.assert_frame_equal(by_index, by_path, check_exact=True)
    pd.testing.assert_frame_equal(by_index, by_run, check_exact=True)


def test_compare_refuses_bad_input(two_runs):
    with pytest.raises(ConfigError, match="besides the baseline"):
        compare([two_runs[0]])
    with pytest.raises(ConfigError, match="twice"):
        compare([two_runs[0], two_runs[0]])
    with pytest.raises(ConfigError, match="out of range"):
        compare(list(two_runs), baseline=5)
    with pytest.raises(ConfigError, match="n_boot"):
        compare(list(two_runs), n_boot=10)


def test_compare_refuses_other_folds(tiny, two_runs, tmp_path):
    from evaluation.dataset import ChallengeDataset

    other = ChallengeDataset(source="synthetic", scale="tiny", num_folds=2)
    runner = EvalRSRunner(other, results_dir=tmp_path, progress=False, verbose=False,
                          reports=False, n_boot=0)
    with quiet():
        res = runner.evaluate(PopularityModel())
    with pytest.raises(ConfigError, match="not comparable: the fold parameters differ"):
        compare([two_runs[0], tmp_path / res.run_id])


def test_compare_refuses_other_users(tiny, two_runs, tmp_path):
    runner = EvalRSRunner(tiny, results_dir=tmp_path, progress=False, verbose=False,
                          reports=False, n_boot=0)
    with quiet():
        res = runner.evaluate(RandomModel(), limit=100)
    with pytest.raises(ConfigError, match="limit"):
        compare([two_runs[0], tmp_path / res.run_id])
    # same counts, other users: the users' groups no longer match user by user
    pop, rnd = (load_results(p) for p in two_runs)
    scores = rnd.user_scores(2)
    order = np.roll(np.arange(len(scores)), 1)
    rnd._cache[2] = UserScores(hit=scores.hit[order], rr=scores.rr[order],
                               slices={k: v[order] for k, v in scores.slices.items()},
                               blw=scores.blw[order], ld=scores.ld[order])
    with pytest.raises(ConfigError, match="test users of fold 2 differ"):
        compare([pop, rnd])


def test_compare_refuses_a_tampered_run(two_runs, tmp_path):
    copy = tmp_path / two_runs[1].name
    shutil.copytree(two_runs[1], copy)
    with np.load(copy / "fold_0_users.npz") as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["hit"] = ~arrays["hit"]
    with open(copy / "fold_0_users.npz", "wb") as fh:
        np.savez(fh, **arrays)
    with pytest.raises(ConfigError, match="fold_0_users.npz: checksum does not match"):
        compare([two_runs[0], copy])


def test_bias_dominated_rows_are_marked_in_the_printed_table(two_runs):
    import dataclasses
    import io

    from rich.console import Console

    cmp = compare(list(two_runs), n_boot=200, seed=1)

    def printed(comparison) -> str:
        console = Console(width=200, file=io.StringIO(), color_system=None)
        console.print(comparison)
        return console.file.getvalue()

    assert "†" not in printed(dataclasses.replace(
        cmp, rows=[{**r, "bias_dominated": False} for r in cmp.rows]))
    flagged = dataclasses.replace(cmp, rows=[{**r, "bias_dominated": r["test"] == "MRR"}
                                             for r in cmp.rows])
    out = printed(flagged)
    marked = [line for line in out.splitlines() if "]" in line and "†" in line]
    assert len(marked) == 1 and " MRR " in marked[0]
    assert "† the interval was widened to reach the estimate" in out


def test_cli_compare_writes_table_csv_and_json(two_runs, tmp_path, capsys):
    out = tmp_path / "report"
    status = main(["compare", str(two_runs[0]), str(two_runs[1] / "results.json"),
                   "--out", str(out), "--n-boot", "200", "--seed", "1"])
    assert status == 0
    printed = capsys.readouterr().out
    assert "HIT_RATE" in printed and "Family: 11 tests = 1 model x 11 tests" in printed
    frame = pd.read_csv(out / "comparison.csv")
    expected = compare(list(two_runs), n_boot=200, seed=1).to_frame()
    assert frame["test"].tolist() == expected["test"].tolist()
    np.testing.assert_allclose(frame["p_holm"], expected["p_holm"], rtol=1e-12)
    data = json.loads((out / "comparison.json").read_text())
    assert data["family_size"] == 11 and data["baseline"]["model"] == "PopularityModel"
    assert data["rows"][2]["p_permutation"] is None  # MRED: not additive, NaN as null
    assert data["standings"]["min_difference"] == 0.0  # the default: every difference counts
    assert len(data["standings"]["rows"]) == 2
    pytest.importorskip("matplotlib")
    assert (out / "forest.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("args, message", [
    (["--alpha", "2"], "--alpha"),
    (["--n-boot", "3"], "n_boot"),
    (["MISSING-RUN"], "neither a run directory"),
])
def test_cli_compare_bad_input_exits_2(two_runs, args, message, capsys):
    runs = [str(two_runs[0])] + ([] if args[0] == "MISSING-RUN" else [str(two_runs[1])])
    status = main(["compare", *runs, *args])
    assert status == 2
    assert message in capsys.readouterr().err


class _ExtraTest(EvalRSRecList):
    """A custom test: the share of test users whose target is in their top 10."""

    @rec_test(test_type="HIT_RATE_AT_10")
    def hit_rate_at_10(self):
        return float(((self.ranks > 0) & (self.ranks <= 10)).mean())


def test_a_custom_test_does_not_make_runs_incomparable(tiny, two_runs, tmp_path):
    runner = EvalRSRunner(tiny, results_dir=tmp_path, progress=False, verbose=False,
                          reports=False, n_boot=100)
    with quiet():
        custom = runner.evaluate(RandomModel(), reclist_cls=_ExtraTest)
    base = load_results(two_runs[0])
    assert custom.run_hash != base.run_hash  # the custom test is part of the run hash
    cmp = compare([two_runs[0], tmp_path / custom.run_id], n_boot=100, seed=3)
    assert cmp.left_out == {"HIT_RATE_AT_10": [custom.run_id]}
    # the shared tests compare exactly as they do between runs without the custom test
    plain = compare([two_runs[0], two_runs[1]], n_boot=100, seed=3)
    assert [(r["test"], r["difference"], r["ci_low"], r["p_holm"]) for r in cmp.rows] == \
        [(r["test"], r["difference"], r["ci_low"], r["p_holm"]) for r in plain.rows]
    assert cmp.to_dict()["left_out"] == {"HIT_RATE_AT_10": [custom.run_id]}
    console = Console(width=100, file=io.StringIO(), color_system=None)
    console.print(cmp)
    flat = " ".join(console.file.getvalue().split())
    assert f"Left out: HIT_RATE_AT_10 (in {custom.run_id})" in flat


def test_the_not_comparable_error_names_what_differs_in_full(tiny, two_runs, tmp_path):
    base = load_results(two_runs[0])
    other = dataclasses.replace(base, run_dir=tmp_path, run_id="other",
                                fold_params={**base.fold_params, "seed": 7, "extra": "x" * 90})
    with pytest.raises(ConfigError) as err:
        compare([base, other])
    message = str(err.value)
    assert "the fold parameters differ (extra: none vs " + repr("x" * 90) + ", seed: " in message
    assert "..." not in message


def test_compare_reads_the_runs_as_a_board_tiers_and_rank_intervals(two_runs):
    pop, rnd = (load_results(p) for p in two_runs)
    cmp = compare([pop, rnd], n_boot=200, seed=4, level=0.9, min_difference=0.01)
    board = cmp.standings
    # the same replicates as the comparison's, fed to the board's own standings
    folds = [[run.user_scores(f) for f in range(pop.num_folds)] for run in (pop, rnd)]
    reps, point = paired_bootstrap(folds, pop.references, n_boot=200, seed=4,
                                   not_applicable=pop.not_applicable)
    order = np.argsort(-point["phase2_score"], kind="stable")
    want = read_board(point["phase2_score"][order], reps["phase2_score"][order], level=0.9,
                      min_difference=0.01)
    assert board["score"] == "phase2_score" and board["level"] == 0.9
    assert board["min_difference"] == 0.01
    assert [r["run_id"] for r in board["rows"]] == [(pop, rnd)[i].run_id for i in order]
    assert [r["tier"] for r in board["rows"]] == [int(t) for t in want.tier]
    assert [r["rank_interval"] for r in board["rows"]] == want.rank_interval.tolist()
    assert [r["score"] for r in board["rows"]] == point["phase2_score"][order].tolist()
    # the board order is by score, and a run's place lies within its rank interval
    assert [r["score"] for r in board["rows"]] == sorted(point["phase2_score"], reverse=True)
    assert all(lo <= r["place"] <= hi for r in board["rows"] for lo, hi in [r["rank_interval"]])
    assert cmp.to_dict()["standings"]["rows"][0]["name"] == board["rows"][0]["name"]
    console = Console(width=100, file=io.StringIO(), color_system=None)
    console.print(cmp)
    out = console.file.getvalue()
    assert "runs in one tier cannot be told" in " ".join(out.split())
    tier_lines = [line.split() for line in out.splitlines()
                  if line.strip().startswith(("1 ", "2 ")) and "Model" in line]
    assert [line[:2] for line in tier_lines] == [[str(r["tier"]), str(r["place"])]
                                                for r in board["rows"]]


def test_compare_command_takes_a_minimum_practical_difference(two_runs, capsys):
    # read from the printed standings: the files --out writes (and their forest plot, a
    # second of drawing) are the same writer's as in test_cli_compare_writes_table_csv_and_json
    huge = 1e9  # every difference is smaller: one tier, every run may hold every place
    assert main(["compare", *map(str, two_runs), "--n-boot", "100", "--min-difference",
                 str(huge)]) == 0
    out = capsys.readouterr().out
    assert "differences below 1e+09 are ties" in " ".join(out.split())
    tiers = [line.split()[0] for line in out.splitlines()
             if line.strip().startswith(("1 ", "2 ")) and "Model" in line]
    assert tiers == ["1", "1"]


def test_the_standings_order_ties_by_run_id_and_name_every_other_run():
    reps = np.vstack([np.full(10, 0.2), np.full(10, 0.5), np.full(10, 0.5)])
    runs = [SimpleNamespace(run_id=i, name=f"Model {i}", params={}) for i in ("z", "b", "a")]
    board = run_standings(runs, {"phase1_score": reps}, {"phase1_score": reps[:, 0]},
                          level=0.95)
    rows = board["rows"]
    assert [r["run_id"] for r in rows] == ["a", "b", "z"] and board["score"] == "phase1_score"
    assert [r["place"] for r in rows] == [1, 2, 3] and rows[0]["name"] == "Model a"
    assert rows[0]["win_probability"] == {"b": 0.5, "z": 1.0}
    assert rows[2]["tier"] == 2 and rows[0]["tier"] == rows[1]["tier"] == 1
