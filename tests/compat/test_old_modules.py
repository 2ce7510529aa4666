"""The reclist 0.x modules 2022 code imports, in fresh interpreters started as in an
environment where the harness is installed (its start-up ``.pth`` processed), and what they
hold."""

from __future__ import annotations

import json

import numpy as np
import pytest

import evaluation  # noqa: F401  (registers the finder in this process, as it does for old code)
from tests.compat._startup import fresh_python, startup_env

#: Each reclist 0.x module (as pinned by the 2022 challenge) and 2023 module, with the names
#: old code imports from it.
OLD_NAMES = {
    "reclist.abstractions": ["RecDataset", "RecList", "RecModel", "rec_test"],
    "reclist.current": ["Current", "current"],
    "reclist.recommenders": [],
    "reclist.recommenders.prod2vec": ["CoveoP2VRecModel", "MovieLensP2VRecModel",
                                      "SpotifyP2VRecModel"],
    "reclist.utils": ["TOP_K_CHALLENGE", "download_with_progress", "get_cache_directory"],
    "reclist.utils.config": ["COVEO_INTERACTION_DATASET_S3_URL", "MOVIELENS_DATASET_S3_URL",
                             "MOVIELENS_UI_DATASET_S3_URL", "SPOTIFY_PLAYLIST_DATASET_S3_URL",
                             "Dataset", "download_with_progress", "get_cache_directory"],
    "reclist.utils.train_w2v": ["train_embeddings"],
    # reclist 2.1.0's own modules, which 2022 and 2023 code import too
    "reclist.metrics.standard_metrics": ["hit_rate_at_k", "hits_at_k", "misses_at_k",
                                         "mrr_at_k", "rr_at_k"],
    "reclist.reclist": ["CHART_TYPE", "LOGGER", "METADATA_STORE", "RecList", "rec_test"],
}


def test_a_fresh_interpreter_imports_reclist_abstractions_without_importing_anything(tmp_path):
    probe = ("import sys\n"
             "early = sorted(m for m in sys.modules if m.split('.')[0] in "
             "{'numpy', 'pandas', 'evaluation', 'reclist', 'gensim'})\n"
             "from reclist.abstractions import RecModel\n"
             "import evaluation\n"
             "print(early, '_evalrs_old_modules' in sys.modules, RecModel is evaluation.RecModel,"
             " sum(getattr(f, 'evalrs_old_modules', False) is True for f in sys.meta_path))")
    done = fresh_python(probe, startup_env(tmp_path), tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    # start-up loaded neither the harness nor NumPy; `import evaluation` added no second finder
    assert done.stdout.split() == ["[]", "True", "True", "1"]

    without = fresh_python("import reclist.abstractions", startup_env(tmp_path, hook=False),
                           tmp_path)
    assert without.returncode != 0 and "ModuleNotFoundError" in without.stderr


def test_every_old_module_and_name_imports_in_a_fresh_interpreter(tmp_path):
    probe = ("import importlib, json, sys\n"
             f"names = {OLD_NAMES!r}\n"
             "found = {m: [n for n in ns if hasattr(importlib.import_module(m), n)]"
             " for m, ns in names.items()}\n"
             "print(json.dumps(found))")
    done = fresh_python(probe, startup_env(tmp_path), tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == OLD_NAMES


def test_a_2022_model_scores_in_a_spawn_started_process_pool(tmp_path):
    code = ("import pandas as pd\n"
            "from spawn_model_2022 import SpawnPoolModel\n"
            "model = SpawnPoolModel(top_k=3, workers=2)\n"
            "model.train(pd.DataFrame({'track_id': [7, 7, 7, 5, 5, 9, 1]}))\n"
            "out = model.predict(pd.DataFrame({'user_id': [10, 11, 12]}))\n"
            "print(out.to_numpy().tolist(), out.index.tolist())")
    done = fresh_python(code, startup_env(tmp_path), tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\n")[-2] == "[[7, 5, 9], [7, 5, 9], [7, 5, 9]] [10, 11, 12]"


def test_train_embeddings_trains_word2vec_with_reclist_0x_defaults(capsys):
    pytest.importorskip("gensim")
    from reclist.utils.train_w2v import train_embeddings

    rng = np.random.default_rng(0)
    sessions = [[f"i{j}" for j in rng.integers(0, 12, size=8)] for _ in range(60)]
    sessions.append(["rare", "rare"])  # twice: under the default min_c=3
    kv = train_embeddings(sessions, size=16, iterations=3)
    counts = {item for s in sessions for item in s if sum(x.count(item) for x in sessions) >= 3}
    assert type(kv).__name__ == "KeyedVectors" and kv.vector_size == 16
    assert set(kv.index_to_key) == counts and "rare" not in kv.key_to_index
    assert capsys.readouterr().out == f"# items in the space: {len(counts)}\n"
    assert train_embeddings(sessions, min_c=1, size=4, iterations=1,
                            is_debug=False).vector_size == 4
    assert "rare" in train_embeddings(sessions, min_c=1, iterations=1, is_debug=False)
    assert capsys.readouterr().out == ""


def test_the_coveo_prod2vec_model_returns_the_nearest_products():
    pytest.importorskip("gensim")
    from reclist.recommenders.prod2vec import CoveoP2VRecModel

    carts = [[{"product_sku": f"p{(i + j) % 10}"} for j in range(5)] for i in range(80)]
    model = CoveoP2VRecModel()
    assert model.model is None and model.get_vector("p1") == []
    model.train(carts, iterations=2)
    predictions = model.predict([[{"product_sku": "p1"}], [{"product_sku": "unknown"}]])
    expected = [sku for sku, _ in model.model.most_similar("p1", topn=10)]
    assert [p["product_sku"] for p in predictions[0]] == expected and predictions[1] == []
    assert len(model.get_vector("p1")) == 48


def test_reclist_config_keeps_reclists_cache_folder_and_dataset_names(tmp_path, monkeypatch):
    from reclist.current import current
    from reclist.utils.config import Dataset, get_cache_directory

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if not (tmp_path / "x").anchor.startswith("/"):
        pytest.skip("the XDG rule is the Linux one")
    assert get_cache_directory() == str(tmp_path / "reclist") and (tmp_path / "reclist").is_dir()
    assert [d.value for d in Dataset] == ["coveo", "coveo-internal", "movielens", "spotify"]
    assert current.report_path is None
