"""The entry point: checks the inputs, sizes the user chunks and runs one path over them."""

from __future__ import annotations

import numpy as np
import pandas as pd

from evaluation._util.validation import check_int, check_k
from evaluation.errors import ConfigError
from evaluation.topk._blocked import run_blocked, run_reference
from evaluation.topk._context import Context
from evaluation.topk._faiss import faiss_for, run_faiss
from evaluation.topk._inputs import checked_embeddings, checked_exclusions, checked_ids
from evaluation.topk._torch import run_torch, torch_for

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


def reference_topk(user_emb, item_emb, k: int, **kwargs) -> pd.DataFrame:
    """The reference NumPy path: every chunk's whole score matrix, exclusions set to ``-inf``,
    then a full selection pass. Slower than the blocked kernel; kept to check it against."""
    return _topk(user_emb, item_emb, k, kernel="reference", **kwargs)


def _topk(user_emb, item_emb, k, *, exclude=None, item_ids=None, user_ids=None,
          batch_size=None, memory_budget=DEFAULT_MEMORY_BUDGET, device="numpy",
          kernel="blocked") -> pd.DataFrame:
    k = check_k(k, owner="topk_from_embeddings")
    torch = torch_for(device)
    faiss = faiss_for(device)
    user_emb, item_emb, bounded = checked_embeddings(user_emb, item_emb, torch)
    n_users, n_items = user_emb.shape[0], item_emb.shape[0]
    exclude = checked_exclusions(exclude, n_users, n_items)
    item_ids = checked_ids(item_ids, n_items, "item_ids")
    user_ids = checked_ids(user_ids, n_users, "user_ids")
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
    context = Context(user_emb, item_emb, exclude, k, bounded, user_ids, item_ids)
    if torch is not None:
        run_torch(context, chunks, out, torch)
    elif faiss is not None:
        run_faiss(context, chunks, out, faiss)
    elif kernel == "reference":
        run_reference(context, chunks, out)
    else:
        run_blocked(context, chunks, out)
    columns = [str(i) for i in range(k)]
    values = np.where(out >= 0, item_ids[np.maximum(out, 0)], -1) if n_items else out
    return pd.DataFrame(values, index=pd.Index(user_ids, name="user_id"), columns=columns)
