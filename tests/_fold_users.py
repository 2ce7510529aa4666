"""Synthetic per-user values of a fold (``UserScores``), for the tests of the board's paired
statistics in ``evaluation.challenge`` and of the server's standings built on them."""

from __future__ import annotations

import numpy as np

from evaluation.challenge import UserScores

#: How many groups each slice test has in these folds; a user's code is drawn from -2 (left
#: out of the slice), -1 (in its overall miss rate only) and the groups 0 to N - 1.
N_GROUPS = {"MRED_COUNTRY": 4, "MRED_USER_ACTIVITY": 3, "MRED_TRACK_POPULARITY": 3,
            "MRED_ARTIST_POPULARITY": 2, "MRED_GENDER": 2}


def fold_users(rng: np.random.Generator, n: int, skill: float, codes=None) -> UserScores:
    """A fold of synthetic per-user values: a team of hit probability ``skill``."""
    hit = rng.random(n) < skill
    rr = np.where(hit, 1.0 / rng.integers(1, 50, n), 0.0)
    if codes is None:
        codes = {t: rng.integers(-2, g, n).astype(np.int32) for t, g in N_GROUPS.items()}
    blw = np.where(hit | (rng.random(n) < 0.1), np.nan, rng.random(n))
    ld = np.where(rng.random(n) < 0.05, np.nan, rng.normal(0.2, 0.1, n))
    return UserScores(hit=hit, rr=rr, slices=codes, blw=blw, ld=ld)
