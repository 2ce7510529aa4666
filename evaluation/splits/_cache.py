"""Folds cached on disk, keyed by the data's fingerprint and the fold parameters.

Cutting a fold replays the 2022 sampler and the k-core rounds (about 0.3 s per fold at full
scale); reading it back is a few tens of milliseconds. A fold is one ``.npz`` file (its two
row arrays, in the dtype they were computed in, and a JSON record) under
``cache_dir()/folds/<data fingerprint>/``, written atomically. The record names the data
fingerprint, the fold parameters, the fold, the number of events and the sha256 of each
array's bytes; a file is used only when all of them match and the rows are well formed.
Anything else (a damaged, truncated, foreign or older file) is refused with a
:class:`~evaluation.errors.FoldCacheWarning` and the fold is computed again, so a cached fold
is always the fold the procedure computes. The record, dtype and row checks run on every read;
the two sha256 are skipped when the file's stat signature is the one it had when it last
passed them all (:mod:`evaluation._util.verified`: no write since), except with
``EVALRS_VERIFY=full``.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from evaluation._util import verified
from evaluation._util.atomic import atomic_path
from evaluation._util.npy import load_npz
from evaluation._util.paths import cache_dir
from evaluation.errors import FoldCacheWarning
from evaluation.splits._loo import Fold, FoldParams

#: Bumped whenever the fold procedure or this file format changes: older files are not read.
FORMAT_VERSION = 1
_FORMAT = "evalrs-fold"


def fold_cache_path(fingerprint: str, params: FoldParams, fold: int,
                    root: str | os.PathLike | None = None) -> Path:
    """Where fold ``fold`` of ``params`` on the data with ``fingerprint`` is cached."""
    key = hashlib.sha256(json.dumps([FORMAT_VERSION, params.as_dict()], sort_keys=True)
                         .encode()).hexdigest()[:20]
    base = Path(root) if root is not None else cache_dir() / "folds"
    return base / fingerprint / f"v{FORMAT_VERSION}-{key}-fold{fold}.npz"


def _record(fingerprint: str, params: FoldParams, fold: int, n_events: int) -> dict[str, Any]:
    """What a cached fold file must say about itself to be used."""
    return {"format": _FORMAT, "format_version": FORMAT_VERSION, "fingerprint": fingerprint,
            "params": params.as_dict(), "fold": int(fold), "n_events": int(n_events)}


def _sha256(arr: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(arr).data.cast("B")).hexdigest()


def _verified_key(sums: Any) -> str:
    """What a record of :mod:`evaluation._util.verified` vouches for: these arrays' sha256
    (a record made for other content, even at the same path, does not count)."""
    return hashlib.sha256(json.dumps(sums, sort_keys=True).encode()).hexdigest()


def write_fold(path: str | os.PathLike, found: Fold, fingerprint: str, params: FoldParams,
               n_events: int) -> bool:
    """Write ``found`` to ``path`` atomically, with the record that :func:`read_fold` checks.

    A cache that cannot be written (read-only or full disk) is not an error: the fold was
    computed, only the next run will compute it again.

    Returns
    -------
    bool
        Whether the file was written.
    """
    meta = {**_record(fingerprint, params, found.index, n_events),
            "sampled_users": int(found.sampled_users), "kcore_rounds": int(found.kcore_rounds),
            "kcore_converged": bool(found.kcore_converged),
            "sha256": {"train_rows": _sha256(found.train_rows),
                       "test_rows": _sha256(found.test_rows)}}
    try:
        with atomic_path(path, suffix=".npz") as tmp:
            with open(tmp, "wb") as fh:
                np.savez(fh, train_rows=found.train_rows, test_rows=found.test_rows,
                         meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8))
                fh.flush()
                os.fsync(fh.fileno())
    except OSError as exc:
        warnings.warn(f"{path}: the fold could not be cached ({exc}); it is computed again "
                      f"next time", FoldCacheWarning, stacklevel=3)
        return False
    return True


def read_fold(path: str | os.PathLike, fingerprint: str, params: FoldParams, fold: int,
              n_events: int) -> Fold | None:
    """The fold cached at ``path``, or None when there is none or it cannot be trusted.

    A missing file returns None silently; a file that exists but fails a check (unreadable,
    another format version, data or parameters, a checksum mismatch, rows out of range or out
    of order) returns None with a :class:`FoldCacheWarning` naming the file and the reason.
    """
    path = Path(path)
    if not path.is_file():
        return None
    try:
        found, why = _load(path, _record(fingerprint, params, fold, n_events))
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile,
            json.JSONDecodeError, EOFError) as exc:
        found, why = None, f"it cannot be read ({type(exc).__name__}: {exc})"
    if found is None:
        warnings.warn(f"{path}: cached fold refused, {why}; the fold is computed again and "
                      f"the file replaced", FoldCacheWarning, stacklevel=3)
    return found


def _load(path: Path, expected: dict[str, Any]) -> tuple[Fold | None, str]:
    """The fold in ``path`` and "", or None and why it is refused."""
    since = time.time_ns()  # before the signature: see verified.remember
    before = verified.signature(path)  # before the arrays are read
    npz = load_npz(path)
    if sorted(npz) != ["meta", "test_rows", "train_rows"]:
        return None, f"it holds {sorted(npz)}, not a fold's arrays"
    meta = json.loads(npz["meta"].tobytes().decode())
    train, test = npz["train_rows"], npz["test_rows"]
    if not isinstance(meta, dict):
        return None, f"its record is not a JSON object ({type(meta).__name__})"
    for key, value in expected.items():
        if meta.get(key) != value:
            return None, f"its {key} is {meta.get(key)!r}, expected {value!r}"
    content = _verified_key(meta["sha256"])
    # asked after the arrays were read: a write before this point changes the signature
    recalled = verified.recall(path, content)
    for name, arr in (("train_rows", train), ("test_rows", test)):
        if arr.ndim != 1 or arr.dtype not in (np.int32, np.int64):
            return None, f"{name} is not a 1-D int32/int64 array ({arr.dtype}, {arr.ndim}-D)"
        if not recalled and _sha256(arr) != meta["sha256"][name]:
            return None, f"{name} differs from what was written (sha256 mismatch)"
    n = expected["n_events"]
    rows = np.concatenate([train[:1], train[-1:], test])
    if len(rows) and (rows.min() < 0 or rows.max() >= n):
        return None, f"its rows fall outside the {n} events"
    if len(train) > 1 and not bool((train[1:] > train[:-1]).all()):
        return None, "its training rows do not ascend"
    if not recalled:
        verified.remember(path, before, content, since_ns=since)
    train.flags.writeable = False
    test.flags.writeable = False
    return Fold(index=expected["fold"], train_rows=train, test_rows=test,
                sampled_users=int(meta["sampled_users"]), kcore_rounds=int(meta["kcore_rounds"]),
                kcore_converged=bool(meta["kcore_converged"])), ""
