"""The faiss path: candidates from ``IndexFlatIP``, rescored and selected as NumPy does."""

from __future__ import annotations

import numpy as np

from evaluation.errors import ConfigError
from evaluation.topk._blocked import MIN_BLOCK_MACS
from evaluation.topk._context import Context, assemble_rows, chunk_exclusions
from evaluation.topk._select import keep_best

# faiss scores each query in float32 with its own BLAS call: its scores can differ from the
# NumPy path's in the last bits, so faiss only proposes candidates. Any two float32 dot products
# of u and v (any summation order, with or without FMA) are within gamma_d * |u| * |v| of the
# exact value (Higham, Accuracy and Stability of Numerical Algorithms, 3.1), gamma_d =
# d u / (1 - d u), u = 2^-24; so they differ by at most twice that.
_FAISS_BATCH = 4096


def run_faiss(ctx: Context, chunks, out: np.ndarray, faiss) -> None:
    """faiss ``IndexFlatIP`` proposes each user's best items (over-fetched for the exclusions);
    the candidates are rescored exactly as the NumPy path scores them and selected under the
    same tie rule. A user is finished when its k-th rescored item beats, by more than the
    rounding bound, the score of every item faiss did not return; other users are searched
    again with four times the fetch, up to the whole catalogue."""
    n, d = ctx.n_items, ctx.item.shape[1]
    if n == 0 or ctx.user.shape[0] == 0:
        return
    index = faiss.IndexFlatIP(d)
    index.add(ctx.item)
    unit = 2.0**-24
    gamma = d * unit / (1 - d * unit)
    item_norm = float(np.sqrt(np.square(ctx.item, dtype=np.float64).sum(axis=1)).max())
    user_norm = np.sqrt(np.square(ctx.user, dtype=np.float64).sum(axis=1))
    # 1 % spare for the float64 arithmetic of the bound; d * 2^-149 for float32 underflow
    slack = 2.02 * gamma * user_norm * item_norm + d * 2.0**-149
    excluded = (np.diff(ctx.exclude.indptr) if ctx.exclude is not None
                else np.zeros(ctx.user.shape[0], dtype=np.int64))
    kk = min(ctx.k, n)
    batch = []
    for chunk in chunks + [None]:
        if chunk is not None:
            batch.append(chunk)
            if batch[-1][1] - batch[0][0] < _FAISS_BATCH:
                continue
        if not batch:
            break
        lo, hi = batch[0][0], batch[-1][1]
        # over-fetch by the exclusions of nine users in ten; the others (their exclusions ate
        # their results) are searched again, so one heavy user does not widen every search
        fetch = min(n, kk + int(np.percentile(excluded[lo:hi], 90)))
        scores, labels = index.search(ctx.user[lo:hi], fetch)
        for start, stop in batch:
            _faiss_chunk(ctx, index, start, stop, out, scores[start - lo : stop - lo],
                         labels[start - lo : stop - lo], slack[start:stop])
        batch = []


def _faiss_chunk(ctx, index, start, stop, out, scores, labels, slack) -> None:
    m, n, kk = stop - start, ctx.n_items, min(ctx.k, ctx.n_items)
    rows, cols = chunk_exclusions(ctx.exclude, start, stop)
    excluded_keys = rows * n + cols  # sorted: the CSR rows are in order, columns sorted within
    candidates = {i: (labels[i], scores[i]) for i in range(m)}
    result: tuple[np.ndarray, ...] | None = None
    while candidates:
        users = np.fromiter(candidates, dtype=np.int64, count=len(candidates))
        lists = [candidates[i][0] for i in users]
        r = np.repeat(users, [len(x) for x in lists])
        c = np.concatenate(lists).astype(np.int64)
        found = c >= 0  # faiss pads with -1 when it has fewer items than asked
        r, c = r[found], c[found]
        keys = r * n + c
        hit = np.searchsorted(excluded_keys, keys)
        hit[hit == len(excluded_keys)] = 0
        allowed = excluded_keys[hit] != keys if len(excluded_keys) else np.ones(len(r), bool)
        r, c = r[allowed], c[allowed]
        v = _exact_scores(ctx, start, stop, r, c)
        r, c, v, kth = keep_best(r, c, v, m, kk)
        fetched = np.array([len(candidates[i][0]) for i in users])
        last = np.array([float(candidates[i][1][-1]) for i in users])
        complete = (fetched >= n) | np.array([bool((candidates[i][0] < 0).any()) for i in users])
        settled = complete | (kth[users].astype(np.float64) > last + slack[users])
        done = np.isin(r, users[settled])
        part = (r[done], c[done], v[done])
        result = part if result is None else tuple(map(np.concatenate, zip(result, part)))
        again = users[~settled]
        candidates = {}
        if len(again):
            wider = min(n, 4 * max(int(fetched.max()), 1))
            more_scores, more_labels = index.search(ctx.user[start + again], wider)
            candidates = {int(i): (more_labels[j], more_scores[j]) for j, i in enumerate(again)}
    assert result is not None  # a chunk has at least one user, so the loop ran
    assemble_rows(out[start:stop], *result)


def _exact_scores(ctx: Context, start: int, stop: int, r: np.ndarray, c: np.ndarray):
    """The NumPy path's scores of items ``c`` for chunk rows ``r``, bit for bit: one product of
    the chunk's users with the candidate columns when that product is large enough for BLAS's
    regular path (where every score is computed alike), else the reference's own product."""
    m, d = stop - start, ctx.item.shape[1]
    columns, where = np.unique(c, return_inverse=True)
    user = ctx.user[start:stop]
    if m >= 2 and m * d * len(columns) >= MIN_BLOCK_MACS:
        block = user @ ctx.item_t[:, columns]
    else:
        block = (user @ ctx.item_t)[:, columns]
    return block[r, where]


def faiss_for(device: str):
    """The faiss module for ``device="faiss"`` (imported only then), else None."""
    if device != "faiss":
        return None
    try:
        import faiss
    except ImportError:
        raise ConfigError(
            "device='faiss' needs faiss-cpu, which is not installed: install the faiss extra, "
            "evalrs-harness[faiss] (`make faiss` in the harness's clone), or use "
            "device='numpy'."
        ) from None
    return faiss
