"""What the board's statistics make: one submission's part, and a board's reading.

Kept apart from their computation (``_reading``) so that what reads them back from the
database (``_snapshot``) needs none of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from evaluation.challenge import TeamReplicates
from evaluation.server.core import BoardStandings, RowCosts, RowStanding
from evaluation.standings import BoardReading


@dataclass(frozen=True)
class TeamStats:
    """One submission's part of the statistics, kept between boards.

    ``replicates`` is None when its values cannot be compared (``reason`` says why).
    """

    replicates: TeamReplicates | None
    reason: str | None
    trusted: bool
    user_hashes: tuple[str, ...]
    fold_sizes: tuple[int, ...]
    costs: RowCosts | None


@dataclass(frozen=True)
class Reading:
    """A board's statistics, as computed from its compared rows (in the board's order)."""

    teams: tuple[str, ...]
    reading: BoardReading
    group_scores: np.ndarray
    groups: tuple[str, ...]
    standings: BoardStandings
    rows: dict[str, RowStanding]
    #: Team -> the key its statistics are kept under (in ``StandingsCache.teams``).
    team_keys: Mapping[str, tuple] = field(default_factory=dict)
