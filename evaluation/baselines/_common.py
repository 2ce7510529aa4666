"""What the ranking baselines share: the ``top_k`` base class, reading user ids, training items."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from evaluation._util.arrays import sorted_unique
from evaluation._util.validation import check_k
from evaluation.errors import ConfigError, DataError
from evaluation.model import RecModel


class TopKModel(RecModel):
    """A baseline that returns ``top_k`` items per user.

    Parameters
    ----------
    top_k : int
        Length of every ranked list ``predict`` returns.
    """

    def __init__(self, top_k: int = 100) -> None:
        super().__init__()
        self.top_k = check_k(top_k, name="top_k", owner=type(self).__name__)

    @property
    def k(self) -> int:
        """The list length under :class:`RecModel`'s name: ``top_k``, read-only."""
        return self.top_k

    @k.setter
    def k(self, value: int) -> None:
        # RecModel.k is an attribute, so a subclass may only narrow it to a property with a
        # setter; refusing the write keeps one list length, and names the attribute to set.
        raise AttributeError(f"{type(self).__name__}.k is read-only (it reads top_k); set "
                             f"top_k instead, e.g. {type(self).__name__}(top_k={value!r}).")


def catalog_first(items: Any, top_k: Any, owner: str) -> tuple[Any, Any]:
    """``(items, top_k)`` of a baseline's constructor, whose first argument is the catalog.

    Every baseline takes ``items`` (the catalog: ``dataset.df_tracks``, or an array of track
    ids) first and ``top_k`` second, as the template does. Before, some took ``top_k`` first:
    an int in the catalog's place (which no catalog is) is still read as ``top_k``.
    """
    if isinstance(items, (int, np.integer)) and not isinstance(items, (bool, np.bool_)):
        if top_k != 100:
            raise ConfigError(f"{owner}: got top_k twice ({items!r} as the first argument, "
                              f"which is the catalog, and top_k={top_k!r}); pass "
                              f"{owner}(items, top_k={top_k!r}).")
        return None, int(items)
    return items, top_k


def item_ids(items: Any, owner: str) -> np.ndarray:
    """The sorted, distinct track ids of a catalog (a DataFrame with a ``track_id`` column or
    indexed by track id, or an array of ids), as int64."""
    if isinstance(items, pd.DataFrame):
        ids = items["track_id"] if "track_id" in items.columns else items.index
    else:
        ids = items
    arr = sorted_unique(np.asarray(ids))
    if not np.issubdtype(arr.dtype, np.integer):
        raise ConfigError(f"{owner}: item ids must be integers, got dtype {arr.dtype}; pass "
                          f"dataset.df_tracks or an array of track ids.")
    return arr.astype(np.int64)


def user_ids_of(user_ids: Any, model: str) -> np.ndarray:
    """The ``user_id`` values of what ``predict`` received (a column, or the index), as int64."""
    if isinstance(user_ids, pd.DataFrame):
        if "user_id" in user_ids.columns:
            values = user_ids["user_id"]
        elif user_ids.index.name == "user_id":
            values = user_ids.index.to_series()
        else:
            raise DataError(
                f"{model}.predict: the users table has no 'user_id' column or index (columns "
                f"{list(map(str, user_ids.columns))}); pass a DataFrame with a user_id column."
            )
    else:
        values = pd.Series(np.asarray(user_ids))
    if not pd.api.types.is_integer_dtype(values.dtype):
        raise DataError(f"{model}.predict: user ids must be integers, got dtype {values.dtype}.")
    return values.to_numpy(np.int64)


def require_columns(frame: Any, columns: tuple[str, ...], model: str) -> None:
    """Return nothing; raise ``DataError`` unless ``frame`` is a DataFrame with ``columns``."""
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"{model}.train: expected a pandas DataFrame, got {type(frame).__name__}.")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataError(
            f"{model}.train: the training table lacks column(s) {missing}; it has "
            f"{list(map(str, frame.columns))}. Pass dataset.get_train_set(fold)."
        )


def frame_of_ids(users: np.ndarray, ids: np.ndarray) -> pd.DataFrame:
    """The prediction format: indexed by ``user_id`` (input order), columns ``"0".."k-1"``."""
    return pd.DataFrame(ids, index=pd.Index(users, name="user_id"),
                        columns=[str(j) for j in range(ids.shape[1])])


def seen_csr(user_codes: np.ndarray, item_codes: np.ndarray, n_users: int):
    """Items of each user as CSR: ``items[ptr[u]:ptr[u + 1]]`` are user ``u``'s item codes."""
    order = np.argsort(user_codes, kind="stable")
    ptr = np.zeros(n_users + 1, dtype=np.int64)
    np.cumsum(np.bincount(user_codes, minlength=n_users), out=ptr[1:])
    return item_codes[order], ptr
