"""A board's paired statistics: computed in the background, read by each board request.

It owns the statistics of a board (tiers, rank intervals, win probabilities, costs) computed
from the stored per-user values and cached per submission, the background thread of each
database that computes them at most once per interval, and what a board or team request
shows meanwhile: the latest complete reading, marked as being updated when it is stale.
"""

from __future__ import annotations

from evaluation.server.standings._now import board_now, board_with_standings, standing_of
from evaluation.server.standings._reading import (
    BASELINE,
    NO_VALUES,
    OTHER_USERS,
    StoreValues,
    cache_of,
    team_standing,
    with_standings,
)
from evaluation.server.standings._worker import (
    FRESH_WAIT_S,
    StandingsWorker,
    Target,
    stop_standings,
)

__all__ = [
    "BASELINE",
    "FRESH_WAIT_S",
    "NO_VALUES",
    "OTHER_USERS",
    "StandingsWorker",
    "StoreValues",
    "Target",
    "board_now",
    "board_with_standings",
    "cache_of",
    "standing_of",
    "stop_standings",
    "team_standing",
    "with_standings",
]
