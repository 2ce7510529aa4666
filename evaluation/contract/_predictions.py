"""The predictions upload: a run's top-k lists of every fold, compact, with a small header.

What a participant uploads is what their model recommended, not what they say it scored: the
leaderboard's workers score the lists with the organizers' data (a scoring job). The upload is
one binary stream, ``application/vnd.evalrs.predictions``:

* ``MAGIC`` (8 bytes), then the header's length as a little-endian ``uint32``;
* the header, UTF-8 JSON: ``format`` (``PREDICTIONS_FORMAT``), ``harness_version``,
  ``run_hash`` (the run's data, folds, tests and harness version: which folds the lists are
  for), ``k``, ``claim`` (the run's ``submission.json`` without its per-user values: what the
  team says the lists score, shown as its claim) and ``folds``: per fold, in fold order,
  ``{"fold", "n_users", "users_bytes", "items_bytes"}``;
* per fold, two zlib streams of little-endian ``int32``: the fold's test user ids
  (``n_users``), then its lists, row by row (``n_users x k``); ``*_bytes`` are their
  compressed lengths.

Reading is strict and bounded: the total size, the header's size, the inflated size of every
stream (exactly ``4 * n_users`` and ``4 * n_users * k`` bytes, never more) and the whole stream
consumed, with nothing after it. This module uses the standard library only; turning the bytes
into arrays (``numpy.frombuffer(data, "<i4")``) is for its callers.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from evaluation.errors import DataError

#: The upload's media type.
PREDICTIONS_MEDIA_TYPE = "application/vnd.evalrs.predictions"
#: The stream's first bytes, and the header format it announces.
MAGIC = b"EVRSPRD\x01"
PREDICTIONS_FORMAT = 1
#: The largest header (bytes): the claim is a run's results without per-user values.
MAX_HEADER_BYTES = 4 << 20
#: The longest lists and the most folds a stream may declare.
MAX_K = 1000
MAX_FOLDS = 64
#: The zlib level the client compresses with: item ids compress no further at higher levels
#: (about 0.7 of their bytes at 1 and at 6), while level 6 takes ~14 times as long (measured
#: on a fold of 29.9k lists of 100 ids: 0.46 s at 1, 6.5 s at 6) and inflates more slowly.
LEVEL = 1
_LENGTH = struct.Struct("<I")
#: Threads that inflate a stream's sections (a server has a core or two per process).
_INFLATE_THREADS = 2


@dataclass(frozen=True)
class FoldLists:
    """One fold's lists as read: its number, test user ids and lists (little-endian int32
    bytes, ``n_users`` and ``n_users * k`` of them)."""

    fold: int
    n_users: int
    users: bytes
    items: bytes


@dataclass(frozen=True)
class PredictionsUpload:
    """A predictions stream, read: its header (``claim`` inside) and every fold's lists."""

    header: dict[str, Any]
    k: int
    run_hash: str
    harness_version: str
    folds: list[FoldLists]

    @property
    def claim(self) -> dict[str, Any]:
        """The run's ``submission.json`` as the team sent it (unverified)."""
        return self.header["claim"]


def encode_predictions(claim: dict[str, Any], *, k: int, run_hash: str, harness_version: str,
                       folds: Sequence[tuple[bytes, bytes]], level: int = LEVEL) -> bytes:
    """The stream of a run's predictions.

    Parameters
    ----------
    claim : dict
        The run's ``submission.json`` without its per-user values (strict JSON).
    k : int
    run_hash, harness_version : str
    folds : sequence of (bytes, bytes)
        Per fold, in fold order: its user ids and its lists, little-endian int32 bytes.
    level : int
        zlib's compression level.

    Returns
    -------
    bytes
    """
    sections: list[bytes] = []
    described: list[dict[str, int]] = []
    for number, (users, items) in enumerate(folds):
        n_users = len(users) // 4
        if len(users) != 4 * n_users or len(items) != 4 * n_users * k:
            raise DataError(f"fold {number}: {len(users)} bytes of user ids and {len(items)} "
                            f"bytes of lists are not n_users int32 and n_users x {k} int32")
        packed = zlib.compress(users, level), zlib.compress(items, level)
        sections.extend(packed)
        described.append({"fold": number, "n_users": n_users, "users_bytes": len(packed[0]),
                          "items_bytes": len(packed[1])})
    header = json.dumps({"format": PREDICTIONS_FORMAT, "harness_version": harness_version,
                         "run_hash": run_hash, "k": k, "folds": described, "claim": claim},
                        sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                        allow_nan=False).encode("ascii")
    return b"".join([MAGIC, _LENGTH.pack(len(header)), header, *sections])


def read_header(body: bytes) -> tuple[dict[str, Any], int]:
    """The header of a predictions stream (its lists unread) and where the lists start.

    Raises
    ------
    DataError
        When ``body`` is not a predictions stream or its header is not valid.
    """
    if not is_predictions(body) or len(body) < len(MAGIC) + _LENGTH.size:
        raise DataError("not a predictions stream")
    (size,) = _LENGTH.unpack_from(body, len(MAGIC))
    start = len(MAGIC) + _LENGTH.size
    if size > MAX_HEADER_BYTES or start + size > len(body):
        raise DataError(f"the predictions header declares {size} bytes: more than "
                        f"{MAX_HEADER_BYTES} or than the stream holds")
    return _header(body[start:start + size]), start + size


def with_claim(body: bytes, claim: dict[str, Any]) -> bytes:
    """``body`` (a predictions stream) with its header's claim replaced by ``claim`` (e.g. a
    description added); the folds' lists are kept as they are."""
    header, end = read_header(body)
    header["claim"] = claim
    raw = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                     allow_nan=False).encode("ascii")
    return b"".join([MAGIC, _LENGTH.pack(len(raw)), raw, body[end:]])


def is_predictions(body: bytes) -> bool:
    """Whether ``body`` starts as a predictions stream does."""
    return body[:len(MAGIC)] == MAGIC


def read_predictions(body: bytes, *, max_bytes: int, max_inflated: int) -> PredictionsUpload:
    """A predictions stream read strictly (see the module).

    Parameters
    ----------
    body : bytes
    max_bytes : int
        The largest stream accepted.
    max_inflated : int
        The most bytes all folds' lists may inflate to.

    Raises
    ------
    DataError
        Naming the part and the rule it breaks.
    """
    if len(body) > max_bytes:
        raise DataError(f"the predictions upload is {len(body)} bytes, more than the "
                        f"{max_bytes} the competition accepts (max_upload_bytes)")
    header, offset = read_header(body)
    k, declared = _declared(header, max_inflated)
    sections = []  # (offset, compressed bytes, inflated bytes, what), in the stream's order
    for entry in declared:
        for size, expected, what in (
                (entry["users_bytes"], 4 * entry["n_users"], f"fold {entry['fold']}'s user ids"),
                (entry["items_bytes"], 4 * entry["n_users"] * k, f"fold {entry['fold']}'s lists")):
            sections.append((offset, size, expected, what))
            offset += size
    view = memoryview(body)  # the sections are read in place, not copied out first
    # zlib inflates without the GIL: the sections in parallel threads (a full-scale upload
    # inflates ~48 MB); the first section in the stream's order that fails is the error
    with ThreadPoolExecutor(max_workers=min(_INFLATE_THREADS, len(sections))) as pool:
        inflated = list(pool.map(lambda section: _inflate(view, *section), sections))
    lists: list[bytes] = []
    for data in inflated:
        if isinstance(data, DataError):
            raise data
        lists.append(data)
    folds = [FoldLists(fold=entry["fold"], n_users=entry["n_users"], users=users,
                       items=items)
             for entry, users, items in zip(declared, lists[::2], lists[1::2])]
    if offset != len(body):
        raise DataError(f"the predictions stream has {len(body) - offset} bytes after its "
                        f"last fold")
    return PredictionsUpload(header=header, k=k, run_hash=header["run_hash"],
                             harness_version=header["harness_version"], folds=folds)


def _header(raw: bytes) -> dict[str, Any]:
    def unique(pairs: list[tuple[str, Any]]) -> dict:
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            raise DataError("the predictions header repeats a key")
        return dict(pairs)

    def no_constant(token: str) -> None:
        raise DataError(f"the predictions header holds {token}: not strict JSON")

    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=unique,
                            parse_constant=no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise DataError("the predictions header is not UTF-8 JSON") from None
    if not isinstance(header, dict):
        raise DataError("the predictions header must be a JSON object")
    if header.get("format") != PREDICTIONS_FORMAT:
        raise DataError(f"predictions format {str(header.get('format'))[:20]!r} is not "
                        f"{PREDICTIONS_FORMAT}: upload with this harness's `evalrs submit`")
    for key in ("harness_version", "run_hash"):
        if not isinstance(header.get(key), str):
            raise DataError(f"the predictions header's {key} must be text")
    if not isinstance(header.get("claim"), dict):
        raise DataError("the predictions header's claim must be the run's submission (an "
                        "object)")
    return header


def _declared(header: dict[str, Any], max_inflated: int) -> tuple[int, list[dict[str, int]]]:
    """The header's ``k`` and folds, checked: folds 0, 1, ... in order, sizes in bounds."""
    k: Any = header.get("k")
    if not _count(k) or not 1 <= k <= MAX_K:
        raise DataError(f"the predictions header's k {str(k)[:20]!r} must be an integer in "
                        f"[1, {MAX_K}]")
    folds: Any = header.get("folds")
    if not isinstance(folds, list) or not 1 <= len(folds) <= MAX_FOLDS:
        raise DataError(f"the predictions header must list 1 to {MAX_FOLDS} folds")
    total = 0
    for number, entry in enumerate(folds):
        keys = ("fold", "n_users", "users_bytes", "items_bytes")
        if not isinstance(entry, dict) or set(entry) != set(keys) \
                or not all(_count(entry[key]) for key in keys):
            raise DataError(f"fold {number} of the predictions header must have exactly the "
                            f"non-negative integers {', '.join(keys)}")
        if entry["fold"] != number or entry["n_users"] < 1:
            raise DataError(f"fold {number} of the predictions header is fold "
                            f"{entry['fold']} with {entry['n_users']} users: the folds must "
                            f"come in order, each with users")
        total += 4 * entry["n_users"] * (k + 1)
        if total > max_inflated:
            raise DataError(f"the predictions declare more than {max_inflated} bytes of lists "
                            f"(fold {number}): more users or a longer k than the competition's")
    return k, folds


def _inflate(body: memoryview, offset: int, size: int, expected: int, what: str
             ) -> bytes | DataError:
    """The ``size`` bytes at ``offset``, inflated to exactly ``expected`` bytes (or the
    error saying why they are not)."""
    end = offset + size
    if end > len(body):
        return DataError(f"{what}: the stream ends before its {size} compressed bytes")
    inflater = zlib.decompressobj()
    try:
        data = inflater.decompress(body[offset:end], expected)
        if len(data) == expected and not inflater.eof:  # an end marker may still be due
            data += inflater.decompress(inflater.unconsumed_tail, 1)
    except zlib.error:
        return DataError(f"{what}: not a zlib stream")
    if len(data) != expected or not inflater.eof or inflater.unused_data \
            or inflater.unconsumed_tail:
        return DataError(f"{what}: {size} compressed bytes do not inflate to exactly "
                         f"{expected} bytes")
    return data


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
