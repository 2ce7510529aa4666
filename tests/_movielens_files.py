"""A small MovieLens-like folder in the ml-100k format, for the tests of a dataset that cannot
measure every test of the challenge (no countries, no artists, no track vectors)."""

from __future__ import annotations

import numpy as np


def write_movielens_like(root, n_users: int = 400, n_movies: int = 200, per_user: int = 40,
                         seed: int = 3):
    """A small ml-100k-format folder (u.data, u.item, u.user): ratings, titles, genders.

    More movies than the k = 100 recommendations, so that a hit is not certain."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    rows = []
    # popular movies are rated more often, so the popularity slices have several groups
    p = 1.0 / np.sqrt(np.arange(1, n_movies + 1))
    for u in range(1, n_users + 1):
        movies = rng.choice(np.arange(1, n_movies + 1), size=per_user, replace=False,
                            p=p / p.sum())
        for j, m in enumerate(movies):
            rows.append(f"{u}\t{m}\t{rng.integers(1, 6)}\t{880000000 + 1000 * u + j}")
    (root / "u.data").write_text("\n".join(rows) + "\n")
    (root / "u.item").write_text("\n".join(f"{m}|Movie {m} (1995)|01-Jan-1995||"
                                           for m in range(1, n_movies + 1)) + "\n",
                                 encoding="latin-1")
    (root / "u.user").write_text("\n".join(f"{u}|{20 + u % 40}|{'MF'[u % 2]}|other|00000"
                                           for u in range(1, n_users + 1)) + "\n")
    return root
