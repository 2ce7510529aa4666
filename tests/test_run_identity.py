"""The faster paths of a run give the same numbers, to the last bit, as the plain ones."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from evaluation import ChallengeDataset, EvalRSRunner
from evaluation.baselines import PopularityModel
from evaluation.challenge import UserScores
from evaluation.challenge._bootstrap import bootstrap
from evaluation.data import synthetic_tables
from evaluation.dataset import _PARALLEL_TAKE_ROWS, _take_rows


def random_scores(n: int, seed: int) -> UserScores:
    rng = np.random.default_rng(seed)
    hit = rng.random(n) < 0.2
    rr = np.where(hit, 1.0 / rng.integers(1, 100, n), 0.0)
    slices = {name: rng.integers(-2, groups, n).astype(np.int32) for name, groups in
              [("MRED_COUNTRY", 8), ("MRED_USER_ACTIVITY", 3), ("MRED_TRACK_POPULARITY", 4),
               ("MRED_ARTIST_POPULARITY", 4), ("MRED_GENDER", 3)]}
    blw = np.where(rng.random(n) < 0.8, rng.random(n), np.nan)
    ld = np.where(rng.random(n) < 0.9, rng.random(n) - 0.5, np.nan)
    # a strided rr: the contiguous copies must not change a value
    rr_strided = np.repeat(rr, 2)[::2]
    return UserScores(hit, rr_strided, slices, blw, ld)


def plain_tests(scores: UserScores, weights: np.ndarray) -> dict[str, np.ndarray]:
    """The plain formulation: one product, then each real column as ``(w * column).sum``."""
    from evaluation.challenge._scores import _tests_from_sums

    x, layout = scores._design()
    w = weights.astype(np.float64)
    sums = w @ x
    for col in layout["real_columns"]:
        sums[:, col] = (w * x[:, col]).sum(axis=1)
    return _tests_from_sums(sums, layout)


@pytest.mark.parametrize("n,b", [(1, 1), (37, 5), (5_003, 50)])
def test_weighted_tests_equal_the_plain_formulation_bit_for_bit(n, b):
    scores = random_scores(n, seed=n)
    weights = np.random.default_rng(b).integers(0, 4, (b, n))
    fast = scores.tests(weights)
    slow = plain_tests(scores, weights)
    assert fast.keys() == slow.keys()
    for name in slow:
        np.testing.assert_array_equal(fast[name], slow[name], err_msg=name)
    # and the plain point estimates: ratios computed by hand
    ones = scores.tests(np.ones((1, n), dtype=np.int64))
    hit, rr = np.asarray(scores.hit), np.asarray(scores.rr)
    assert ones["HIT_RATE"][0] == pytest.approx(hit.mean(), abs=1e-15)
    assert ones["MRR"][0] == pytest.approx(rr.mean(), rel=1e-12, abs=1e-15)
    ld = scores.ld[~np.isnan(scores.ld)]
    if len(ld):
        assert ones["LATENT_DIVERSITY"][0] == pytest.approx(ld.mean(), rel=1e-12, abs=1e-15)


def test_bootstrap_intervals_equal_those_of_the_plain_formulation(monkeypatch):
    folds = [random_scores(2_000, seed=s) for s in range(3)]
    fast = bootstrap(folds, n_boot=60, seed=3, chunk=16)
    monkeypatch.setattr(UserScores, "tests", lambda self, w=None: plain_tests(
        self, np.ones((1, len(self)), dtype=np.int64) if w is None else w))
    slow = bootstrap([random_scores(2_000, seed=s) for s in range(3)], n_boot=60, seed=3,
                     chunk=16)
    assert json.dumps(fast, sort_keys=True) == json.dumps(slow, sort_keys=True)


@pytest.mark.parametrize("index", ["range", "shifted", "labels"])
def test_parallel_take_equals_pandas_take(index):
    n = _PARALLEL_TAKE_ROWS + 1_000
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.integers(0, 9, n, dtype=np.int32),
                          "b": rng.random(n).astype(np.float32)})
    if index == "shifted":
        frame.index = pd.RangeIndex(5, n + 5, name="row")
    elif index == "labels":
        frame.index = pd.Index(rng.permutation(n) * 3, name="row")
    rows = np.sort(rng.choice(n, _PARALLEL_TAKE_ROWS + 10, replace=False)).astype(np.int32)
    got, want = _take_rows(frame, rows), frame.take(rows)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert got.index.dtype == want.index.dtype and got.index.name == want.index.name


def _results(tmp_path, name: str, tables, **dataset_options) -> dict:
    """results.json of a default run, less its timings and environment."""
    ds = ChallengeDataset(tables, validate=False, **dataset_options)
    runner = EvalRSRunner(ds, results_dir=tmp_path / name, progress=False, verbose=False,
                          n_boot=40, references=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = runner.evaluate(PopularityModel()).path
    doc = json.loads(path.read_text())
    # by default no reclist report folder (charts) is drawn
    assert not (path.parent / "reclist").exists()
    for part in (doc, *doc["folds"]):
        part.pop("runtime")
    doc.pop("environment")
    return doc


def test_a_run_from_cached_folds_writes_the_same_results(tmp_path):
    tables = synthetic_tables("tiny")
    computed = _results(tmp_path, "computed", tables, fold_cache=False)
    first = _results(tmp_path, "first", tables)  # cuts the folds and caches them
    cached = _results(tmp_path, "cached", tables)  # reads them back
    assert computed["confidence_intervals"]["tests"]["HIT_RATE"] is not None
    assert json.dumps(computed, sort_keys=True) == json.dumps(first, sort_keys=True)
    assert json.dumps(computed, sort_keys=True) == json.dumps(cached, sort_keys=True)


def test_validated_content_is_not_scanned_again_but_changed_content_is(tmp_path, monkeypatch):
    from evaluation.data import _schema, read_tables, validate_tables, write_tables
    from evaluation.errors import DataError

    tables = synthetic_tables("tiny")
    write_tables(tables, tmp_path / "data")
    first = validate_tables(read_tables(tmp_path / "data"))  # full checks; outcome recorded

    def scanned(*args, **kwargs):
        raise AssertionError("a value check ran again on content that passed it")

    for name in ("_check_count_total", "known_mask"):
        monkeypatch.setattr(_schema, name, scanned)
    again = validate_tables(read_tables(tmp_path / "data"))
    for a, b in ((first.events, again.events), (first.users, again.users),
                 (first.tracks, again.tracks)):
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    np.testing.assert_array_equal(first.track_vectors.vectors, again.track_vectors.vectors)
    assert again.fingerprint() == first.fingerprint()
    monkeypatch.undo()

    # other content (a negative id written into the same directory) is checked in full
    events = tables.events.copy()
    events.loc[3, "user_track_count"] = -1
    write_tables(tables.__class__(events=events, users=tables.users, tracks=tables.tracks,
                                  track_vectors=tables.track_vectors, source=tables.source),
                 tmp_path / "data", replace=True)
    with pytest.raises(DataError, match="counts must be >= 0"):
        validate_tables(read_tables(tmp_path / "data"))


def test_submission_draws_reports_only_when_asked():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "submission.py"
    spec = importlib.util.spec_from_file_location("submission_script", path)
    submission = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(submission)
    assert submission.parse_args([]).reports is False
    assert submission.parse_args(["--reports"]).reports is True
