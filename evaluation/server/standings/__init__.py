"""A board's paired statistics: computed in the background, read by each board request.

It owns the statistics of a board (tiers, rank intervals, win probabilities, costs) computed
from the organizers' (trusted) per-user values on the competition's test users and cached per
submission, their copy in the database for a restart, the background thread of each
database that computes them at most once per interval, and what a board or team request
shows meanwhile: the latest complete reading, marked as being updated when it is stale; and
the tiers a board would show if a rescore were applied.
"""

from __future__ import annotations

from evaluation.server.standings._now import board_now, board_with_standings, standing_of
from evaluation.server.standings._reading import (
    BASELINE,
    MAX_RESAMPLE_BYTES,
    NO_VALUES,
    OTHER_USERS,
    StoreValues,
    cache_of,
    team_standing,
    with_standings,
)
from evaluation.server.standings._robustness import board_robustness
from evaluation.server.standings._whatif import with_tiers
from evaluation.server.standings._worker import (
    FRESH_WAIT_S,
    StandingsWorker,
    Target,
    standings_changes,
    stop_standings,
)

__all__ = [
    "BASELINE",
    "FRESH_WAIT_S",
    "MAX_RESAMPLE_BYTES",
    "NO_VALUES",
    "OTHER_USERS",
    "StandingsWorker",
    "StoreValues",
    "Target",
    "board_now",
    "board_robustness",
    "board_with_standings",
    "cache_of",
    "standing_of",
    "standings_changes",
    "stop_standings",
    "team_standing",
    "with_standings",
    "with_tiers",
]
