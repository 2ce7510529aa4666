"""CBOWModel: track embeddings from listening sequences, the 2022 official baseline's idea."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.sparse import csr_matrix

from evaluation._util.arrays import sorted_positions
from evaluation._util.validation import check_int
from evaluation.baselines._common import (
    TopKModel,
    catalog_first,
    frame_of_ids,
    item_ids,
    require_columns,
    seen_csr,
    user_ids_of,
)
from evaluation.errors import ConfigError
from evaluation.topk import topk_from_embeddings


class CBOWModel(TopKModel):
    """gensim Word2Vec (CBOW) over each user's tracks ordered by timestamp; a user is the mean
    of the unit vectors of their ``n_recent`` latest tracks, and gets the ``top_k`` tracks
    closest to it by cosine similarity that are not among the user's training rows.

    Training is deterministic for a given ``seed`` (``workers=1``, as gensim requires for
    reproducible runs). Users unseen in training get -1 padding only (the model knows nothing
    about them). Word2Vec parameters pass through ``word2vec_kwargs``.

    Parameters
    ----------
    items : DataFrame or array-like, optional
        The catalog (``dataset.df_tracks``), first as in every baseline and the template.
        The model recommends only tracks it saw in training, all of which are in it, so it
        is recorded, not needed.
    top_k : int
        Length of every list (>= 1).
    vector_size, window, epochs : int
        Word2Vec's parameters (>= 1).
    n_recent : int
        How many of a user's latest tracks make the user's vector (>= 1).
    seed : int
        Word2Vec's seed (>= 0).
    word2vec_kwargs : dict, optional
        More Word2Vec parameters.
    """

    def __init__(
        self,
        items: Any = None,
        top_k: int = 100,
        *,
        vector_size: int = 64,
        window: int = 10,
        epochs: int = 5,
        n_recent: int = 10,
        seed: int = 42,
        word2vec_kwargs: dict | None = None,
        **kwargs: Any,
    ):
        items, top_k = catalog_first(items, top_k, "CBOWModel")
        if items is not None:  # only when given: a model built without one is as before
            self.items = item_ids(items, "CBOWModel")
        super().__init__(top_k)
        for name, value in (("vector_size", vector_size), ("window", window),
                            ("epochs", epochs), ("n_recent", n_recent)):
            check_int(name, value, minimum=1, owner="CBOWModel")
        check_int("seed", seed, minimum=0, owner="CBOWModel")
        self.params = dict(vector_size=int(vector_size), window=int(window), epochs=int(epochs),
                           sg=0, min_count=1, negative=5, workers=1, seed=int(seed))
        self.params.update(word2vec_kwargs or {})
        self.n_recent = int(n_recent)
        self.item_ids: np.ndarray | None = None

    def train(self, train_df: pd.DataFrame, **kwargs: Any) -> CBOWModel:
        from gensim.models import Word2Vec

        require_columns(train_df, ("user_id", "track_id", "timestamp"), "CBOWModel")
        users = train_df["user_id"].to_numpy(np.int64)
        tracks = train_df["track_id"].to_numpy(np.int64)
        order = np.lexsort((tracks, train_df["timestamp"].to_numpy(np.int64), users))
        users, tracks = users[order], tracks[order]
        self.user_ids, u = np.unique(users, return_inverse=True)
        self.item_ids, i = np.unique(tracks, return_inverse=True)
        # Sentences of item codes (as ints), one per user, in listening order.
        bounds = np.flatnonzero(np.diff(u)) + 1
        sentences = [s.tolist() for s in np.split(i, bounds)]
        w2v = Word2Vec(sentences=sentences, **self.params)
        vectors = np.zeros((len(self.item_ids), w2v.wv.vector_size), dtype=np.float32)
        keys = np.asarray(w2v.wv.index_to_key, dtype=np.int64)
        vectors[keys] = w2v.wv.vectors
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        self.item_vectors = vectors / np.where(norms > 0, norms, 1.0)
        # Each user's latest n_recent tracks (u is sorted, each run ends with the latest).
        ptr = np.r_[0, np.cumsum(np.bincount(u, minlength=len(self.user_ids)))]
        start = np.maximum(ptr[:-1], ptr[1:] - self.n_recent)
        counts = ptr[1:] - start
        owner = np.repeat(np.arange(len(self.user_ids)), counts)
        pos = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        recent = i[np.repeat(start, counts) + pos]
        user_vec = np.zeros((len(self.user_ids), vectors.shape[1]), dtype=np.float64)
        np.add.at(user_vec, owner, self.item_vectors[recent])
        self.user_vectors = (user_vec / np.maximum(counts, 1)[:, None]).astype(np.float32)
        self._seen, self._ptr = seen_csr(u, i, len(self.user_ids))
        return self

    def predict(self, user_ids: pd.DataFrame) -> pd.DataFrame:
        if self.item_ids is None:
            raise ConfigError("CBOWModel.predict: the model is not trained; call train() first.")
        users = user_ids_of(user_ids, "CBOWModel")
        rows = sorted_positions(self.user_ids, users)
        ids = np.full((len(users), self.top_k), -1, dtype=np.int64)
        known = np.flatnonzero(rows >= 0)
        if len(known):
            r = rows[known]
            # the users' training items, as a sparse users x items matrix to exclude
            counts = self._ptr[r + 1] - self._ptr[r]
            offset = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
            seen = self._seen[np.repeat(self._ptr[r], counts) + offset]
            indptr = np.r_[0, np.cumsum(counts)]
            exclude = csr_matrix((np.ones(len(seen), dtype=np.int8), seen, indptr),
                                 shape=(len(r), len(self.item_ids)))
            top = topk_from_embeddings(self.user_vectors[r], self.item_vectors, self.top_k,
                                       exclude=exclude, item_ids=self.item_ids,
                                       user_ids=users[known])
            ids[known] = top.to_numpy()
        return frame_of_ids(users, ids)
