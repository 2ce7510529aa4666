"""Per-test-user contributions of one fold, from which every leaderboard test is recomputed."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass

import numpy as np

from evaluation._util.arrays import sorted_unique
from evaluation.challenge._fold import ChallengeFold
from evaluation.challenge._spec import (
    BEING_LESS_WRONG,
    HIT_RATE,
    LATENT_DIVERSITY,
    MRED_SLICES,
    MRR,
)
from evaluation.errors import ConfigError
from evaluation.metrics import hits, reciprocal_ranks

# Slice codes in UserScores.slices: a group index (>= 0), or one of these.
IN_MR_ONLY = -1  # counts in the slice's overall miss rate, in no group (e.g. missing gender)
LEFT_OUT = -2  # left out of the slice entirely (e.g. a country outside the list)


@dataclass(frozen=True)
class UserScores:
    """Per-test-user contributions of one fold; every leaderboard test is a function of them.

    - ``hit``: the target is in the top-k; ``rr``: 1 / rank of the target, 0 when missed.
    - ``slices``: for each MRED test, an int code per user: the user's group (>= 0),
      ``IN_MR_ONLY`` (-1: in the overall miss rate, in no group) or ``LEFT_OUT`` (-2).
    - ``blw``: cosine similarity counted by BEING_LESS_WRONG, NaN where the user is left out.
    - ``ld``: the user's LATENT_DIVERSITY score, NaN where the user is left out.
    """

    hit: np.ndarray
    rr: np.ndarray
    slices: dict[str, np.ndarray]
    blw: np.ndarray
    ld: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.hit)
        arrays = {"rr": self.rr, "blw": self.blw, "ld": self.ld, **self.slices}
        bad = {k: len(v) for k, v in arrays.items() if len(v) != n}
        if bad:
            raise ConfigError(
                f"UserScores: every array needs one value per test user ({n}); got lengths "
                f"{bad}."
            )

    def __len__(self) -> int:
        """Number of test users."""
        return len(self.hit)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Flat name -> array mapping (for ``np.savez``)."""
        out = {"hit": np.asarray(self.hit, dtype=bool), "rr": np.asarray(self.rr, np.float64),
               "blw": np.asarray(self.blw, np.float64), "ld": np.asarray(self.ld, np.float64)}
        for name, codes in self.slices.items():
            out[f"slice:{name}"] = np.asarray(codes, dtype=np.int32)
        return out

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> UserScores:
        """The inverse of :meth:`to_arrays` (e.g. on what ``np.load`` read back)."""
        slices = {k.split(":", 1)[1]: np.asarray(v) for k, v in arrays.items()
                  if k.startswith("slice:")}
        return cls(hit=np.asarray(arrays["hit"]), rr=np.asarray(arrays["rr"]),
                   slices=slices, blw=np.asarray(arrays["blw"]), ld=np.asarray(arrays["ld"]))

    @classmethod
    def from_challenge_fold(cls, fold: ChallengeFold) -> UserScores:
        """Per-user contributions of a scored fold, with the same semantics as its tests.

        Slice codes of users a slice does not consider become ``LEFT_OUT``; BEING_LESS_WRONG
        and LATENT_DIVERSITY are the fold's own per-user scores (NaN where a user is left out).

        Parameters
        ----------
        fold : ChallengeFold
            The fold's scoring state.

        Returns
        -------
        UserScores

        Raises
        ------
        TypeError
            When ``fold`` is not a :class:`ChallengeFold`.
        """
        if not isinstance(fold, ChallengeFold):
            raise TypeError(f"UserScores.from_challenge_fold expects a ChallengeFold, got "
                            f"{type(fold).__name__}")
        return cls(hit=hits(fold.ranks), rr=reciprocal_ranks(fold.ranks),
                   slices=_slice_codes(fold),
                   blw=np.asarray(fold.being_less_wrong_scores(), dtype=np.float64),
                   ld=np.asarray(fold.latent_diversity_scores(), dtype=np.float64))

    def tests(self, weights: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """The nine tests, each an array over the rows of ``weights`` (B x users counts).

        Without weights: one row of ones, i.e. the plain point estimates. Every test is a
        ratio of weighted sums, so all of them come from the weighted column sums
        ``weights @ X`` of a per-user design matrix ``X`` (see :meth:`design_matrix`).
        """
        layout = self._design()
        if weights is None:
            sums = _point_sums(layout)[None, :]
        else:
            weights = np.asarray(weights)
            sums = _weighted_sums(weights, layout, _float32_exact(weights))
        return _tests_from_sums(sums, layout)

    def resampled_tests(self, counts: np.ndarray) -> dict[str, np.ndarray]:
        """:meth:`tests` of bootstrap resamples: ``counts`` (B x users) of how often each user
        is drawn, every row summing to the number of users (as ``resample_counts`` yields)."""
        layout = self._design()
        # each row sums to len(self): below 2**24, float32 sums are exact without a check
        return _tests_from_sums(_weighted_sums(counts, layout, len(self) < _FLOAT32_EXACT),
                                layout)

    def design_matrix(self) -> np.ndarray:
        """The per-user design matrix ``X`` (users x columns, float64) whose weighted column
        sums give every test: 0/1 columns (users, hits, slice and group members and their
        misses, who has a BLW or LD score) and the real-valued rr, BLW and LD."""
        layout = self._design()
        x = np.empty((len(self), layout["n_columns"]))
        x[:, layout["binary_columns"]] = layout["binary"].T
        x[:, layout["real_columns"]] = np.column_stack(layout["real_values"])
        return x

    def _design(self) -> dict:
        """Where each test's columns are in the design, and the columns: the 0/1 ones as
        float32 rows (``binary``), the real-valued ones as float64 arrays."""
        cached = self.__dict__.get("_design_cache")
        if cached is not None:
            return cached
        hit = np.asarray(self.hit, dtype=bool)
        cols: list[np.ndarray] = [np.ones(len(hit), dtype=bool), hit,
                                  np.asarray(self.rr, dtype=np.float64)]
        layout: dict = {"slices": {}}
        for name, codes in self.slices.items():
            codes = np.asarray(codes)
            in_mr = codes >= IN_MR_ONLY
            first = len(cols)
            cols += [in_mr, in_mr & ~hit]
            groups = sorted_unique(codes[codes >= 0])
            for g in groups:
                member = codes == g
                cols += [member, member & ~hit]
            layout["slices"][name] = (first, len(groups))
        for key, values in ((BEING_LESS_WRONG, self.blw), (LATENT_DIVERSITY, self.ld)):
            v = np.asarray(values, dtype=np.float64)
            ok = ~np.isnan(v)
            layout[key] = len(cols)
            cols += [np.where(ok, v, 0.0), ok]
        real = [2, layout[BEING_LESS_WRONG], layout[LATENT_DIVERSITY]]
        layout["n_columns"] = len(cols)
        layout["real_columns"] = real
        layout["real"] = np.stack([cols[c] for c in real])  # one row per real column
        layout["real_values"] = list(layout["real"])
        layout["binary_columns"] = [c for c in range(len(cols)) if c not in real]
        # a row per 0/1 column: written contiguously, and float32 holds 0 and 1 exactly
        binary = np.empty((len(layout["binary_columns"]), len(hit)), dtype=np.float32)
        for row, c in zip(binary, layout["binary_columns"]):
            row[:] = cols[c]
        layout["binary"] = binary
        object.__setattr__(self, "_design_cache", layout)  # frozen dataclass: cache by hand
        return layout


#: Integers below this are exact in float32 (a 24-bit significand).
_FLOAT32_EXACT = 2**24


def _point_sums(layout: dict) -> np.ndarray:
    """The design's plain column sums (the weights all one), the bits of ``X.sum(axis=0)``.

    The 0/1 columns' sums are exact integers in any order. ``X.sum(axis=0)`` adds the rows of
    ``X`` one after the other, so each real-valued column is summed left to right: the last
    value of its running sum, not NumPy's pairwise sum of the column.
    """
    sums = np.zeros(layout["n_columns"])
    sums[layout["binary_columns"]] = layout["binary"].sum(axis=1, dtype=np.float64)
    for col, values in zip(layout["real_columns"], layout["real_values"]):
        if len(values):
            sums[col] = np.add.accumulate(values)[-1]
    return sums


def _weighted_sums(w: np.ndarray, layout: dict, in_float32: bool) -> np.ndarray:
    """``w @ X`` (B x columns) for the design ``X``, the same bits on any machine.

    The 0/1 columns: non-negative integer counts times 0/1 values make every partial sum an
    exact integer, so the BLAS product gives the same bits whatever its kernel, threads or
    order; in float32 (twice as fast) when ``in_float32`` says every row of ``w`` sums below
    2**24, where float32 is still exact. The real-valued columns (rr, BLW, LD) are summed by
    NumPy's fixed pairwise order instead, so that the intervals repeat to the last bit on any
    machine: the products ``w * column``, row by row, each summed, in one small buffer that
    stays in cache.
    """
    sums = np.empty((len(w), layout["n_columns"]))
    binary, real = layout["binary_columns"], layout["real_columns"]
    if in_float32:
        sums[:, binary] = w.astype(np.float32) @ layout["binary"].T
    else:
        sums[:, binary] = w.astype(np.float64) @ layout["binary"].T.astype(np.float64)
    values = layout["real"]
    products = np.empty_like(values)
    for i in range(len(w)):
        # integer counts convert exactly: the products are those of a float64 copy of w
        np.multiply(w[i], values, out=products)
        sums[i, real] = products.sum(axis=1)
    return sums


def _counted_binary_sums(scores: UserScores, counts: np.ndarray,
                         kept: MutableMapping[tuple, np.ndarray]) -> np.ndarray:
    """``counts @ X[:, binary]`` for the design's 0/1 columns (B x columns, float64): the
    integers the full product gives, so the same bits, at a fraction of its cost.

    ``counts`` (B x users, unsigned) are resamples' counts of fewer than 2**24 users. Every
    0/1 column is a set of users, and its weighted sum splits into the hit users' part and the
    others'. What depends on the users alone (the resampled size of the fold, of each slice's
    miss-rate population and of each group) is the same for every team scored on ``counts``:
    it is summed once over all users and kept in ``kept`` (one entry per fold and per set of
    slice codes; pass the same mapping with the same ``counts``). A team then sums only over
    its hit users (a gather of their counts and one float32 product: exact integers below
    2**24), and the sums over its missed users are the kept totals minus its hit part.
    """
    layout = scores._design()
    hit = np.asarray(scores.hit, dtype=bool)
    n_users = len(hit)
    binary = layout["binary_columns"]
    at = {c: i for i, c in enumerate(binary)}
    # the columns summed over the hit users: each set whose hit part is not zero by design
    hit_rows = [at[0]]  # every user: its hit part is the hit column itself
    slice_codes = {name: np.ascontiguousarray(scores.slices[name])
                   for name in layout["slices"]}
    for first, n_groups in layout["slices"].values():
        hit_rows += [at[first]] + [at[first + 2 + 2 * g] for g in range(n_groups)]
    valid = [layout[BEING_LESS_WRONG] + 1, layout[LATENT_DIVERSITY] + 1]
    hit_rows += [at[c] for c in valid]
    hit_users = np.flatnonzero(hit)
    on_hits = np.zeros((len(counts), len(hit_rows)))
    if len(hit_users):
        gathered = np.take(counts, hit_users, axis=1).astype(np.float32)
        on_hits[:] = gathered @ layout["binary"][hit_rows][:, hit_users].T
    part = dict(zip(hit_rows, on_hits.T))
    everyone = _kept_user_sums(kept, counts, slice_codes)
    total = everyone["users"]
    sums = np.empty((len(counts), len(binary)))
    sums[:, at[0]] = total
    sums[:, at[1]] = part[at[0]]
    for name, (first, n_groups) in layout["slices"].items():
        whole = everyone[name]  # the slice's miss-rate population, then each group
        for k, c in enumerate([first] + [first + 2 + 2 * g for g in range(n_groups)]):
            sums[:, at[c]] = whole[:, k]
            sums[:, at[c + 1]] = whole[:, k] - part[at[c]]  # its users not hit
    missed = total - part[at[0]]
    for c in valid:
        row = layout["binary"][at[c]]
        # the column's missed users: all of them (the usual case), none, or a gather of the
        # fewer of those in and those out
        out_of = np.flatnonzero((row == 0) & ~hit)
        if len(out_of) <= (n_users - len(hit_users)) // 2:
            on_misses = missed - _gathered_sums(counts, out_of)
        else:
            on_misses = _gathered_sums(counts, np.flatnonzero((row != 0) & ~hit))
        sums[:, at[c]] = part[at[c]] + on_misses
    return sums


def _gathered_sums(counts: np.ndarray, users: np.ndarray) -> np.ndarray:
    """Each row's sum of ``counts`` over ``users`` (exact integers, as float64)."""
    if not len(users):
        return np.zeros(len(counts))
    return np.take(counts, users, axis=1).sum(axis=1, dtype=np.int64).astype(np.float64)


def _kept_user_sums(kept: MutableMapping[tuple, np.ndarray], counts: np.ndarray,
                    slice_codes: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The resampled sizes that depend on the users only: ``"users"`` (B,) and, per slice,
    (B x 1 + groups) the miss-rate population then each group (in the design's order);
    summed over all users once per set of codes, then read from ``kept``."""
    keys = {name: ("slice", str(codes.dtype), hashlib.sha256(codes.tobytes()).hexdigest())
            for name, codes in slice_codes.items()}
    # read once: another caller may clear the mapping meanwhile (the sums are then made again)
    found: dict[str, np.ndarray | None] = {"users": kept.get(("users",)),
                                           **{name: kept.get(key) for name, key in keys.items()}}
    missing = [name for name, sums in found.items() if sums is None and name != "users"]
    if found["users"] is None or missing:
        columns = [np.ones(counts.shape[1], dtype=bool)]
        widths = []
        for name in missing:
            codes = slice_codes[name]
            sets = [codes >= IN_MR_ONLY] + [codes == g for g in np.unique(codes[codes >= 0])]
            columns += sets
            widths.append(len(sets))
        design = np.stack(columns).astype(np.float32).T
        made = np.empty((len(counts), design.shape[1]))
        for start in range(0, len(counts), _USER_SUMS_CHUNK):
            block = counts[start:start + _USER_SUMS_CHUNK].astype(np.float32)
            made[start:start + len(block)] = block @ design
        if len(kept) + len(missing) + 1 > _MAX_KEPT_SUMS:
            kept.clear()  # codes of many kinds (never at the challenge's scale): start again
        found["users"] = kept[("users",)] = made[:, 0]
        at = 1
        for name, width in zip(missing, widths):
            found[name] = kept[keys[name]] = made[:, at:at + width]
            at += width
    return {name: sums for name, sums in found.items() if sums is not None}


#: Replicates whose users' sums are made at once (bounds the float copy of the counts).
_USER_SUMS_CHUNK = 128
#: Sets of sums one fold's resamples keep (each at most B x (1 + groups) float64).
_MAX_KEPT_SUMS = 32


def _float32_exact(w: np.ndarray) -> bool:
    """Whether every partial sum of a row of ``w`` times 0/1 values is exact in float32."""
    if w.dtype.kind not in "biu" or not w.size:
        return False
    if w.dtype.kind == "i" and w.min() < 0:
        return False
    return bool(w.sum(axis=1, dtype=np.int64).max() < _FLOAT32_EXACT)


def _slice_codes(fold: ChallengeFold) -> dict[str, np.ndarray]:
    """MRED test -> per-user slice code of ``fold`` (a group, ``IN_MR_ONLY`` or ``LEFT_OUT``)."""
    slices = {}
    for test, slice_name in MRED_SLICES.items():
        s = fold.slices[slice_name]
        codes = np.asarray(s.codes, dtype=np.int32).copy()
        codes[codes < 0] = IN_MR_ONLY
        if s.considered is not None:
            codes[~np.asarray(s.considered, dtype=bool)] = LEFT_OUT
        slices[test] = codes
    return slices


def _tests_from_sums(sums: np.ndarray, layout: dict) -> dict[str, np.ndarray]:
    """Tests from the weighted column sums of a ``UserScores`` design matrix."""
    with np.errstate(invalid="ignore", divide="ignore"):
        total = sums[:, 0]
        out = {HIT_RATE: sums[:, 1] / total, MRR: sums[:, 2] / total}
        for name, (first, n_groups) in layout["slices"].items():
            if n_groups == 0:
                out[name] = np.full(len(sums), np.nan)
                continue
            mr = sums[:, first + 1] / sums[:, first]
            size = sums[:, first + 2:first + 2 + 2 * n_groups:2]
            misses = sums[:, first + 3:first + 3 + 2 * n_groups:2]
            present = size > 0
            mr_g = misses / np.where(present, size, 1.0)
            dev = np.where(present, np.abs(mr_g - mr[:, None]), 0.0)
            count = present.sum(axis=1)
            out[name] = np.where(count > 0, -dev.sum(axis=1) / np.maximum(count, 1), np.nan)
        for key in (BEING_LESS_WRONG, LATENT_DIVERSITY):
            j = layout[key]
            out[key] = sums[:, j] / sums[:, j + 1]
    return out
