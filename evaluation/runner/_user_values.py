"""A finished run's per-user values as its upload carries them (``user_values``).

Each fold's per-user scores (``fold_<i>_users.npz``), with the sha256 of its test user ids and
its slices' group labels (recorded in the fold's results), encoded as one blob
(:func:`evaluation.challenge.encode_user_values`). A run made before folds recorded their user
hash uploads without them; the leaderboard accepts it and leaves it out of the statistics
that pair teams user by user.
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evaluation._util.npy import load_npz
from evaluation.challenge import FoldUsers, UserScores, encode_user_values
from evaluation.contract import (
    FOLD_KEY,
    FOLDS_KEY,
    K_KEY,
    SLICE_LABELS_KEY,
    TEST_USERS_SHA256_KEY,
)
from evaluation.errors import ConfigError


def run_user_values(results: Mapping[str, Any], run_dir: Path) -> tuple[str | None, str]:
    """The base64 blob of a finished run's per-user values, or None and why not.

    Parameters
    ----------
    results : mapping
        The run's ``results.json`` (its folds name their user hash and slice labels).
    run_dir : Path
        The run directory, with each fold's ``fold_<i>_users.npz``.

    Returns
    -------
    (str or None, str)
        The blob, or None with the reason ("" with a blob).
    """
    folds = sorted(results.get(FOLDS_KEY) or [], key=lambda f: f.get(FOLD_KEY, 0))
    k = results.get(K_KEY)
    if not folds or not isinstance(k, int):
        return None, "the results have no folds or no k"
    found = []
    for fold in folds:
        number = fold.get(FOLD_KEY)
        digest = fold.get(TEST_USERS_SHA256_KEY)
        if not isinstance(digest, str):
            return None, (f"fold {number} does not record the hash of its test users (a run "
                          f"made by an older harness)")
        try:
            scores = UserScores.from_arrays(load_npz(run_dir / f"fold_{number}_users.npz"))
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            return None, f"fold_{number}_users.npz cannot be read ({exc})"
        labels = fold.get(SLICE_LABELS_KEY) or {}
        found.append(FoldUsers(scores=scores, users_sha256=digest,
                               labels={t: tuple(v) for t, v in labels.items()}))
    try:
        return encode_user_values(found, k), ""
    except ConfigError as exc:
        return None, str(exc)
