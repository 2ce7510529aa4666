"""The NumPy paths: the blocked kernel (item blocks that stay in cache) and the reference
path it is checked against (every chunk's whole score matrix)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from evaluation.topk._context import Context, assemble_rows, chunk_exclusions
from evaluation.topk._select import keep_best, select_numpy, sparse_nonzero

# Bytes of one score block of the blocked kernel: small enough to stay in a core's L2 cache
# while it is compared with the users' running thresholds.
_BLOCK_BYTES = 2 * 2**20


# The blocked kernel multiplies a user chunk by item blocks instead of the whole catalogue at
# once. Optimised BLAS computes every score of a large product with the same sequence of
# operations whatever the matrix shape, so the blocks give the reference's scores bit for bit;
# small products take other code paths (OpenBLAS's "direct"/small-matrix kernels) that round
# differently. Every block product therefore holds at least this many multiply-adds
# (OpenBLAS leaves its regular path below 28 * 512 * 512 = 7.3M).
MIN_BLOCK_MACS = 2**23


def run_reference(ctx: Context, chunks, out: np.ndarray) -> None:
    """Each chunk's whole score matrix, exclusions set to ``-inf``, one selection pass."""
    if not chunks:
        return
    # One reused score buffer saves faulting in fresh pages for every chunk.
    buffer = np.empty((chunks[0][1] - chunks[0][0], ctx.n_items), dtype=ctx.item.dtype)
    for start, stop in chunks:
        rows, cols = chunk_exclusions(ctx.exclude, start, stop)
        with np.errstate(over="ignore", invalid="ignore"):  # checked just below
            scores = np.matmul(ctx.user[start:stop], ctx.item_t, out=buffer[: stop - start])
        ctx.check_finite(scores, start)
        scores[rows, cols] = -np.inf
        r, c, v = select_numpy(scores, ctx.k)
        assemble_rows(out[start:stop], r, c, v)


def _workers(n_chunks: int) -> int:
    """Threads for the blocked kernel: as many as BLAS may use (it defaults to the cores)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    blas = [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]
    return max(1, min(max(blas, default=cores), cores, n_chunks))


def run_blocked(ctx: Context, chunks: list[tuple[int, int]], out: np.ndarray) -> None:
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
    each at least ``MIN_BLOCK_MACS`` multiply-adds (so BLAS stays on its regular path)."""
    if m == 1 or m * d * n < 2 * MIN_BLOCK_MACS:
        # one product, the reference's own (one user is a matrix-vector product in BLAS)
        return np.array([0, n])
    width = max(_BLOCK_BYTES // (m * itemsize), 2 * -(-MIN_BLOCK_MACS // (m * d)))
    blocks = -(-n // width)
    return np.linspace(0, n, blocks + 1).round().astype(np.int64)  # widths >= width / 2


def _blocked_chunk(ctx: Context, start: int, stop: int, out: np.ndarray) -> None:
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
    rows, cols = chunk_exclusions(ctx.exclude, start, stop)
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
            r, c, v = select_numpy(scores, kk)
        else:  # -inf (excluded) never passes: the threshold is at least -inf
            r, c = sparse_nonzero(scores > threshold[:, None])
            v = scores[r, c]
        pool.append((r, c + lo, v))
        pending += len(r)
        if b == 0 or pending > m * kk:
            pooled_r, pooled_c, pooled_v = map(np.concatenate, zip(*pool))
            r, c, v, threshold = keep_best(pooled_r, pooled_c, pooled_v, m, kk)
            pool, pending = [(r, c, v)], 0
    assemble_rows(out[start:stop], *map(np.concatenate, zip(*pool)))
