"""Code written for EvalRS 2022 runs unchanged, with the numbers of the modern spelling.

The participant code (``tests/compat/_participant_2022.py``) uses the imports, constructor calls,
model shapes and custom-test patterns of the official 2022 template and notebook; the
custom tests' values are checked against the 2022 helpers' definitions computed by hand.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest

import evaluation
from evaluation.compat import forget_warnings
from evaluation.errors import ConfigError, PredictionWarning, ScoringWarning

FOLDS = 2


@pytest.fixture(autouse=True)
def _fresh_warnings():
    """Each test sees the once-per-process warnings again."""
    forget_warnings()
    yield
    forget_warnings()


@pytest.fixture(scope="module")
def participant():
    import tests.compat._participant_2022 as code

    return code


@pytest.fixture(scope="module")
def modern_tiny():
    return evaluation.ChallengeDataset(scale="tiny", num_folds=FOLDS)


def legacy_dataset():
    from evaluation.EvalRSRunner import ChallengeDataset

    return ChallengeDataset(num_folds=FOLDS, seed=42, force_download=True, scale="tiny")


def legacy_runner(dataset):
    from evaluation.EvalRSRunner import EvalRSRunner

    return EvalRSRunner(dataset=dataset, aws_access_key_id="AKIAEXAMPLE",
                        aws_secret_access_key="not-a-secret", participant_id="p-1",
                        bucket_name="evalrs-bucket", email="someone@example.com",
                        progress=False, verbose=False, n_boot=20)


def modern_runner(dataset, tmp_path):
    from evaluation.runner import UploadSettings

    return evaluation.EvalRSRunner(dataset, results_dir=tmp_path / "modern", progress=False,
                                   verbose=False, n_boot=20,
                                   upload=UploadSettings(email="someone@example.com",
                                                         participant_id="p-1"))


def fold_tests(result) -> list[dict]:
    return [f["tests"] for f in result.folds]


# ------------------------------------------------------------------ imports and arguments

def test_the_2022_imports_work_and_warn_once_with_the_modern_spelling():
    with pytest.warns(DeprecationWarning) as caught:
        from evaluation.EvalRSRecList import EvalRSRecList
        from evaluation.EvalRSRunner import ChallengeDataset, EvalRSRunner
        from evaluation.EvalRSRunner import EvalRSRunner as again  # noqa: F401
        from evaluation.utils import LEADERBOARD_TESTS, TOP_K_CHALLENGE
    texts = [str(w.message) for w in caught]
    assert sum("evaluation.EvalRSRunner is the 2022/2023 module path" in t for t in texts) == 1
    assert any("from evaluation import EvalRSRunner, ChallengeDataset" in t for t in texts)
    assert any("from evaluation import EvalRSRecList" in t for t in texts)
    assert issubclass(EvalRSRunner, evaluation.EvalRSRunner)
    assert issubclass(ChallengeDataset, evaluation.ChallengeDataset)
    assert issubclass(EvalRSRecList, evaluation.EvalRSRecList)
    assert TOP_K_CHALLENGE == 100 and len(LEADERBOARD_TESTS) == 9


def test_an_unknown_name_of_an_old_path_says_what_it_offers():
    import importlib

    old = importlib.import_module("evaluation.EvalRSRunner")

    with pytest.raises(AttributeError, match=r"offers \[.*'ChallengeDataset'.*Modern spelling"):
        old.PhaseOne  # noqa: B018


def test_reclist_abstractions_is_provided_only_where_reclist_lacks_it():
    import importlib.util
    import sys

    from evaluation._old_modules import LegacyReclistFinder

    # the start-up hook's copy of the finder is of another class object: found by its marker
    finders = [f for f in sys.meta_path if getattr(f, "evalrs_old_modules", False) is True]
    # first (it extends reclist 2's standard_metrics), yet a module another finder has wins
    assert len(finders) == 1 and sys.meta_path.index(finders[0]) < len(sys.meta_path) - 1
    spec = importlib.util.find_spec("reclist.abstractions")
    assert spec is not None and spec.origin == "evaluation.compat"
    from reclist.abstractions import RecDataset, RecList, RecModel, rec_test
    from reclist.reclist import RecList as real_reclist
    from reclist.reclist import rec_test as real_rec_test

    assert RecModel is evaluation.RecModel and RecList is real_reclist
    assert rec_test is real_rec_test
    ds = RecDataset()
    ds.load(x_train=1, x_test=2, y_test=3, users=4, items=5)
    assert (ds.x_train, ds.x_test, ds.y_test, ds.catalog) == (1, 2, 3, {"users": 4, "items": 5})
    from reclist.utils import TOP_K_CHALLENGE, get_cache_directory

    assert TOP_K_CHALLENGE == 100 and get_cache_directory()
    assert LegacyReclistFinder().find_spec("reclist.metrics", None) is None


def test_upload_submission_says_the_s3_upload_is_closed():
    from evaluation.utils import upload_submission

    with pytest.raises(ConfigError, match="S3 bucket of the challenge is closed.*--upload"):
        upload_submission("x.json", "key", "secret", "p", "bucket")


def test_the_2022_dataset_arguments_map_with_warnings(modern_tiny):
    with pytest.warns(UserWarning) as caught:
        ds = legacy_dataset()
    texts = " | ".join(str(w.message) for w in caught)
    assert "force_download" in texts and "sha256" in texts
    assert "default is the harness's embedded synthetic data" in texts
    assert ds.fold_params == modern_tiny.fold_params
    assert ds.fingerprint == modern_tiny.fingerprint
    with pytest.warns(UserWarning, match=r"seed=None.*clock.*fixed seed 42"):
        from evaluation.EvalRSRunner import ChallengeDataset

        assert ChallengeDataset(2, scale="tiny").seed == 42


def test_the_2022_positional_order(modern_tiny):
    from evaluation.EvalRSRunner import ChallengeDataset

    ds = ChallengeDataset(3, 7, False, scale="tiny")
    assert (ds.num_folds, ds.seed) == (3, 7)


def test_get_sample_train_test_is_fold_1_on_the_2022_path_and_0_on_the_modern(modern_tiny):
    ds = legacy_dataset()
    train, test = ds.get_sample_train_test()
    pd.testing.assert_frame_equal(test, modern_tiny.get_test_set(1))
    assert len(train) == len(modern_tiny.get_train_set(1))
    _, test0 = modern_tiny.get_sample_train_test()
    pd.testing.assert_frame_equal(test0, modern_tiny.get_test_set(0))


def test_the_2022_limit_samples_users_with_random_state_0(modern_tiny):
    ds = legacy_dataset()
    test = modern_tiny.get_test_set(0)
    sampled = ds._get_test_set(0, limit=7)
    # 2022: test_set.sample(n=limit, random_state=seed) on the fold's test rows
    pd.testing.assert_frame_equal(sampled, test.sample(n=7, random_state=0))
    assert not sampled["user_id"].is_monotonic_increasing or len(sampled) < 2


def test_the_modern_dataset_maps_the_2023_arguments_and_refuses_what_has_no_equivalent():
    with pytest.warns(DeprecationWarning, match=r"sample_users_perc=...\) is the 2023 name"):
        ds = evaluation.ChallengeDataset(scale="tiny", num_folds=1, sample_users_perc=0.5,
                                         min_user_item_freq=5)
    assert ds.params.frac == 0.5 and ds.params.k_core == 5
    with pytest.raises(ConfigError, match="last interaction.*leave_last_out"):
        evaluation.ChallengeDataset(scale="tiny", folded_dataset_split=False)
    with pytest.raises(ConfigError, match="dataset_out_path.*downloads nothing"):
        evaluation.ChallengeDataset(scale="tiny", dataset_out_path="/tmp/x")
    with pytest.raises(ConfigError, match="pass frac only"):
        evaluation.ChallengeDataset(scale="tiny", frac=0.3, sample_users_perc=0.5)


# ------------------------------------------------------------------ the 2022 run, unchanged

def test_the_2022_template_runs_unchanged_with_the_modern_numbers(participant, modern_tiny,
                                                                   tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dataset = legacy_dataset()
        runner = legacy_runner(dataset)
        my_model = participant.MyModel(items=dataset.df_tracks,
                                       my_custom_argument='my_custom_argument')
        old = runner.evaluate(model=my_model)
    texts = [str(w.message) for w in caught]
    aws = [t for t in texts if "S3 upload is closed" in t]
    assert len(aws) == 1 and "not-a-secret" not in aws[0] and "AKIAEXAMPLE" not in aws[0]
    repeated = [w for w in caught if issubclass(w.category, PredictionWarning)
                and "recommend the same item more than once" in str(w.message)]
    assert len(repeated) == 1  # one per run, naming how many lists of each fold
    for f in old.folds:
        assert 0 < f["repeated_lists"] <= f["n_users"]
        assert f"fold {f['fold']}: {f['repeated_lists']:,} of {f['n_users']:,} lists" \
            in str(repeated[0].message)
    assert repeated[0].message.counts["repeated_lists"] == \
        sum(f["repeated_lists"] for f in old.folds)
    modern = modern_runner(modern_tiny, tmp_path).evaluate(
        participant.MyModel(items=modern_tiny.df_tracks))
    assert fold_tests(old) == fold_tests(modern)
    assert old.aggregate == modern.aggregate
    assert (tmp_path / "results").is_dir()  # the 2022 runner had no results_dir: ./results


def test_repeated_items_score_by_first_occurrence(modern_tiny):
    test = modern_tiny.get_test_set(0)
    users, targets = test["user_id"].to_numpy(), test["track_id"].to_numpy()
    other = modern_tiny.df_tracks.index.to_numpy()
    other = other[~np.isin(other, targets)][:3]
    k = 5
    # rank 3 for every target, listed again at rank 5; the other slots repeat one track
    rows = np.array([[other[0], other[1], t, other[0], t] for t in targets])
    preds = pd.DataFrame(rows, index=pd.Index(users, name="user_id"),
                         columns=[str(i) for i in range(k)])
    with pytest.warns(PredictionWarning, match=rf"{len(users)} of {len(users)} lists recommend"):
        rl = evaluation.EvalRSRecList(modern_tiny, 0, preds, k=k)
    res = rl.results()
    assert res["HIT_RATE"] == 1.0 and res["MRR"] == pytest.approx(1 / 3)
    strict = evaluation.ChallengeDataset(modern_tiny.tables, num_folds=FOLDS,
                                         repeated_items="error")
    with pytest.raises(evaluation.PredictionError, match="same item more than once"):
        evaluation.EvalRSRecList(strict, 0, preds, k=k)
    with pytest.raises(ConfigError, match="repeated_items must be one of"):
        evaluation.ChallengeDataset(modern_tiny.tables, repeated_items="last")


# ------------------------------------------------------------------ custom tests

def hand_values(ds, fold: int, preds: pd.DataFrame, k: int) -> dict:
    """The 2022 helpers' definitions, user by user in plain Python."""
    test = ds.get_test_set(fold)
    users = ds.df_users
    kv_ids = set(int(t) for t in ds.track_vectors.track_ids)
    vec = {int(t): v for t, v in zip(ds.track_vectors.track_ids, ds.track_vectors.vectors)}
    rank = {}
    for u, t in zip(test["user_id"], test["track_id"]):
        row = list(preds.loc[u].to_numpy()[:k])
        rank[u] = row.index(t) + 1 if t in row else 0
    miss = {u: 1.0 if r == 0 else 0.0 for u, r in rank.items()}

    def mred(group_of: dict) -> dict:
        groups: dict = {}
        for u, g in group_of.items():
            groups.setdefault(g, []).append(miss[u])
        mr = sum(miss[u] for u in group_of) / len(group_of)
        per = {g: sum(v) / len(v) for g, v in groups.items()}
        return {"mred": -sum(abs(v - mr) for v in per.values()) / len(per), "mr": mr, **per}

    country = {u: users.loc[u, "country"] for u in test["user_id"]}
    counts = pd.Series(list(country.values())).value_counts()
    top3 = set(counts.index[:3])
    country_top3 = {u: c for u, c in country.items() if c in top3}
    # MRED_COUNTRY's MR: the users of the 14 countries 2022 kept
    keep = {"US", "RU", "DE", "UK", "PL", "BR", "FI", "NL", "ES", "SE", "UA", "CA", "FR"}
    mred_users = [u for u, c in country.items() if (c if isinstance(c, str) else "NaN")
                  in keep | {"NaN"}]
    gender = {u: users.loc[u, "gender"] for u in test["user_id"]}
    rr_by: dict = {}
    for u, g in gender.items():
        if isinstance(g, str):
            rr_by.setdefault(g, []).append(1.0 / rank[u] if rank[u] else 0.0)
    sims = []
    for u, t in zip(test["user_id"], test["track_id"]):
        first = int(preds.loc[u, "0"])
        if t in kv_ids and first in kv_ids:
            a, b = vec[int(t)].astype(np.float64), vec[first].astype(np.float64)
            sims.append(float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))))
    return {
        "MRED_COUNTRY_TOP3": mred(country_top3),
        "MR_FROM_MRED_COUNTRY": sum(miss[u] for u in mred_users) / len(mred_users),
        "MRR_BY_GENDER": {g: sum(v) / len(v) for g, v in sorted(rr_by.items())},
        "HIT_AT_10": sum(1 for r in rank.values() if 0 < r <= 10) / len(rank),
        "FIRST_PRED_SIMILARITY": sum(sims) / len(sims),
    }


def popular_predictions(ds, fold: int, participant) -> pd.DataFrame:
    model = participant.PopModel(items=ds.df_tracks)
    model.train(ds.get_train_set(fold))
    return model.predict(ds.get_test_set(fold)[["user_id"]])


def test_2022_custom_tests_equal_the_2022_definitions_by_hand(participant, modern_tiny):
    preds = popular_predictions(modern_tiny, 0, participant)
    rl = participant.myRecList(modern_tiny, 0, preds)
    got = rl.run_tests()
    want = hand_values(modern_tiny, 0, preds, 100)
    for name in ("MR_FROM_MRED_COUNTRY", "HIT_AT_10", "FIRST_PRED_SIMILARITY"):
        assert got[name] == pytest.approx(want[name], rel=1e-6), name
    assert got["MRED_COUNTRY_TOP3"] == pytest.approx(want["MRED_COUNTRY_TOP3"], rel=1e-12)
    # to_json writes 10 significant decimals, as in 2022
    assert json.loads(got["MRR_BY_GENDER"]) == pytest.approx(want["MRR_BY_GENDER"], rel=1e-8)
    assert got["custom_test"]["luck_user"] in set(map(str, modern_tiny.get_test_set(0).user_id))
    # the leaderboard tests are the modern ones, value for value
    modern = evaluation.EvalRSRecList(modern_tiny, 0, preds).results()
    assert {t: v for t, v in rl.results().items() if t in modern} == modern


def test_2022_attributes_of_a_reclist(participant, modern_tiny):
    preds = popular_predictions(modern_tiny, 0, participant)
    rl = participant.myRecList(modern_tiny, 0, preds)
    pd.testing.assert_frame_equal(rl._x_test, modern_tiny.get_test_set(0)[["user_id"]]
                                  .reset_index(drop=True))
    with pytest.warns(DeprecationWarning, match="product_data is the 2022 name"):
        catalog = rl.product_data
    assert set(catalog) == {"users", "items"} and len(catalog["items"]) == len(
        modern_tiny.df_tracks)
    kv = rl._dense_repr
    tid = int(modern_tiny.track_vectors.track_ids[3])
    np.testing.assert_array_equal(kv[tid], modern_tiny.track_vectors.vectors[3])
    slice_result = rl.mred_country()
    assert slice_result["mr"] == slice_result.miss_rate
    assert slice_result["mred"] == slice_result.value
    u = np.array([[3.0, 4.0], [1.0, 0.0]])
    np.testing.assert_allclose(rl.cosine_sim(u, np.array([[3.0, 4.0], [0.0, 2.0]])), [1.0, 0.0])


def test_custom_reclists_through_the_2022_runner(participant, modern_tiny, tmp_path,
                                                  monkeypatch):
    monkeypatch.chdir(tmp_path)
    dataset = legacy_dataset()
    runner = legacy_runner(dataset)
    model = participant.PopModel(items=dataset.df_tracks)
    result = runner.evaluate(model=model, limit=0, custom_RecList=participant.myRecList)
    for fold, tests in enumerate(fold_tests(result)):
        preds = popular_predictions(modern_tiny, fold, participant)
        want = hand_values(modern_tiny, fold, preds, 100)
        assert tests["HIT_AT_10"] == pytest.approx(want["HIT_AT_10"], rel=1e-12)
        assert tests["FIRST_PRED_SIMILARITY"] == pytest.approx(
            want["FIRST_PRED_SIMILARITY"], rel=1e-6)
    with pytest.warns(DeprecationWarning, match=r"__init__\(self, model, dataset, y_preds=None\)"):
        result = runner.evaluate(model=model, custom_RecList=participant.RecList2022Init)
    for fold, tests in zip(result.folds, fold_tests(result)):
        assert tests["USERS_SEEN_AT_INIT"] == fold["n_users"]
    with pytest.warns(ScoringWarning, match="'UNDEFINED'.*kept as null"):
        result = runner.evaluate(model=model, custom_RecList=participant.UndefinedRecList)
    assert all(t["UNDEFINED"] is None for t in fold_tests(result))


def test_a_broken_custom_test_fails_before_training_naming_the_line(participant, tmp_path,
                                                                     monkeypatch):
    monkeypatch.chdir(tmp_path)
    dataset = legacy_dataset()
    runner = legacy_runner(dataset)

    class NeverTrained(participant.PopModel):
        def train(self, train_df):
            raise AssertionError("the trial run must come before any training")

    with pytest.raises(ConfigError) as caught:
        runner.evaluate(model=NeverTrained(items=dataset.df_tracks),
                        custom_RecList=participant.BrokenRecList)
    text = str(caught.value)
    assert "AttributeError" in text and "_y_pred" in text and "before any training" in text
    assert "_participant_2022.py" in text and "return len(self._y_pred)" in text


def test_a_nan_from_a_modern_reclist_stays_an_error(participant, modern_tiny):
    class ModernNan(evaluation.EvalRSRecList):
        undefined = participant.UndefinedRecList.undefined

    preds = popular_predictions(modern_tiny, 0, participant)
    with pytest.raises(evaluation.EvalRSError, match="UNDEFINED"):
        ModernNan(modern_tiny, 0, preds).run_tests()
    assert math.isnan(participant.UndefinedRecList(modern_tiny, 0, preds).run_tests()[
        "UNDEFINED"])


# ------------------------------------------------------------------ vectors

def test_song2vec_and_path_to_dataset_on_the_embedded_data(modern_tiny):
    from gensim.models import KeyedVectors

    kv = modern_tiny.song2vec
    tv = modern_tiny.track_vectors
    assert isinstance(kv, KeyedVectors) and len(kv) == len(tv)
    assert modern_tiny.song2vec is kv  # built once
    ids = tv.track_ids[[0, 5, -1]]
    np.testing.assert_array_equal(kv[ids], tv.vectors[[0, 5, -1]])
    loaded = KeyedVectors.load(f"{modern_tiny.path_to_dataset}/song2vec.wv")
    assert list(loaded.index_to_key) == [int(t) for t in tv.track_ids]
    np.testing.assert_array_equal(loaded.vectors, tv.vectors)


def test_a_limited_2022_run_says_how_its_users_differ(participant, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    dataset = legacy_dataset()
    runner = legacy_runner(dataset)
    model = participant.PopModel(items=dataset.df_tracks)
    with pytest.warns(UserWarning, match=r"limit=20\) scores the first 20 test users.*"
                                         r"random_state=0"):
        result = runner.evaluate(model, None, False, 20)  # the 2022 positional order
    assert [f["n_users"] for f in result.folds] == [20] * FOLDS
    assert not result.eligible_for_upload


def test_a_reclist_that_has_abstractions_is_used_as_it_is(monkeypatch):
    """The harness's module is a fallback: a finder earlier on sys.meta_path (an installed
    reclist 0.x) provides reclist.abstractions first."""
    import importlib
    import importlib.abc
    import importlib.machinery
    import sys

    class RealReclist0(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, fullname, path, target=None):
            if fullname != "reclist.abstractions":
                return None
            return importlib.machinery.ModuleSpec(fullname, self, origin="reclist 0.x")

        def create_module(self, spec):
            return None

        def exec_module(self, module):
            module.RecModel = "the installed one"

    monkeypatch.delitem(sys.modules, "reclist.abstractions", raising=False)
    monkeypatch.setattr(sys, "meta_path", [RealReclist0(), *sys.meta_path])
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # the harness's would warn
        module = importlib.import_module("reclist.abstractions")
    assert module.RecModel == "the installed one"
    monkeypatch.delitem(sys.modules, "reclist.abstractions")
