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
#: Up to this many teams, every pair is asked at once (beyond, team by team).
_ALL_PAIRS_TEAMS = 48
#: A team's strongest rivals, asked first of every replicate.
_FIRST_RIVALS = 8


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
    # one array of objectives, higher is better: the groups, then the costs negated; costs
    # given as numbers are the same in every replicate: compared once, not per replicate
    if cost_replicates is None:
        values = groups[compared]
        fixed = _fixed_relations(-cost[compared][:, :, 0])
    else:
        values = np.concatenate([groups[compared], -cost[compared]], axis=1)
        fixed = _fixed_relations(np.zeros((len(values), 0)))
    if len(values) > _ALL_PAIRS_TEAMS:
        on_front = (~_dominated_each(values, fixed)).sum(axis=0)
    else:
        on_front = np.zeros(len(values), dtype=np.int64)
        for start in range(0, n_boot, _FRONT_CHUNK):
            block = values[:, :, start:start + _FRONT_CHUNK].transpose(2, 0, 1)
            on_front += (~_dominated_by(block, fixed)).sum(axis=0)  # block: (r, team, obj)
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


def _dominated_each(values: np.ndarray, fixed: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """``out[r, i]``: some team is at least as good as team i on every objective of
    replicate r and better on one (``values``: teams x the objectives that vary by replicate
    x replicates; ``fixed``: ``[j, i]``, j is at least / at most as good as i on every
    objective that does not, such as measured costs).

    Team by team, over all replicates at once: only the rivals the fixed objectives allow
    are asked, the strongest (by their mean objectives) first; the replicates where none of
    those dominates are asked of the others. The answer is the same, pair by pair, as asking
    every team, at a fraction of the teams² comparisons per replicate.
    """
    at_least_fixed, at_most_fixed = fixed
    order = np.argsort(-values.mean(axis=2).sum(axis=1), kind="stable")
    ranks = _dense_ranks(values)  # the same order as the values, in fewer bytes to gather
    out = np.zeros((values.shape[2], len(values)), dtype=bool)
    for i in range(len(values)):
        rivals = order[at_least_fixed[order, i] & (order != i)]
        first, rest = rivals[:_FIRST_RIVALS], rivals[_FIRST_RIVALS:]
        mine = ranks[i]
        dominated = _dominated_among(ranks[first], mine, at_most_fixed[first, i])
        if len(rest) and not dominated.all():
            left = np.flatnonzero(~dominated)
            theirs = ranks[rest] if len(left) == len(dominated) else ranks[rest][:, :, left]
            dominated[left] = _dominated_among(theirs, mine[:, left], at_most_fixed[rest, i])
        out[:, i] = dominated
    return out


def _dense_ranks(values: np.ndarray) -> np.ndarray:
    """Per objective and replicate, each team's dense rank among the teams (0: the lowest;
    equal values, equal ranks): ``ranks[j] >= ranks[i]`` exactly when ``values[j] >=
    values[i]`` (``values``: teams x objectives x replicates, no NaN)."""
    order = np.argsort(values, axis=0, kind="stable")
    ordered = np.take_along_axis(values, order, axis=0)
    steps = np.concatenate([np.zeros((1, *values.shape[1:]), dtype=np.int64),
                            (ordered[1:] != ordered[:-1]).cumsum(axis=0)])
    ranks = np.empty(values.shape, dtype=np.uint8 if len(values) <= 256 else np.int32)
    np.put_along_axis(ranks, order, steps.astype(ranks.dtype), axis=0)
    return ranks


def _dominated_among(theirs: np.ndarray, mine: np.ndarray, at_most_fixed: np.ndarray
                     ) -> np.ndarray:
    """Per replicate, whether one of the rivals ``theirs`` (rivals x objectives x
    replicates), each at least as good as the team on the fixed objectives, dominates the
    team (``mine``: objectives x replicates; ``at_most_fixed``: per rival, the team is at
    least as good on the fixed objectives)."""
    at_least = np.ones((theirs.shape[0], theirs.shape[2]), dtype=bool)  # rival >= team
    at_most = np.repeat(at_most_fixed[:, None], theirs.shape[2], axis=1)  # team >= rival
    for k in range(theirs.shape[1]):
        at_least &= theirs[:, k] >= mine[k]
        at_most &= theirs[:, k] <= mine[k]
    return np.any(at_least & ~at_most, axis=0)


def _dominated_by(block: np.ndarray, fixed: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """``out[r, i]``: some team dominates team i in replicate r, every pair asked at once
    (``block``: replicates x teams x the objectives that vary by replicate; ``fixed`` as for
    ``_dominated_each``)."""
    shape = (block.shape[0], block.shape[1], block.shape[1])
    at_least = np.broadcast_to(fixed[0], shape).copy()  # [r, j, i]: j >= i everywhere
    at_most = np.broadcast_to(fixed[1], shape).copy()  # [r, j, i]: i >= j everywhere
    for k in range(block.shape[2]):
        v = block[:, :, k]
        at_least &= v[:, :, None] >= v[:, None, :]
        at_most &= v[:, :, None] <= v[:, None, :]
    # j >= i everywhere and better somewhere: j >= i everywhere, and not i >= j everywhere
    return np.any(at_least & ~at_most, axis=1)


def _fixed_relations(fixed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``[j, i]``: team j is at least / at most as good as team i on every column of
    ``fixed`` (teams x objectives the same in every replicate, higher is better)."""
    at_least = np.asarray((fixed[:, None, :] >= fixed[None, :, :]).all(axis=2))
    at_most = np.asarray((fixed[:, None, :] <= fixed[None, :, :]).all(axis=2))
    return at_least, at_most


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
