"""One metric's per-user values (a sampled-negative protocol's): the blob read back as written
and refused when hostile, and a team's paired replicates of their fold mean against a slow
reference on the board's resamples."""

from __future__ import annotations

import base64
import re
import zlib

import numpy as np
import pytest

from evaluation.challenge import (
    MetricValues,
    decode_metric_values,
    encode_metric_values,
    metric_replicates,
    paired_resamples,
)
from evaluation.errors import ConfigError, DataError

HASHES = ("a" * 64, "b" * 64)


def _values(seed: int = 0, sizes=(7, 5)) -> MetricValues:
    rng = np.random.default_rng(seed)
    return MetricValues(metric="ndcg@10", folds=tuple(rng.random(n) for n in sizes),
                        users_sha256=HASHES[:len(sizes)])


def test_a_blob_reads_back_to_the_bit():
    values = _values()
    read = decode_metric_values(encode_metric_values(values), [7, 5])
    assert read.metric == "ndcg@10" and read.users_sha256 == HASHES
    assert all((a == b).all() for a, b in zip(read.folds, values.folds))
    assert decode_metric_values(encode_metric_values(values), None).n_users == [7, 5]


def _forged(header: bytes, payload: bytes) -> str:
    raw = b"EVRSMV01" + len(header).to_bytes(4, "little") + header + payload
    return base64.b64encode(zlib.compress(raw)).decode()


@pytest.mark.parametrize("text, words", [
    ("not base64!", "not base64"),
    (base64.b64encode(b"plain bytes").decode(), "zlib"),
    (base64.b64encode(zlib.compress(b"\0" * 10_000_000)).decode(), "inflates to more"),
    (_forged(b'{"format": "evalrs-metric-values/1", "metric": "m", "folds": [{"n_users": 7, '
             b'"users_sha256": "' + b"a" * 64 + b'"}, {"n_users": 4, "users_sha256": "'
             + b"b" * 64 + b'"}]}', b"\0" * 88), "declares [7, 4] users per fold"),
    (_forged(b'{"format": "other", "folds": []}', b""), "does not declare"),
    (_forged(b'{"format": "evalrs-metric-values/1", "metric": "m", "folds": [{"n_users": 7, '
             b'"users_sha256": "' + b"a" * 64 + b'"}, {"n_users": 5, "users_sha256": "x"}]}',
             b"\0" * 96), "not a hex sha256"),
    (_forged(b'{"format": "evalrs-metric-values/1", "metric": "m", "folds": [{"n_users": 7, '
             b'"users_sha256": "' + b"a" * 64 + b'"}, {"n_users": 5, "users_sha256": "'
             + b"b" * 64 + b'"}]}', np.full(12, np.nan).tobytes()), "not a finite number"),
    (_forged(b'{"format": "evalrs-metric-values/1", "metric": "m", "folds": [{"n_users": 7, '
             b'"users_sha256": "' + b"a" * 64 + b'"}, {"n_users": 5, "users_sha256": "'
             + b"b" * 64 + b'"}]}', np.full(12, 1e9).tobytes()), "magnitude at most"),
    (_forged(b'{"format": "evalrs-metric-values/1", "metric": "m", "folds": [{"n_users": 7, '
             b'"users_sha256": "' + b"a" * 64 + b'"}, {"n_users": 5, "users_sha256": "'
             + b"b" * 64 + b'"}]}', b"\0" * 95), "bytes of values"),
])
def test_a_hostile_blob_is_refused_by_name(text, words):
    with pytest.raises(DataError, match=re.escape(words)):
        decode_metric_values(text, [7, 5])


def test_values_that_cannot_travel_are_refused_when_written():
    for bad in (MetricValues("", (np.zeros(2),), HASHES[:1]),
                MetricValues("m", (np.zeros(2),), HASHES),
                MetricValues("m", (np.array([0.5, np.inf]),), HASHES[:1]),
                MetricValues("m", (np.zeros(2),), ("nope",))):
        with pytest.raises(ConfigError):
            encode_metric_values(bad)


def test_the_replicates_are_the_fold_means_of_the_resampled_users():
    values = _values(3, sizes=(40, 25))
    resamples = paired_resamples(11, 60, [40, 25])
    got = metric_replicates(values.folds, resamples, "ndcg@10")
    # slow reference: each replicate lists its drawn users one by one
    expected = []
    for r in range(60):
        means = []
        for f, fold in enumerate(values.folds):
            drawn = [fold[i] for i in range(len(fold))
                     for _ in range(int(resamples.counts[f][r, i]))]
            means.append(sum(drawn) / len(drawn))
        expected.append(sum(means) / len(means))
    assert got.replicates == pytest.approx(expected, rel=1e-12)
    assert got.score == pytest.approx((values.folds[0].mean() + values.folds[1].mean()) / 2,
                                      rel=1e-15)
    assert got.groups == ("ndcg@10",) and got.group_replicates.shape == (1, 60)
    with pytest.raises(ConfigError, match="board's resamples"):
        metric_replicates(values.folds[:1], resamples, "ndcg@10")
