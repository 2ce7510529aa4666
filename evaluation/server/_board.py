"""What the leaderboard shows: one row per team (its best submission) and the pinned baselines."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

#: Reproduction states a row can show (filled by the organizers' reproduction, later).
REPRODUCTION_STATES = ("pending", "reproduced", "not reproduced")


@dataclass(frozen=True)
class BoardRow:
    """One line of the board: a team's best submission of the phase, or a pinned baseline.

    ``rank`` counts teams only (1 = best); baselines have ``rank=None`` and sit at the place
    their score gives them. Scores and tests are None when the phase's scores are hidden.
    """

    team: str
    is_baseline: bool
    submission_id: int
    rank: int | None
    leaderboard_score: float | None
    interval: tuple[float, float] | None
    phase1_score: float | None
    tests: dict[str, float] | None
    submissions: int
    best_submitted: datetime
    last_submitted: datetime
    reproduction: str = "pending"
    flagged: bool = False


@dataclass(frozen=True)
class Board:
    """The board of one phase, ordered best first (baselines among the teams)."""

    competition: str
    phase: str
    phases: tuple[str, ...]
    public: bool
    rows: tuple[BoardRow, ...]
    generated_at: datetime
    tests: tuple[str, ...] = field(default=())
