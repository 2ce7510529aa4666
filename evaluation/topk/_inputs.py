"""The inputs of ``topk_from_embeddings``, checked and converted: embeddings, exclusions, ids."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from evaluation._util.arrays import sorted_unique
from evaluation._util.int64 import as_int64
from evaluation.errors import ConfigError, show_values

if TYPE_CHECKING:  # annotations only: SciPy is imported where it is used
    import scipy.sparse as sp


def checked_embeddings(user_emb, item_emb, torch):
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


def checked_exclusions(exclude, n_users: int, n_items: int) -> sp.csr_array | None:
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


def checked_ids(ids, n: int, name: str) -> np.ndarray:
    if ids is None:
        return np.arange(n, dtype=np.int64)
    array = np.asarray(ids)
    if array.shape != (n,):
        raise ConfigError(
            f"'{name}' must have one id per embedding row ({n}); got shape {array.shape}."
        )
    if len(sorted_unique(array)) != n:
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
