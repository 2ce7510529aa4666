"""Beyond one weighted score: the Pareto front over the score's groups, the group weights that
put each team first, and a consensus ranking over the tests."""

from __future__ import annotations

import numpy as np

#: Tolerance of the geometry on the weight simplex.
_EPS = 1e-12


def pareto_front(groups: np.ndarray) -> np.ndarray:
    """Which teams no other team dominates on every group at once.

    Parameters
    ----------
    groups : numpy.ndarray
        Shape ``(n_teams, n_groups)``: each team's group scores, higher is better.

    Returns
    -------
    numpy.ndarray of bool
        ``True`` for the teams on the front: no other team is at least as good on every group
        and better on one.
    """
    g = np.asarray(groups, dtype=np.float64)
    at_least = (g[:, None, :] >= g[None, :, :]).all(axis=2)
    better = (g[:, None, :] > g[None, :, :]).any(axis=2)
    dominated_by = at_least & better  # [j, i]: j dominates i
    return ~np.any(dominated_by, axis=0)


def first_place_weights(groups: np.ndarray) -> list[np.ndarray | None]:
    """For each team, the group weights under which its weighted score ranks first.

    Weights are non-negative and sum to 1 (the official weights, divided by their sum, are one
    such point). With three groups the set where a team ranks first (ties included) is a
    convex polygon of the weight triangle: it is returned as its corners; with two groups, a
    segment; with one group, the single point when the team is the best.

    Parameters
    ----------
    groups : numpy.ndarray
        Shape ``(n_teams, n_groups)`` with ``n_groups`` in 1..3.

    Returns
    -------
    list of numpy.ndarray or None
        Per team, the corners (shape ``(n_corners, n_groups)``, weights summing to 1) of the
        region where it ranks first, or None when no weights put it first.

    Raises
    ------
    ValueError
        With more than three groups.
    """
    g = np.asarray(groups, dtype=np.float64)
    n_teams, n_groups = g.shape
    if not 1 <= n_groups <= 3:
        raise ValueError(f"first_place_weights handles 1 to 3 groups; got {n_groups}")
    corners = np.eye(n_groups)
    out: list[np.ndarray | None] = []
    # weights are non-negative: a team at least as good on every group as team i never cuts
    # i's region (the clip would keep every corner as it is), so only the others are asked
    cuts = np.asarray((g[None, :, :] > g[:, None, :]).any(axis=2))  # [i, j]: j better somewhere
    for i in range(n_teams):
        region = corners
        for j in np.flatnonzero(cuts[i]):
            region = _clip(region, g[i] - g[j])
            if not len(region):
                break
        out.append(_distinct(region) if len(region) else None)
    return out


def region_share(corners: np.ndarray | None) -> float:
    """The share of the weight triangle (three groups) that a region of corners covers."""
    if corners is None or len(corners) < 3:
        return 0.0
    x, y = corners[:, 0], corners[:, 1]  # (w1, w2) parametrise the triangle of area 1/2
    area = 0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))
    return float(area / 0.5)


def borda(tests: np.ndarray) -> np.ndarray:
    """Borda points over the tests: per test, one point for each team ranked below (a tie, half).

    Parameters
    ----------
    tests : numpy.ndarray
        Shape ``(n_teams, n_tests)``: each team's test values, higher is better (NaN: the test
        is left out for every team).

    Returns
    -------
    numpy.ndarray
        Each team's points; sort them descending for the consensus ranking.
    """
    t = np.asarray(tests, dtype=np.float64)
    t = t[:, ~np.isnan(t).any(axis=0)]
    below = (t[:, None, :] > t[None, :, :]).sum(axis=(1, 2))
    tied = (t[:, None, :] == t[None, :, :]).sum(axis=(1, 2)) - t.shape[1]
    return below + 0.5 * tied


def _clip(polygon: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """The part of a convex polygon (corners in order) where ``w @ normal >= 0``."""
    values = polygon @ normal
    if len(polygon) == 1:
        return polygon if values[0] >= -_EPS else polygon[:0]
    if (values >= -_EPS).all():  # every corner kept, no edge crosses: the polygon itself
        return polygon
    kept: list[np.ndarray] = []
    n = len(polygon)
    closed = n > 2
    for k in range(n if closed else n - 1):
        a, b = polygon[k], polygon[(k + 1) % n]
        va, vb = values[k], values[(k + 1) % n]
        if va >= -_EPS:
            kept.append(a)
        if (va > _EPS and vb < -_EPS) or (va < -_EPS and vb > _EPS):
            kept.append(a + (b - a) * (va / (va - vb)))
    if not closed and values[-1] >= -_EPS:
        kept.append(polygon[-1])
    return np.array(kept).reshape(-1, polygon.shape[1])


def _distinct(points: np.ndarray) -> np.ndarray:
    """``points`` without repeats (within the tolerance), in their order."""
    out: list[np.ndarray] = []
    for p in points:
        if not any(np.abs(p - q).max() <= 1e-9 for q in out):
            out.append(p)
    return np.array(out)
