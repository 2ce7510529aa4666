"""The numbers behind a run's figures: miss rate per slice group and the scores' replicates.

Both come from one bootstrap that draws exactly the resamples of the run's own intervals
(:func:`evaluation.challenge.bootstrap`), drawn by the same function
(:func:`~evaluation.challenge.resample_folds`).
With the run's seed and ``n_boot`` the score replicates are the ones the run's interval was
computed from, and the group intervals rest on the same resamples.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from evaluation._util.arrays import sorted_unique
from evaluation.challenge import (
    COUNTRIES,
    LEADERBOARD_TESTS,
    MISSING_COUNTRY,
    MRED_SLICES,
    MRED_TESTS,
    SLICE_EDGES,
    References,
    UserScores,
    phase2_score,
    resample_folds,
)
from evaluation.errors import ConfigError


@dataclass(frozen=True)
class Groups:
    """The groups of one MRED test over every fold of a run.

    Attributes
    ----------
    test : str
        The MRED test.
    labels : tuple of str
        The groups' labels as the fold files name them (``"US"``, ``"100"``, ``"f"`` ...).
    codes : list of numpy.ndarray
        Per fold, each test user's index into ``labels``; ``-1`` for users in no group.
    in_mr : list of numpy.ndarray
        Per fold, whether each test user counts in the slice's overall miss rate.
    """

    test: str
    labels: tuple[str, ...]
    codes: list[np.ndarray]
    in_mr: list[np.ndarray]


@dataclass(frozen=True)
class Replicates:
    """What the figures of one run need from its bootstrap.

    Attributes
    ----------
    n_boot, seed : int
        The bootstrap's settings.
    tests : dict
        Leaderboard test -> its ``n_boot`` replicates of the fold mean.
    groups : dict
        MRED test -> :class:`Groups`.
    group_rates : dict
        MRED test -> ``(point, replicates)``: per group (and, last, the slice's overall miss
        rate) the mean over the folds where the group has users of its miss rate, and the
        ``n_boot x (groups + 1)`` replicates of the same (NaN where no fold has the group).
    """

    n_boot: int
    seed: int
    tests: dict[str, np.ndarray]
    groups: dict[str, Groups]
    group_rates: dict[str, tuple[np.ndarray, np.ndarray]]


def slice_groups(folds: Sequence[Mapping], scores: Sequence[UserScores]) -> dict[str, Groups]:
    """The labelled groups of each MRED test of a run.

    A fold's per-user file holds group codes; its results name the groups present, in code
    order, with their sizes. The two are matched fold by fold and checked against each other.

    Parameters
    ----------
    folds : sequence of dict
        The ``folds`` of the run's ``results.json`` (each with ``details``).
    scores : sequence of UserScores
        The per-user contributions of each fold.

    Returns
    -------
    dict
        MRED test -> :class:`Groups`, for the tests whose details name groups in every fold.

    Raises
    ------
    ConfigError
        When a fold's group sizes do not match its per-user codes.
    """
    out = {}
    for test in MRED_TESTS:
        counts = [(f.get("details") or {}).get(test) for f in folds]
        named = [c for c in counts
                 if isinstance(c, Mapping) and isinstance(c.get("counts"), Mapping)]
        if len(named) < len(counts) or any(test not in s.slices for s in scores):
            continue  # a test the run could not compute: no groups to show
        labels = _ordered_labels(test, {g for c in named for g in c["counts"]})
        codes, in_mr = [], []
        for f, (detail, s) in enumerate(zip(named, scores)):
            raw = np.asarray(s.slices[test])
            codes.append(_relabel(test, f, raw, list(detail["counts"].items()), labels))
            in_mr.append(raw >= -1)
        out[test] = Groups(test, labels, codes, in_mr)
    return out


def _relabel(test: str, fold: int, raw: np.ndarray, named: list[tuple[str, int]],
             labels: tuple[str, ...]) -> np.ndarray:
    """A fold's codes of ``test`` as indices into ``labels`` (``-1``: in no group)."""
    present = sorted_unique(raw[raw >= 0])
    sizes = np.bincount(raw[raw >= 0], minlength=int(present.max(initial=-1)) + 1)[present]
    if len(present) != len(named) or [int(n) for _, n in named] != sizes.tolist():
        raise ConfigError(
            f"fold {fold}: the group sizes of {test} in results.json "
            f"({dict(named)}) do not match the per-user file (sizes {sizes.tolist()}): the "
            f"run's files do not belong together. Run the model again.")
    lookup = np.full(int(present.max(initial=-1)) + 2, -1, dtype=np.int64)
    lookup[present] = [labels.index(name) for name, _ in named]
    return lookup[np.where(raw >= 0, raw, -1)]


def _ordered_labels(test: str, labels: set[str]) -> tuple[str, ...]:
    """The group labels of ``test`` in reading order (list order, bin order or sorted)."""
    if test == "MRED_COUNTRY":
        order = (*COUNTRIES, MISSING_COUNTRY)
        return tuple(sorted(labels, key=lambda g: (order.index(g) if g in order else len(order),
                                                   g)))
    if MRED_SLICES[test] in SLICE_EDGES and all(g.isdigit() for g in labels):
        return tuple(sorted(labels, key=int))
    return tuple(sorted(labels))


def group_label(test: str, label: str) -> str:
    """A reader's name of a group: count bins as ranges of training plays."""
    edges = SLICE_EDGES.get(MRED_SLICES.get(test, ""))
    if edges is None or not label.isdigit():
        return label
    low = int(label)
    if low == 0:
        return "0 plays"
    higher = [e for e in edges if e > low]
    return f"{low}-{higher[0] - 1} plays" if higher else f">={low} plays"


def replicates(folds: Sequence[Mapping], scores: Sequence[UserScores], *, n_boot: int,
               seed: int) -> Replicates:
    """Bootstrap the tests and the per-group miss rates of a run, as the run's intervals do.

    Parameters
    ----------
    folds : sequence of dict
        The ``folds`` of the run's ``results.json``.
    scores : sequence of UserScores
        The per-user contributions of each fold.
    n_boot : int
        Replicates (at least 2).
    seed : int
        Seed of the resampling (a non-negative int); the run's seed repeats its resamples.

    Returns
    -------
    Replicates
    """
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 2:
        raise ConfigError(f"n_boot must be an int >= 2, got {n_boot!r}.")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"seed must be a non-negative int, got {seed!r}.")
    groups = slice_groups(folds, scores)
    slices = list(groups.values())
    designs = [_group_design(s, [(g.codes[f], g.in_mr[f], len(g.labels)) for g in slices])
               for f, s in enumerate(scores)]
    sums = [np.empty((n_boot, d.shape[1])) for d in designs]
    per_fold_tests = [{t: np.full(n_boot, np.nan) for t in LEADERBOARD_TESTS} for _ in scores]

    def apply(f: int, start: int, counts: np.ndarray) -> None:
        stop = start + len(counts)
        for t, values in scores[f].resampled_tests(counts).items():
            if t in per_fold_tests[f]:
                per_fold_tests[f][t][start:stop] = values
        sums[f][start:stop] = counts.astype(np.float64) @ designs[f]

    resample_folds([len(s) for s in scores], apply, n_boot=n_boot, seed=seed)
    # test -> per fold: (each group's miss rate on the fold, the same per replicate)
    per_fold_rates: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {t: [] for t in groups}
    for f, s in enumerate(scores):
        unit = np.ones(len(s)) @ designs[f]
        first = 0
        for t, g in groups.items():
            width = 2 * (len(g.labels) + 1)
            per_fold_rates[t].append((_rates(unit[None, first:first + width])[0],
                                      _rates(sums[f][:, first:first + width])))
            first += width
    # the mean over folds as the run takes it (same order of operations, same bits)
    tests = {t: np.mean([r[t] for r in per_fold_tests], axis=0) for t in LEADERBOARD_TESTS}
    rates = {t: (_fold_nanmean([p for p, _ in r]), _fold_nanmean([b for _, b in r]))
             for t, r in per_fold_rates.items()}
    return Replicates(n_boot, seed, tests, groups, rates)


def _group_design(scores: UserScores, slices: list[tuple[np.ndarray, np.ndarray, int]]
                  ) -> np.ndarray:
    """Per user: for each slice, each group's (member, missed member), then the slice's own."""
    miss = ~np.asarray(scores.hit, dtype=bool)
    cols = []
    for codes, in_mr, n_groups in slices:
        for g in range(n_groups):
            member = codes == g
            cols += [member, member & miss]
        cols += [in_mr, in_mr & miss]
    if not cols:
        return np.zeros((len(scores), 0))
    return np.column_stack(cols).astype(np.float64)


def _rates(sums: np.ndarray) -> np.ndarray:
    """Miss rates from (size, misses) column pairs; NaN where a group has no users."""
    size, misses = sums[:, 0::2], sums[:, 1::2]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(size > 0, misses / np.where(size > 0, size, 1.0), np.nan)


def _fold_nanmean(per_fold: list[np.ndarray]) -> np.ndarray:
    """Mean over folds, ignoring the folds where a group has no users (NaN where none has)."""
    stacked = np.stack(per_fold)
    present = ~np.isnan(stacked)
    total = np.where(present, stacked, 0.0).sum(axis=0)
    n = present.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / np.maximum(n, 1), np.nan)


def score_replicates(reps: Replicates, references: References | None) -> np.ndarray:
    """The leaderboard score's replicates (phase 2 with references, else phase 1).

    The same arithmetic as the run's interval: each replicate's fold-mean tests, their mean
    (phase 1) or the phase-2 score of them against ``references``.
    """
    if references is None:
        return np.nanmean(np.column_stack([reps.tests[t] for t in LEADERBOARD_TESTS]), axis=1)
    return phase2_score(reps.tests, references)


def slice_table(reps: Replicates, level: float = 0.95) -> pd.DataFrame:
    """Miss rate per group with its percentile interval, one row per (MRED test, group).

    Parameters
    ----------
    reps : Replicates
    level : float
        Coverage of the intervals.

    Returns
    -------
    pandas.DataFrame
        Columns ``test``, ``group`` (the label of the fold files; ``"(all)"`` for the slice's
        overall miss rate), ``label`` (a reader's name), ``n_users`` (over all folds),
        ``miss_rate``, ``ci_low``, ``ci_high``.
    """
    alpha = (1 - level) / 2
    rows = []
    for t, g in reps.groups.items():
        point, boot = reps.group_rates[t]
        sizes = [sum(int(np.count_nonzero(c == i)) for c in g.codes)
                 for i in range(len(g.labels))]
        sizes.append(sum(int(np.count_nonzero(m)) for m in g.in_mr))
        names = [*g.labels, "(all)"]
        for i, name in enumerate(names):
            column = boot[:, i][~np.isnan(boot[:, i])]
            low, high = (np.quantile(column, [alpha, 1 - alpha]) if len(column)
                         else (np.nan, np.nan))
            rows.append({"test": t, "group": name,
                         "label": "all users" if name == "(all)" else group_label(t, name),
                         "n_users": sizes[i], "miss_rate": float(point[i]),
                         "ci_low": float(low), "ci_high": float(high)})
    return pd.DataFrame(rows, columns=["test", "group", "label", "n_users", "miss_rate",
                                       "ci_low", "ci_high"])
