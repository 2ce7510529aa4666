"""Uploads with per-user values whose folds add up: synthetic users, their tests recomputed by
the harness's own ``UserScores.tests`` and written into a valid run's folds."""

from __future__ import annotations

import numpy as np

from evaluation.challenge import (
    LEADERBOARD_TESTS,
    MRED_TESTS,
    FoldUsers,
    UserScores,
    encode_user_values,
    users_sha256,
)

#: The list length of the synthetic runs.
K = 100
#: Group labels of each synthetic slice.
LABELS = {t: ("a", "b", "c", "d") for t in MRED_TESTS}


def synthetic_fold(seed: int, n_users: int, *, hit_rate: float = 0.3,
                   user_ids: np.ndarray | None = None) -> FoldUsers:
    """One fold of plausible per-user values: ranks in 1..K for about ``hit_rate`` of the
    users, BLW a cosine (NaN for the hits, as the harness leaves them out), LD around 0.1 with a
    few NaN, slice codes over four groups with some users out of the groups or the slice."""
    rng = np.random.default_rng(seed)
    ranks = np.where(rng.random(n_users) < hit_rate, rng.integers(1, K + 1, n_users), 0)
    hit = ranks > 0
    rr = np.zeros(n_users)
    rr[hit] = 1.0 / ranks[hit]
    blw = np.where(hit, np.nan, rng.uniform(-0.3, 0.95, n_users))
    ld = rng.normal(0.1, 0.05, n_users)
    ld[rng.random(n_users) < 0.02] = np.nan
    slices = {t: rng.choice([-2, -1, 0, 1, 2, 3], size=n_users,
                            p=[0.05, 0.05, 0.3, 0.3, 0.2, 0.1]).astype(np.int32)
              for t in MRED_TESTS}
    scores = UserScores(hit=hit, rr=rr, slices=slices, blw=blw, ld=ld)
    ids = np.arange(n_users) if user_ids is None else user_ids
    return FoldUsers(scores=scores, users_sha256=users_sha256(ids), labels=dict(LABELS))


def fold_values(fold: FoldUsers) -> dict[str, float]:
    """The nine tests of a fold as the harness computes them from its per-user values (in
    float64, as a run records them: the blob's float32 BLW and LD differ by their rounding)."""
    tests = fold.scores.tests()
    return {t: float(tests[t][0]) for t in LEADERBOARD_TESTS}


def with_user_values(document: dict, folds: list[FoldUsers], *, blob: str | None = None
                     ) -> dict:
    """``document`` (a valid upload) with ``folds``'s per-user values, its folds' tests and
    ``n_users`` set to theirs and the run's k to ``K``; ``blob`` replaces the encoded
    values (to send ones that do not add up)."""
    results = document["results"]
    results["k"] = K
    for fold, users in zip(sorted(results["folds"], key=lambda f: f["fold"]), folds):
        fold["n_users"] = len(users)
        fold["tests"].update(fold_values(users))
    document["user_values"] = encode_user_values(folds, K) if blob is None else blob
    return document
