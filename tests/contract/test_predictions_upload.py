"""The predictions upload's stream: written compact, read strictly and bounded."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

from evaluation.contract import (
    encode_predictions,
    is_predictions,
    read_header,
    read_predictions,
    with_claim,
)
from evaluation.errors import DataError

K = 5
CLAIM = {"run_id": "r-1", "results": {"k": K}}


def _folds(rng, sizes=(7, 9)):
    return [(np.arange(100, 100 + n, dtype="<i4").tobytes(),
             rng.integers(0, 1000, (n, K)).astype("<i4").tobytes()) for n in sizes]


def _stream(rng, **changes):
    return encode_predictions(CLAIM, k=K, run_hash="h" * 64, harness_version="0.1.0",
                              folds=_folds(rng), **changes)


def test_the_lists_come_back_as_written(rng):
    folds = _folds(rng)
    body = encode_predictions(CLAIM, k=K, run_hash="h" * 64, harness_version="0.1.0",
                              folds=folds)
    assert is_predictions(body) and not is_predictions(b'{"run_id": 1}')
    read = read_predictions(body, max_bytes=len(body), max_inflated=1 << 20)
    assert read.k == K and read.claim == CLAIM and read.run_hash == "h" * 64
    assert [(f.users, f.items) for f in read.folds] == folds
    assert [f.n_users for f in read.folds] == [7, 9]
    described = with_claim(body, {**CLAIM, "description": "x"})
    assert read_header(described)[0]["claim"]["description"] == "x"
    again = read_predictions(described, max_bytes=len(described), max_inflated=1 << 20)
    assert [(f.users, f.items) for f in again.folds] == folds


def test_a_malformed_stream_is_refused_naming_the_part(rng):
    body = _stream(rng)
    limits = {"max_bytes": 1 << 20, "max_inflated": 1 << 20}
    with pytest.raises(DataError, match="after its last fold"):
        read_predictions(body + b"x", **limits)
    with pytest.raises(DataError, match="ends before"):
        read_predictions(body[:-3], **limits)
    with pytest.raises(DataError, match="not a predictions stream"):
        read_predictions(b"PK" + body[2:], **limits)
    with pytest.raises(DataError, match="max_upload_bytes"):
        read_predictions(body, max_bytes=len(body) - 1, max_inflated=1 << 20)
    with pytest.raises(DataError, match="more than 100 bytes of lists"):
        read_predictions(body, max_bytes=1 << 20, max_inflated=100)


def test_a_compression_bomb_inflates_no_further_than_declared():
    users = np.arange(3, dtype="<i4").tobytes()
    bomb = zlib.compress(b"\0" * (64 << 20))  # 64 MiB of zeros where 3 x K ids belong
    header = (b'{"claim":{},"folds":[{"fold":0,"items_bytes":%d,"n_users":3,"users_bytes":%d}],'
              b'"format":1,"harness_version":"v","k":%d,"run_hash":"h"}'
              % (len(bomb), len(zlib.compress(users)), K))
    body = (b"EVRSPRD\x01" + struct.pack("<I", len(header)) + header + zlib.compress(users)
            + bomb)
    with pytest.raises(DataError, match="do not inflate to exactly"):
        read_predictions(body, max_bytes=1 << 30, max_inflated=1 << 20)


def test_of_several_bad_sections_the_first_in_the_stream_is_named(rng):
    # the sections are inflated in parallel: the error is still the first one a reader
    # going through the stream in order meets
    body = bytearray(_stream(rng))
    _, start = read_header(bytes(body))
    body[start:start + 2] = b"\xff\xff"  # fold 0's user ids: no longer a zlib stream
    limits = {"max_bytes": 1 << 20, "max_inflated": 1 << 20}
    with pytest.raises(DataError, match="fold 0's user ids: not a zlib stream"):
        read_predictions(bytes(body[:-3]), **limits)  # fold 1's lists cut short too
    body[-4:] = b"\0\0\0\0"  # and fold 1's lists' checksum wrong
    with pytest.raises(DataError, match="fold 0's user ids"):
        read_predictions(bytes(body), **limits)
