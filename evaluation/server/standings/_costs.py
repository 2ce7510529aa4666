"""The costs a board compares by: measured by the organizers' reproduction, never reported.

The cost–quality front and the ``tie_break = "cost"`` order read two costs of a row: its
reproduction time (training plus prediction, means over folds) and its peak memory, both only
when the organizers measured them (a reproduction's); a self-reported or missing cost is not
measured (NaN), and such a team is not on the front and comes last in its tier.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from evaluation.server.core import Board, RowCosts
from evaluation.standings import cost_order

#: The costs compared, in the order they break ties.
MEASURED_COSTS = ("reproduction seconds (train + predict, mean over folds)",
                  "peak memory (MiB, mean over folds)")


def measured_costs(costs: RowCosts | None) -> tuple[float, float]:
    """A row's reproduction seconds and peak MiB as measured by the organizers (NaN where not
    measured: no costs, self-reported ones, or a fold without one)."""
    if costs is None or not costs.trusted:
        return (float("nan"), float("nan"))
    time = (float("nan") if costs.train_seconds is None or costs.predict_seconds is None
            else costs.train_seconds + costs.predict_seconds)
    peak = float("nan") if costs.peak_rss_mib is None else costs.peak_rss_mib
    return (time, peak)


def tiers_by_cost(board: Board) -> Board:
    """``board`` with the rows of each tier ordered by measured cost, when its statistics say
    ``tie_break = "cost"`` (unchanged otherwise).

    The rows of one tier keep the places (and ranks) the official order gives the tier; only
    which row holds which of them changes: lower reproduction time first, then lower peak
    memory, rows without measured costs last, the official order breaking what remains. Rows
    without a tier (left out, being computed, baselines) do not move.
    """
    if board.standings is None or board.standings.tie_break != "cost":
        return board
    rows = list(board.rows)
    places: dict[int, list[int]] = {}
    for k, row in enumerate(rows):
        standing = row.standing
        if standing is not None and standing.tier is not None and not row.is_baseline:
            places.setdefault(standing.tier, []).append(k)
    for tier_places in places.values():
        members = [rows[k] for k in tier_places]
        costs = np.array([measured_costs(r.standing.costs if r.standing else None)
                          for r in members]).reshape(len(members), len(MEASURED_COSTS))
        order = cost_order(np.zeros(len(members), dtype=np.int64), costs)
        for k, j in zip(tier_places, order):
            rows[k] = replace(members[j], rank=board.rows[k].rank)
    return replace(board, rows=tuple(rows))
