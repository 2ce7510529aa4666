"""The base class every model evaluated by the harness subclasses."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import pandas as pd


class RecModel(ABC):
    """A recommender under evaluation.

    Subclass it and implement :meth:`train` and :meth:`predict`::

        class MyModel(RecModel):
            def train(self, train_df, **kwargs):
                self.top = train_df["track_id"].value_counts().index[: self.k].to_numpy()

            def predict(self, user_ids):
                items = np.tile(self.top, (len(user_ids), 1))
                return predictions_frame(user_ids["user_id"], items, self.k)

    ``k`` (default 100) is the length of the ranked lists the harness scores.

    Rating-prediction protocols additionally call :meth:`predict_ratings`, which is optional:
    the base implementation raises ``NotImplementedError`` and :attr:`supports_ratings` tells
    whether a subclass provides it.

    Attributes
    ----------
    k : int
        Length of the ranked lists ``predict`` returns.
    """

    #: number of ranked items per user that ``predict`` returns
    k: int = 100

    @abstractmethod
    def train(self, train_df: pd.DataFrame, **kwargs: Any) -> Any:
        """Fit the model on a fold's training rows (the events columns of the dataset).

        Keyword arguments are passed through from the runner (``runner.evaluate(model, **kw)``).
        """

    @abstractmethod
    def predict(self, user_ids: pd.DataFrame) -> pd.DataFrame:
        """Top-``k`` track ids for each user of ``user_ids`` (a DataFrame with ``user_id``).

        Return a DataFrame indexed by ``user_id``, in the same order as the input, with columns
        ``"0".."k-1"`` (``"0"`` = best; integer labels are accepted too) holding track ids, each at
        most once per row, padded with ``-1`` at the end when there are fewer than ``k``.
        """

    def predict_ratings(self, pairs_df: pd.DataFrame) -> pd.Series:
        """Optional: a predicted rating for each ``(user_id, track_id)`` row of ``pairs_df``.

        Return a float Series aligned with ``pairs_df`` (same index). Only rating-prediction
        protocols call it; the default raises ``NotImplementedError``.
        """
        raise NotImplementedError(
            f"{type(self).__name__} does not predict ratings: implement "
            "predict_ratings(pairs_df) -> pd.Series to use rating-prediction protocols"
        )

    @property
    def supports_ratings(self) -> bool:
        """True when the class overrides :meth:`predict_ratings`."""
        return type(self).predict_ratings is not RecModel.predict_ratings
