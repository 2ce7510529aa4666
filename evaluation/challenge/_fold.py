"""The EvalRS challenge tests as vectorised kernels (design §4).

Everything derives from one array: each test user's *hit rank*, the 1-based position of the
target in the user's top-k list (0 when it is not there; ``-1`` padding never hits; a target that
appears twice counts at its first, best position). The slice tests (MRED) group users by per-user
integer codes; the vector tests look vectors up by track id, never by position.

All functions work on plain NumPy arrays. :class:`ChallengeFold` gathers the per-fold state
(hit ranks, slice codes, vector rows) once so that every test of a fold reuses it.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from evaluation.data import TrackVectors
from evaluation.errors import DataError, ScoringWarning

#: Countries of MRED_COUNTRY (2022 challenge); users without a country form their own group.
COUNTRIES: tuple[str, ...] = (
    "US", "RU", "DE", "UK", "PL", "BR", "FI", "NL", "ES", "SE", "UA", "CA", "FR",
)
#: Label of the group of users without a country.
MISSING_COUNTRY = "missing"
#: Bin edges of the popularity/activity slices; a value belongs to the bin of its lower edge.
USER_ACTIVITY_EDGES: tuple[int, ...] = (1, 100, 1000)
TRACK_POPULARITY_EDGES: tuple[int, ...] = (1, 10, 100, 1000)
ARTIST_POPULARITY_EDGES: tuple[int, ...] = (1, 100, 1000, 10000)
#: LATENT_DIVERSITY looks at the first ``LATENT_TOP`` predictions.
LATENT_TOP = 20
DIVERSITY_WEIGHT = 0.3
BIAS_WEIGHT = 0.7

# Users per block in the vector tests: bounds the (block, 20, dim) float64 gather to a few MiB.
_VECTOR_BLOCK = 4096


# --------------------------------------------------------------------------- hit ranks


def hit_ranks(predictions, targets, k: int | None = None) -> np.ndarray:
    """1-based rank of each user's target in their top-``k`` predictions; 0 when absent.

    ``predictions`` is an (N, k) integer array (row ``i`` ranked best first, ``-1`` padding),
    ``targets`` an (N,) array. Memory is one (N, k) boolean array.
    """
    preds = np.asarray(predictions)
    targets = np.asarray(targets)
    if preds.ndim != 2 or targets.ndim != 1 or len(preds) != len(targets):
        raise ValueError(
            f"hit_ranks: expected predictions of shape (N, k) and targets of shape (N,), "
            f"got {preds.shape} and {targets.shape}"
        )
    if k is not None:
        preds = preds[:, :k]
    if preds.shape[1] == 0:
        return np.zeros(len(targets), dtype=np.int32)
    equal = preds == targets[:, None]
    first = equal.argmax(axis=1)  # first True: a duplicated target counts at its best rank
    hit = equal[np.arange(len(targets)), first] & (targets != -1)
    return np.where(hit, first + 1, 0).astype(np.int32)


def hit_rate_from_ranks(ranks) -> float:
    """Share of users whose target is in their list (``HIT_RATE``)."""
    ranks = np.asarray(ranks)
    return float((ranks > 0).mean()) if len(ranks) else 0.0


def mrr_from_ranks(ranks) -> float:
    """Mean reciprocal rank, 0 for a miss (``MRR``)."""
    ranks = np.asarray(ranks)
    if not len(ranks):
        return 0.0
    rr = np.zeros(len(ranks), dtype=np.float64)
    hit = ranks > 0
    rr[hit] = 1.0 / ranks[hit]
    return float(rr.mean())


# --------------------------------------------------------------------------- slices


class SliceMissRates(dict):
    """Miss rate of each group of a slice (``{label: MR_g}``), plus the slice's MRED.

    A plain ``dict`` of group label -> miss rate, so that reclist draws it as a bar chart and
    dumps it as JSON; the scalar and the counts ride along as attributes:
    ``value`` (the MRED, ``-mean_g |MR_g - MR|``), ``miss_rate`` (MR over the users the slice
    considers), ``counts`` (users per group), ``n_users`` (users considered), ``n_ungrouped``
    (considered users in no group, e.g. without a gender).
    """

    def __init__(self, rates: dict, *, value: float, miss_rate: float, counts: dict,
                 n_users: int, n_ungrouped: int) -> None:
        super().__init__(rates)
        self.value = value
        self.miss_rate = miss_rate
        self.counts = counts
        self.n_users = n_users
        self.n_ungrouped = n_ungrouped

    def __float__(self) -> float:
        return self.value

    def to_dict(self) -> dict:
        """JSON-ready detail: MRED, MR, each MR_g and the users behind each number."""
        return {
            "MRED": self.value,
            "MR": self.miss_rate,
            "groups": dict(self),
            "counts": dict(self.counts),
            "n_users": self.n_users,
            "n_ungrouped": self.n_ungrouped,
        }

    def __repr__(self) -> str:
        return f"SliceMissRates(MRED={self.value!r}, MR={self.miss_rate!r}, groups={dict(self)!r})"

    def __reduce__(self):
        return (_rebuild_slice, (dict(self), self.value, self.miss_rate, self.counts,
                                 self.n_users, self.n_ungrouped))


def _rebuild_slice(rates, value, miss_rate, counts, n_users, n_ungrouped):
    return SliceMissRates(rates, value=value, miss_rate=miss_rate, counts=counts,
                          n_users=n_users, n_ungrouped=n_ungrouped)


def mred_from_codes(missed, codes, labels: Sequence, considered=None,
                    *, name: str = "slice") -> SliceMissRates:
    """MRED of a slice given per-user group codes.

    ``codes[i]`` indexes ``labels`` (``-1``: the user counts in MR but in no group);
    ``considered`` (boolean, default all) leaves users out of both MR and every MR_g.
    Groups without users are not part of the mean.
    """
    missed = np.asarray(missed, dtype=bool)
    codes = np.asarray(codes, dtype=np.int64)
    if considered is not None:
        considered = np.asarray(considered, dtype=bool)
        missed, codes = missed[considered], codes[considered]
    n = len(missed)
    if n == 0:
        warnings.warn(f"{name}: no test user falls in this slice; MRED is 0.0 (no disparity "
                      "can be measured)", ScoringWarning, stacklevel=2)
        return SliceMissRates({}, value=0.0, miss_rate=0.0, counts={}, n_users=0, n_ungrouped=0)
    mr = float(missed.mean())
    grouped = codes >= 0
    size = len(labels)
    counts = np.bincount(codes[grouped], minlength=size)
    misses = np.bincount(codes[grouped], weights=missed[grouped], minlength=size)
    present = np.flatnonzero(counts)
    rates = misses[present] / counts[present]
    value = -float(np.abs(rates - mr).mean()) if len(present) else 0.0
    if value == 0.0:
        value = 0.0  # no "-0.0" in reports
    return SliceMissRates(
        {str(labels[g]): float(r) for g, r in zip(present, rates)},
        value=value,
        miss_rate=mr,
        counts={str(labels[g]): int(counts[g]) for g in present},
        n_users=n,
        n_ungrouped=int((~grouped).sum()),
    )


def miss_rate_equality_difference(missed, groups, *, considered=None) -> SliceMissRates:
    """``-mean_g |MR_g - MR|`` over the groups of ``groups`` (one label per user).

    ``missed`` is a boolean per user (``hit_ranks(...) == 0``). A missing label (None/NaN)
    counts the user in MR but in no group; ``considered`` (boolean) leaves users out entirely.
    Groups appear in sorted label order, or in category order for a ``pd.Categorical``.
    """
    if isinstance(groups, pd.Categorical):
        codes, labels = groups.codes, list(groups.categories)
    else:
        codes, labels = pd.factorize(pd.Series(groups, dtype=object), sort=True)
        labels = list(labels)
    return mred_from_codes(missed, codes, labels, considered, name="miss_rate_equality_difference")


def bin_by_edges(values, edges: Sequence[int]) -> tuple[np.ndarray, tuple[str, ...]]:
    """Group codes of ``values`` binned by their lower edge, and the group labels.

    Code 0 (label ``"0"``) holds values below the first edge (no plays at all); code ``i`` the
    values in ``[edges[i-1], edges[i])``, the last bin being open-ended.
    """
    edges = np.asarray(edges)
    codes = np.searchsorted(edges, np.asarray(values), side="right")
    return codes, ("0", *(str(int(e)) for e in edges))


#: Rows per ``np.bincount`` call in :func:`sum_by_key`.
_SUM_CHUNK = 1 << 20


#: Float64 sums of non-negative integers are exact below this; int64 holds them.
_EXACT_SUM = 2.0**53


def sum_by_key(keys, weights, query, *, name: str = "weights") -> np.ndarray:
    """For each id in ``query``: the sum of ``weights`` over the rows with that key (0 if none).

    ``weights`` are non-negative integer counts. The sums are taken in float64, exact below
    2**53; a key whose sum reaches 2**53 raises a :class:`DataError` naming ``name`` (int64
    arithmetic would wrap such sums to negative values: the wrong activity or popularity
    group).
    """
    keys = np.asarray(keys)
    query = np.asarray(query)
    weights = np.asarray(weights)
    out = np.zeros(len(query), dtype=np.int64)
    if len(keys) == 0 or len(query) == 0:
        return out
    kmin, kmax = int(keys.min()), int(keys.max())
    if kmin >= 0 and kmax < max(1 << 22, 4 * len(keys)):  # else a table would be mostly empty
        # float64 sums of integer counts are exact below 2**53. In chunks: bincount converts
        # its keys to intp and its weights to float64, two copies of a whole training set.
        sums = np.zeros(kmax + 1)
        for start in range(0, len(keys), _SUM_CHUNK):
            stop = start + _SUM_CHUNK
            sums += np.bincount(keys[start:stop], minlength=kmax + 1,
                                weights=weights[start:stop].astype(np.float64, copy=False))
        _check_sums(sums, name)
        inside = (query >= 0) & (query <= kmax)
        out[inside] = np.rint(sums[query[inside]]).astype(np.int64)
        return out
    # float64 here too: pandas sums int64 groups with wrapping arithmetic
    sums = pd.Series(weights.astype(np.float64, copy=False)).groupby(keys).sum()
    _check_sums(sums.to_numpy(), name)
    return np.rint(sums.reindex(query, fill_value=0).to_numpy()).astype(np.int64)


def _check_sums(sums: np.ndarray, name: str) -> None:
    top = sums.max(initial=0.0)
    if not top < _EXACT_SUM:  # NaN included
        raise DataError(
            f"{name}: the counts of one key sum to {top:.4g}, at or above 2**53, where sums of "
            "counts are no longer exact (and do not fit the activity and popularity groups); "
            "no play count is that large: correct or drop the rows with impossible counts"
        )


# --------------------------------------------------------------------------- vector tests


def _row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of matching rows (last axis); 0 where either vector has norm 0."""
    dot = np.einsum("...d,...d->...", a, b)
    norms = np.sqrt(np.einsum("...d,...d->...", a, a) * np.einsum("...d,...d->...", b, b))
    out = np.zeros(dot.shape, dtype=np.float64)
    np.divide(dot, norms, out=out, where=norms > 0)
    return out


class VectorRows:
    """Track id -> row of a :class:`TrackVectors` (-1: no vector), built once per fold.

    Ids that are small next to the number of vectors go through a dense table (a gather);
    others through the vectors' sorted-id search.
    """

    def __init__(self, vectors: TrackVectors | None) -> None:
        if vectors is None:
            vectors = TrackVectors(np.zeros(0, np.int64), np.zeros((0, 1), np.float32))
        if not isinstance(vectors, TrackVectors):
            raise TypeError(f"expected a TrackVectors, got {type(vectors).__name__}")
        self.vectors = vectors
        ids = vectors.track_ids
        self._table = None
        if len(ids) and ids[0] >= 0 and ids[-1] < max(1 << 22, 4 * len(ids)):
            self._table = np.full(int(ids[-1]) + 1, -1, dtype=np.int64)
            self._table[ids] = np.arange(len(ids))

    def __call__(self, track_ids) -> np.ndarray:
        ids = np.asarray(track_ids)
        if self._table is None:
            return self.vectors.rows(ids)
        top = len(self._table) - 1
        return np.where((ids >= 0) & (ids <= top), self._table[np.clip(ids, 0, top)], -1)


def _lookup(vectors) -> VectorRows:
    return vectors if isinstance(vectors, VectorRows) else VectorRows(vectors)


def being_less_wrong_scores(predictions, targets, vectors, ranks=None) -> np.ndarray:
    """Per-user similarity of :func:`being_less_wrong`; NaN for users it leaves out (a hit,
    or a target without a vector)."""
    rows_of = _lookup(vectors)
    preds = np.asarray(predictions)
    targets = np.asarray(targets)
    if ranks is None:
        ranks = hit_ranks(preds, targets)
    t_rows = rows_of(targets)
    sel = np.flatnonzero((np.asarray(ranks) == 0) & (t_rows >= 0))
    sims = np.full(len(targets), np.nan)
    f_rows = rows_of(preds[sel, 0]) if preds.shape[1] else np.full(len(sel), -1)
    ok = f_rows >= 0
    vecs = rows_of.vectors.vectors
    sims[sel] = 0.0  # a first prediction that is -1 or has no vector
    sims[sel[ok]] = _row_cosines(np.take(vecs, t_rows[sel[ok]], axis=0).astype(np.float64),
                                 np.take(vecs, f_rows[ok], axis=0).astype(np.float64))
    return sims


def being_less_wrong_detail(predictions, targets, vectors, ranks=None, *, scores=None) -> dict:
    """``BEING_LESS_WRONG`` with the users behind it (see :func:`being_less_wrong`);
    ``scores``: the per-user similarities, if known."""
    rows_of = _lookup(vectors)
    preds = np.asarray(predictions)
    if ranks is None:
        ranks = hit_ranks(preds, np.asarray(targets))
    sims = being_less_wrong_scores(preds, targets, rows_of, ranks) if scores is None else scores
    scored = ~np.isnan(sims)
    n_missed, n = int((np.asarray(ranks) == 0).sum()), int(scored.sum())
    if n == 0:
        if n_missed == 0:
            value = 1.0  # never wrong: the best possible value
        else:
            warnings.warn("BEING_LESS_WRONG: no missed target has a vector; the test is 0.0",
                          ScoringWarning, stacklevel=2)
            value = 0.0
        return {"value": value, "n_users": 0, "n_missed": n_missed}
    first = preds[scored, 0] if preds.shape[1] else np.full(n, -1)
    return {"value": float(sims[scored].mean()), "n_users": n, "n_missed": n_missed,
            "n_first_without_vector": int((rows_of(first) < 0).sum())}


def being_less_wrong(predictions, targets, vectors: TrackVectors, ranks=None) -> float:
    """Mean cosine between a missed target's vector and the model's first prediction's vector.

    Users whose target was hit, or has no vector, are left out; a first prediction that is
    ``-1`` or has no vector counts as similarity 0. With no missed user at all the model is
    never wrong and the value is 1.0; with misses but none measurable it is 0.0 (warned).
    """
    return being_less_wrong_detail(predictions, targets, vectors, ranks)["value"]


def latent_diversity_scores(predictions, targets, vectors: TrackVectors, *,
                            top: int = LATENT_TOP, diversity_weight: float = DIVERSITY_WEIGHT,
                            bias_weight: float = BIAS_WEIGHT) -> np.ndarray:
    """Per-user latent diversity score; NaN for users whose target has no vector.

    Over the first ``top`` predictions that have a vector: ``m`` = their mean vector,
    diversity = mean of ``1 - cos(m, v_i)``, bias = ``1 - cos(m, v_target)``,
    score = ``diversity_weight * diversity - bias_weight * bias``. A user without a usable
    prediction scores ``-bias_weight`` (their mean vector is zero: cosines count as 0).
    """
    rows_of = _lookup(vectors)
    vecs = rows_of.vectors.vectors
    preds = np.asarray(predictions)[:, :top]
    t_rows = rows_of(np.asarray(targets))
    scores = np.full(len(t_rows), np.nan)
    users = np.flatnonzero(t_rows >= 0)
    for start in range(0, len(users), _VECTOR_BLOCK):
        block = users[start:start + _VECTOR_BLOCK]
        rows = rows_of(preds[block])                                     # (b, top)
        usable = rows >= 0
        count = usable.sum(axis=1)
        weight = usable.astype(np.float64)
        # np.take of the float32 rows is much faster than fancy indexing; einsum computes in
        # float64 (dtype=) without a float64 copy of the gathered block
        v = np.take(vecs, np.where(usable, rows, 0), axis=0)            # (b, top, d)
        mean = (np.einsum("bid,bi->bd", v, weight, dtype=np.float64)
                / np.maximum(count, 1)[:, None])                         # (b, d)
        mean_norm = np.sqrt(np.einsum("bd,bd->b", mean, mean))
        item_norm = np.sqrt(np.einsum("bid,bid->bi", v, v, dtype=np.float64))
        denom = item_norm * mean_norm[:, None]
        cos_items = np.zeros(denom.shape)
        np.divide(np.einsum("bid,bd->bi", v, mean, dtype=np.float64), denom, out=cos_items,
                  where=(denom > 0) & usable)
        diversity = (count - cos_items.sum(axis=1)) / np.maximum(count, 1)
        target = np.take(vecs, t_rows[block], axis=0).astype(np.float64)
        bias = 1.0 - _row_cosines(mean, target)
        scores[block] = diversity_weight * diversity - bias_weight * bias
    return scores


def latent_diversity(predictions, targets, vectors: TrackVectors, *, top: int = LATENT_TOP,
                     diversity_weight: float = DIVERSITY_WEIGHT,
                     bias_weight: float = BIAS_WEIGHT) -> float:
    """``LATENT_DIVERSITY``: mean of :func:`latent_diversity_scores` over users with a target
    vector (0.0, warned, when no target has a vector)."""
    return latent_diversity_detail(predictions, targets, vectors, top=top,
                                   diversity_weight=diversity_weight,
                                   bias_weight=bias_weight)["value"]


def latent_diversity_detail(predictions, targets, vectors, *, scores=None, **kwargs) -> dict:
    """``LATENT_DIVERSITY`` with the users behind it (``scores``: per-user scores, if known)."""
    rows_of = _lookup(vectors)
    if scores is None:
        scores = latent_diversity_scores(predictions, targets, rows_of, **kwargs)
    scored = ~np.isnan(scores)
    n = int(scored.sum())
    if n == 0:
        warnings.warn("LATENT_DIVERSITY: no test target has a vector; the test is 0.0",
                      ScoringWarning, stacklevel=2)
        return {"value": 0.0, "n_users": 0}
    top = kwargs.get("top", LATENT_TOP)
    usable = rows_of(np.asarray(predictions)[:, :top][scored]) >= 0
    return {"value": float(scores[scored].mean()), "n_users": n,
            "n_without_usable_prediction": int((~usable.any(axis=1)).sum())}


# --------------------------------------------------------------------------- one fold


@dataclass(frozen=True)
class Slice:
    """Per-user group codes of one MRED slice (see :func:`mred_from_codes`)."""

    codes: np.ndarray
    labels: tuple[str, ...]
    considered: np.ndarray | None = None


#: MRED test name -> slice name in :attr:`ChallengeFold.slices`.
MRED_SLICES = {
    "MRED_COUNTRY": "country",
    "MRED_USER_ACTIVITY": "user_activity",
    "MRED_TRACK_POPULARITY": "track_popularity",
    "MRED_ARTIST_POPULARITY": "artist_popularity",
    "MRED_GENDER": "gender",
}


def _column(frame: pd.DataFrame, column: str, table: str) -> pd.Series:
    if column not in frame.columns:
        raise DataError(f"{table}: column {column!r} is missing (columns: "
                        f"{list(frame.columns)}); scoring needs it for the slice tests")
    return frame[column]


def _user_id_index(users: pd.DataFrame) -> pd.DataFrame:
    if "user_id" in users.columns and users.index.name != "user_id":
        users = users.set_index("user_id")
    return users


def country_slice(users: pd.DataFrame, user_ids) -> Slice:
    """MRED_COUNTRY groups: the listed countries plus ``missing``; other countries left out.

    A user absent from the users table has an unknown country, like a missing one.
    """
    country = _column(_user_id_index(users), "country", "users").reindex(user_ids)
    missing = country.isna().to_numpy()
    codes = pd.Index(COUNTRIES).get_indexer(country.astype(object)).astype(np.int64)
    codes[missing] = len(COUNTRIES)
    return Slice(codes, (*COUNTRIES, MISSING_COUNTRY), considered=missing | (codes >= 0))


def gender_slice(users: pd.DataFrame, user_ids) -> Slice:
    """MRED_GENDER groups: one per gender value; users without one (or absent from the users
    table) count in MR but in no group."""
    gender = _column(_user_id_index(users), "gender", "users").reindex(user_ids)
    codes, labels = pd.factorize(gender.astype(object), sort=True)
    return Slice(codes.astype(np.int64), tuple(str(v) for v in labels))


@dataclass
class ChallengeFold:
    """Everything the challenge tests need about one fold, computed once.

    Build it with :meth:`from_frames`; rows follow ``user_ids``. ``ranks`` are the hit ranks,
    ``slices`` the per-user group codes of the five MRED slices, ``vectors`` the track id ->
    vector row lookup (``vectors.vectors`` is the :class:`TrackVectors`).
    """

    user_ids: np.ndarray
    targets: np.ndarray
    predictions: np.ndarray
    vectors: VectorRows
    slices: dict[str, Slice]
    ranks: np.ndarray

    @classmethod
    def from_frames(cls, user_ids, targets, predictions, *, train: pd.DataFrame,
                    users: pd.DataFrame, tracks: pd.DataFrame, vectors: TrackVectors | None,
                    k: int | None = None) -> ChallengeFold:
        """Precompute hit ranks and slice codes.

        ``train``: the fold's training rows (``user_id, track_id, user_track_count`` and
        ``artist_id`` if present, else the artist comes from ``tracks``); ``users`` indexed by
        ``user_id`` (``country``, ``gender``); ``tracks`` indexed by ``track_id``
        (``artist_id``).
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
        counts = _column(train, "user_track_count", "training set")
        # plain integer counts stay as they are (sum_by_key converts them chunk by chunk)
        plain = isinstance(counts.dtype, np.dtype) and counts.dtype.kind in "iu"
        counts = counts.to_numpy() if plain else counts.to_numpy(dtype=np.float64)
        train_users = _column(train, "user_id", "training set").to_numpy()
        train_tracks = _column(train, "track_id", "training set").to_numpy()
        name = "training set, column 'user_track_count'"
        activity = sum_by_key(train_users, counts, user_ids, name=name)
        track_pop = sum_by_key(train_tracks, counts, targets, name=name)

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
            name=name)

        act_codes, act_labels = bin_by_edges(activity, USER_ACTIVITY_EDGES)
        trk_codes, trk_labels = bin_by_edges(track_pop, TRACK_POPULARITY_EDGES)
        art_codes, art_labels = bin_by_edges(artist_pop, ARTIST_POPULARITY_EDGES)
        # a target track missing from the tracks table has no artist: in MR, in no group
        art_codes = np.where(known_artist, art_codes, -1)
        slices = {
            "country": country_slice(users, user_ids),
            "user_activity": Slice(act_codes, act_labels),
            "track_popularity": Slice(trk_codes, trk_labels),
            "artist_popularity": Slice(art_codes, art_labels),
            "gender": gender_slice(users, user_ids),
        }
        return cls(user_ids, targets, preds, VectorRows(vectors), slices,
                   hit_ranks(preds, targets))

    @property
    def k(self) -> int:
        return self.predictions.shape[1]

    @property
    def hits(self) -> np.ndarray:
        return self.ranks > 0

    def hit_rate(self) -> float:
        return hit_rate_from_ranks(self.ranks)

    def mrr(self) -> float:
        return mrr_from_ranks(self.ranks)

    def mred(self, slice_name: str) -> SliceMissRates:
        s = self.slices[slice_name]
        return mred_from_codes(self.ranks == 0, s.codes, s.labels, s.considered, name=slice_name)

    def being_less_wrong_scores(self) -> np.ndarray:
        """Per-user BEING_LESS_WRONG similarities (NaN: left out), computed once per fold."""
        if "_blw_scores" not in self.__dict__:
            self.__dict__["_blw_scores"] = being_less_wrong_scores(
                self.predictions, self.targets, self.vectors, self.ranks)
        return self.__dict__["_blw_scores"]

    def being_less_wrong(self) -> dict:
        return being_less_wrong_detail(self.predictions, self.targets, self.vectors, self.ranks,
                                       scores=self.being_less_wrong_scores())

    def latent_diversity_scores(self) -> np.ndarray:
        """Per-user LATENT_DIVERSITY scores (NaN: left out), computed once per fold."""
        if "_ld_scores" not in self.__dict__:
            self.__dict__["_ld_scores"] = latent_diversity_scores(
                self.predictions, self.targets, self.vectors)
        return self.__dict__["_ld_scores"]

    def latent_diversity(self) -> dict:
        return latent_diversity_detail(self.predictions, self.targets, self.vectors,
                                       scores=self.latent_diversity_scores())

    def stats(self) -> dict:
        """Number of test users; fewest and most real (non ``-1``) predictions per user."""
        per_user = (self.predictions != -1).sum(axis=1)
        return {"num_users": len(self.user_ids), "k": self.k,
                "min_predictions": int(per_user.min()), "max_predictions": int(per_user.max())}
