"""The reclist 0.x modules 2022 code imports, in fresh interpreters started as in an
environment where the harness is installed (its start-up ``.pth`` processed), and what they
hold."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil

import numpy as np
import pytest

import evaluation  # noqa: F401  (registers the finder in this process, as it does for old code)
from tests.compat._startup import PTH, REPO, fresh_python, startup_env

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
    # reclist 2.1.0's own modules, which 2022 and 2023 code import too; standard_metrics with
    # reclist 0.x's list-wise metrics added
    "reclist.metrics.standard_metrics": ["hit_rate_at_k", "hit_rate_at_k_list",
                                         "hit_rate_at_k_nep", "hits_at_k", "misses_at_k",
                                         "mrr_at_k", "mrr_at_k_list", "mrr_at_k_nep_list",
                                         "rr_at_k"],
    "reclist.reclist": ["CHART_TYPE", "LOGGER", "METADATA_STORE", "RecList", "rec_test"],
}


#: The torch test's name: the shared interpreter trains its model only where it is selected.
TORCH_TEST = "test_a_2022_model_trains_with_a_spawn_started_torch_dataloader"


@pytest.fixture(scope="module")
def old_modules_probe(tmp_path_factory, request) -> list[str]:
    """One fresh interpreter (the start-up hook processed) for the tests below: it records what
    start-up loaded, imports ``reclist.abstractions`` first, then every old module; then, as
    2022 participants' scripts do, (where torch is installed and the torch test selected)
    trains a model through a spawn-started torch ``DataLoader`` worker and scores users with a
    model whose spawn-started process pool imports its module afresh. Its output lines: what
    the start-up loaded and what ``import evaluation`` then added; the names found in each old
    module, as JSON; ``TORCH`` and ``POOL`` lines, each the model's output."""
    folder = tmp_path_factory.mktemp("old-modules")
    torch = importlib.util.find_spec("torch") is not None and any(
        getattr(item, "originalname", None) == TORCH_TEST for item in request.session.items)
    probe = ("import importlib, json, sys\n"
             "early = sorted(m for m in sys.modules if m.split('.')[0] in "
             "{'numpy', 'pandas', 'evaluation', 'reclist', 'gensim'})\n"
             "from reclist.abstractions import RecModel\n"
             "import evaluation\n"
             "print(early, '_evalrs_old_modules' in sys.modules, RecModel is evaluation.RecModel,"
             " sum(getattr(f, 'evalrs_old_modules', False) is True for f in sys.meta_path))\n"
             f"names = {OLD_NAMES!r}\n"
             "found = {m: [n for n in ns if hasattr(importlib.import_module(m), n)]"
             " for m, ns in names.items()}\n"
             "print(json.dumps(found))\n"
             "import pandas as pd\n")
    if torch:  # first: a script sets the start method before any process is started
        probe += ("import torch.multiprocessing as tmp\n"
                  "from torch_model_2022 import LoaderModel\n"
                  "if __name__ == '__main__':\n"
                  "    tmp.set_start_method('spawn')\n"
                  "    model = LoaderModel()\n"
                  "    model.train(pd.DataFrame({'user_id': [4, 1, 3, 1, 2],\n"
                  "                              'track_id': [9, 9, 8, 7, 9]}))\n"
                  "    print('TORCH', model.seen, model.top)\n")
    # the process pool: workers=1, one spawn-started worker shows what every one does
    probe += ("from spawn_model_2022 import SpawnPoolModel\n"
              "model = SpawnPoolModel(top_k=3, workers=1)\n"
              "model.train(pd.DataFrame({'track_id': [7, 7, 7, 5, 5, 9, 1]}))\n"
              "out = model.predict(pd.DataFrame({'user_id': [10, 11, 12]}))\n"
              "print('POOL', out.to_numpy().tolist(), out.index.tolist())\n")
    done = fresh_python(probe, startup_env(folder), folder, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def _tagged(lines: list[str], tag: str) -> str:
    (line,) = [line for line in lines if line.startswith(f"{tag} ")]
    return line.removeprefix(f"{tag} ")


def test_a_fresh_interpreter_imports_reclist_abstractions_without_importing_anything(
        old_modules_probe, tmp_path):
    # start-up loaded neither the harness nor NumPy; `import evaluation` added no second finder
    assert old_modules_probe[0].split() == ["[]", "True", "True", "1"]

    without = fresh_python("import reclist.abstractions", startup_env(tmp_path, hook=False),
                           tmp_path, site=False)
    assert without.returncode != 0 and "ModuleNotFoundError" in without.stderr


def test_every_old_module_and_name_imports_in_a_fresh_interpreter(old_modules_probe):
    # in the interpreter above, after reclist.abstractions (imported first, as 2022 code does)
    assert json.loads(old_modules_probe[1]) == OLD_NAMES


def test_a_2022_model_scores_in_a_spawn_started_process_pool(old_modules_probe):
    # the worker is a fresh interpreter: unpickling the model imported its module there
    assert _tagged(old_modules_probe, "POOL") == "[[7, 5, 9], [7, 5, 9], [7, 5, 9]] [10, 11, 12]"


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


def test_standard_metrics_stays_reclist_2s_with_the_list_wise_metrics_of_0x_added():
    import pandas as pd
    from reclist.metrics import standard_metrics as sm
    from reclist.metrics.standard_metrics import (
        hit_rate_at_k_list,
        hit_rate_at_k_nep,
        mrr_at_k_list,
        mrr_at_k_nep_list,
    )

    assert sm.__spec__.origin.endswith("standard_metrics.py")  # the installed file ran
    # reclist 2's own DataFrame metric (NaN is padding), untouched
    assert sm.hit_rate_at_k(pd.DataFrame([[1, 2, 4], [3, 6, 2]]),
                            pd.DataFrame([[5, 1, 0], [1, float("nan"), 0]]), k=2) == 0.5
    preds = [["a", "b", "c"], ["d", "e", "f"], ["g", "h", "i"], []]
    targets = [["c", "x"], ["e"], ["z"], ["a"]]
    # hand-computed: case 0 hits at rank 3 (outside k=2), case 1 at rank 2
    assert hit_rate_at_k_list(preds, targets, k=2) == 1 / 4
    assert hit_rate_at_k_list(preds, targets, k=3) == 2 / 4
    assert mrr_at_k_list(preds, targets, k=3) == pytest.approx((1 / 3 + 1 / 2) / 4)
    assert mrr_at_k_list(preds, targets) == pytest.approx((1 / 3 + 1 / 2) / 4)  # k=3 default
    assert hit_rate_at_k_nep(preds, ["b", "d", "q", "a"], k=1) == 1 / 4
    assert mrr_at_k_nep_list(preds, ["b", "f", "q", "a"], k=3) == pytest.approx((1 / 2 + 1 / 3)
                                                                                / 4)
    with pytest.raises(AttributeError, match="has no attribute 'precision_at_k_list'"):
        sm.precision_at_k_list  # noqa: B018


@pytest.mark.slow
def test_a_2022_model_trains_with_a_spawn_started_torch_dataloader(old_modules_probe):
    # torch is optional; looked up, not imported (~3 s of CPU), in this process: the fresh
    # interpreter of the probe is the one that imports it, and its DataLoader's worker
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed (optional)")
    assert _tagged(old_modules_probe, "TORCH") == "[1, 2, 3, 4] [9, 8, 7]"


def test_the_start_up_line_is_silent_where_the_harness_cannot_be_imported(tmp_path):
    # A reproduction's sandbox sees the environment's site-packages without the harness's tree:
    # the line must then leave the interpreter as it was, without "Error processing line ...",
    # which would be printed at every start of every process there.
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    shutil.copyfile(REPO / PTH, site_dir / PTH)
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONSTARTUP"}}
    code = (f"import site, sys; site.addsitedir({str(site_dir)!r}); "
            "print('_evalrs_old_modules' in sys.modules)")
    done = fresh_python(code, env, tmp_path, site=False)
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "False", "")
