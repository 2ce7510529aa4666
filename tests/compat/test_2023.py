"""Code written for EvalRS 2023 runs unchanged: the dataset's 2023 arguments, the RecList call
without a fold, the song2vec KeyedVectors loaded from ``dataset.path_to_dataset``."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

import evaluation
from evaluation.compat import forget_warnings
from evaluation.errors import PredictionWarning


@pytest.fixture(autouse=True)
def _fresh_warnings():
    forget_warnings()
    yield
    forget_warnings()


def dataset_2023():
    from evaluation.EvalRSRunner import ChallengeDataset

    return ChallengeDataset(num_folds=1, seed=42, force_download=False, dataset_out_path=None,
                            folded_dataset_split=True, sample_users_perc=0.25,
                            min_user_item_freq=10, scale="tiny")


def test_the_2023_dataset_arguments_map_to_the_modern_folds():
    with pytest.warns(DeprecationWarning) as caught:
        dataset = dataset_2023()
    texts = " | ".join(str(w.message) for w in caught)
    assert "sample_users_perc=...) is the 2023 name of frac" in texts
    assert "min_user_item_freq=...) is the 2023 name of k_core" in texts
    modern = evaluation.ChallengeDataset(scale="tiny", num_folds=1, frac=0.25, k_core=10)
    assert dataset.fold_params == modern.fold_params
    train, test = dataset.get_sample_train_test()  # 2023: fold 0
    pd.testing.assert_frame_equal(test, modern.get_test_set(0))
    cols = dataset._get_test_set(fold=0, subset_of_cols_to_return=["user_id", "track_id"])
    pd.testing.assert_frame_equal(cols, modern.get_test_set(0))


def test_the_2023_reclist_call_scores_fold_0_with_the_modern_numbers():
    from gensim.models import KeyedVectors
    from reclist.reclist import LOGGER, METADATA_STORE

    import tests.compat._participant_2023 as code

    dataset = dataset_2023()
    my_df_model = code.SimpleModel(dataset.df_tracks, top_k=100)
    df_predictions = my_df_model.predict(dataset._get_test_set(fold=0)[['user_id']])
    similarity_model = KeyedVectors.load(os.path.join(dataset.path_to_dataset, 'song2vec.wv'))
    with pytest.warns(DeprecationWarning, match=r"without a fold is the 2023 call.*fold=0"), \
            pytest.warns(PredictionWarning, match="recommend the same item more than once"):
        cdf = code.MyReclist(
            dataset=dataset,
            model_name="SimpleModel",
            predictions=df_predictions,
            logger=LOGGER.LOCAL,
            metadata_store=METADATA_STORE.LOCAL,
            similarity_model=similarity_model,
        )
        cdf(verbose=False)
    results = cdf.results()
    modern = evaluation.EvalRSRecList(dataset, 0, df_predictions).results()
    assert {t: v for t, v in results.items() if t in modern} == modern
    tv = dataset.track_vectors
    targets = dataset.get_test_set(0)["track_id"].to_numpy()
    by_hand = np.mean([float(np.linalg.norm(tv.vectors[np.searchsorted(tv.track_ids, t)]))
                       for t in targets])
    assert results["TARGET_NORM"] == pytest.approx(by_hand, rel=1e-6)


def test_the_2023_notebook_imports_with_the_evaluation_folder_on_sys_path(monkeypatch):
    import sys
    from pathlib import Path

    folder = Path(evaluation.__file__).resolve().parent
    monkeypatch.syspath_prepend(str(folder))  # sys.path.append(os.path.abspath('../evaluation'))
    for name in ("EvalRSRunner", "EvalRSReclist"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.warns(DeprecationWarning, match="EvalRSReclist is the 2023 RecList module"):
        from EvalRSReclist import EvalRSReclist, EvalRSSimpleModel
        from EvalRSRunner import ChallengeDataset
    assert issubclass(ChallengeDataset, evaluation.ChallengeDataset)
    assert issubclass(EvalRSReclist, evaluation.EvalRSRecList)
    dataset = ChallengeDataset(num_folds=1, scale="tiny")
    model = EvalRSSimpleModel(dataset.df_tracks, top_k=100, seed=5)
    preds = model.predict(dataset._get_test_set(fold=0)[['user_id']])
    assert preds.shape == (len(dataset.get_test_set(0)), 100)
    assert preds.isin(dataset.df_tracks.index).all().all()
    with pytest.warns(PredictionWarning, match="same item more than once"):
        cdf = EvalRSReclist(dataset=dataset, model_name="SimpleModel", predictions=preds)
    assert cdf.results() == evaluation.EvalRSRecList(dataset, 0, preds).results()
