"""Selecting the best ``k`` columns of a score block: higher score first, then the lower
item index."""

from __future__ import annotations

import math

import numpy as np


def keep_best(r, c, v, m: int, kk: int):
    """Each row's ``kk`` best (row, column, score) triples and its ``kk``-th score (``-inf``
    for rows with fewer): score descending, then lower column."""
    order = np.lexsort((c, -v, r))
    r, c, v = r[order], c[order], v[order]
    counts = np.bincount(r, minlength=m)
    starts = np.cumsum(counts) - counts
    keep = np.arange(len(r)) - starts[r] < kk
    r, c, v = r[keep], c[keep], v[keep]
    kept = np.minimum(counts, kk)
    threshold = np.full(m, -np.inf, dtype=v.dtype)
    full = kept == kk
    threshold[full] = v[(np.cumsum(kept) - kept)[full] + kk - 1]
    return r, c, v, threshold


def select_numpy(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The top-``k`` (row, column, score) triples of each row; ``-inf`` entries never selected.

    A cheap lower bound ``t0`` on each row's k-th largest score (the k-th largest of a strided
    subset of columns) leaves few candidates ``>= t0``; rows where it leaves too many (heavy ties)
    take the exact dense path.
    """
    n_rows, n = scores.shape
    if n_rows == 0 or n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    kk = min(k, n)
    sample = min(n, 2 * math.isqrt(kk * n) + kk)
    if sample >= n // 2:
        return _select_dense(scores, np.arange(n_rows), kk)
    sub = scores[:, :: n // sample]
    bound = np.partition(sub, sub.shape[1] - kk, axis=1)[:, sub.shape[1] - kk]
    candidate = scores >= bound[:, None]
    unbounded = np.flatnonzero(bound == -np.inf)  # < kk finite values sampled: drop the -inf
    if len(unbounded):
        candidate[unbounded] &= scores[unbounded] > -np.inf
    counts = np.count_nonzero(candidate, axis=1)
    dense = counts > max(64 * kk, n // 16)
    if dense.any():
        candidate[dense] = False
    r, c = sparse_nonzero(candidate)
    v = scores[r, c]
    r, c, v = _best_of_candidates(r, c, v, n_rows, kk, scores.dtype)
    if dense.any():
        rd, cd, vd = _select_dense(scores, np.flatnonzero(dense), kk)
        r, c, v = np.concatenate([r, rd]), np.concatenate([c, cd]), np.concatenate([v, vd])
    return r, c, v


def sparse_nonzero(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.nonzero`` of a C-contiguous 2-D mask with few True values, scanning 8 bytes a step."""
    flat = mask.reshape(-1)
    whole = flat.size // 8 * 8
    words = np.flatnonzero(flat[:whole].view(np.uint64))
    idx = (words[:, None] * 8 + np.arange(8)).reshape(-1)
    idx = np.concatenate([idx[flat[idx]], whole + np.flatnonzero(flat[whole:])])
    return np.divmod(idx, mask.shape[1])


def _best_of_candidates(r, c, v, n_rows: int, kk: int, dtype):
    """Keep each row's ``kk`` best candidates (row-major input; ties: lower column first)."""
    counts = np.bincount(r, minlength=n_rows)
    width = int(counts.max(initial=0))
    if width <= kk:
        return r, c, v
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    padded = np.full((n_rows, width), -np.inf, dtype=dtype)
    padded[r, np.arange(len(r)) - starts[r]] = v
    kth = np.partition(padded, width - kk, axis=1)[:, width - kk][r]
    above = v > kth
    tie = (v == kth) & (kth > -np.inf)
    need = kk - np.bincount(r[above], minlength=n_rows)
    # Rank of each tie within its row, in column order (nonzero output is row-major).
    tie_rank = np.cumsum(tie)
    base = (tie_rank - tie)[np.minimum(starts, len(r) - 1)]
    keep = above | (tie & (tie_rank - base[r] <= need[r]))
    return r[keep], c[keep], v[keep]


def _select_dense(scores: np.ndarray, rows: np.ndarray, kk: int):
    """Exact top-``kk`` of ``rows``: the k-th largest value and an index-ordered tie cut."""
    block = scores if len(rows) == scores.shape[0] else scores[rows]
    n = block.shape[1]
    kth = np.partition(block, n - kk, axis=1)[:, n - kk][:, None]
    above = block > kth
    need = kk - above.sum(axis=1)
    tie = (block == kth) & (kth > -np.inf)
    tie &= np.cumsum(tie, axis=1, dtype=np.int32) <= need[:, None]
    local, c = np.nonzero(above | tie)
    return rows[local], c, block[local, c]
