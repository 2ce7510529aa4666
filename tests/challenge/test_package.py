"""The challenge package itself: one spec, the old import paths, no reclist in the scoring core,
the reclist internals EvalRSRecList relies on, and the per-user scores of a fold."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evaluation.challenge as challenge
from evaluation.challenge import (
    DEFAULT_GROUPS,
    DEFAULT_WEIGHTS,
    LEADERBOARD_TESTS,
    MRED_SLICES,
    MRED_TESTS,
    REFERENCES_DIR,
    SLICE_EDGES,
    STATS,
    TESTS,
    ChallengeFold,
    FoldScorer,
    References,
    UserScores,
    bootstrap,
    load_references,
    score,
)
from evaluation.data import TrackVectors
from evaluation.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- one spec


def test_spec_lists_nine_leaderboard_tests_and_stats():
    assert len(LEADERBOARD_TESTS) == 9 and len(set(LEADERBOARD_TESTS)) == 9
    assert TESTS == (*LEADERBOARD_TESTS, STATS)
    assert set(MRED_TESTS) <= set(LEADERBOARD_TESTS)
    assert tuple(MRED_SLICES) == MRED_TESTS
    assert set(SLICE_EDGES) <= set(MRED_SLICES.values())


def test_groups_cover_the_leaderboard_tests_once():
    members = [t for group in DEFAULT_GROUPS.values() for t in group]
    assert sorted(members) == sorted(LEADERBOARD_TESTS)
    assert set(DEFAULT_GROUPS) == set(DEFAULT_WEIGHTS)
    default = References(baseline=dict.fromkeys(LEADERBOARD_TESTS, 0.0),
                         best=dict.fromkeys(LEADERBOARD_TESTS, 1.0), hit_rate_threshold=0.0)
    assert default.groups == DEFAULT_GROUPS and default.weights == DEFAULT_WEIGHTS
    default.groups["accuracy"].append("X")  # a References owns its groups
    assert "X" not in DEFAULT_GROUPS["accuracy"]


@pytest.mark.parametrize("path", sorted(REFERENCES_DIR.glob("*.json")), ids=lambda p: p.stem)
def test_shipped_references_follow_the_spec(path):
    refs = load_references(path.stem)
    assert refs.groups == DEFAULT_GROUPS and refs.weights == DEFAULT_WEIGHTS
    assert set(refs.baseline) == set(refs.best) == set(LEADERBOARD_TESTS)


def test_reclist_tests_and_the_runner_list_equal_the_spec():
    from evaluation.challenge_reclist import EvalRSRecList

    runner = importlib.import_module("evaluation.runner")
    reclist_tests = getattr(runner, "reclist_tests", None) or \
        importlib.import_module("evaluation.runner._loop").reclist_tests
    assert reclist_tests(EvalRSRecList) == sorted(TESTS)
    # every runner module that names the test lists takes them from the spec
    seen = 0
    for info in pkgutil.iter_modules(runner.__path__, "evaluation.runner."):
        module = importlib.import_module(info.name)
        for name, spec_value in (("LEADERBOARD_TESTS", LEADERBOARD_TESTS),
                                 ("MRED_TESTS", MRED_TESTS)):
            if hasattr(module, name):
                seen += 1
                assert getattr(module, name) is spec_value, (info.name, name)
    assert seen
    methods = [m for m in vars(EvalRSRecList).values() if getattr(m, "is_test", False)]
    assert [m.test_type for m in methods] == list(TESTS)


def test_fold_slices_follow_the_spec():
    fold = _fold()
    assert list(fold.slices) == list(MRED_SLICES.values())
    for name, edges in SLICE_EDGES.items():
        assert fold.slices[name].labels == ("0", *(str(e) for e in edges))


# --------------------------------------------------------------------------- package layout


def test_all_is_sorted_and_resolves():
    assert challenge.__all__ == sorted(challenge.__all__)
    for name in challenge.__all__:
        assert getattr(challenge, name) is not None


#: One fresh interpreter for both checks below: reclist is unimportable (a finder that records
#: every attempt and refuses it, as if reclist were not installed) while the challenge package
#: is imported and a fold is scored; then the block goes and the RecList module imports reclist.
RECLIST_PROBE = """
import importlib.abc, json, sys, warnings

asked = []

class NoReclist(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "reclist":
            asked.append(name)
            raise ImportError(f"{name} is blocked in this probe")
        return None

blocker = NoReclist()
sys.meta_path.insert(0, blocker)
found = {}
import evaluation.challenge as c
found["import"] = sorted(m for m in sys.modules if m.split(".")[0] == "reclist") + asked
c.score; c.read_predictions; c.FoldScorer; c.UserScores; c.bootstrap
found["names"] = sorted(m for m in sys.modules if m.split(".")[0] == "reclist") + asked
found["has_reclist_class"] = hasattr(c, "EvalRSRecList")
warnings.simplefilter("ignore")
from evaluation import ChallengeDataset
from evaluation.challenge import score
from evaluation.predictions import predictions_frame
ds = ChallengeDataset("synthetic", scale="tiny", num_folds=1)
test = ds.get_test_set(0)
items = [[int(t)] * 1 for t in test["track_id"]]
report = score(ds, 0, predictions_frame(test["user_id"], items, 1), k=1)
found["hit_rate"] = report["tests"]["HIT_RATE"]
found["score"] = sorted(m for m in sys.modules if m.split(".")[0] == "reclist") + asked
sys.meta_path.remove(blocker)
import evaluation.challenge_reclist
found["reclist_module"] = "reclist" in sys.modules
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def reclist_probe() -> dict:
    """What ``RECLIST_PROBE`` found (each list: reclist modules loaded, then imports tried)."""
    proc = subprocess.run([sys.executable, "-c", RECLIST_PROBE], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_importing_the_package_and_scoring_do_not_import_reclist(reclist_probe):
    # not even tried: a lazy `try: import reclist` would be seen
    assert reclist_probe["import"] == [], "import"
    assert reclist_probe["names"] == [], "score"
    assert not reclist_probe["has_reclist_class"], "the RecList is challenge_reclist"
    assert reclist_probe["reclist_module"], "the RecList"


def test_score_runs_without_reclist(reclist_probe):
    # reclist unimportable from the interpreter's start: scoring a fold neither needs nor tries it
    assert reclist_probe["hit_rate"] == 1.0, reclist_probe
    assert reclist_probe["score"] == []


# --------------------------------------------------------------------------- old import paths

@pytest.mark.parametrize("old", ["evaluation.leaderboard", "evaluation.reclist",
                                 "evaluation.scoring"])
def test_old_paths_are_gone(old):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)


def test_the_metric_library_offers_no_challenge_names():
    import evaluation.metrics as metrics

    with pytest.raises(AttributeError):
        metrics.hit_ranks  # noqa: B018


# --------------------------------------------------------------------------- reclist internals


def test_reclist_internals_that_evalrs_reclist_relies_on():
    """EvalRSRecList subclasses reclist 2.1.0's RecList and overrides private hooks; a reclist
    release that renames any of these breaks rendering, so pin them here."""
    from reclist.charts import CHART_TYPE
    from reclist.logs import LOGGER
    from reclist.metadata import METADATA_STORE
    from reclist.reclist import RecList, rec_test

    assert {"SCALAR", "BARS"} <= set(CHART_TYPE.__members__)
    assert "LOCAL" in LOGGER.__members__ and "LOCAL" in METADATA_STORE.__members__
    params = list(inspect.signature(RecList.__init__).parameters)
    assert params[:4] == ["self", "model_name", "logger", "metadata_store"]
    assert "META_DATA_FOLDER" in vars(RecList)
    for hook, args in {"get_tests": ["self"], "__call__": ["self", "verbose", "args", "kwargs"],
                       "_display_rich_table": ["self", "table_name", "results"],
                       "_dump_results_to_json": ["self", "test_results", "report_path"],
                       "_bar_chart": ["self", "test_result"],
                       "_generate_report_and_plot": ["self", "test_results", "meta_store_path"],
                       }.items():
        assert list(inspect.signature(getattr(RecList, hook)).parameters) == args, hook
    assert isinstance(vars(RecList)["rec_tests"], property)

    @rec_test(test_type="T", display_type=CHART_TYPE.BARS)
    def probe(self):
        """Doc."""
        return {"a": 1.0}

    assert (probe.is_test, probe.test_type, probe.display_type, probe.test_desc,
            probe.name) == (True, "T", CHART_TYPE.BARS, "Doc.", "probe")

    class Probe(RecList):
        pass

    Probe.probe = probe
    rl = Probe("m", LOGGER.LOCAL, METADATA_STORE.LOCAL)
    assert (rl.name, rl.model_name, rl._test_results) == ("Probe", "m", [])
    assert list(rl.rec_tests) == ["probe"]


# --------------------------------------------------------------------------- per-user scores


def _fold(vectors: bool = True, seed: int = 0) -> ChallengeFold:
    rng = np.random.default_rng(seed)
    n_users, n_tracks, k = 300, 80, 10
    users = pd.DataFrame({"country": rng.choice(["US", "IT", None], n_users),
                          "gender": rng.choice(["m", "f", None], n_users)},
                         index=pd.Index(np.arange(n_users), name="user_id"))
    tracks = pd.DataFrame({"artist_id": rng.integers(0, 9, n_tracks)},
                          index=pd.Index(np.arange(n_tracks), name="track_id"))
    train = pd.DataFrame({"user_id": rng.integers(0, n_users, 3000),
                          "track_id": rng.integers(0, n_tracks, 3000),
                          "user_track_count": rng.integers(1, 300, 3000)})
    ids = np.arange(0, n_tracks, 2)[:-3]  # some tracks without a vector
    tv = TrackVectors(ids, rng.normal(size=(len(ids), 4)).astype(np.float32)) if vectors \
        else None
    preds = rng.integers(-1, n_tracks, (n_users, k))
    targets = rng.integers(0, n_tracks, n_users)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ChallengeFold.from_frames(np.arange(n_users), targets, preds, train=train,
                                         users=users, tracks=tracks, vectors=tv)


def _old_blw(fold: ChallengeFold) -> np.ndarray:
    """BEING_LESS_WRONG per user as UserScores computed it before taking the fold's value."""
    rows_of, table = fold.vectors.rows, fold.vectors.vectors
    ranks = np.asarray(fold.ranks)
    preds = np.asarray(fold.predictions)
    blw = np.full(len(ranks), np.nan)
    t_rows = rows_of(np.asarray(fold.targets))
    sel = np.flatnonzero(~(ranks > 0) & (t_rows >= 0))
    if len(sel):
        first = preds[sel, 0] if preds.shape[1] else np.full(len(sel), -1)
        f_rows = rows_of(first)
        a = table[t_rows[sel]].astype(np.float64)
        b = table[np.maximum(f_rows, 0)].astype(np.float64)
        dot = np.einsum("ij,ij->i", a, b)
        norms = np.sqrt(np.einsum("ij,ij->i", a, a) * np.einsum("ij,ij->i", b, b))
        sims = np.zeros(len(sel))
        np.divide(dot, norms, out=sims, where=(norms > 0) & (f_rows >= 0))
        blw[sel] = sims
    return blw


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_user_scores_take_the_folds_being_less_wrong_bit_for_bit(seed):
    fold = _fold(seed=seed)
    scores = UserScores.from_challenge_fold(fold)
    assert scores.blw.tobytes() == _old_blw(fold).tobytes()
    assert scores.blw.tobytes() == fold.being_less_wrong_scores().tobytes()
    assert scores.ld.tobytes() == fold.latent_diversity_scores().tobytes()
    point = scores.tests()
    assert point["BEING_LESS_WRONG"][0] == pytest.approx(fold.being_less_wrong()["value"])


def test_user_scores_without_vectors():
    fold = _fold(vectors=False)
    scores = UserScores.from_challenge_fold(fold)
    assert np.isnan(scores.blw).all() and np.isnan(scores.ld).all()


def test_user_scores_want_a_challenge_fold():
    with pytest.raises(TypeError, match="expects a ChallengeFold, got dict"):
        UserScores.from_challenge_fold({"ranks": np.zeros(3)})


# --------------------------------------------------------------------------- checks, scorer


@pytest.mark.parametrize("kwargs,pattern", [
    ({"n_boot": 1}, r"'n_boot' parameter of bootstrap must be an int in the range \[2, inf\)\. "
                    r"Got 1 instead"),
    ({"n_boot": 2.0}, r"'n_boot' parameter of bootstrap must be an int .* Got 2\.0 instead"),
    ({"level": 1.0}, r"'level' parameter of bootstrap must be a number in the range "
                     r"\(0\.0, 1\.0\)\. Got 1\.0 instead"),
    ({"seed": -1}, r"'seed' parameter of bootstrap must be an int in the range \[0, inf\)"),
    ({"chunk": 0}, r"'chunk' parameter of bootstrap must be an int in the range \[1, inf\)"),
])
def test_bootstrap_parameter_checks(kwargs, pattern):
    scores = UserScores.from_challenge_fold(_fold())
    with pytest.raises(ConfigError, match=pattern):
        bootstrap([scores], **kwargs)


def test_score_without_a_reclist_equals_score_with_evalrs_reclist():
    from evaluation import ChallengeDataset
    from evaluation.challenge_reclist import EvalRSRecList
    from evaluation.predictions import predictions_frame

    ds = ChallengeDataset("synthetic", scale="tiny", num_folds=1)
    test = ds.get_test_set(0)
    rng = np.random.default_rng(1)
    items = np.array([rng.choice(ds.df_tracks.index.to_numpy(), 20, replace=False)
                      for _ in range(len(test))])
    items[::3, 0] = test["track_id"].to_numpy()[::3]
    preds = predictions_frame(test["user_id"], items, 20)
    plain = score(ds, 0, preds, k=20, warn_training_items=False)
    with_reclist = score(ds, 0, preds, k=20, reclist_cls=EvalRSRecList,
                         warn_training_items=False)
    assert json.dumps(plain) == json.dumps(with_reclist)
    scorer = FoldScorer(ds, 0, preds, k=20, warn_training_items=False)
    assert list(scorer.results()) == list(TESTS)
    assert scorer.results() == plain["tests"]
