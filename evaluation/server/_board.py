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
    their score gives them. When the phase's scores are hidden, nothing in the row tells which
    of the team's submissions scores best: scores, tests, ``submission_id`` and
    ``best_submitted`` are None, ``flagged`` is False and ``reproduction`` is "hidden". The
    private scores (the model on the organizers' private folds) are None until the phase is
    revealed, and for a submission that was not reproduced on the private folds.
    """

    team: str
    is_baseline: bool
    submission_id: int | None
    rank: int | None
    leaderboard_score: float | None
    interval: tuple[float, float] | None
    phase1_score: float | None
    tests: dict[str, float] | None
    submissions: int
    best_submitted: datetime | None
    last_submitted: datetime
    reproduction: str = "pending"
    flagged: bool = False
    private_score: float | None = None
    private_interval: tuple[float, float] | None = None
    private_phase1_score: float | None = None


@dataclass(frozen=True)
class Board:
    """The board of one phase, ordered best first (baselines among the teams).

    ``revealed``: the organizers revealed the phase's private scores; the rows are then
    ranked by the private score (then the public one), rows without one after the others.
    """

    competition: str
    phase: str
    phases: tuple[str, ...]
    public: bool
    rows: tuple[BoardRow, ...]
    generated_at: datetime
    tests: tuple[str, ...] = field(default=())
    revealed: bool = False
    published: bool = False
