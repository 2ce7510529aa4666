"""Top-k items per user from embeddings: ``user_emb @ item_emb.T`` in memory-bounded chunks.

The score matrix of a full fold does not fit in memory (30k users x 820k items), so users are
scored a chunk at a time, training items are masked to ``-inf`` through the CSR indices of
``exclude``, and only ``k`` items per user are kept. Tie-breaking is deterministic in every path:
higher score first, then the lower item *index* (column of ``item_emb``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import scipy.sparse as sp

from evaluation._util.int64 import as_int64
from evaluation._util.validation import check_int, check_k
from evaluation.errors import ConfigError, show_values

DEFAULT_MEMORY_BUDGET = 512 * 2**20


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
        ``"numpy"`` (default), or a torch device string (``"cpu"``, ``"cuda"``, ``"cuda:1"``...)
        when torch is installed; torch then scores and selects.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``user_id`` (in ``user_ids`` order) with columns ``"0".."k-1"`` of item ids,
        best first (the ``RecModel.predict`` format). Order: score descending, ties by lower
        item index. Scores are computed in float32 when both embeddings are float32 (else
        float64); the numpy and torch paths can order two items differently only where their
        float products differ in the last bit.

    Raises
    ------
    ConfigError
        On a bad parameter, embeddings of the wrong shape or non-finite values, or ids that
        are not one unique id per row.

    Notes
    -----
    Memory: the embeddings, a transposed copy of ``item_emb``, the exclusion matrix, the output
    and about ``memory_budget`` bytes of working memory.
    """
    k = check_k(k, owner="topk_from_embeddings")
    torch = _torch_for(device)
    user_emb, item_emb, bounded = _embeddings(user_emb, item_emb, torch)
    n_users, n_items = user_emb.shape[0], item_emb.shape[0]
    exclude = _exclusions(exclude, n_users, n_items)
    item_ids = _ids(item_ids, n_items, "item_ids")
    user_ids = _ids(user_ids, n_users, "user_ids")
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
    # A contiguous (d, n_items) copy multiplies faster than the transposed view, and one reused
    # score buffer saves faulting in fresh pages for every chunk.
    if torch is None:
        item_t = np.ascontiguousarray(item_emb.T)
        buffer = np.empty((batch_size, n_items), dtype=item_t.dtype)
    else:
        item_t = item_emb.T.contiguous()
    for start in range(0, n_users, batch_size):
        stop = min(start + batch_size, n_users)
        rows, cols = _chunk_exclusions(exclude, start, stop)
        if torch is None:
            with np.errstate(over="ignore", invalid="ignore"):  # checked just below
                scores = np.matmul(user_emb[start:stop], item_t, out=buffer[: stop - start])
            # NaN propagates through max: two reductions find any inf or NaN
            if not bounded and not (np.isfinite(scores.max(initial=0.0))
                                    and np.isfinite(scores.min(initial=0.0))):
                raise _overflow(np.isfinite(scores), start, user_ids, item_ids, scores.dtype)
            scores[rows, cols] = -np.inf
            r, c, v = _select_numpy(scores, k)
        else:
            with torch.no_grad():
                scores = user_emb[start:stop] @ item_t
                if not bounded:
                    finite = torch.isfinite(scores)
                    if not bool(finite.all()):
                        raise _overflow(finite.cpu().numpy(), start, user_ids, item_ids,
                                        scores.dtype)
                if len(rows):
                    scores[torch.as_tensor(rows, device=scores.device),
                           torch.as_tensor(cols, device=scores.device)] = -math.inf
                r, c, v = _select_torch(scores, k, torch)
        _assemble(out[start:stop], r, c, v)
    columns = [str(i) for i in range(k)]
    values = np.where(out >= 0, item_ids[np.maximum(out, 0)], -1) if n_items else out
    return pd.DataFrame(values, index=pd.Index(user_ids, name="user_id"), columns=columns)


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


def _torch_for(device: str):
    if device == "numpy":
        return None
    if not isinstance(device, str):
        raise ConfigError(f"'device' must be 'numpy' or a torch device string; got {device!r}.")
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
    bounded = _scores_bounded(user, item)
    if torch is not None:
        user = torch.from_numpy(user).to(torch.target)
        item = torch.from_numpy(item).to(torch.target)
    return user, item, bounded


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
