"""The per-fold scoring state: hit ranks, the five MRED slices and the vector lookup, once.

:class:`ChallengeFold` gathers what every challenge test of a fold needs so that each test
reuses it; the tests themselves are the kernels of the sibling modules.
"""

from __future__ import annotations

import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd

from evaluation.challenge._counts import sum_by_key
from evaluation.challenge._mred import SliceMissRates, bin_by_edges, mred_from_codes
from evaluation.challenge._ranks import hit_ranks
from evaluation.challenge._spec import (
    COUNTRIES,
    MISSING_COUNTRY,
    MRED_ARTIST_POPULARITY,
    MRED_COUNTRY,
    MRED_GENDER,
    MRED_SLICES,
    MRED_TRACK_POPULARITY,
    MRED_USER_ACTIVITY,
    SLICE_EDGES,
)
from evaluation.challenge._vectors import (
    as_vectors,
    being_less_wrong_detail,
    being_less_wrong_scores,
    latent_diversity_detail,
    latent_diversity_scores,
)
from evaluation.data import TrackVectors
from evaluation.errors import DataError, ScoringWarning
from evaluation.metrics import hit_rate_from_ranks, mrr_from_ranks


@dataclass(frozen=True)
class Slice:
    """Per-user group codes of one MRED slice (see :func:`mred_from_codes`).

    ``codes[i]`` indexes ``labels`` (``-1``: in the overall miss rate, in no group);
    ``considered`` (boolean, ``None`` for all) marks the users the slice looks at.
    """

    codes: np.ndarray
    labels: tuple[str, ...]
    considered: np.ndarray | None = None


def _column(frame: pd.DataFrame, column: str, table: str) -> pd.Series:
    """The column ``column`` of ``frame``; a ``DataError`` naming ``table`` when it is missing."""
    if column not in frame.columns:
        raise DataError(f"{table}: column {column!r} is missing (columns: "
                        f"{list(frame.columns)}); scoring needs it for the slice tests")
    return frame[column]


def _user_id_index(users: pd.DataFrame) -> pd.DataFrame:
    """The users table indexed by ``user_id``."""
    if "user_id" in users.columns and users.index.name != "user_id":
        users = users.set_index("user_id")
    return users


def country_slice(users: pd.DataFrame, user_ids) -> Slice:
    """MRED_COUNTRY groups: the listed countries plus ``missing``; other countries left out.

    A user absent from the users table has an unknown country, like a missing one.

    Parameters
    ----------
    users : pandas.DataFrame
        The users table (``country``), indexed by ``user_id`` or with that column.
    user_ids : array-like
        The fold's test users, in row order.

    Returns
    -------
    Slice
        One code per user into ``(*COUNTRIES, MISSING_COUNTRY)``; ``considered`` is False for
        users from a country outside the list.
    """
    country = _column(_user_id_index(users), "country", "users").reindex(user_ids)
    missing = country.isna().to_numpy()
    codes = pd.Index(COUNTRIES).get_indexer(country.astype(object)).astype(np.int64)
    codes[missing] = len(COUNTRIES)
    return Slice(codes, (*COUNTRIES, MISSING_COUNTRY), considered=missing | (codes >= 0))


def gender_slice(users: pd.DataFrame, user_ids) -> Slice:
    """MRED_GENDER groups: one per gender value, in sorted order.

    Users without a gender (or absent from the users table) count in MR but in no group.

    Parameters
    ----------
    users : pandas.DataFrame
        The users table (``gender``), indexed by ``user_id`` or with that column.
    user_ids : array-like
        The fold's test users, in row order.

    Returns
    -------
    Slice
        One code per user into the sorted gender labels, ``-1`` without a gender.
    """
    gender = _column(_user_id_index(users), "gender", "users").reindex(user_ids)
    codes, labels = pd.factorize(gender.astype(object), sort=True)
    return Slice(codes.astype(np.int64), tuple(str(v) for v in labels))


#: What a count that cannot be summed exactly is called in the error message.
_COUNTS_NAME = "training set, column 'user_track_count'"


def _play_counts(train: pd.DataFrame) -> np.ndarray:
    """The training rows' ``user_track_count`` as an array (integers kept as they are)."""
    counts = _column(train, "user_track_count", "training set")
    # plain integer counts stay as they are (sum_by_key converts them chunk by chunk)
    plain = isinstance(counts.dtype, np.dtype) and counts.dtype.kind in "iu"
    return counts.to_numpy() if plain else counts.to_numpy(dtype=np.float64)


def _artist_popularity(train: pd.DataFrame, tracks: pd.DataFrame, counts: np.ndarray,
                       train_tracks: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray,
                                                                               np.ndarray]:
    """Training plays of each target's artist, and whether the target's artist is known."""
    if tracks.index.name != "track_id" and "track_id" in tracks.columns:
        tracks = tracks.set_index("track_id")
    track_artist = _column(tracks, "artist_id", "tracks")
    target_artist = track_artist.reindex(targets)
    known_artist = target_artist.notna().to_numpy()
    if "artist_id" in train.columns:
        train_artists = train["artist_id"].to_numpy()
    else:
        train_artists = track_artist.reindex(train_tracks).to_numpy()
        keep = ~pd.isna(train_artists)
        train_artists, counts = train_artists[keep].astype(np.int64), counts[keep]
    artist_pop = np.zeros(len(targets), dtype=np.int64)
    artist_pop[known_artist] = sum_by_key(
        train_artists, counts, target_artist[known_artist].to_numpy(dtype=np.int64),
        name=_COUNTS_NAME)
    return artist_pop, known_artist


def _count_slices(train: pd.DataFrame, tracks: pd.DataFrame, user_ids: np.ndarray,
                  targets: np.ndarray) -> dict[str, Slice]:
    """The three binned slices: user activity, target-track and target-artist popularity."""
    counts = _play_counts(train)
    train_users = _column(train, "user_id", "training set").to_numpy()
    train_tracks = _column(train, "track_id", "training set").to_numpy()
    artist = MRED_SLICES[MRED_ARTIST_POPULARITY]
    # three passes over the training rows; NumPy releases the GIL in them: two threads
    with ThreadPoolExecutor(max_workers=2) as pool:
        by_user = pool.submit(sum_by_key, train_users, counts, user_ids, name=_COUNTS_NAME)
        by_track = pool.submit(sum_by_key, train_tracks, counts, targets, name=_COUNTS_NAME)
        artist_pop, known_artist = _artist_popularity(train, tracks, counts, train_tracks,
                                                      targets)
        totals = {MRED_SLICES[MRED_USER_ACTIVITY]: by_user.result(),
                  MRED_SLICES[MRED_TRACK_POPULARITY]: by_track.result(), artist: artist_pop}
    slices = {name: Slice(*bin_by_edges(totals[name], SLICE_EDGES[name])) for name in totals}
    # a target track missing from the tracks table has no artist: in MR, in no group
    art = slices[artist]
    slices[artist] = Slice(np.where(known_artist, art.codes, -1), art.labels)
    return slices


def fold_slices(train: pd.DataFrame, users: pd.DataFrame, tracks: pd.DataFrame,
                user_ids: np.ndarray, targets: np.ndarray) -> dict[str, Slice]:
    """The five MRED slices of a fold, by slice name, in the order of ``MRED_SLICES``.

    They depend on the fold's training rows, the users and tracks tables and the test users
    and targets, never on the predictions: a scoring worker computes them once per fold and
    gives them to :meth:`ChallengeFold.from_frames` for every upload it scores.

    Parameters
    ----------
    train, users, tracks : pandas.DataFrame
        As for :meth:`ChallengeFold.from_frames`.
    user_ids, targets : numpy.ndarray
        The fold's test users and each one's target ``track_id`` (int64).

    Returns
    -------
    dict of str to Slice

    Raises
    ------
    DataError
        When a table lacks a column the slices need.
    """
    user_ids = np.asarray(user_ids, dtype=np.int64)
    targets = np.asarray(targets, dtype=np.int64)
    built = _count_slices(train, tracks, user_ids, targets)
    built[MRED_SLICES[MRED_COUNTRY]] = country_slice(users, user_ids)
    built[MRED_SLICES[MRED_GENDER]] = gender_slice(users, user_ids)
    return {name: built[name] for name in MRED_SLICES.values()}


@dataclass
class ChallengeFold:
    """Everything the challenge tests need about one fold, computed once.

    Build it with :meth:`from_frames`; rows follow ``user_ids``. ``ranks`` are the hit ranks,
    ``slices`` the per-user group codes of the five MRED slices (keyed by the names of
    ``MRED_SLICES``), ``vectors`` the :class:`~evaluation.data.TrackVectors` (empty when the
    dataset has none; ``vectors.rows`` looks track ids up). The per-user scores of the vector
    tests are computed on first use and kept.
    """

    user_ids: np.ndarray
    targets: np.ndarray
    predictions: np.ndarray
    vectors: TrackVectors
    slices: dict[str, Slice]
    ranks: np.ndarray

    @classmethod
    def from_frames(cls, user_ids, targets, predictions, *, train: pd.DataFrame | None,
                    users: pd.DataFrame, tracks: pd.DataFrame, vectors: TrackVectors | None,
                    k: int | None = None, slices: dict[str, Slice] | None = None
                    ) -> ChallengeFold:
        """Precompute hit ranks and slice codes of one fold.

        Parameters
        ----------
        user_ids, targets : array-like
            The fold's test users and each one's target ``track_id``.
        predictions : array-like
            (N, k) track ids, best first, ``-1`` padding; rows follow ``user_ids``.
        train : pandas.DataFrame
            The fold's training rows: ``user_id, track_id, user_track_count`` and
            ``artist_id`` if present, else the artist comes from ``tracks``; not read (may
            be None) when ``slices`` are given.
        users : pandas.DataFrame
            Indexed by ``user_id``: ``country``, ``gender``.
        tracks : pandas.DataFrame
            Indexed by ``track_id``: ``artist_id``.
        vectors : TrackVectors or None
            The track vectors; ``None`` warns that the vector tests cannot be measured.
        k : int, optional
            Keep only the first ``k`` predictions.
        slices : dict of str to Slice, optional
            The fold's slices as :func:`fold_slices` computed them for these users and
            targets (default: computed here from ``train``, ``users`` and ``tracks``).

        Returns
        -------
        ChallengeFold

        Raises
        ------
        DataError
            When the fold has no test users or a table lacks a column the slices need.
        """
        user_ids = np.asarray(user_ids, dtype=np.int64)
        targets = np.asarray(targets, dtype=np.int64)
        preds = np.asarray(predictions, dtype=np.int64)
        if k is not None:
            preds = preds[:, :k]
        if len(user_ids) == 0:
            raise DataError("scoring: the fold has no test users; there is nothing to score")
        if vectors is None:
            warnings.warn("the dataset has no track vectors: BEING_LESS_WRONG and "
                          "LATENT_DIVERSITY cannot be measured", ScoringWarning, stacklevel=2)
        if slices is None:
            if train is None:
                raise DataError("scoring: a fold needs its training rows (train) or its "
                                "slices computed from them (fold_slices)")
            slices = fold_slices(train, users, tracks, user_ids, targets)
        return cls(user_ids, targets, preds, as_vectors(vectors), slices,
                   hit_ranks(preds, targets))

    @property
    def k(self) -> int:
        """Number of predictions per user."""
        return self.predictions.shape[1]

    @property
    def hits(self) -> np.ndarray:
        """Whether each user's target is in their list."""
        return self.ranks > 0

    def hit_rate(self) -> float:
        """HIT_RATE of the fold."""
        return hit_rate_from_ranks(self.ranks)

    def mrr(self) -> float:
        """MRR of the fold."""
        return mrr_from_ranks(self.ranks)

    def mred(self, slice_name: str) -> SliceMissRates:
        """MRED of the slice ``slice_name`` (a value of ``MRED_SLICES``), with its groups."""
        s = self.slices[slice_name]
        return mred_from_codes(self.ranks == 0, s.codes, s.labels, s.considered, name=slice_name)

    def being_less_wrong_scores(self) -> np.ndarray:
        """Per-user BEING_LESS_WRONG similarities (NaN: left out), computed once per fold."""
        if "_blw_scores" not in self.__dict__:
            self.__dict__["_blw_scores"] = being_less_wrong_scores(
                self.predictions, self.targets, self.vectors, self.ranks)
        return self.__dict__["_blw_scores"]

    def being_less_wrong(self) -> dict:
        """BEING_LESS_WRONG of the fold with the users behind it (``value``, ``n_users``, ...)."""
        return being_less_wrong_detail(self.predictions, self.targets, self.vectors, self.ranks,
                                       scores=self.being_less_wrong_scores())

    def latent_diversity_scores(self) -> np.ndarray:
        """Per-user LATENT_DIVERSITY scores (NaN: left out), computed once per fold."""
        if "_ld_scores" not in self.__dict__:
            self.__dict__["_ld_scores"] = latent_diversity_scores(
                self.predictions, self.targets, self.vectors)
        return self.__dict__["_ld_scores"]

    def latent_diversity(self) -> dict:
        """LATENT_DIVERSITY of the fold with the users behind it (``value``, ``n_users``, ...)."""
        return latent_diversity_detail(self.predictions, self.targets, self.vectors,
                                       scores=self.latent_diversity_scores())

    def stats(self) -> dict:
        """Number of test users; fewest and most real (non ``-1``) predictions per user."""
        per_user = (self.predictions != -1).sum(axis=1)
        return {"num_users": len(self.user_ids), "k": self.k,
                "min_predictions": int(per_user.min()), "max_predictions": int(per_user.max())}
