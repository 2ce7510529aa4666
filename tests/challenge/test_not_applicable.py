"""Tests a dataset cannot measure are not applicable: reported as such (null, with a reason),
left out of the phase-1 mean, of the phase-2 groups and of the bootstrap, never scored as 0."""

from __future__ import annotations

import hashlib
import json
import warnings

import pandas as pd
import pytest

from evaluation import ChallengeDataset
from evaluation.baselines import PopularityModel
from evaluation.challenge import (
    BEING_LESS_WRONG,
    HIT_RATE,
    LATENT_DIVERSITY,
    LEADERBOARD_TESTS,
    MRED_ARTIST_POPULARITY,
    MRED_COUNTRY,
    MRED_GENDER,
    MRED_TRACK_POPULARITY,
    MRED_USER_ACTIVITY,
    MRR,
    TESTS,
    References,
    UserScores,
    aggregate,
    applicable_tests,
    bootstrap,
    check_coverage,
    dataset_not_applicable,
    not_applicable_tests,
    phase2_score,
    scored_groups,
)
from evaluation.contract import run_hash
from evaluation.errors import ConfigError, RunWarning, ScoringWarning, SubmissionRejected
from evaluation.runner import EvalRSRunner
from tests._movielens_files import write_movielens_like

MOVIELENS_NA = (MRED_COUNTRY, MRED_ARTIST_POPULARITY, BEING_LESS_WRONG, LATENT_DIVERSITY)
APPLICABLE = (HIT_RATE, MRR, MRED_USER_ACTIVITY, MRED_TRACK_POPULARITY, MRED_GENDER)


@pytest.fixture(scope="module")
def ml_dataset(tmp_path_factory):
    root = write_movielens_like(tmp_path_factory.mktemp("ml") / "ml-like")
    return ChallengeDataset(source=f"movielens:{root}")


@pytest.fixture(scope="module")
def ml_run(ml_dataset, tmp_path_factory):
    """A PopularityModel run on the MovieLens-like data, with the warnings it raised."""
    results = tmp_path_factory.mktemp("results")
    runner = EvalRSRunner(ml_dataset, results_dir=results, references=None, n_boot=40,
                          progress=False, verbose=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = runner.evaluate(PopularityModel())
    return runner, result, caught


# --------------------------------------------------------------------------- the decision


def test_movielens_like_data_has_the_three_kinds_of_not_applicable(ml_dataset):
    na = dataset_not_applicable(ml_dataset)
    assert list(na) == list(MOVIELENS_NA)  # in the order of LEADERBOARD_TESTS
    assert "no user has a country" in na[MRED_COUNTRY]
    assert "one group 'missing'" in na[MRED_COUNTRY]
    assert na[MRED_ARTIST_POPULARITY].startswith(f"same slices as {MRED_TRACK_POPULARITY}")
    assert na[BEING_LESS_WRONG] == na[LATENT_DIVERSITY] == "the dataset has no track vectors"
    assert applicable_tests(na) == list(APPLICABLE)


def test_synthetic_data_has_every_test_applicable():
    assert dataset_not_applicable(ChallengeDataset(source="synthetic", scale="tiny")) == {}
    assert applicable_tests({}) == applicable_tests(None) == list(LEADERBOARD_TESTS)


def test_slice_rules_one_group_no_group_and_shared_artists():
    users = pd.DataFrame({"country": ["US", "US", "US"], "gender": [None, None, None]},
                         index=pd.Index([1, 2, 3], name="user_id"))
    tracks = pd.DataFrame({"artist_id": [7, 7, 8]}, index=pd.Index([1, 2, 3], name="track_id"))
    na = not_applicable_tests(users, tracks, vectors=None)
    assert "one group 'US'" in na[MRED_COUNTRY]
    assert "missing for every user" in na[MRED_GENDER]
    assert MRED_ARTIST_POPULARITY not in na  # two tracks share an artist: its own slices
    # a missing country is a group of its own and a country outside the list ("XX") is left
    # out of the slice: "US" and "missing" are two groups
    users2 = users.assign(country=["US", None, "XX"], gender=["m", "f", "m"])
    assert not_applicable_tests(users2, tracks, vectors=None).keys() == {BEING_LESS_WRONG,
                                                                        LATENT_DIVERSITY}


# --------------------------------------------------------------------------- the run


def test_run_reports_not_applicable_tests_as_null_with_reasons(ml_run, ml_dataset):
    _, result, caught = ml_run
    assert result.not_applicable == dataset_not_applicable(ml_dataset)
    data = json.loads(result.path.read_text())
    assert data["not_applicable"] == result.not_applicable
    for t in MOVIELENS_NA:
        assert data["aggregate"]["mean"][t] is None and data["aggregate"]["std"][t] is None
        assert all(f["tests"][t] is None for f in data["folds"])
        assert all(f["details"][t] == {"not_applicable": result.not_applicable[t]}
                   for f in data["folds"])
    for t in APPLICABLE:
        assert all(isinstance(f["tests"][t], float) for f in data["folds"])
    # one line in the results instead of a warning per fold and test
    assert not [w for w in caught if issubclass(w.category, ScoringWarning)]
    assert any("not applicable" in r for r in result.not_eligible_because)


def test_phase1_is_the_mean_of_the_applicable_tests(ml_run):
    _, result, _ = ml_run
    folds = result.folds
    fold_means = {t: sum(f["tests"][t] for f in folds) / len(folds) for t in APPLICABLE}
    assert result.phase1_score == pytest.approx(sum(fold_means.values()) / 5, rel=1e-12)
    for t in APPLICABLE:
        assert result.aggregate["mean"][t] == pytest.approx(fold_means[t], rel=1e-12)
    frame = result.to_frame()
    assert frame.loc[MRED_COUNTRY, ["mean", "std", "ci_low", "ci_high"]].isna().all()


def test_not_applicable_tests_have_no_interval(ml_run):
    _, result, _ = ml_run
    ci = result.confidence_intervals
    for t in MOVIELENS_NA:
        assert ci["tests"][t] is None
    for t in APPLICABLE:
        low, high = ci["tests"][t]
        assert low <= high
    low, high = ci["phase1_score"]
    assert low <= result.phase1_score <= high or "phase1_score" in ci["bias_dominated"]


def test_resumed_run_reuses_folds_with_null_tests(ml_run):
    runner, result, _ = ml_run
    with warnings.catch_warnings():
        warnings.simplefilter("error", RunWarning)  # a refused fold would warn
        again = runner.evaluate(PopularityModel())
    assert again.aggregate == result.aggregate


def test_summary_shows_na(ml_run):
    from rich.console import Console

    _, result, _ = ml_run
    console = Console(width=120, record=True)
    console.print(result)
    text = console.export_text()
    assert "MRED_COUNTRY" in text and "n/a" in text
    assert "mean of the 5 applicable tests" in text


# --------------------------------------------------------------------------- phase 2

def _refs(tests, groups=None, weights=None) -> References:
    base = {t: -0.5 for t in tests} | {HIT_RATE: 0.1, MRR: 0.01}
    best = {t: -0.1 for t in tests} | {HIT_RATE: 0.3, MRR: 0.05}
    kw = {} if groups is None else {"groups": groups, "weights": weights}
    return References(baseline={t: base[t] for t in tests}, best={t: best[t] for t in tests},
                      hit_rate_threshold=0.05, **kw)


FOLDS = [
    {HIT_RATE: 0.2, MRR: 0.03, MRED_COUNTRY: 0.0, MRED_USER_ACTIVITY: -0.3,
     MRED_TRACK_POPULARITY: -0.2, MRED_ARTIST_POPULARITY: -0.25, MRED_GENDER: -0.1,
     BEING_LESS_WRONG: None, LATENT_DIVERSITY: None},
    {HIT_RATE: 0.3, MRR: 0.05, MRED_COUNTRY: 0.0, MRED_USER_ACTIVITY: -0.5,
     MRED_TRACK_POPULARITY: -0.4, MRED_ARTIST_POPULARITY: -0.45, MRED_GENDER: -0.3,
     BEING_LESS_WRONG: None, LATENT_DIVERSITY: None},
]
NA = {t: "why" for t in MOVIELENS_NA}


def test_aggregate_by_hand_phase1_and_renormalised_phase2():
    refs = _refs(LEADERBOARD_TESTS)  # the default groups: all nine tests
    out = aggregate(FOLDS, refs, NA)
    # fold means: HR 0.25, MRR 0.04, UA -0.4, TP -0.3, GENDER -0.2
    assert out["phase1_score"] == pytest.approx((0.25 + 0.04 - 0.4 - 0.3 - 0.2) / 5)
    assert out["mean"][MRED_COUNTRY] is None and out["mean"][BEING_LESS_WRONG] is None
    # normalised: HR (0.25-0.1)/0.2 = 0.75, MRR (0.04-0.01)/0.04 = 0.75,
    # MREDs (x+0.5)/0.4: UA 0.25, TP 0.5, GENDER 0.75
    assert set(out["normalised"]) == set(APPLICABLE)
    acc, fair = 0.75, (0.25 + 0.5 + 0.75) / 3
    # behavioural has no applicable test: dropped; accuracy 1 and fairness 1.5 are scaled to
    # keep the total 4: 1.6 and 2.4
    assert out["phase2_score"] == pytest.approx((1.6 * acc + 2.4 * fair) / 4)
    assert out["phase2_score"] == pytest.approx((1 * acc + 1.5 * fair) / 2.5)
    groups, weights = scored_groups(refs, NA)
    assert groups == {"accuracy": [HIT_RATE, MRR],
                      "fairness": [MRED_USER_ACTIVITY, MRED_TRACK_POPULARITY, MRED_GENDER]}
    assert weights == pytest.approx({"accuracy": 1.6, "fairness": 2.4})


def test_references_of_the_applicable_tests_score_the_same():
    refs = _refs(APPLICABLE, groups={"accuracy": [HIT_RATE, MRR], "fairness": list(
        APPLICABLE[2:])}, weights={"accuracy": 1.0, "fairness": 1.5})
    full = aggregate(FOLDS, _refs(LEADERBOARD_TESTS), NA)
    assert aggregate(FOLDS, refs, NA)["phase2_score"] == pytest.approx(full["phase2_score"])


def test_references_lacking_an_applicable_test_are_refused():
    refs = _refs(APPLICABLE, groups={"accuracy": [HIT_RATE, MRR], "fairness": list(
        APPLICABLE[2:])}, weights={"accuracy": 1.0, "fairness": 1.5})
    with pytest.raises(ConfigError, match="BEING_LESS_WRONG"):
        check_coverage(refs, {})
    with pytest.raises(ConfigError, match="compute references on this dataset"):
        phase2_score(dict.fromkeys(LEADERBOARD_TESTS, 0.2), refs, {})
    check_coverage(refs, NA)  # covers every applicable test


def test_full_applicability_is_bit_identical(rng):
    rows = [{t: float(v) for t, v in zip(LEADERBOARD_TESTS, rng.uniform(-1, 0.5, 9))}
            for _ in range(4)]
    refs = _refs(LEADERBOARD_TESTS)
    assert aggregate(rows, refs, {}) == aggregate(rows, refs)
    assert scored_groups(refs, {}) == (refs.groups, refs.weights)
    n = 300
    folds = [UserScores(hit=rng.random(n) < 0.3, rr=rng.random(n) * (rng.random(n) < 0.3),
                        slices={t: rng.integers(-2, 3, n) for t in LEADERBOARD_TESTS[2:7]},
                        blw=rng.random(n), ld=rng.random(n) - 0.5) for _ in range(2)]
    assert bootstrap(folds, refs, n_boot=50, not_applicable={}) == bootstrap(folds, refs,
                                                                             n_boot=50)


def test_run_hash_of_full_applicability_runs_is_unchanged():
    # pinned: the hash of this configuration as the harness computed it before any test could
    # be not applicable; the test list stays the RecList's tests
    params = {"num_folds": 4, "seed": 42}
    pinned = "8e365cb5b8f317d63d11230b2ea5e68d3cbb30b36ac740703da7773e33957ce9"
    assert run_hash("0" * 64, params, list(TESTS), "1.0.0") == pinned
    payload = {"dataset_fingerprint": "0" * 64, "fold_params": params,
               "harness_version": "1.0.0", "tests": sorted(TESTS)}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    assert hashlib.sha256(text.encode()).hexdigest() == pinned


def test_run_hash_keeps_the_test_list(ml_run, ml_dataset):
    _, result, _ = ml_run
    # the tests that do not apply follow from the data, which the fingerprint covers
    assert result.run_hash == run_hash(ml_dataset.fingerprint, ml_dataset.fold_params,
                                       result.tests)


# --------------------------------------------------------------------------- references


def test_references_on_a_movielens_like_source(ml_dataset, tmp_path):
    from evaluation.cli.references import compute_references

    refs = compute_references(ml_dataset, name="ml-like", results_dir=tmp_path,
                              progress=False)
    assert refs.not_applicable == dataset_not_applicable(ml_dataset)
    assert refs.tests == list(APPLICABLE)
    assert list(refs.weights) == ["accuracy", "fairness"]
    again = References.from_dict(json.loads(json.dumps(refs.to_dict())))
    assert again.not_applicable == refs.not_applicable and again.tests == refs.tests
    runner = EvalRSRunner(ml_dataset, results_dir=tmp_path, references=refs, n_boot=0,
                          progress=False, verbose=False)
    result = runner.evaluate(PopularityModel())
    mean = result.aggregate["mean"]
    norm = {t: (mean[t] - refs.baseline[t]) / (refs.best[t] - refs.baseline[t])
            for t in APPLICABLE}
    acc = (norm[HIT_RATE] + norm[MRR]) / 2
    fair = (norm[MRED_USER_ACTIVITY] + norm[MRED_TRACK_POPULARITY] + norm[MRED_GENDER]) / 3
    expected = -100.0 if mean[HIT_RATE] < refs.hit_rate_threshold else (acc + 1.5 * fair) / 2.5
    assert result.leaderboard_score == pytest.approx(expected, rel=1e-12)
    # the same references on data where every test applies: refused before any fold runs
    with pytest.raises(ConfigError, match="not applicable|which apply to this dataset"):
        EvalRSRunner(ChallengeDataset(source="synthetic", scale="tiny"), results_dir=tmp_path,
                     references=refs, progress=False, verbose=False).evaluate(PopularityModel())


def test_shipped_movielens_100k_na_when_present():
    from tests._shared_data import shared_dataset

    ds = ChallengeDataset(source=f"movielens:{shared_dataset('ml-100k')}")
    assert list(dataset_not_applicable(ds)) == list(MOVIELENS_NA)


# --------------------------------------------------------------------------- the server


def test_server_refuses_a_run_with_not_applicable_tests(ml_run):
    pytest.importorskip("pydantic")
    from evaluation.server.core import parse_submission, recompute

    _, result, _ = ml_run
    body = {"run_id": result.run_id, "run_hash": result.run_hash, "results": result.to_dict()}
    with pytest.raises(SubmissionRejected) as exc:
        parse_submission(json.dumps(body).encode())
    assert exc.value.status == 422 and "not applicable" in str(exc.value)
    # recomputing from the fold values refuses the nulls too (422, never a server error)
    with pytest.raises(SubmissionRejected) as exc:
        recompute([f["tests"] for f in result.folds], _refs(LEADERBOARD_TESTS))
    assert exc.value.status == 422
