"""The helpers and attribute names that 2022 custom tests call on ``EvalRSRecList``.

Each helper follows its 2022 definition (the reclist 0.x metrics it was built on, at the
RecList's ``k``): a user *misses* when the target is not among the first ``k`` predictions,
the reciprocal rank is that of the target's first occurrence (0 for a miss), and rows of
``y_preds``, ``y_test`` and ``slice_info`` are matched by position, as 2022 did.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from evaluation._util.once import warn_once
from evaluation.legacy import keyed_vectors


def _targets(y_test: pd.DataFrame | pd.Series) -> np.ndarray:
    """The target track id of each row of ``y_test`` (a frame with ``track_id`` or a Series)."""
    if isinstance(y_test, pd.DataFrame):
        column = y_test["track_id"] if "track_id" in y_test.columns else y_test.iloc[:, 0]
        return column.to_numpy()
    return np.asarray(y_test)


def first_hit_positions(y_preds: pd.DataFrame, y_test: pd.DataFrame | pd.Series,
                        k: int) -> np.ndarray:
    """0-based position of each row's target among its first ``k`` predictions; -1 if absent.

    Parameters
    ----------
    y_preds : pandas.DataFrame
        Ranked track ids, one row per user, best first.
    y_test : pandas.DataFrame or pandas.Series
        The target of each row (same row order).
    k : int
        How many predictions count.

    Returns
    -------
    numpy.ndarray
        (N,) int64 positions; a target listed twice counts at its first position.
    """
    preds = np.asarray(y_preds.to_numpy())[:, :k]
    targets = _targets(y_test)
    if len(preds) != len(targets):
        raise ValueError(f"y_preds has {len(preds)} rows and y_test {len(targets)}: the 2022 "
                         f"helpers match them by position, so pass rows of the same users")
    equal = preds == targets[:, None]
    found = equal.any(axis=1)
    return np.where(found, equal.argmax(axis=1), -1).astype(np.int64)


class RecListHelpers2022:
    """Mixin giving a RecList the 2022 names: ``_x_test``, ``product_data``, ``_dense_repr``,
    ``miss_rate_at_k_slice``, ``miss_rate_equality_difference``, ``mrr_at_k_slice`` and
    ``cosine_sim``.

    The class it is mixed into provides ``dataset`` (a ``ChallengeDataset``), ``x_test``
    and ``k``.
    """

    dataset: Any
    x_test: pd.DataFrame
    k: int

    @property
    def _x_test(self) -> pd.DataFrame:
        """``x_test`` (the test users, a ``user_id`` column) under its 2022 name."""
        return self.x_test

    @property
    def product_data(self) -> dict[str, pd.DataFrame]:
        """The 2022 catalog: ``{"users": dataset.df_users, "items": dataset.df_tracks}``."""
        warn_once("reclist:product_data",
                  "RecList.product_data is the 2022 name: read self.dataset.df_users and "
                  "self.dataset.df_tracks", stacklevel=2)
        return {"users": self.dataset.df_users, "items": self.dataset.df_tracks}

    @property
    def _dense_repr(self) -> Any:
        """The track vectors as gensim ``KeyedVectors`` keyed by int track id (2022 name)."""
        return keyed_vectors(self.dataset)

    def miss_rate_at_k_slice(self, y_preds: pd.DataFrame, y_test: pd.DataFrame,
                             slice_info: pd.DataFrame, slice_key: str) -> pd.Series:
        """Miss rate per value of ``slice_info[slice_key]`` (a Series named ``"mr"``).

        Parameters
        ----------
        y_preds, y_test : pandas.DataFrame
            Predictions and targets, rows matched by position.
        slice_info : pandas.DataFrame
            One row per user (same order) with the column ``slice_key``.
        slice_key : str
            The column that groups the users.

        Returns
        -------
        pandas.Series
            Indexed by the slice's values (sorted; users without a value left out).
        """
        missed = first_hit_positions(y_preds, y_test, self.k) < 0
        frame = pd.DataFrame({"mr": missed.astype(np.float64),
                              slice_key: np.asarray(slice_info[slice_key])},
                             index=getattr(y_test, "index", None))
        return frame.groupby(slice_key)["mr"].mean()

    def miss_rate_equality_difference(self, y_preds: pd.DataFrame, y_test: pd.DataFrame,
                                      slice_info: pd.DataFrame, slice_key: str
                                      ) -> dict[str, Any]:
        """``{"mred": -mean_g |MR_g - MR|, "mr": MR, <group>: MR_g, ...}`` (2022's dict)."""
        per_slice = self.miss_rate_at_k_slice(y_preds, y_test, slice_info, slice_key)
        overall = float((first_hit_positions(y_preds, y_test, self.k) < 0).mean())
        mred = -float((per_slice - overall).abs().mean())
        return {"mred": mred, "mr": overall, **per_slice.to_dict()}

    def mrr_at_k_slice(self, y_preds: pd.DataFrame, y_test: pd.DataFrame,
                       slice_info: pd.DataFrame, slice_key: str) -> str:
        """Mean reciprocal rank per value of ``slice_info[slice_key]``, as JSON text (2022)."""
        pos = first_hit_positions(y_preds, y_test, self.k)
        rr = np.zeros(len(pos), dtype=np.float64)
        rr[pos >= 0] = 1.0 / (pos[pos >= 0] + 1.0)
        frame = pd.DataFrame({"rr": rr, slice_key: np.asarray(slice_info[slice_key])},
                             index=getattr(y_test, "index", None))
        return frame.groupby(slice_key)["rr"].mean().to_json()

    def cosine_sim(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Cosine similarity along the last axis (broadcasting, as 2022)."""
        u, v = np.asarray(u), np.asarray(v)
        return np.sum(u * v, axis=-1) / (np.linalg.norm(u, axis=-1) * np.linalg.norm(v, axis=-1))
