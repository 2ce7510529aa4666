"""The faster paths of a run give the same numbers, to the last bit, as the plain ones."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from evaluation import ChallengeDataset, EvalRSRunner
from evaluation.baselines import PopularityModel
from evaluation.challenge import UserScores, resample_counts
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


def plain_design(scores: UserScores) -> np.ndarray:
    """The design matrix built the obvious way: one float64 column per quantity, stacked."""
    hit = np.asarray(scores.hit, dtype=np.float64)
    miss = 1.0 - hit
    cols = [np.ones(len(hit)), hit, np.asarray(scores.rr, dtype=np.float64)]
    for codes in scores.slices.values():
        in_mr = (codes >= -1).astype(np.float64)
        cols += [in_mr, miss * in_mr]
        for g in np.unique(codes[codes >= 0]):
            member = (codes == g).astype(np.float64)
            cols += [member, miss * member]
    for values in (scores.blw, scores.ld):
        ok = ~np.isnan(values)
        cols += [np.where(ok, values, 0.0), ok.astype(np.float64)]
    return np.column_stack(cols)


def plain_tests(scores: UserScores, weights: np.ndarray | None) -> dict[str, np.ndarray]:
    """The plain formulation: one product, then each real column as ``(w * column).sum``;
    without weights, ``X.sum(axis=0)``."""
    from evaluation.challenge._scores import _tests_from_sums

    x, layout = plain_design(scores), scores._design()
    if weights is None:
        return _tests_from_sums(x.sum(axis=0)[None, :], layout)
    w = weights.astype(np.float64)
    sums = w @ x
    for col in layout["real_columns"]:
        sums[:, col] = (w * x[:, col]).sum(axis=1)
    return _tests_from_sums(sums, layout)


@pytest.mark.parametrize("n", [0, 1, 37, 5_003])
def test_the_design_and_the_point_estimates_equal_the_plain_ones_bit_for_bit(n):
    scores = random_scores(n, seed=n + 100)
    np.testing.assert_array_equal(scores.design_matrix(), plain_design(scores))
    fast, slow = scores.tests(), plain_tests(scores, None)
    for name in slow:
        np.testing.assert_array_equal(fast[name], slow[name], err_msg=name)


def test_resampled_tests_equal_the_checked_ones():
    scores = random_scores(2_001, seed=5)
    counts = next(resample_counts(np.random.default_rng(1), len(scores), 20))[1]
    fast, checked = scores.resampled_tests(counts), scores.tests(counts)
    for name in checked:
        np.testing.assert_array_equal(fast[name], checked[name], err_msg=name)


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


def test_counts_summing_past_float32_take_the_float64_product_with_the_same_bits():
    # float32 holds the 0/1 columns' sums exactly only below 2**24 per row: a row of counts
    # summing to 2**24 (or negative weights) goes through the float64 product instead
    from evaluation.challenge._scores import _float32_exact

    n = 64
    scores = random_scores(n, seed=11)
    small = np.random.default_rng(0).integers(0, 4, (3, n))
    assert _float32_exact(small) and _float32_exact(small.astype(np.uint8))
    large = small.copy()
    large[1, 5] = 2**24 - large[1].sum() + large[1, 5]  # row 1 sums to exactly 2**24
    assert large[1].sum() == 2**24 and not _float32_exact(large)
    negative = small.copy()
    negative[0, 0] = -1
    assert not _float32_exact(negative) and not _float32_exact(small.astype(np.float64))
    for weights in (small, large, negative, small.astype(np.float64)):
        fast, slow = scores.tests(weights), plain_tests(scores, weights)
        for name in slow:
            np.testing.assert_array_equal(fast[name], slow[name], err_msg=name)


def test_resampled_counts_equal_one_bincount_over_all_replicates():
    # the counts are built one replicate at a time; the plain formulation counts the codes
    # "replicate * n + user" of the whole chunk at once, from the same random draws
    n, n_boot, chunk = 1_001, 23, 10
    rng_a, rng_b = np.random.default_rng(4), np.random.default_rng(4)
    got = list(resample_counts(rng_a, n, n_boot, chunk))
    assert [start for start, _ in got] == [0, 10, 20]
    for start, counts in got:
        b = min(chunk, n_boot - start)
        flat = rng_b.integers(0, n, size=(b, n), dtype=np.int64)
        flat += (np.arange(b, dtype=np.int64) * n)[:, None]
        expected = np.bincount(flat.ravel(), minlength=b * n).reshape(b, n)
        np.testing.assert_array_equal(counts, expected)
        assert (counts.sum(axis=1) == n).all()


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

    path = Path(__file__).resolve().parents[2] / "submission.py"
    spec = importlib.util.spec_from_file_location("submission_script", path)
    submission = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(submission)
    assert submission.parse_args([]).reports is False
    assert submission.parse_args(["--reports"]).reports is True


def test_scoring_keeps_the_four_training_columns_of_the_challenge_reclist_only():
    from evaluation.challenge_reclist import EvalRSRecList
    from evaluation.runner._fold import SCORING_COLUMNS, _scoring_rows

    frame = ChallengeDataset(synthetic_tables("tiny"), num_folds=1).get_train_set(0)
    slim = _scoring_rows(frame, None)  # the challenge's own tests (no custom RecList)
    assert list(slim.columns) == list(SCORING_COLUMNS)
    assert len(slim) == len(frame) and isinstance(slim.index, pd.RangeIndex)
    for column in slim.columns:  # the same arrays, not copies
        assert np.shares_memory(slim[column].to_numpy(), frame[column].to_numpy())

    class WithOwnTests(EvalRSRecList):
        """A custom RecList may read any column of x_train: it gets the whole frame."""

    assert _scoring_rows(frame, WithOwnTests) is frame
