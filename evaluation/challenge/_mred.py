"""Miss-rate equality difference (MRED): how evenly a model misses across the groups of a slice.

A slice groups test users by integer codes (a country, an activity bin, ...); MRED is
``-mean_g |MR_g - MR|`` over its groups, 0 when every group is missed as often as all users.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from evaluation.errors import ScoringWarning


class SliceMissRates(dict):
    """Miss rate of each group of a slice (``{label: MR_g}``), plus the slice's MRED.

    A plain ``dict`` of group label -> miss rate, so that reclist draws it as a bar chart and
    dumps it as JSON; the scalar and the counts ride along as attributes:
    ``value`` (the MRED, ``-mean_g |MR_g - MR|``), ``miss_rate`` (MR over the users the slice
    considers), ``counts`` (users per group), ``n_users`` (users considered), ``n_ungrouped``
    (considered users in no group, e.g. without a gender). ``result["mred"]`` and
    ``result["mr"]`` read the MRED and MR, as 2022 code did with its dict.
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

    def __missing__(self, key: object) -> float:
        """``result["mr"]`` and ``result["mred"]``: the keys of the 2022 slice-test dict."""
        if key == "mr":
            return self.miss_rate
        if key == "mred":
            return self.value
        raise KeyError(key)

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
    """The unpickled :class:`SliceMissRates`."""
    return SliceMissRates(rates, value=value, miss_rate=miss_rate, counts=counts,
                          n_users=n_users, n_ungrouped=n_ungrouped)


def mred_from_codes(missed, codes, labels: Sequence, considered=None,
                    *, name: str = "slice") -> SliceMissRates:
    """MRED of a slice given per-user group codes.

    Groups without users are not part of the mean; a slice without users warns
    (``ScoringWarning``) and has MRED 0.0.

    Parameters
    ----------
    missed : array-like of bool
        Whether each user's target was missed.
    codes : array-like of int
        Index into ``labels`` per user; ``-1``: the user counts in MR but in no group.
    labels : sequence
        The group labels.
    considered : array-like of bool, optional
        Users to look at (default all); the others are left out of MR and every MR_g.
    name : str
        The slice's name, for the warning.

    Returns
    -------
    SliceMissRates
        Each group's miss rate, with the MRED, MR and the user counts.
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
        {str(labels[int(g)]): float(r) for g, r in zip(present, rates)},
        value=value,
        miss_rate=mr,
        counts={str(labels[int(g)]): int(counts[g]) for g in present},
        n_users=n,
        n_ungrouped=int((~grouped).sum()),
    )


def miss_rate_equality_difference(missed, groups, *, considered=None) -> SliceMissRates:
    """MRED, ``-mean_g |MR_g - MR|``, over the groups of ``groups`` (one label per user).

    Parameters
    ----------
    missed : array-like of bool
        Whether each user's target was missed (``hit_ranks(...) == 0``).
    groups : array-like or pandas.Categorical
        One label per user; a missing label (None/NaN) counts the user in MR but in no group.
        Groups appear in sorted label order, or in category order for a ``pd.Categorical``.
    considered : array-like of bool, optional
        Users to look at (default all).

    Returns
    -------
    SliceMissRates
    """
    if isinstance(groups, pd.Categorical):
        codes, labels = groups.codes, list(groups.categories)
    else:
        codes, labels = pd.factorize(pd.Series(groups, dtype=object), sort=True)
        labels = list(labels)
    return mred_from_codes(missed, codes, labels, considered, name="miss_rate_equality_difference")


def bin_by_edges(values, edges: Sequence[int]) -> tuple[np.ndarray, tuple[str, ...]]:
    """Group codes of ``values`` binned by their lower edge, and the group labels.

    Parameters
    ----------
    values : array-like
        Counts to bin.
    edges : sequence of int
        Increasing lower edges of the bins.

    Returns
    -------
    codes : numpy.ndarray
        Code 0 (label ``"0"``) for values below the first edge (no plays at all); code ``i``
        for values in ``[edges[i-1], edges[i])``, the last bin being open-ended.
    labels : tuple of str
        ``("0", *edges)`` as strings.
    """
    lower_edges = np.asarray(edges)
    codes = np.searchsorted(lower_edges, np.asarray(values), side="right")
    return codes, ("0", *(str(int(e)) for e in lower_edges))
