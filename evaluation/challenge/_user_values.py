"""The per-user values of a run as one compact blob: what a leaderboard needs to compare teams
user by user.

Per fold, per test user in the fold's test-user order: the rank of the target (0: missed),
the BEING_LESS_WRONG and LATENT_DIVERSITY values (float32, NaN where the user is left out) and
each MRED slice's code (the user's group, ``IN_MR_ONLY`` -1 or ``LEFT_OUT`` -2), with the
group labels of each slice and the sha256 of the fold's test user ids (runs with one run hash
share their folds: equal hashes say that two runs' arrays pair user by user).

The blob (``USER_VALUES_FORMAT``), before base64 and after deflate (zlib), is::

    b"EVRSUV01"  |  uint32 LE header length  |  header (UTF-8 JSON)  |  arrays

The header is ``{"format", "k", "folds": [{"n_users", "users_sha256", "dtypes", "slices":
[[test, [labels]], ...]}]}``. The arrays follow fold after fold, each fold's in this order:
ranks (``<u1`` when ``k <= 255``, else ``<u2``), BLW (``<f4``), LD (``<f4``), then one ``|i1``
array per slice in the header's order (the five MRED tests). The float32 arrays are stored
byte-shuffled (all first bytes, then all second bytes, ...), which lets deflate compress
their exponents. The dtypes are the format's own: the header names them so that a blob of
another layout is refused by name, never read with what it declares.

Reading a blob is safe against hostile input: the caller says how many users each fold has
(``n_users``), the decompressed size is bounded by what those users need (and by
``MAX_DECOMPRESSED_BYTES``), every declared length must equal the expected one, and no shape,
dtype or object is ever taken from the input.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import re
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evaluation.challenge._scores import IN_MR_ONLY, LEFT_OUT, UserScores
from evaluation.challenge._spec import MRED_TESTS
from evaluation.errors import ConfigError, DataError

#: The layout of a blob; a reader refuses any other.
USER_VALUES_FORMAT = "evalrs-user-values/1"
#: The blob's first bytes (after inflating).
MAGIC = b"EVRSUV01"
#: The longest header (JSON) a blob may have: the labels of five slices fit many times over.
MAX_HEADER_BYTES = 64 * 1024
#: The most a blob may inflate to, whatever the users it declares: about 40 times a full-scale
#: run (4 folds of ~30k users, about 1.7 MB).
MAX_DECOMPRESSED_BYTES = 64 * 2**20
#: The longest recommendation list a blob can carry (ranks are at most uint16).
MAX_K = 65535
#: The most groups a slice may have (codes are int8) and the longest label.
MAX_GROUPS = 127
MAX_LABEL = 128
#: Float32 values whose magnitude exceeds this are refused (BLW is a cosine, LD lies in
#: [-2, 2] times its weights): no honest value comes near it, and it keeps sums finite.
MAX_ABS_VALUE = 1e6
#: The dtypes of the arrays, as the header names them (ranks: by ``k``).
RANK_DTYPES = {1: "<u1", 2: "<u2"}
FLOAT_DTYPE = "<f4"
SLICE_DTYPE = "|i1"
#: Bytes per user at most: a uint16 rank, two float32, one int8 per slice.
MAX_BYTES_PER_USER = 2 + 4 + 4 + len(MRED_TESTS)
_SHA256 = re.compile(r"[0-9a-f]{64}")
_LENGTH = struct.Struct("<I")


@dataclass(frozen=True)
class FoldUsers:
    """One fold's per-user values, as a blob carries them.

    Attributes
    ----------
    scores : UserScores
        The per-user contributions (``rr`` is ``1 / rank``, exactly as the harness computes it).
    users_sha256 : str
        :func:`users_sha256` of the fold's test user ids, in the fold's order.
    labels : dict of str to tuple of str
        Each MRED test's group labels (a code ``g >= 0`` names ``labels[test][g]``); empty
        tuples when unknown.
    """

    scores: UserScores
    users_sha256: str
    labels: dict[str, tuple[str, ...]]

    def __len__(self) -> int:
        """Number of test users."""
        return len(self.scores)


def users_sha256(user_ids: Sequence | np.ndarray) -> str:
    """The sha256 of a fold's test user ids, in order: each id's text, one per line.

    Equal digests: two runs scored the same users in the same order, so their per-user
    arrays pair element by element.
    """
    text = "\n".join(str(u) for u in np.asarray(user_ids).tolist())
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def ranks_from_rr(rr: np.ndarray, k: int) -> np.ndarray:
    """The rank of each user's target (0: missed) from ``rr = 1 / rank``.

    Raises
    ------
    ConfigError
        When an ``rr`` is not 0 nor ``1 / r`` for an integer ``1 <= r <= k`` (``1 / r``
        computed in float64, as the harness computes it).
    """
    rr = np.asarray(rr, dtype=np.float64)
    hit = rr > 0
    ranks = np.zeros(len(rr), dtype=np.int64)
    with np.errstate(divide="ignore"):
        ranks[hit] = np.rint(1.0 / rr[hit]).astype(np.int64)
    back = np.zeros(len(rr))
    ok = hit & (ranks >= 1) & (ranks <= k)
    back[ok] = 1.0 / ranks[ok]
    bad = np.flatnonzero((hit & ~ok) | (back != rr))
    if len(bad):
        i = int(bad[0])
        raise ConfigError(f"user {i} has the reciprocal rank {rr[i]!r}, which is not 1/r for a "
                          f"rank r in 1..{k} (nor 0 for a miss); per-user values are only "
                          f"made from a fold the harness scored")
    return ranks


def encode_user_values(folds: Sequence[FoldUsers], k: int) -> str:
    """The base64 text of the blob holding ``folds`` (see the module's description).

    Parameters
    ----------
    folds : sequence of FoldUsers
        Every fold of the run, fold 0 first.
    k : int
        The run's list length (ranks are at most ``k``).

    Returns
    -------
    str
        ASCII base64 (standard alphabet, padded).

    Raises
    ------
    ConfigError
        When ``k`` is out of range, a rank is not 1/r for an integer r <= k, a slice is
        missing or has a code outside its groups.
    """
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise ConfigError(f"k={k!r}: per-user values carry lists of 1..{MAX_K} items")
    rank_dtype = RANK_DTYPES[_rank_width(k)]
    header: dict = {"format": USER_VALUES_FORMAT, "k": k, "folds": []}
    parts: list[bytes] = []
    for number, fold in enumerate(folds):
        header["folds"].append(_fold_header(number, fold, rank_dtype))
        parts += _fold_arrays(fold, k, rank_dtype)
    head = json.dumps(header, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True).encode("ascii")
    raw = b"".join([MAGIC, _LENGTH.pack(len(head)), head, *parts])
    return base64.b64encode(zlib.compress(raw, 6)).decode("ascii")


def _rank_width(k: int) -> int:
    """Bytes per rank: 1 when ``k <= 255``, else 2."""
    return 1 if k <= 255 else 2


def _fold_header(number: int, fold: FoldUsers, rank_dtype: str) -> dict:
    """A fold's entry of the header."""
    if not _SHA256.fullmatch(str(fold.users_sha256)):
        raise ConfigError(f"fold {number}: users_sha256 {fold.users_sha256!r} is not a hex "
                          f"sha256 (users_sha256(user_ids) makes one)")
    missing = [t for t in MRED_TESTS if t not in fold.scores.slices]
    if missing:
        raise ConfigError(f"fold {number}: the per-user scores lack the slice(s) {missing}")
    return {"n_users": len(fold.scores), "users_sha256": fold.users_sha256,
            "dtypes": {"rank": rank_dtype, "blw": FLOAT_DTYPE, "ld": FLOAT_DTYPE,
                       "slices": SLICE_DTYPE},
            "slices": [[t, [str(v) for v in fold.labels.get(t, ())]] for t in MRED_TESTS]}


def _fold_arrays(fold: FoldUsers, k: int, rank_dtype: str) -> list[bytes]:
    """A fold's arrays as bytes, in the format's order."""
    s = fold.scores
    ranks = ranks_from_rr(s.rr, k).astype(rank_dtype)
    out = [ranks.tobytes(), _shuffle(s.blw), _shuffle(s.ld)]
    for test in MRED_TESTS:
        codes = np.asarray(s.slices[test])
        n_labels = len(fold.labels.get(test, ()))
        high = (n_labels if n_labels else MAX_GROUPS + 1) - 1
        if len(codes) and (codes.min() < LEFT_OUT or codes.max() > high):
            raise ConfigError(f"{test}: slice codes must lie in {LEFT_OUT}..{high}; found "
                              f"{int(codes.min())}..{int(codes.max())}")
        out.append(codes.astype(SLICE_DTYPE).tobytes())
    return out


def _shuffle(values: np.ndarray) -> bytes:
    """Float32 little-endian bytes of ``values``, byte-shuffled (byte 0 of every value, then
    byte 1, ...)."""
    v = np.ascontiguousarray(np.asarray(values, dtype=np.float64).astype(FLOAT_DTYPE))
    return v.view(np.uint8).reshape(-1, 4).T.tobytes()


def _unshuffle(data: bytes, n: int) -> np.ndarray:
    """The inverse of :func:`_shuffle` for ``n`` values."""
    planes = np.frombuffer(data, dtype=np.uint8).reshape(4, n)
    return np.ascontiguousarray(planes.T).view(FLOAT_DTYPE).reshape(n)


# --------------------------------------------------------------------------- reading


def max_blob_bytes(n_users: Sequence[int]) -> int:
    """The most a blob declaring ``n_users`` may inflate to."""
    return 8 + _LENGTH.size + MAX_HEADER_BYTES + MAX_BYTES_PER_USER * sum(n_users)


def decode_user_values(text: str | bytes, n_users: Sequence[int] | None, *,
                       k: int | None = None) -> list[FoldUsers]:
    """Read a blob made by :func:`encode_user_values`, checking it against the folds it must
    hold.

    Parameters
    ----------
    text : str or bytes
        The base64 text (str), or the deflated blob it encodes (bytes: as a leaderboard
        stores it, see :func:`user_values_bytes`).
    n_users : sequence of int or None
        The test users of each fold, fold 0 first (from the run's results): the blob must hold
        exactly these folds and users, and may inflate only to what they need. None: the
        counts the blob declares, for a blob from a trusted source (a reproduction's private
        folds), still bounded by ``MAX_DECOMPRESSED_BYTES``.
    k : int, optional
        The run's list length: the blob's must be the same.

    Returns
    -------
    list of FoldUsers
        One per fold, ``rr = 1 / rank`` in float64, BLW and LD as float32, codes as int8.

    Raises
    ------
    DataError
        Naming the fold and the rule: not base64, not deflate, inflating past the bound its
        users allow (a decompression bomb), truncated, another format or dtype, a length
        other than the fold's ``n_users``, a rank above ``k``, a code outside the slice's
        groups, an infinite or absurd value.
    """
    data = user_values_bytes(text) if isinstance(text, str) else text
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise DataError(f"per-user values: the blob must be base64 text, got a "
                        f"{type(text).__name__}")
    expected = None if n_users is None else _expected_users(n_users)
    limit = MAX_DECOMPRESSED_BYTES if expected is None else max_blob_bytes(expected)
    raw = _inflate(bytes(data), limit)
    header, body = _split_header(raw)
    if expected is None:
        expected = _expected_users(_declared_users(header))
    blob_k = _header_k(header, k)
    width = _rank_width(blob_k)
    folds_meta = _header_folds(header, expected, RANK_DTYPES[width])
    need = sum(n * (width + 8 + len(MRED_TESTS)) for n in expected)
    if len(body) != need:
        raise DataError(f"per-user values: the arrays have {len(body)} bytes; the folds' "
                        f"{list(expected)} users need {need} ("
                        f"{'truncated' if len(body) < need else 'trailing bytes'}); send the "
                        f"blob the harness wrote")
    out, offset = [], 0
    for number, (n, meta) in enumerate(zip(expected, folds_meta)):
        fold, offset = _read_fold(number, body, offset, n, width, blob_k, meta)
        out.append(fold)
    return out


def _declared_users(header: dict) -> list:
    """The users per fold a header declares (checked by ``_expected_users``)."""
    folds = header.get("folds")
    if not isinstance(folds, list) or not all(isinstance(f, dict) for f in folds):
        raise DataError("per-user values: the header's folds must be a list of objects")
    return [f.get("n_users") for f in folds]


def _expected_users(n_users: Sequence[int]) -> list[int]:
    """``n_users`` checked: positive ints whose users fit the global bound."""
    counts = list(n_users)
    if not counts or any(isinstance(n, bool) or not isinstance(n, int) or n < 1
                         for n in counts):
        raise DataError(f"per-user values: each fold needs a positive number of users; the "
                        f"results say {counts[:8]!r}")
    if max_blob_bytes(counts) > MAX_DECOMPRESSED_BYTES:
        raise DataError(f"per-user values: {sum(counts)} test users in all are more than a "
                        f"leaderboard reads (at most {MAX_DECOMPRESSED_BYTES} bytes of "
                        f"arrays)")
    return counts


def user_values_bytes(text: str) -> bytes:
    """The deflated blob that base64 ``text`` encodes; DataError when it is not base64."""
    if not isinstance(text, str):
        raise DataError(f"per-user values: the blob must be base64 text, got a "
                        f"{type(text).__name__}")
    if not text.isascii():
        raise DataError("per-user values: the blob is not base64 (non-ASCII characters)")
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise DataError(f"per-user values: the blob is not base64 ({exc})") from None


def _inflate(data: bytes, limit: int) -> bytes:
    """``data`` inflated, never past ``limit`` bytes; DataError when it is not one complete
    deflate (zlib) stream or would inflate further."""
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(data, limit + 1)
    except zlib.error as exc:
        raise DataError(f"per-user values: the blob is not zlib-compressed data ({exc})") \
            from None
    if len(raw) > limit or inflater.unconsumed_tail:
        raise DataError(f"per-user values: the blob inflates to more than {limit} bytes, more "
                        f"than its folds' users need; refused unread (a decompression bomb?)")
    if not inflater.eof:
        raise DataError("per-user values: the blob is truncated (its zlib stream does not "
                        "end); send the whole blob the harness wrote")
    if inflater.unused_data:
        raise DataError(f"per-user values: {len(inflater.unused_data)} bytes follow the "
                        f"blob's zlib stream")
    return raw


def _split_header(raw: bytes) -> tuple[dict, memoryview]:
    """The blob's header (parsed JSON) and the bytes of its arrays."""
    start = len(MAGIC) + _LENGTH.size
    if len(raw) < start or raw[:len(MAGIC)] != MAGIC:
        raise DataError(f"per-user values: the blob does not start with {MAGIC!r}: not "
                        f"{USER_VALUES_FORMAT}")
    (size,) = _LENGTH.unpack_from(raw, len(MAGIC))
    if size > MAX_HEADER_BYTES or start + size > len(raw):
        raise DataError(f"per-user values: the header declares {size} bytes; at most "
                        f"{min(MAX_HEADER_BYTES, len(raw) - start)} are possible")
    try:
        header = json.loads(raw[start:start + size].decode("utf-8"),
                            parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise DataError(f"per-user values: the header is not JSON ({str(exc)[:100]})") \
            from None
    if not isinstance(header, dict) or header.get("format") != USER_VALUES_FORMAT:
        found = header.get("format") if isinstance(header, dict) else header
        raise DataError(f"per-user values: format {str(found)[:40]!r} is not "
                        f"{USER_VALUES_FORMAT!r}; upload with this harness")
    return header, memoryview(raw)[start + size:]


def _no_constant(token: str) -> None:
    raise ValueError(f"{token} is not JSON")


def _header_k(header: dict, k: int | None) -> int:
    """The blob's ``k``, checked (and equal to the run's when given)."""
    blob_k = header.get("k")
    if isinstance(blob_k, bool) or not isinstance(blob_k, int) or not 1 <= blob_k <= MAX_K:
        raise DataError(f"per-user values: k {str(blob_k)[:20]!r} must be an int in 1..{MAX_K}")
    if k is not None and blob_k != k:
        raise DataError(f"per-user values: k is {blob_k}, the run's k is {k}")
    return blob_k


def _header_folds(header: dict, expected: list[int], rank_dtype: str) -> list[dict]:
    """The header's folds, each checked against its expected users and the format's dtypes."""
    folds = header.get("folds")
    if not isinstance(folds, list) or len(folds) != len(expected):
        found = len(folds) if isinstance(folds, list) else type(folds).__name__
        raise DataError(f"per-user values: the blob has {found} fold(s); the run has "
                        f"{len(expected)}")
    dtypes = {"rank": rank_dtype, "blw": FLOAT_DTYPE, "ld": FLOAT_DTYPE, "slices": SLICE_DTYPE}
    for number, (meta, n) in enumerate(zip(folds, expected)):
        where = f"per-user values, fold {number}"
        if not isinstance(meta, dict):
            raise DataError(f"{where}: its header entry is not an object")
        if meta.get("n_users") != n or isinstance(meta.get("n_users"), bool):
            raise DataError(f"{where}: the blob declares {str(meta.get('n_users'))[:20]} "
                            f"users; the fold's results have n_users={n}")
        if not isinstance(meta.get("users_sha256"), str) \
                or not _SHA256.fullmatch(meta["users_sha256"]):
            raise DataError(f"{where}: users_sha256 is not a hex sha256")
        if meta.get("dtypes") != dtypes:
            raise DataError(f"{where}: dtypes {str(meta.get('dtypes'))[:120]} are not the "
                            f"format's {dtypes} (k={header['k']})")
        _check_slices(where, meta.get("slices"))
    return folds


def _check_slices(where: str, slices) -> None:
    """The header's slices: the MRED tests in order, each with a list of short labels."""
    if not isinstance(slices, list) or [s[0] if isinstance(s, list) and s else None
                                        for s in slices] != list(MRED_TESTS):
        raise DataError(f"{where}: slices must list {list(MRED_TESTS)} in this order")
    for test, labels in (tuple(s) if len(s) == 2 else (s[0], None) for s in slices):
        if not isinstance(labels, list) or len(labels) > MAX_GROUPS or any(
                not isinstance(v, str) or len(v) > MAX_LABEL for v in labels):
            raise DataError(f"{where}: the labels of {test} must be at most {MAX_GROUPS} "
                            f"strings of at most {MAX_LABEL} characters")


def _read_fold(number: int, body: memoryview, offset: int, n: int, width: int, k: int,
               meta: dict) -> tuple[FoldUsers, int]:
    """Fold ``number``'s arrays from ``body`` at ``offset``, checked; and the next offset."""
    where = f"per-user values, fold {number}"

    def take(size: int) -> bytes:
        nonlocal offset
        chunk = bytes(body[offset:offset + size])
        offset += size
        return chunk

    ranks = np.frombuffer(take(n * width), dtype=RANK_DTYPES[width])
    if len(ranks) and int(ranks.max()) > k:
        raise DataError(f"{where}: a rank is {int(ranks.max())}, above k={k}")
    blw = _unshuffle(take(4 * n), n)
    ld = _unshuffle(take(4 * n), n)
    for name, values in (("BEING_LESS_WRONG", blw), ("LATENT_DIVERSITY", ld)):
        with np.errstate(invalid="ignore"):
            bad = np.isinf(values) | (np.abs(values) > MAX_ABS_VALUE)
        if bad.any():
            raise DataError(f"{where}: {name} of user {int(np.flatnonzero(bad)[0])} is "
                            f"{float(values[bad][0])!r}; values are finite (NaN: left out)")
    slices, labels = {}, {}
    for test, names in meta["slices"]:
        codes = np.frombuffer(take(n), dtype=SLICE_DTYPE)
        high = (len(names) if names else MAX_GROUPS + 1) - 1
        if len(codes) and (int(codes.min()) < LEFT_OUT or int(codes.max()) > high):
            raise DataError(f"{where}: {test} codes must lie in {LEFT_OUT}..{high} (a group, "
                            f"{IN_MR_ONLY} or {LEFT_OUT}); found {int(codes.min())}.."
                            f"{int(codes.max())}")
        slices[test] = codes
        labels[test] = tuple(names)
    hit = ranks > 0
    rr = np.zeros(n)
    rr[hit] = 1.0 / ranks[hit]  # the harness's own rr, to the bit
    scores = UserScores(hit=hit, rr=rr, slices=slices, blw=blw, ld=ld)
    return FoldUsers(scores=scores, users_sha256=meta["users_sha256"], labels=labels), offset


def float32_bound(values: np.ndarray) -> float:
    """How far the mean of ``values`` may move when each is rounded to float32: at most
    ``2**-24`` of each magnitude, so ``2**-24 * mean(|v|)`` over the values that are not NaN
    (0 when all are)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    return math.ldexp(float(np.abs(v).mean()), -24) if len(v) else 0.0
