"""A matrix-factorisation model with ``implicit``'s ALS, as a participant would write one.

Install the optional ``als`` extra first (``make als``: ``implicit`` into ``.venv``), then
either copy the class into ``submission/MyModel.py`` (``class MyModel(ALSModel)``) and run
``python submission.py --param factors=128``, or use it from Python::

    from evaluation import ChallengeDataset, EvalRSRunner
    from examples.als_model import ALSModel   # the repository's root on sys.path (see below)

    dataset = ChallengeDataset()
    result = EvalRSRunner(dataset).evaluate(ALSModel(dataset.df_tracks, factors=64))

``examples`` is a folder of the repository, not part of the installed package: import it from
a script run at the repository's root, or elsewhere with the root on the module path
(``PYTHONPATH=/path/to/evalrs python my_script.py``), or copy this file next to your script.

``train`` builds the user x track confidence matrix of the fold (``1 + alpha * log(1 + plays)``
per pair the user played) and fits implicit's ``AlternatingLeastSquares`` on it; ``predict``
asks it for each test user's best tracks, leaving out those the user already played (a
leave-one-out target never is one of them). ``implicit`` is imported only when the model
trains, so this module imports without it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from evaluation import RecModel


class ALSModel(RecModel):
    """Implicit-feedback ALS (Hu, Koren and Volinsky 2008) through the ``implicit`` library.

    Parameters
    ----------
    items : pandas.DataFrame, optional
        The catalog (``dataset.df_tracks``); not needed by the model, accepted for the
        ``MyModel(items, top_k, ...)`` call of ``submission.py``.
    top_k : int
        Length of every list.
    factors, regularization, iterations : int, float, int
        ALS's latent dimensions, L2 penalty and sweeps.
    alpha : float
        Confidence scale: a pair with ``c`` plays weighs ``1 + alpha * log(1 + c)``.
    seed : int
        ALS's random initialisation (the same seed gives the same lists).

    The parameters are named, with no ``**kwargs``: ``submission.py --param factros=128``
    is then an error naming the parameters there are, not a setting silently ignored.
    """

    def __init__(self, items: pd.DataFrame | None = None, top_k: int = 100, *,
                 factors: int = 64, regularization: float = 0.05, iterations: int = 15,
                 alpha: float = 2.0, seed: int = 0) -> None:
        super().__init__()
        self.top_k = self.k = int(top_k)
        self.factors, self.regularization = int(factors), float(regularization)
        self.iterations, self.alpha, self.seed = int(iterations), float(alpha), int(seed)

    def train(self, train_df: pd.DataFrame, **kwargs: Any) -> None:
        import scipy.sparse as sp
        from implicit.als import AlternatingLeastSquares
        from threadpoolctl import threadpool_limits

        self.user_ids, users = np.unique(train_df["user_id"].to_numpy(), return_inverse=True)
        self.item_ids, items = np.unique(train_df["track_id"].to_numpy(), return_inverse=True)
        plays = train_df["user_track_count"].to_numpy(np.float64)
        confidence = (1.0 + self.alpha * np.log1p(plays)).astype(np.float32)
        self.user_items = sp.csr_matrix((confidence, (users, items)),
                                        shape=(len(self.user_ids), len(self.item_ids)))
        # implicit runs its own threads; a multi-threaded BLAS underneath only slows it down
        # (and implicit warns about it when the model is made)
        with threadpool_limits(1, "blas"):
            self.model = AlternatingLeastSquares(
                factors=self.factors, regularization=self.regularization,
                iterations=self.iterations, random_state=self.seed, use_gpu=False)
            self.model.fit(self.user_items, show_progress=False)

    def predict(self, user_ids: pd.DataFrame) -> pd.DataFrame:
        users = user_ids["user_id"].to_numpy()
        rows = np.searchsorted(self.user_ids, users)
        rows = np.minimum(rows, len(self.user_ids) - 1)
        known = self.user_ids[rows] == users
        n = min(self.top_k, len(self.item_ids))
        ids = np.full((len(users), self.top_k), -1, dtype=np.int64)
        if known.any():
            codes, _ = self.model.recommend(rows[known], self.user_items[rows[known]], N=n,
                                            filter_already_liked_items=True)
            ids[np.flatnonzero(known), :n] = np.where(codes >= 0,
                                                      self.item_ids[np.maximum(codes, 0)], -1)
        # a user unseen in training gets an empty list (-1): the harness's folds have none
        return pd.DataFrame(ids, index=pd.Index(users, name="user_id"),
                            columns=[str(i) for i in range(self.top_k)])
