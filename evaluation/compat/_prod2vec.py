"""``reclist.recommenders.prod2vec`` of reclist 0.x: the prod2vec example models (item vectors
from :func:`train_embeddings`, neighbours by cosine similarity) for reclist's Coveo, Spotify
and MovieLens examples."""

from __future__ import annotations

from typing import Any

import numpy as np

from evaluation.compat._train_w2v import train_embeddings
from evaluation.model import RecModel

__all__ = ["CoveoP2VRecModel", "MovieLensP2VRecModel", "SpotifyP2VRecModel"]


class _P2VRecModel(RecModel):
    """reclist 0.x's ``RecModel`` constructor and ``model`` property over the harness's
    ``RecModel``: the example models take ``model=`` (trained vectors) and read ``self.model``."""

    model_name = "prod2vec"

    def __init__(self, model: Any = None) -> None:
        self._model = model

    @property
    def model(self) -> Any:
        return self._model

    def _vector(self, key: Any) -> list:
        """The vector of ``key`` as a list; ``[]`` when it has none (reclist 0.x's rule)."""
        try:
            return list(self._model.get_vector(key))
        except Exception:  # a key without a vector, or no model yet, as in reclist 0.x
            return []


class CoveoP2VRecModel(_P2VRecModel):
    """prod2vec on Coveo carts: each cart's first product gets its ten nearest products."""

    # train/predict keep reclist 0.2.3's signatures, which differ from RecModel's
    def train(self, products: list, iterations: int = 15) -> None:  # type: ignore[override]
        """Train on sessions given as lists of events with a ``product_sku``."""
        skus = [[event["product_sku"] for event in session] for session in products]
        self._model = train_embeddings(skus, iterations=iterations)

    def predict(self, prediction_input: list, *args: Any, **kwargs: Any  # type: ignore[override]
                ) -> list:
        """For each cart (a list whose first element has ``product_sku``) the ten nearest
        products as ``{"product_sku": ...}``; ``[]`` for a product without a vector."""
        predictions = []
        for cart in prediction_input:
            key = cart[0]["product_sku"]
            if key in self._model:
                neighbours = self._model.most_similar(key, topn=10)
                predictions.append([{"product_sku": sku} for sku, _ in neighbours])
            else:
                predictions.append([])
        return predictions

    def get_vector(self, product_sku: Any) -> list:
        return self._vector(product_sku)


class SpotifyP2VRecModel(_P2VRecModel):
    """prod2vec on Spotify playlists: the mean vector of a playlist's seed tracks gets its
    hundred nearest tracks."""

    # train/predict keep reclist 0.2.3's signatures, which differ from RecModel's
    def train(self, playlists: list, iterations: int = 15) -> None:  # type: ignore[override]
        """Train on playlists given as lists of tracks with a ``track_uri``."""
        uris = [[track["track_uri"] for track in playlist] for playlist in playlists]
        self._model = train_embeddings(uris, iterations=iterations)

    def predict(self, prediction_input: list, *args: Any, **kwargs: Any  # type: ignore[override]
                ) -> list:
        """For each playlist the hundred tracks nearest to the mean of its tracks' vectors,
        as ``{"track_uri": ...}``; ``[]`` when none of its tracks has a vector."""
        predictions = []
        for playlist in prediction_input:
            vectors = [self._model[t["track_uri"]] for t in playlist
                       if t["track_uri"] in self._model]
            if vectors:
                neighbours = self._model.similar_by_vector(np.average(vectors, axis=0),
                                                           topn=100)
                predictions.append([{"track_uri": uri} for uri, _ in neighbours])
            else:
                predictions.append([])
        return predictions

    def get_vector(self, track_uri: Any) -> list:
        return self._vector(track_uri)


class MovieLensP2VRecModel(_P2VRecModel):
    """prod2vec on MovieLens: items are ``(movieId, rating)`` pairs; a user's mean vector
    gets its ten nearest pairs."""

    # train/predict keep reclist 0.2.3's signatures, which differ from RecModel's
    def train(self, movies: list, iterations: int = 15) -> None:  # type: ignore[override]
        """Train on users given as lists of ``{"movieId": ..., "rating": ...}``."""
        pairs = [[(m["movieId"], m["rating"]) for m in user] for user in movies]
        self._model = train_embeddings(pairs, iterations=iterations)

    def predict(self, prediction_input: list, *args: Any, **kwargs: Any  # type: ignore[override]
                ) -> list:
        """For each user the ten ``(movieId, rating)`` pairs nearest to the mean vector of
        what they rated, as ``{"movieId": ..., "rating": ...}``; ``[]`` without vectors."""
        all_predictions = []
        for user in prediction_input:
            vectors = [v for v in (self.get_vector(m) for m in user) if v]
            predictions = []
            if vectors:
                neighbours = self.model.similar_by_vector(np.mean(vectors, axis=0), topn=10)
                predictions = [{"movieId": key[0], "rating": key[1]} for key, _ in neighbours]
            all_predictions.append(predictions)
        return all_predictions

    def get_vector(self, x: dict) -> list:
        """The vector of the pair ``(x["movieId"], x["rating"])``; ``[]`` without one."""
        return self._vector((x["movieId"], x["rating"]))
