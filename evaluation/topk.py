"""Top-k items per user from embeddings: ``user_emb @ item_emb.T`` in memory-bounded chunks.

The score matrix of a full fold does not fit in memory (30k users x 820k items), so users are
scored a chunk at a time, training items are masked to ``-inf`` through the CSR indices of
``exclude``, and only ``k`` items per user are kept. Tie-breaking is deterministic in every path:
higher score first, then the lower item *index* (column of ``item_emb``).

Paths: the blocked NumPy kernel (default: each chunk's product split into item blocks that stay
in cache, most of a block discarded against each user's running k-th score), the reference NumPy
path it is checked against (``_reference_topk``: the whole score matrix of a chunk, then one
selection pass), faiss (candidates from ``IndexFlatIP``, rescored and selected as the NumPy path
does) and torch. The first three return the same items in the same order, bit for bit.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_info, threadpool_limits

from evaluation._util.int64 import as_int64
from evaluation._util.validation import check_int, check_k
from evaluation.errors import ConfigError, show_values

if TYPE_CHECKING:  # annotations only: SciPy is imported where it is used
    import scipy.sparse as sp

DEFAULT_MEMORY_BUDGET = 512 * 2**20
# Bytes of one score block of the blocked kernel: small enough to stay in a core's L2 cache
# while it is compared with the users' running thresholds.
_BLOCK_BYTES = 2 * 2**20
# The blocked kernel multiplies a user chunk by item blocks instead of the whole catalogue at
# once. Optimised BLAS computes every score of a large product with the same sequence of
# operations whatever the matrix shape, so the blocks give the reference's scores bit for bit;
# small products take other code paths (OpenBLAS's "direct"/small-matrix kernels) that round
# differently. Every block product therefore holds at least this many multiply-adds
# (OpenBLAS leaves its regular path below 28 * 512 * 512 = 7.3M).
_MIN_BLOCK_MACS = 2**23


def topk_from_embeddings(
    user_emb,
    item_emb,
    k: int,
    *,
    exclude=None,
    item_ids=None,
    user_ids=None,
    batch_size: int | None = None,
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
    device: str = "numpy",
) -> pd.DataFrame:
    """Rank every item for every user by dot product and return the top ``k`` per user.

    Parameters
    ----------
    user_emb : array-like or torch.Tensor
        ``(n_users, d)`` user embeddings.
    item_emb : array-like or torch.Tensor
        ``(n_items, d)`` item embeddings.
    k : int
        List length; users with fewer than ``k`` items left after exclusion are padded with -1.
    exclude : scipy.sparse matrix, optional
        ``(n_users, n_items)``; every nonzero entry is an item the user must not get (e.g.
        their training items).
    item_ids : array-like of int, optional
        Id of each item row (default ``0..n_items-1``); the output holds these ids.
    user_ids : array-like of int, optional
        Id of each user row (default ``0..n_users-1``); the output index.
    batch_size : int, optional
        Users scored at once; by default derived from ``memory_budget``.
    memory_budget : int
        Bytes of working memory per chunk (the score block plus the selection's temporaries).
    device : str
        ``"numpy"`` (default; uses one thread per core), ``"faiss"`` (needs faiss-cpu and
        float32 embeddings; the same result as ``"numpy"``), or a torch device string
        (``"cpu"``, ``"cuda"``, ``"cuda:1"``...) when torch is installed; torch then scores and
        selects.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``user_id`` (in ``user_ids`` order) with columns ``"0".."k-1"`` of item ids,
        best first (the ``RecModel.predict`` format). Order: score descending, ties by lower
        item index. Scores are computed in float32 when both embeddings are float32 (else
        float64); the numpy and faiss paths give identical results; the torch path can order
        two items differently only where its float products differ in the last bit.

    Raises
    ------
    ConfigError
        On a bad parameter, embeddings of the wrong shape or non-finite values, or ids that
        are not one unique id per row.

    Notes
    -----
    Memory: the embeddings, a transposed copy of ``item_emb``, the exclusion matrix, the output
    and at most about ``memory_budget`` bytes of working memory (the blocked kernel needs a
    few MiB per thread; faiss holds its own copy of ``item_emb``).

    Threads: the NumPy kernel runs as many threads as BLAS may use (all cores by default;
    ``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS`` or ``threadpoolctl.threadpool_limits`` lower
    it), each with single-threaded BLAS; the result does not depend on the thread count.
    """
    return _topk(user_emb, item_emb, k, exclude=exclude, item_ids=item_ids, user_ids=user_ids,
                 batch_size=batch_size, memory_budget=memory_budget, device=device,
                 kernel="blocked")


def _reference_topk(user_emb, item_emb, k: int, **kwargs) -> pd.DataFrame:
    """The reference NumPy path: every chunk's whole score matrix, exclusions set to ``-inf``,
    then a full selection pass. Slower than the blocked kernel; kept to check it against."""
    return _topk(user_emb, item_emb, k, kernel="reference", **kwargs)


def _topk(user_emb, item_emb, k, *, exclude=None, item_ids=None, user_ids=None,
          batch_size=None, memory_budget=DEFAULT_MEMORY_BUDGET, device="numpy",
          kernel="blocked") -> pd.DataFrame:
    k = check_k(k, owner="topk_from_embeddings")
    torch = _torch_for(device)
    faiss = _faiss_for(device)
    user_emb, item_emb, bounded = _embeddings(user_emb, item_emb, torch)
    n_users, n_items = user_emb.shape[0], item_emb.shape[0]
    exclude = _exclusions(exclude, n_users, n_items)
    item_ids = _ids(item_ids, n_items, "item_ids")
    user_ids = _ids(user_ids, n_users, "user_ids")
    if faiss is not None and user_emb.dtype != np.float32:
        raise ConfigError(
            f"device='faiss' needs float32 embeddings (faiss scores in float32); got "
            f"{user_emb.dtype}. Fix: pass float32 arrays, or use device='numpy'."
        )
    itemsize = 4 if str(user_emb.dtype).endswith("float32") else 8
    if batch_size is None:
        memory_budget = check_int("memory_budget", memory_budget, minimum=1,
                                  owner="topk_from_embeddings")
        # score block + selection temporaries (masks, partition copy, cumsum of ties) per user
        per_user = max(n_items, 1) * (2 * itemsize + 8)
        batch_size = max(1, int(memory_budget // per_user))
    else:
        batch_size = check_int("batch_size", batch_size, minimum=1, owner="topk_from_embeddings")
    out = np.full((n_users, k), -1, dtype=np.int64)
    batch_size = min(batch_size, max(n_users, 1))
    chunks = [(start, min(start + batch_size, n_users)) for start in range(0, n_users, batch_size)]
    context = _Context(user_emb, item_emb, exclude, k, bounded, user_ids, item_ids)
    if torch is not None:
        _run_torch(context, chunks, out, torch)
    elif faiss is not None:
        _run_faiss(context, chunks, out, faiss)
    elif kernel == "reference":
        _run_reference(context, chunks, out)
    else:
        _run_blocked(context, chunks, out)
    columns = [str(i) for i in range(k)]
    values = np.where(out >= 0, item_ids[np.maximum(out, 0)], -1) if n_items else out
    return pd.DataFrame(values, index=pd.Index(user_ids, name="user_id"), columns=columns)


class _Context:
    """The validated inputs every path reads (one object keeps the chunk functions short)."""

    def __init__(self, user, item, exclude, k, bounded, user_ids, item_ids):
        self.user, self.item, self.exclude, self.k = user, item, exclude, k
        self.bounded, self.user_ids, self.item_ids = bounded, user_ids, item_ids
        self.n_items = item.shape[0]
        self._item_t = None

    @property
    def item_t(self) -> np.ndarray:
        """A contiguous ``(d, n_items)`` copy: it multiplies faster than the transposed view."""
        if self._item_t is None:
            self._item_t = np.ascontiguousarray(self.item.T)
        return self._item_t

    def check_finite(self, scores: np.ndarray, start: int, column: int = 0) -> None:
        """Refuse scores that overflowed (only needed when no bound rules it out)."""
        # NaN propagates through max: two reductions find any inf or NaN
        if self.bounded or (np.isfinite(scores.max(initial=0.0))
                            and np.isfinite(scores.min(initial=0.0))):
            return
        finite = np.ones((scores.shape[0], self.n_items), dtype=bool)
        finite[:, column : column + scores.shape[1]] = np.isfinite(scores)
        raise _overflow(finite, start, self.user_ids, self.item_ids, scores.dtype)


def _run_reference(ctx: _Context, chunks, out: np.ndarray) -> None:
    """Each chunk's whole score matrix, exclusions set to ``-inf``, one selection pass."""
    if not chunks:
        return
    # One reused score buffer saves faulting in fresh pages for every chunk.
    buffer = np.empty((chunks[0][1] - chunks[0][0], ctx.n_items), dtype=ctx.item.dtype)
    for start, stop in chunks:
        rows, cols = _chunk_exclusions(ctx.exclude, start, stop)
        with np.errstate(over="ignore", invalid="ignore"):  # checked just below
            scores = np.matmul(ctx.user[start:stop], ctx.item_t, out=buffer[: stop - start])
        ctx.check_finite(scores, start)
        scores[rows, cols] = -np.inf
        r, c, v = _select_numpy(scores, ctx.k)
        _assemble(out[start:stop], r, c, v)


def _run_torch(ctx: _Context, chunks, out: np.ndarray, torch) -> None:
    user = torch.from_numpy(ctx.user).to(torch.target)
    item_t = torch.from_numpy(ctx.item).to(torch.target).T.contiguous()
    for start, stop in chunks:
        rows, cols = _chunk_exclusions(ctx.exclude, start, stop)
        with torch.no_grad():
            scores = user[start:stop] @ item_t
            if not ctx.bounded:
                finite = torch.isfinite(scores)
                if not bool(finite.all()):
                    raise _overflow(finite.cpu().numpy(), start, ctx.user_ids, ctx.item_ids,
                                    scores.dtype)
            if len(rows):
                scores[torch.as_tensor(rows, device=scores.device),
                       torch.as_tensor(cols, device=scores.device)] = -math.inf
            r, c, v = _select_torch(scores, ctx.k, torch)
        _assemble(out[start:stop], r, c, v)


def _workers(n_chunks: int) -> int:
    """Threads for the blocked kernel: as many as BLAS may use (it defaults to the cores)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    blas = [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]
    return max(1, min(max(blas, default=cores), cores, n_chunks))


def _run_blocked(ctx: _Context, chunks: list[tuple[int, int]], out: np.ndarray) -> None:
    """The blocked kernel on every chunk, one thread per core.

    Each thread runs BLAS on one core, so the comparisons and selections between two products
    run in parallel too (NumPy releases the GIL in both); results do not depend on the thread
    count: a chunk's scores and selection are the same on any thread.
    """
    _ = ctx.item_t  # build the shared transposed copy before the threads start
    workers = _workers(len(chunks))
    # Single-threaded BLAS even with one worker: a product of one item block is too small to
    # share (two BLAS threads ran the kernel 5x slower on two busy cores).
    with threadpool_limits(1, user_api="blas"):
        if workers == 1:
            for start, stop in chunks:
                _blocked_chunk(ctx, start, stop, out)
            return
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(lambda chunk: _blocked_chunk(ctx, chunk[0], chunk[1], out), chunks))


def _block_edges(m: int, d: int, n: int, itemsize: int) -> np.ndarray:
    """Item block boundaries for a chunk of ``m`` users: blocks of about ``_BLOCK_BYTES``,
    each at least ``_MIN_BLOCK_MACS`` multiply-adds (so BLAS stays on its regular path)."""
    if m == 1 or m * d * n < 2 * _MIN_BLOCK_MACS:
        # one product, the reference's own (one user is a matrix-vector product in BLAS)
        return np.array([0, n])
    width = max(_BLOCK_BYTES // (m * itemsize), 2 * -(-_MIN_BLOCK_MACS // (m * d)))
    blocks = -(-n // width)
    return np.linspace(0, n, blocks + 1).round().astype(np.int64)  # widths >= width / 2


def _blocked_chunk(ctx: _Context, start: int, stop: int, out: np.ndarray) -> None:
    """Top-k of users ``start:stop``: a score block per item block, read while in cache.

    The first block is selected exactly; every later block keeps only the scores strictly above
    each user's threshold, the k-th best of the items already seen (under the tie rule: score
    descending, then lower index). A later item equal to the threshold has a higher index than
    every item it ties with, so it can never enter the top k: the strict comparison is exact.
    The candidate pool is cut back to k per user (raising the thresholds) whenever it doubles.
    """
    m, n = stop - start, ctx.n_items
    if m == 0 or n == 0:
        return
    kk = min(ctx.k, n)
    user = ctx.user[start:stop]
    edges = _block_edges(m, user.shape[1], n, user.itemsize)
    rows, cols = _chunk_exclusions(ctx.exclude, start, stop)
    by_column = np.argsort(cols, kind="stable")
    rows, cols = rows[by_column], cols[by_column]
    cuts = np.searchsorted(cols, edges)
    flat = np.empty(m * int(np.diff(edges).max()), dtype=user.dtype)
    threshold = np.full(m, -np.inf, dtype=user.dtype)
    pool, pending = [], 0
    for b in range(len(edges) - 1):
        lo, hi = int(edges[b]), int(edges[b + 1])
        scores = flat[: m * (hi - lo)].reshape(m, hi - lo)
        with np.errstate(over="ignore", invalid="ignore"):  # checked just below
            np.matmul(user, ctx.item_t[:, lo:hi], out=scores)
        ctx.check_finite(scores, start, lo)
        scores[rows[cuts[b] : cuts[b + 1]], cols[cuts[b] : cuts[b + 1]] - lo] = -np.inf
        if b == 0:
            r, c, v = _select_numpy(scores, kk)
        else:  # -inf (excluded) never passes: the threshold is at least -inf
            r, c = _sparse_nonzero(scores > threshold[:, None])
            v = scores[r, c]
        pool.append((r, c + lo, v))
        pending += len(r)
        if b == 0 or pending > m * kk:
            pooled_r, pooled_c, pooled_v = map(np.concatenate, zip(*pool))
            r, c, v, threshold = _keep_best(pooled_r, pooled_c, pooled_v, m, kk)
            pool, pending = [(r, c, v)], 0
    _assemble(out[start:stop], *map(np.concatenate, zip(*pool)))


def _keep_best(r, c, v, m: int, kk: int):
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


# faiss scores each query in float32 with its own BLAS call: its scores can differ from the
# NumPy path's in the last bits, so faiss only proposes candidates. Any two float32 dot products
# of u and v (any summation order, with or without FMA) are within gamma_d * |u| * |v| of the
# exact value (Higham, Accuracy and Stability of Numerical Algorithms, 3.1), gamma_d =
# d u / (1 - d u), u = 2^-24; so they differ by at most twice that.
_FAISS_BATCH = 4096


def _run_faiss(ctx: _Context, chunks, out: np.ndarray, faiss) -> None:
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
    rows, cols = _chunk_exclusions(ctx.exclude, start, stop)
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
        r, c, v, kth = _keep_best(r, c, v, m, kk)
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
    _assemble(out[start:stop], *result)


def _exact_scores(ctx: _Context, start: int, stop: int, r: np.ndarray, c: np.ndarray):
    """The NumPy path's scores of items ``c`` for chunk rows ``r``, bit for bit: one product of
    the chunk's users with the candidate columns when that product is large enough for BLAS's
    regular path (where every score is computed alike), else the reference's own product."""
    m, d = stop - start, ctx.item.shape[1]
    columns, where = np.unique(c, return_inverse=True)
    user = ctx.user[start:stop]
    if m >= 2 and m * d * len(columns) >= _MIN_BLOCK_MACS:
        block = user @ ctx.item_t[:, columns]
    else:
        block = (user @ ctx.item_t)[:, columns]
    return block[r, where]


def _overflow(finite: np.ndarray, start: int, user_ids: np.ndarray, item_ids: np.ndarray,
              dtype) -> ConfigError:
    """The error for scores that are not finite (``finite``: the chunk's mask from ``start``)."""
    r, c = np.nonzero(~finite)
    users = pd.unique(user_ids[start + r])
    items = pd.unique(item_ids[c])
    return ConfigError(
        f"'user_emb' @ 'item_emb'.T is not finite in {dtype}: {len(r)} scores overflow to inf "
        f"or are NaN (inf - inf), e.g. for users {show_values(users)} and items "
        f"{show_values(items)}; a ranking of them would be arbitrary. Fix: scale the "
        "embeddings down (e.g. normalise their rows) or pass float64 arrays"
    )


def _faiss_for(device: str):
    """The faiss module for ``device="faiss"`` (imported only then), else None."""
    if device != "faiss":
        return None
    try:
        import faiss
    except ImportError:
        raise ConfigError(
            "device='faiss' needs faiss-cpu, which is not installed: pip install "
            "'evalrs-harness[faiss]' (or pip install -r requirements-faiss.txt), or use "
            "device='numpy'."
        ) from None
    return faiss


def _torch_for(device: str):
    if device in ("numpy", "faiss"):
        return None
    if not isinstance(device, str):
        raise ConfigError(f"'device' must be 'numpy', 'faiss' or a torch device string; got "
                          f"{device!r}.")
    try:
        import torch
    except ImportError:
        raise ConfigError(
            f"device={device!r} needs PyTorch, which is not installed: pip install torch, or "
            "use device='numpy'."
        ) from None
    try:
        torch.empty(0, device=device)
    except (RuntimeError, AssertionError) as error:
        raise ConfigError(f"Torch device {device!r} is not usable here: {error}") from None
    return _TorchOn(torch, device)


class _TorchOn:
    """The torch module bound to a device (keeps the selection code short)."""

    def __init__(self, torch, device: str):
        self.torch = torch
        self.target = torch.device(device)

    def __getattr__(self, name):
        return getattr(self.torch, name)


def _embeddings(user_emb, item_emb, torch):
    arrays = []
    for name, emb in (("user_emb", user_emb), ("item_emb", item_emb)):
        if torch is not None and isinstance(emb, torch.Tensor):
            emb = emb.detach().cpu().numpy()
        array = np.asarray(emb)
        if array.ndim != 2 or array.dtype.kind not in "fiu":
            raise ConfigError(
                f"'{name}' must be a 2-D numeric array (rows x dims); got dtype {array.dtype} "
                f"with shape {array.shape}."
            )
        arrays.append(array)
    user, item = arrays
    if user.shape[1] != item.shape[1]:
        raise ConfigError(
            f"'user_emb' and 'item_emb' must have the same dimension; got {user.shape[1]} and "
            f"{item.shape[1]}."
        )
    dtype = np.float32 if (user.dtype == np.float32 and item.dtype == np.float32) else np.float64
    user = np.ascontiguousarray(user, dtype=dtype)
    item = np.ascontiguousarray(item, dtype=dtype)
    for name, array in (("user_emb", user), ("item_emb", item)):
        bad = ~np.isfinite(array).all(axis=1)
        if bad.any():
            raise ConfigError(
                f"'{name}' must be finite; rows {show_values(np.flatnonzero(bad))} hold NaN or inf."
            )
    return user, item, _scores_bounded(user, item)


def _scores_bounded(user: np.ndarray, item: np.ndarray) -> bool:
    """Whether no score can overflow: every partial sum of a dot product is at most
    ``d * max|user| * max|item|`` (a Python float, which does not overflow), far below the
    dtype's largest value. When not, each chunk's scores are checked instead."""
    if not (user.size and item.size):
        return True
    top_user = max(float(user.max()), -float(user.min()))
    top_item = max(float(item.max()), -float(item.min()))
    bound = user.shape[1] * top_user * top_item
    return bound < float(np.finfo(user.dtype).max) / 4  # room for rounding in the sums


def _exclusions(exclude, n_users: int, n_items: int) -> sp.csr_array | None:
    if exclude is None:
        return None
    import scipy.sparse as sp  # here: a run that never excludes items needs no SciPy

    if not sp.issparse(exclude):
        raise ConfigError(
            "'exclude' must be a scipy.sparse (n_users x n_items) matrix whose nonzero entries "
            f"mark excluded items; got {type(exclude).__name__}."
        )
    if exclude.shape != (n_users, n_items):
        raise ConfigError(
            f"'exclude' must have shape (n_users, n_items) = {(n_users, n_items)}; got "
            f"{exclude.shape}."
        )
    matrix = sp.csr_array(exclude, copy=True)
    matrix.sum_duplicates()
    matrix.eliminate_zeros()
    return matrix


def _ids(ids, n: int, name: str) -> np.ndarray:
    if ids is None:
        return np.arange(n, dtype=np.int64)
    array = np.asarray(ids)
    if array.shape != (n,):
        raise ConfigError(
            f"'{name}' must have one id per embedding row ({n}); got shape {array.shape}."
        )
    if len(np.unique(array)) != n:
        raise ConfigError(f"'{name}' must be unique; it repeats ids.")
    if name == "item_ids":
        if array.dtype.kind not in "iu" or (array == -1).any():
            raise ConfigError(
                "'item_ids' must be integers other than -1 (the padding value of the output)."
            )

        def fail(rule: str, bad: np.ndarray, values: np.ndarray) -> ConfigError:
            return ConfigError(f"'item_ids' must fit in int64 (the output's dtype); "
                               f"{int(bad.sum())} ids are {rule}: {show_values(values[bad])}.")

        array = as_int64(array, fail)
    return array


def _chunk_exclusions(exclude, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
    if exclude is None:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    lo, hi = exclude.indptr[start], exclude.indptr[stop]
    counts = np.diff(exclude.indptr[start : stop + 1])
    rows = np.repeat(np.arange(stop - start, dtype=np.int64), counts)
    return rows, exclude.indices[lo:hi].astype(np.int64)


def _assemble(out: np.ndarray, r: np.ndarray, c: np.ndarray, v: np.ndarray) -> None:
    """Write selected (row, column, score) triples into ``out``: score desc, then column asc."""
    order = np.lexsort((c, -v, r))
    r, c = r[order], c[order]
    counts = np.bincount(r, minlength=out.shape[0])
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    position = np.arange(len(r)) - starts[r]
    keep = position < out.shape[1]
    out[r[keep], position[keep]] = c[keep]


def _select_numpy(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
    r, c = _sparse_nonzero(candidate)
    v = scores[r, c]
    r, c, v = _best_of_candidates(r, c, v, n_rows, kk, scores.dtype)
    if dense.any():
        rd, cd, vd = _select_dense(scores, np.flatnonzero(dense), kk)
        r, c, v = np.concatenate([r, rd]), np.concatenate([c, cd]), np.concatenate([v, vd])
    return r, c, v


def _sparse_nonzero(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def _select_torch(scores, k: int, torch):
    """Torch counterpart of ``_select_numpy``: ``torch.topk`` plus an index-ordered tie cut."""
    n_rows, n = scores.shape
    kk = min(k, n)
    if n_rows == 0 or n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    # One more than k: a tie between the k-th and (k+1)-th value means topk's choice among the
    # values equal to the k-th is arbitrary; those rows get the exact index-ordered cut.
    wide = min(kk + 1, n)
    values, columns = torch.topk(scores, wide, dim=1, largest=True, sorted=True)
    kth = values[:, kk - 1 : kk]
    above = (values[:, :kk] > kth).sum(dim=1)
    ambiguous = kth[:, 0] > -math.inf
    ambiguous &= values[:, kk] == kth[:, 0] if wide > kk else torch.zeros_like(ambiguous)
    values, columns = values[:, :kk], columns[:, :kk]
    keep = (values > -math.inf) & ~ambiguous[:, None]
    rows = torch.arange(n_rows, device=scores.device)[:, None].expand(-1, kk)
    r, c, v = rows[keep], columns[keep], values[keep]
    if bool(ambiguous.any()):
        idx = torch.nonzero(ambiguous).flatten()
        block = scores[idx]
        kth_a = kth[idx]
        tie = block == kth_a
        tie &= torch.cumsum(tie.to(torch.int32), dim=1) <= (kk - above[idx])[:, None]
        local, ca = torch.nonzero((block > kth_a) | tie, as_tuple=True)
        r = torch.cat([r, idx[local]])
        c = torch.cat([c, ca])
        v = torch.cat([v, block[local, ca]])
    return (
        r.cpu().numpy().astype(np.int64),
        c.cpu().numpy().astype(np.int64),
        v.cpu().numpy().astype(np.float64),
    )
