"""The 2022 challenge's fold procedure in pandas: slow and obviously correct.

Each fold samples a quarter of the users (``random_state = seed + fold``), keeps the 10-core of
their events (tracks, then users, with at least ``k`` events, for at most ``max_rounds``
rounds), holds out one event per user (``random_state = seed``) and trains on the rest.

The reference that ``evaluation.splits.bootstrap_folds`` must equal row for row
(``tests/splits/test_folds.py``, ``tests/splits/test_cache.py``) and that the benchmarks time
beside it (``benchmarks/bench_folds.py``, the 2022-style side of
``benchmarks/bench_harness.py``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd


def kcore_reference(df: pd.DataFrame, k: int = 10, max_rounds: int = 10) -> pd.DataFrame:
    """The rows of ``df`` in its ``k``-core (tracks filtered first, then users, per round)."""
    for _ in range(max_rounds):
        before = len(df)
        track_counts = df.groupby("track_id")["user_id"].count()
        df = df[df["track_id"].isin(track_counts[track_counts >= k].index)]
        user_counts = df.groupby("user_id")["track_id"].count()
        df = df[df["user_id"].isin(user_counts[user_counts >= k].index)]
        if len(df) == before:
            break
    return df


def iter_folds_reference(df_events: pd.DataFrame, num_folds: int, seed: int,
                         frac: float = 0.25, k: int = 10, max_rounds: int = 10
                         ) -> Iterator[tuple[pd.DataFrame, pd.DataFrame]]:
    """Each fold's (train, test) frames of ``df_events`` in turn, rows keeping their index
    labels (one fold in memory at a time)."""
    users = df_events[["user_id"]].drop_duplicates()
    for f in range(num_folds):
        fold_users = users.sample(frac=frac, random_state=seed + f)
        fold = df_events[df_events["user_id"].isin(fold_users["user_id"])]
        fold = kcore_reference(fold, k, max_rounds)
        test = fold.groupby("user_id").sample(n=1, random_state=seed)
        train = fold.drop(test.index)
        yield train, test


def folds_reference(df_events: pd.DataFrame, num_folds: int, seed: int, frac: float = 0.25,
                    k: int = 10, max_rounds: int = 10) -> list[tuple[pd.DataFrame, pd.DataFrame]]:
    """The ``num_folds`` (train, test) frames of ``df_events``, all at once."""
    return list(iter_folds_reference(df_events, num_folds, seed, frac, k, max_rounds))
