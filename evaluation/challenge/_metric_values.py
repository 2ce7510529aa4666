"""One metric's per-user values of a run as one compact blob: what a leaderboard needs to
compare teams user by user under a protocol scored by a single metric (the sampled-negative
alternative: each test user's corrected estimate of the full-ranking metric).

Per fold, per test user in the fold's test-user order: the user's value (float64), with the
sha256 of the fold's test user ids (``users_sha256``, as for the challenge's per-user values:
equal hashes say that two runs' arrays pair user by user).

The blob (``METRIC_VALUES_FORMAT``), before base64 and after deflate (zlib), is::

    b"EVRSMV01"  |  uint32 LE header length  |  header (UTF-8 JSON)  |  arrays

The header is ``{"format", "metric", "folds": [{"n_users", "users_sha256"}]}``; the arrays
(``<f8``) follow fold after fold. Reading one is safe against hostile input as for the
challenge's blob: the caller says how many users each fold has (or the header does, within
``MAX_DECOMPRESSED_BYTES``), the decompressed size is bounded by what they need, every
declared length must equal the expected one, and every value must be finite and of magnitude
at most ``MAX_ABS_VALUE``.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evaluation.challenge._user_values import _inflate, user_values_bytes
from evaluation.errors import ConfigError, DataError

#: The layout of a blob; a reader refuses any other.
METRIC_VALUES_FORMAT = "evalrs-metric-values/1"
#: The blob's first bytes (after inflating).
MAGIC = b"EVRSMV01"
#: The longest header (JSON) a blob may have, and the longest metric name.
MAX_HEADER_BYTES = 64 * 1024
MAX_METRIC_NAME = 64
#: The most a blob may inflate to, whatever the users it declares (about 60 times a
#: full-scale run: 4 folds of ~30k users).
MAX_DECOMPRESSED_BYTES = 64 * 2**20
#: The most folds a blob may declare.
MAX_FOLDS = 64
#: Values whose magnitude exceeds this are refused: an estimate of a ranking metric lies in
#: [0, 1] (a bias-variance corrected one a little outside it), none comes near this.
MAX_ABS_VALUE = 1e3
_VALUE_DTYPE = "<f8"
_SHA256 = re.compile(r"[0-9a-f]{64}")
_LENGTH = struct.Struct("<I")


@dataclass(frozen=True)
class MetricValues:
    """One metric's per-user values of each fold, as a blob carries them.

    Attributes
    ----------
    metric : str
        The metric's name (e.g. ``"ndcg@100"``).
    folds : tuple of numpy.ndarray
        Per fold, the value of each test user (float64), in the fold's test-user order.
    users_sha256 : tuple of str
        Per fold, ``evaluation.challenge.users_sha256`` of its test user ids.
    """

    metric: str
    folds: tuple[np.ndarray, ...]
    users_sha256: tuple[str, ...]

    @property
    def n_users(self) -> list[int]:
        """The number of test users of each fold."""
        return [len(f) for f in self.folds]


def encode_metric_values(values: MetricValues) -> str:
    """The base64 text of the blob holding ``values`` (see the module's description).

    Raises
    ------
    ConfigError
        When the metric's name is empty or too long, the folds and hashes differ in number,
        a hash is not a hex sha256, or a value is not finite or too large.
    """
    _check_name(values.metric, ConfigError)
    if len(values.folds) != len(values.users_sha256) or not 1 <= len(values.folds) <= MAX_FOLDS:
        raise ConfigError(f"metric values: {len(values.folds)} folds and "
                          f"{len(values.users_sha256)} user hashes; give one hash per fold "
                          f"(1 to {MAX_FOLDS} folds)")
    header: dict = {"format": METRIC_VALUES_FORMAT, "metric": values.metric, "folds": []}
    parts = []
    for number, (fold, digest) in enumerate(zip(values.folds, values.users_sha256)):
        if not _SHA256.fullmatch(str(digest)):
            raise ConfigError(f"fold {number}: users_sha256 {str(digest)[:80]!r} is not a hex "
                              f"sha256 (users_sha256(user_ids) makes one)")
        array = np.asarray(fold, dtype=np.float64)
        _check_values(array, number, ConfigError)
        header["folds"].append({"n_users": len(array), "users_sha256": digest})
        parts.append(array.astype(_VALUE_DTYPE).tobytes())
    head = json.dumps(header, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True).encode("ascii")
    raw = b"".join([MAGIC, _LENGTH.pack(len(head)), head, *parts])
    return base64.b64encode(zlib.compress(raw, 6)).decode("ascii")


def decode_metric_values(text: str | bytes, n_users: Sequence[int] | None) -> MetricValues:
    """Read a blob made by :func:`encode_metric_values` (base64 text, or its bytes before
    base64), checking it against the folds it must hold.

    Parameters
    ----------
    text : str or bytes
    n_users : sequence of int, optional
        The number of test users of each fold; None: those the header declares (still
        within the format's bounds).

    Raises
    ------
    DataError
        When the blob is not base64 of a deflated blob of this format, inflates past its
        bound, declares other folds or users than expected, or holds a value that is not
        finite or too large.
    """
    data = user_values_bytes(text) if isinstance(text, str) else bytes(text)
    limit = MAX_DECOMPRESSED_BYTES if n_users is None else min(
        MAX_DECOMPRESSED_BYTES, len(MAGIC) + _LENGTH.size + MAX_HEADER_BYTES
        + 8 * sum(int(n) for n in n_users))
    raw = _inflate(data, limit)
    if raw[:len(MAGIC)] != MAGIC or len(raw) < len(MAGIC) + _LENGTH.size:
        raise DataError(f"metric values: not a blob of {METRIC_VALUES_FORMAT}")
    (length,) = _LENGTH.unpack_from(raw, len(MAGIC))
    start = len(MAGIC) + _LENGTH.size
    if length > MAX_HEADER_BYTES or start + length > len(raw):
        raise DataError(f"metric values: a header of {length} bytes (at most "
                        f"{MAX_HEADER_BYTES}, within the blob)")
    try:
        header = json.loads(raw[start:start + length].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise DataError("metric values: the header is not JSON") from None
    if not isinstance(header, dict) or header.get("format") != METRIC_VALUES_FORMAT \
            or not isinstance(header.get("folds"), list):
        raise DataError(f"metric values: the header does not declare {METRIC_VALUES_FORMAT}")
    metric = header.get("metric")
    _check_name(metric, DataError)
    folds = header["folds"]
    found = [f.get("n_users") if isinstance(f, dict) else None for f in folds]
    if not 1 <= len(folds) <= MAX_FOLDS or any(
            isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in found):
        raise DataError(f"metric values: the header must declare 1 to {MAX_FOLDS} folds, "
                        f"each with n_users >= 0")
    declared = [int(n) for n in found if n is not None]
    if n_users is not None and [int(n) for n in n_users] != declared:
        raise DataError(f"metric values: the blob declares {declared} users per fold; "
                        f"expected {[int(n) for n in n_users]}")
    hashes = [f.get("users_sha256") for f in folds]
    if not all(isinstance(h, str) and _SHA256.fullmatch(h) for h in hashes):
        raise DataError("metric values: a fold's users_sha256 is not a hex sha256")
    offset = start + length
    if len(raw) - offset != 8 * sum(declared):
        raise DataError(f"metric values: {len(raw) - offset} bytes of values; the folds "
                        f"declared need {8 * sum(declared)}")
    arrays = []
    for number, n in enumerate(declared):
        array = np.frombuffer(raw, dtype=_VALUE_DTYPE, count=n, offset=offset)
        offset += 8 * n
        _check_values(array, number, DataError)
        arrays.append(array.astype(np.float64))
    return MetricValues(metric=str(metric), folds=tuple(arrays), users_sha256=tuple(hashes))


def _check_name(metric: object, error: type[Exception]) -> None:
    if not isinstance(metric, str) or not 1 <= len(metric) <= MAX_METRIC_NAME:
        raise error(f"metric values: the metric's name must be 1 to {MAX_METRIC_NAME} "
                    f"characters; got {str(metric)[:80]!r}")


def _check_values(array: np.ndarray, number: int, error: type[Exception]) -> None:
    if array.ndim != 1:
        raise error(f"fold {number}: the metric values must be one number per user; got "
                    f"shape {array.shape}")
    bad = ~np.isfinite(array) | (np.abs(array) > MAX_ABS_VALUE)
    if bad.any():
        value = float(array[np.flatnonzero(bad)[0]])
        raise error(f"fold {number}: a user's value {value!r} is not a finite number of "
                    f"magnitude at most {MAX_ABS_VALUE:g}")
