"""The ten tests of one fold scored the 2022 way: reclist's ``standard_metrics`` for HIT_RATE,
MRR and the miss rates (recomputed by each slice test, as in 2022), pandas group-bys for the
slices, and loops over users for BEING_LESS_WRONG and LATENT_DIVERSITY.

The reference that the vectorised tests must equal, timed beside them by
``benchmarks/bench_scoring.py`` and by the 2022-style side of ``benchmarks/bench_harness.py``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from evaluation.challenge import COUNTRIES


def reference_scores(ds, train: pd.DataFrame, test: pd.DataFrame, preds: pd.DataFrame,
                     k: int = 100) -> dict:
    """Each test's value on the fold (``ds``: its users, tracks and vectors) and the
    predictions' counts (``stats``), computed as the 2022 harness did."""
    from reclist.metrics.standard_metrics import hit_rate_at_k, misses_at_k, mrr_at_k

    y_test = test.set_index("user_id")[["track_id"]]
    y_preds = preds.loc[y_test.index]
    y_pred_df = y_preds.reset_index(drop=True).replace(-1, np.nan)
    y_test_df = y_test.reset_index(drop=True)
    out = {"HIT_RATE": hit_rate_at_k(y_pred_df, y_test_df, k),
           "MRR": mrr_at_k(y_pred_df, y_test_df, k)}

    def mred(mask, slice_values):
        # as 2022: the miss rates are recomputed by each slice test
        m = misses_at_k(y_pred_df, y_test_df, k).min(axis=2)[:, 0]
        frame = pd.DataFrame({"mr": m, "slice": slice_values})[mask]
        per_slice = frame.groupby("slice")["mr"].mean()
        return -float((per_slice - frame["mr"].mean()).abs().mean())

    def bins(values, edges):
        edges = np.asarray(edges)
        idx = np.digitize(values, edges)
        return np.where(idx > 0, edges[np.maximum(idx - 1, 0)], 0)

    users = ds.df_users
    country = users["country"].reindex(y_test.index).fillna("missing").to_numpy()
    out["MRED_COUNTRY"] = mred(np.isin(country, [*COUNTRIES, "missing"]), country)
    activity = (train[train["user_id"].isin(y_test.index)].groupby("user_id")["user_track_count"]
                .sum().reindex(y_test.index, fill_value=0).to_numpy())
    everyone = np.ones(len(y_test), dtype=bool)
    out["MRED_USER_ACTIVITY"] = mred(everyone, bins(activity, [1, 100, 1000]))
    target = y_test["track_id"]
    track_pop = (train[train["track_id"].isin(target)].groupby("track_id")["user_track_count"]
                 .sum().reindex(target, fill_value=0).to_numpy())
    out["MRED_TRACK_POPULARITY"] = mred(everyone, bins(track_pop, [1, 10, 100, 1000]))
    artist = ds.df_tracks["artist_id"].reindex(target).to_numpy()
    artist_pop = (train[train["artist_id"].isin(artist)].groupby("artist_id")["user_track_count"]
                  .sum().reindex(artist, fill_value=0).to_numpy())
    out["MRED_ARTIST_POPULARITY"] = mred(everyone, bins(artist_pop, [1, 100, 1000, 10000]))
    gender = users["gender"].reindex(y_test.index).to_numpy()
    out["MRED_GENDER"] = mred(everyone, gender)

    vecs = ds.track_vectors
    row_of = dict(zip(vecs.track_ids.tolist(), range(len(vecs))))
    mat = vecs.vectors

    def vec(track):
        r = row_of.get(track)
        return None if r is None else mat[r].astype(np.float64)

    def cos(a, b):
        na, nb = np.linalg.norm(a), np.linalg.norm(b)
        return float(a @ b / (na * nb)) if na > 0 and nb > 0 else 0.0

    pred_lists = y_preds.to_numpy().tolist()
    sims, lds = [], []
    for items, t in zip(pred_lists, target.tolist()):
        tv = vec(t)
        if tv is None:
            continue
        if t not in items:
            first = vec(items[0])
            sims.append(0.0 if first is None else cos(tv, first))
        usable = [v for v in (vec(x) for x in items[:20]) if v is not None]
        if not usable:
            lds.append(-0.7)
            continue
        m = np.mean(usable, axis=0)
        lds.append(0.3 * np.mean([1 - cos(m, v) for v in usable]) - 0.7 * (1 - cos(m, tv)))
    out["BEING_LESS_WRONG"] = float(np.mean(sims))
    out["LATENT_DIVERSITY"] = float(np.mean(lds))
    counts = (y_preds.to_numpy() != -1).sum(axis=1)
    out["stats"] = {"num_users": len(y_test), "k": k, "min_predictions": int(counts.min()),
                    "max_predictions": int(counts.max())}
    return out
