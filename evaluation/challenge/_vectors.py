"""The vector tests, BEING_LESS_WRONG and LATENT_DIVERSITY, on the dataset's track vectors.

Vectors are looked up by track id, never by position.
"""

from __future__ import annotations

import os
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from evaluation.challenge._ranks import hit_ranks
from evaluation.challenge._spec import BIAS_WEIGHT, DIVERSITY_WEIGHT, LATENT_TOP
from evaluation.data import TrackVectors
from evaluation.errors import ScoringWarning

# Users per block in the vector tests: bounds the (block, 20, dim) float64 gather to a few MiB.
_VECTOR_BLOCK = 4096


def _row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of matching rows (last axis); 0 where either vector has norm 0."""
    dot = np.einsum("...d,...d->...", a, b)
    norms = np.sqrt(np.einsum("...d,...d->...", a, a) * np.einsum("...d,...d->...", b, b))
    out = np.zeros(dot.shape, dtype=np.float64)
    np.divide(dot, norms, out=out, where=norms > 0)
    return out


def as_vectors(vectors: TrackVectors | None) -> TrackVectors:
    """``vectors``, or an empty :class:`TrackVectors` for None (every lookup then misses).

    Rows are looked up with :meth:`TrackVectors.rows`, whose id -> row table is built on the
    first lookup and kept with the vectors, so one fold's tests share it.
    """
    if vectors is None:
        return TrackVectors(np.zeros(0, np.int64), np.zeros((0, 1), np.float32))
    if not isinstance(vectors, TrackVectors):
        raise TypeError(f"expected a TrackVectors, got {type(vectors).__name__}")
    return vectors


def being_less_wrong_scores(predictions, targets, vectors, ranks=None) -> np.ndarray:
    """Per-user similarity of :func:`being_less_wrong`.

    Parameters
    ----------
    predictions, targets, vectors
        As for :func:`being_less_wrong`.
    ranks : array-like, optional
        The hit ranks, if known.

    Returns
    -------
    numpy.ndarray
        float64 per user; NaN for users the test leaves out (a hit, or a target without a
        vector), 0.0 where the first prediction is ``-1`` or has no vector.
    """
    tv = as_vectors(vectors)
    preds = np.asarray(predictions)
    targets = np.asarray(targets)
    if ranks is None:
        ranks = hit_ranks(preds, targets)
    t_rows = tv.rows(targets)
    sel = np.flatnonzero((np.asarray(ranks) == 0) & (t_rows >= 0))
    sims = np.full(len(targets), np.nan)
    f_rows = tv.rows(preds[sel, 0]) if preds.shape[1] else np.full(len(sel), -1)
    ok = f_rows >= 0
    vecs = tv.vectors
    sims[sel] = 0.0  # a first prediction that is -1 or has no vector
    sims[sel[ok]] = _row_cosines(np.take(vecs, t_rows[sel[ok]], axis=0).astype(np.float64),
                                 np.take(vecs, f_rows[ok], axis=0).astype(np.float64))
    return sims


def being_less_wrong_detail(predictions, targets, vectors, ranks=None, *, scores=None) -> dict:
    """BEING_LESS_WRONG with the users behind it (see :func:`being_less_wrong`).

    Parameters
    ----------
    predictions, targets, vectors, ranks
        As for :func:`being_less_wrong_scores`.
    scores : array-like, optional
        The per-user similarities, if known.

    Returns
    -------
    dict
        ``value``, ``n_users`` (users measured), ``n_missed`` and, when some user was
        measured, ``n_first_without_vector``.
    """
    tv = as_vectors(vectors)
    preds = np.asarray(predictions)
    if ranks is None:
        ranks = hit_ranks(preds, np.asarray(targets))
    sims = being_less_wrong_scores(preds, targets, tv, ranks) if scores is None else scores
    scored = ~np.isnan(sims)
    n_missed, n = int((np.asarray(ranks) == 0).sum()), int(scored.sum())
    if n == 0:
        if n_missed == 0:
            value = 1.0  # never wrong: the best possible value
        else:
            warnings.warn("BEING_LESS_WRONG: no missed target has a vector; the test is 0.0",
                          ScoringWarning, stacklevel=2)
            value = 0.0
        return {"value": value, "n_users": 0, "n_missed": n_missed}
    first = preds[scored, 0] if preds.shape[1] else np.full(n, -1)
    return {"value": float(sims[scored].mean()), "n_users": n, "n_missed": n_missed,
            "n_first_without_vector": int((tv.rows(first) < 0).sum())}


def being_less_wrong(predictions, targets, vectors: TrackVectors, ranks=None) -> float:
    """BEING_LESS_WRONG: mean cosine between a missed target's vector and the first prediction's.

    Users whose target was hit, or has no vector, are left out; a first prediction that is
    ``-1`` or has no vector counts as similarity 0.

    Parameters
    ----------
    predictions : array-like
        (N, k) track ids, best first, ``-1`` padding.
    targets : array-like
        (N,) target track ids.
    vectors : TrackVectors
        The track vectors, looked up by track id.
    ranks : array-like, optional
        The hit ranks, if known.

    Returns
    -------
    float
        1.0 with no missed user at all (never wrong); 0.0, warned (``ScoringWarning``),
        with misses but none measurable.
    """
    return being_less_wrong_detail(predictions, targets, vectors, ranks)["value"]


def latent_diversity_scores(predictions, targets, vectors: TrackVectors, *,
                            top: int = LATENT_TOP, diversity_weight: float = DIVERSITY_WEIGHT,
                            bias_weight: float = BIAS_WEIGHT) -> np.ndarray:
    """Per-user latent diversity score.

    Over the first ``top`` predictions that have a vector: ``m`` = their mean vector,
    diversity = mean of ``1 - cos(m, v_i)``, bias = ``1 - cos(m, v_target)``,
    score = ``diversity_weight * diversity - bias_weight * bias``. A user without a usable
    prediction scores ``-bias_weight`` (their mean vector is zero: cosines count as 0).

    Parameters
    ----------
    predictions, targets, vectors
        As for :func:`being_less_wrong`.
    top, diversity_weight, bias_weight
        The challenge's values by default.

    Returns
    -------
    numpy.ndarray
        float64 per user; NaN for users whose target has no vector.
    """
    tv = as_vectors(vectors)
    preds = np.asarray(predictions)[:, :top]
    t_rows = tv.rows(np.asarray(targets))
    scores = np.full(len(t_rows), np.nan)
    users = np.flatnonzero(t_rows >= 0)
    blocks = [users[start:start + _VECTOR_BLOCK] for start in range(0, len(users), _VECTOR_BLOCK)]

    def score(block: np.ndarray) -> None:
        scores[block] = _latent_diversity_block(preds[block], t_rows[block], tv,
                                                diversity_weight, bias_weight)

    if len(blocks) > 1 and (os.cpu_count() or 1) > 1:
        # each user's score is computed alone (the same bits in any thread); NumPy releases
        # the GIL in the gathers and products
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(score, blocks))
    else:
        for block in blocks:
            score(block)
    return scores


def _latent_diversity_block(preds: np.ndarray, t_rows: np.ndarray, tv: TrackVectors,
                            diversity_weight: float, bias_weight: float) -> np.ndarray:
    """:func:`latent_diversity_scores` of a block of users whose targets have vectors."""
    vecs = tv.vectors
    rows = tv.rows(preds)                                                # (b, top)
    usable = rows >= 0
    count = usable.sum(axis=1)
    weight = usable.astype(np.float64)
    # np.take of the float32 rows is much faster than fancy indexing; einsum computes in
    # float64 (dtype=) without a float64 copy of the gathered block
    v = np.take(vecs, np.where(usable, rows, 0), axis=0)                # (b, top, d)
    mean = (np.einsum("bid,bi->bd", v, weight, dtype=np.float64)
            / np.maximum(count, 1)[:, None])                             # (b, d)
    mean_norm = np.sqrt(np.einsum("bd,bd->b", mean, mean))
    item_norm = np.sqrt(np.einsum("bid,bid->bi", v, v, dtype=np.float64))
    denom = item_norm * mean_norm[:, None]
    cos_items = np.zeros(denom.shape)
    np.divide(np.einsum("bid,bd->bi", v, mean, dtype=np.float64), denom, out=cos_items,
              where=(denom > 0) & usable)
    diversity = (count - cos_items.sum(axis=1)) / np.maximum(count, 1)
    target = np.take(vecs, t_rows, axis=0).astype(np.float64)
    bias = 1.0 - _row_cosines(mean, target)
    return diversity_weight * diversity - bias_weight * bias


def latent_diversity(predictions, targets, vectors: TrackVectors, *, top: int = LATENT_TOP,
                     diversity_weight: float = DIVERSITY_WEIGHT,
                     bias_weight: float = BIAS_WEIGHT) -> float:
    """LATENT_DIVERSITY: the mean of :func:`latent_diversity_scores` over scored users.

    Parameters
    ----------
    predictions, targets, vectors, top, diversity_weight, bias_weight
        As for :func:`latent_diversity_scores`.

    Returns
    -------
    float
        0.0, warned (``ScoringWarning``), when no target has a vector.
    """
    return latent_diversity_detail(predictions, targets, vectors, top=top,
                                   diversity_weight=diversity_weight,
                                   bias_weight=bias_weight)["value"]


def latent_diversity_detail(predictions, targets, vectors, *, scores=None, **kwargs) -> dict:
    """LATENT_DIVERSITY with the users behind it.

    Parameters
    ----------
    predictions, targets, vectors
        As for :func:`latent_diversity_scores`.
    scores : array-like, optional
        The per-user scores, if known.
    **kwargs
        ``top``, ``diversity_weight``, ``bias_weight`` of :func:`latent_diversity_scores`.

    Returns
    -------
    dict
        ``value``, ``n_users`` (users measured) and, when some user was measured,
        ``n_without_usable_prediction``.
    """
    tv = as_vectors(vectors)
    if scores is None:
        scores = latent_diversity_scores(predictions, targets, tv, **kwargs)
    scored = ~np.isnan(scores)
    n = int(scored.sum())
    if n == 0:
        warnings.warn("LATENT_DIVERSITY: no test target has a vector; the test is 0.0",
                      ScoringWarning, stacklevel=2)
        return {"value": 0.0, "n_users": 0}
    top = kwargs.get("top", LATENT_TOP)
    usable = tv.rows(np.asarray(predictions)[:, :top][scored]) >= 0
    return {"value": float(scores[scored].mean()), "n_users": n,
            "n_without_usable_prediction": int((~usable.any(axis=1)).sum())}
