"""Costs on the board: the cost–quality front with its uncertainty, and ties broken by cost.

The Pareto front of a board read on its point scores says which teams nothing dominates; with
costs (reproduction time, peak memory: lower is better) beside the group scores it is the
cost–quality front. A team just on it may owe its place to resampling noise: over the paired
bootstrap replicates of the group scores (and of the costs, when they come with replicates)
the share of replicates in which a team is on the front is its probability of being there.
"""

from __future__ import annotations

import numpy as np

from evaluation.errors import ConfigError

#: Replicates whose fronts are computed at once (bounds memory to chunk x teams²).
_FRONT_CHUNK = 32


def front_probability(group_replicates: np.ndarray, costs: np.ndarray | None = None, *,
                      cost_replicates: np.ndarray | None = None,
                      eligible: np.ndarray | None = None) -> np.ndarray:
    """Each team's probability of being on the cost–quality front, over paired replicates.

    In each replicate, a team is on the front when no other compared team is at least as good
    on every group and every cost and strictly better on one (groups: higher is better;
    costs: lower is better). The probability is the share of replicates where it is.

    Parameters
    ----------
    group_replicates : numpy.ndarray
        Shape ``(n_teams, n_groups, n_boot)``: each team's group scores on each paired
        resample (replicate r of every team on the same resampled users).
    costs : numpy.ndarray, optional
        Shape ``(n_teams, n_costs)``: measured costs taken as given numbers, the same in every
        replicate (e.g. reproduction seconds and peak MiB). NaN: not measured. Without them,
        the front over the groups alone.
    cost_replicates : numpy.ndarray, optional
        Shape ``(n_teams, n_costs, n_boot)``: the costs' own replicates (e.g. per-fold noise),
        used instead of ``costs`` when given.
    eligible : numpy.ndarray of bool, optional
        Teams that are compared (default: all). A team that is not, or whose costs are not
        all measured, is neither on the front nor dominates anyone: its probability is NaN.

    Returns
    -------
    numpy.ndarray
        Shape ``(n_teams,)``: probabilities in [0, 1], NaN for the teams not compared.

    Raises
    ------
    ConfigError
        When the shapes disagree or a group replicate is not finite.
    """
    groups = np.asarray(group_replicates, dtype=np.float64)
    if groups.ndim != 3:
        raise ConfigError(f"front_probability: group_replicates must have shape (n_teams, "
                          f"n_groups, n_boot); got {groups.shape}")
    n, _, n_boot = groups.shape
    cost = _cost_replicates(costs, cost_replicates, n, n_boot)
    if not np.isfinite(groups).all():
        raise ConfigError("front_probability: group replicates must be finite")
    compared = np.ones(n, dtype=bool) if eligible is None else np.asarray(eligible, dtype=bool)
    if compared.shape != (n,):
        raise ConfigError(f"front_probability: eligible must have one flag per team ({n}); "
                          f"got shape {compared.shape}")
    compared = compared & np.isfinite(cost).all(axis=(1, 2))
    out = np.full(n, np.nan)
    if not compared.any():
        return out
    # one array of objectives, higher is better: the groups, then the costs negated
    values = np.concatenate([groups[compared], -cost[compared]], axis=1)
    on_front = np.zeros(int(compared.sum()), dtype=np.int64)
    for start in range(0, n_boot, _FRONT_CHUNK):
        block = values[:, :, start:start + _FRONT_CHUNK].transpose(2, 0, 1)  # (r, team, obj)
        on_front += (~_dominated(block)).sum(axis=0)
    out[compared] = on_front / n_boot
    return out


def _cost_replicates(costs: np.ndarray | None, cost_replicates: np.ndarray | None, n: int,
                     n_boot: int) -> np.ndarray:
    """The costs as replicates of shape ``(n_teams, n_costs, n_boot)`` (NaN: not measured)."""
    if cost_replicates is not None:
        cost = np.asarray(cost_replicates, dtype=np.float64)
        if cost.ndim != 3 or cost.shape[0] != n or cost.shape[2] != n_boot:
            raise ConfigError(f"front_probability: cost_replicates must have shape "
                              f"(n_teams={n}, n_costs, n_boot={n_boot}); got {cost.shape}")
        return cost
    if costs is None:
        return np.zeros((n, 0, n_boot))
    cost = np.asarray(costs, dtype=np.float64)
    if cost.ndim != 2 or cost.shape[0] != n:
        raise ConfigError(f"front_probability: costs must have shape (n_teams={n}, n_costs); "
                          f"got {cost.shape}")
    return np.broadcast_to(cost[:, :, None], (*cost.shape, n_boot))


def _dominated(block: np.ndarray) -> np.ndarray:
    """``out[r, i]``: some team is at least as good as team i on every objective of
    replicate r and better on one (``block``: replicates x teams x objectives)."""
    n_reps, n, n_objectives = block.shape
    at_least = np.ones((n_reps, n, n), dtype=bool)  # [r, j, i]: j >= i everywhere
    for k in range(n_objectives):
        v = block[:, :, k]
        at_least &= v[:, :, None] >= v[:, None, :]
    # j >= i everywhere and better somewhere: j >= i everywhere, and not i >= j everywhere
    return np.any(at_least & ~at_least.transpose(0, 2, 1), axis=1)


def cost_order(tier: np.ndarray, costs: np.ndarray) -> np.ndarray:
    """The board's order with the teams of each tier ordered by cost.

    Tiers are runs of consecutive places down the official order; within each, the teams
    are put in the order of their costs (the first column first, the next breaking its ties,
    lower first), a team without a measured cost after those with one, and the official
    order breaking what remains. The tiers themselves do not move.

    Parameters
    ----------
    tier : numpy.ndarray of int
        Each team's tier, the teams in the official order.
    costs : numpy.ndarray
        Shape ``(n_teams,)`` or ``(n_teams, n_costs)``: lower is better; NaN: not measured.

    Returns
    -------
    numpy.ndarray of int
        Team indices (into the official order) from first to last place.

    Raises
    ------
    ConfigError
        When the shapes disagree.
    """
    tier = np.asarray(tier, dtype=np.int64)
    cost = np.asarray(costs, dtype=np.float64)
    cost = cost[:, None] if cost.ndim == 1 else cost
    if tier.ndim != 1 or cost.ndim != 2 or len(cost) != len(tier):
        raise ConfigError(f"cost_order: costs must have one row per team ({len(tier)}); got "
                          f"shape {np.shape(costs)}")
    unmeasured = np.asarray(~np.isfinite(cost).all(axis=1))
    # np.lexsort sorts by the last key first: tier, then measured before not, then the costs
    keys: list[np.ndarray] = [np.arange(len(tier), dtype=np.float64)]
    keys += [np.where(unmeasured, 0.0, cost[:, k]) for k in range(cost.shape[1] - 1, -1, -1)]
    keys += [unmeasured.astype(np.float64), tier.astype(np.float64)]
    return np.lexsort(keys)
