"""The per-user values blob: a round trip keeps every value (BLW and LD as float32), and
hostile blobs are refused with a clear error before they can take memory."""

from __future__ import annotations

import base64
import json
import struct
import tracemalloc
import zlib

import numpy as np
import pytest

from evaluation.challenge import (
    MRED_TESTS,
    FoldUsers,
    UserScores,
    decode_user_values,
    encode_user_values,
    float32_bound,
    ranks_from_rr,
    users_sha256,
)
from evaluation.challenge._user_values import MAGIC, MAX_DECOMPRESSED_BYTES, max_blob_bytes
from evaluation.errors import ConfigError, DataError

K = 100


def fold(seed: int, n: int, k: int = K) -> FoldUsers:
    rng = np.random.default_rng(seed)
    ranks = np.where(rng.random(n) < 0.3, rng.integers(1, k + 1, n), 0)
    hit = ranks > 0
    rr = np.zeros(n)
    rr[hit] = 1.0 / ranks[hit]
    blw = np.where(hit, np.nan, rng.uniform(-1, 1, n))
    ld = rng.normal(0.1, 0.05, n)
    ld[::7] = np.nan
    slices = {t: rng.integers(-2, 3, n).astype(np.int32) for t in MRED_TESTS}
    return FoldUsers(UserScores(hit=hit, rr=rr, slices=slices, blw=blw, ld=ld),
                     users_sha256(np.arange(n) + seed), {t: ("x", "y", "z") for t in MRED_TESTS})


def raw_blob(header: dict, body: bytes) -> bytes:
    """A blob built by hand: magic, header length, header, arrays, deflated."""
    head = json.dumps(header).encode()
    return zlib.compress(MAGIC + struct.pack("<I", len(head)) + head + body)


def header_of(text: str) -> tuple[dict, bytes]:
    raw = zlib.decompress(base64.b64decode(text))
    (size,) = struct.unpack_from("<I", raw, len(MAGIC))
    start = len(MAGIC) + 4
    return json.loads(raw[start:start + size]), raw[start + size:]


def test_round_trip_keeps_every_value():
    folds = [fold(1, 300), fold(2, 250)]
    back = decode_user_values(encode_user_values(folds, K), [300, 250], k=K)
    for sent, got in zip(folds, back):
        s, g = sent.scores, got.scores
        np.testing.assert_array_equal(g.hit, s.hit)
        np.testing.assert_array_equal(g.rr, s.rr)  # 1/rank recomputed: the same bits
        np.testing.assert_array_equal(g.blw, s.blw.astype(np.float32))
        np.testing.assert_array_equal(g.ld, s.ld.astype(np.float32))
        for t in MRED_TESTS:
            np.testing.assert_array_equal(g.slices[t], s.slices[t])
        assert got.users_sha256 == sent.users_sha256
        assert got.labels == sent.labels
        # the integer tests are the same numbers; the float32 ones within the stated bound
        ts, tg = s.tests(), g.tests()
        for t in ("HIT_RATE", "MRR", *MRED_TESTS):
            assert tg[t][0] == pytest.approx(ts[t][0], rel=1e-12)
        for t, v in (("BEING_LESS_WRONG", s.blw), ("LATENT_DIVERSITY", s.ld)):
            assert abs(tg[t][0] - ts[t][0]) <= float32_bound(v)


def test_ranks_above_255_take_two_bytes():
    folds = [fold(3, 200, k=1000)]
    text = encode_user_values(folds, 1000)
    header, _ = header_of(text)
    assert header["folds"][0]["dtypes"]["rank"] == "<u2"
    back = decode_user_values(text, [200], k=1000)
    np.testing.assert_array_equal(back[0].scores.rr, folds[0].scores.rr)
    with pytest.raises(DataError, match="k is 1000, the run's k is 100"):
        decode_user_values(text, [200], k=100)


def test_ranks_come_from_exact_reciprocals_only():
    assert ranks_from_rr(np.array([0.0, 1.0, 0.5, 1 / 3]), 10).tolist() == [0, 1, 2, 3]
    with pytest.raises(ConfigError, match="user 1"):
        ranks_from_rr(np.array([0.0, 0.4]), 10)
    with pytest.raises(ConfigError, match="rank r in 1..2"):
        ranks_from_rr(np.array([1 / 3]), 2)


def test_users_hash_depends_on_ids_and_order():
    assert users_sha256([1, 2, 3]) == users_sha256(np.array([1, 2, 3]))
    assert users_sha256([1, 2, 3]) != users_sha256([1, 3, 2])
    assert len(users_sha256([])) == 64


@pytest.mark.parametrize("cut", [1, 10, 200])
def test_truncated_blob_is_refused(cut):
    data = base64.b64decode(encode_user_values([fold(4, 300)], K))
    with pytest.raises(DataError, match="truncated"):
        decode_user_values(data[:-cut], [300], k=K)


def test_not_base64_and_not_zlib_are_refused():
    with pytest.raises(DataError, match="not base64"):
        decode_user_values("%%%not base64%%%", [10])
    with pytest.raises(DataError, match="not base64"):
        decode_user_values("\u00e9t\u00e9", [10])
    with pytest.raises(DataError, match="not zlib"):
        decode_user_values(base64.b64encode(b"plain bytes").decode(), [10])


def test_declared_lengths_other_than_the_folds_are_refused():
    text = encode_user_values([fold(5, 300)], K)
    with pytest.raises(DataError, match="declares 300 users; the fold's results have "
                                        "n_users=301"):
        decode_user_values(text, [301], k=K)
    with pytest.raises(DataError, match="has 1 fold"):
        decode_user_values(text, [300, 300], k=K)
    # a header that declares more users than its arrays hold
    header, body = header_of(text)
    header["folds"][0]["n_users"] = 10**6
    blob = raw_blob(header, body)
    with pytest.raises(DataError, match="declares 1000000 users"):
        decode_user_values(blob, [300], k=K)
    # the counts a trusted report declares: the arrays must be there
    with pytest.raises(DataError, match="truncated"):
        decode_user_values(blob, None, k=K)


def test_oversized_declared_users_are_refused_before_inflating():
    too_many = MAX_DECOMPRESSED_BYTES // 10
    with pytest.raises(DataError, match="more than a leaderboard reads"):
        decode_user_values(encode_user_values([fold(6, 10)], K), [too_many, too_many])


def test_a_decompression_bomb_is_refused_with_bounded_memory():
    # twice the most any blob may inflate to, in zeros after a valid header (~130 KiB
    # deflated); 1,000 users' blob may inflate to 80 KB
    header, _ = header_of(encode_user_values([fold(7, 1000)], K))
    head = json.dumps(header).encode()
    packer = zlib.compressobj(9)
    parts = [packer.compress(MAGIC + struct.pack("<I", len(head)) + head)]
    zeros = bytes(1 << 20)
    parts += [packer.compress(zeros) for _ in range(2 * MAX_DECOMPRESSED_BYTES // len(zeros))]
    bomb = b"".join(parts) + packer.flush()
    assert len(bomb) < 2 << 20
    tracemalloc.start()
    try:
        with pytest.raises(DataError, match="decompression bomb"):
            decode_user_values(bomb, [1000], k=K)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # what 1000 users may inflate to, plus the input and Python's small change
    assert peak < max_blob_bytes([1000]) + len(bomb) + (4 << 20)


@pytest.mark.parametrize("field, value", [
    ("rank", "<u8"), ("blw", "<f8"), ("ld", "|O"), ("slices", "<i4")])
def test_dtype_codes_other_than_the_formats_are_refused(field, value):
    header, body = header_of(encode_user_values([fold(8, 50)], K))
    header["folds"][0]["dtypes"][field] = value
    with pytest.raises(DataError, match="are not the format's"):
        decode_user_values(raw_blob(header, body), [50], k=K)


def test_other_formats_and_bad_headers_are_refused():
    header, body = header_of(encode_user_values([fold(9, 50)], K))
    for edit, message in [
            (lambda h: h.update(format="evalrs-user-values/9"), "is not 'evalrs-user-values/1'"),
            (lambda h: h.update(k=0), "must be an int in 1..65535"),
            (lambda h: h["folds"][0].update(users_sha256="x"), "not a hex sha256"),
            (lambda h: h["folds"][0]["slices"].reverse(), "in this order"),
            (lambda h: h["folds"][0]["slices"][0][1].append(7), "labels of MRED_COUNTRY")]:
        edited = json.loads(json.dumps(header))
        edit(edited)
        with pytest.raises(DataError, match=message):
            decode_user_values(raw_blob(edited, body), [50], k=K)
    with pytest.raises(DataError, match="does not start with"):
        decode_user_values(zlib.compress(b"PK\x03\x04" + bytes(100)), [50])
    big = zlib.compress(MAGIC + struct.pack("<I", 10**9) + bytes(100))
    with pytest.raises(DataError, match="header declares 1000000000 bytes"):
        decode_user_values(big, [50])


def test_values_out_of_their_range_are_refused():
    sent = fold(10, 50)
    text = encode_user_values([sent], K)
    header, body = header_of(text)
    n = 50
    # a rank above k, in the first rank byte
    edited = bytearray(body)
    edited[0] = K + 1
    with pytest.raises(DataError, match="above k=100"):
        decode_user_values(raw_blob(header, bytes(edited)), [n], k=K)
    # an infinite BLW: +inf in float32 is 0x7f800000, stored byte-shuffled
    edited = bytearray(body)
    for plane, byte in enumerate((0x00, 0x00, 0x80, 0x7F)):
        edited[n + plane * n + 3] = byte
    with pytest.raises(DataError, match="BEING_LESS_WRONG of user 3"):
        decode_user_values(raw_blob(header, bytes(edited)), [n], k=K)
    # a slice code outside the slice's three groups
    edited = bytearray(body)
    edited[n + 8 * n] = 3
    with pytest.raises(DataError, match="MRED_COUNTRY codes must lie in -2..2"):
        decode_user_values(raw_blob(header, bytes(edited)), [n], k=K)
    # trailing bytes
    with pytest.raises(DataError, match="trailing bytes"):
        decode_user_values(raw_blob(header, body + b"\0"), [n], k=K)


def test_encoding_refuses_what_it_cannot_carry():
    sent = fold(11, 20)
    with pytest.raises(ConfigError, match="k=0"):
        encode_user_values([sent], 0)
    bad = FoldUsers(sent.scores, "not a hash", sent.labels)
    with pytest.raises(ConfigError, match="not a hex sha256"):
        encode_user_values([bad], K)
    codes = dict(sent.scores.slices)
    codes["MRED_GENDER"] = np.full(20, 5)
    s = sent.scores
    out_of_groups = FoldUsers(UserScores(hit=s.hit, rr=s.rr, slices=codes, blw=s.blw, ld=s.ld),
                              sent.users_sha256, sent.labels)
    with pytest.raises(ConfigError, match="MRED_GENDER"):
        encode_user_values([out_of_groups], K)
