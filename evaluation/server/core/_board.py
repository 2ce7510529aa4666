"""What the leaderboard shows: one row per team (its best submission) and the pinned baselines."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

#: Reproduction states a row can show (filled by the organizers' reproduction, later).
REPRODUCTION_STATES = ("pending", "reproduced", "not reproduced")


#: Where a team's per-user values come from: a reproduction, the upload, or nowhere; "not read
#: yet" while its statistics are being computed.
VALUES_STATES = ("trusted", "self-reported", "missing", "not read yet")


@dataclass(frozen=True)
class RowCosts:
    """What a team's run cost, per fold and as the mean over folds (None where unknown).

    ``trusted``: measured by the organizers' reproduction; else reported by the upload.
    """

    train_seconds: float | None
    predict_seconds: float | None
    peak_rss_mib: float | None
    train_seconds_per_fold: tuple[float | None, ...]
    predict_seconds_per_fold: tuple[float | None, ...]
    peak_rss_mib_per_fold: tuple[float | None, ...]
    trusted: bool


@dataclass(frozen=True)
class RowStanding:
    """What the paired statistics say of one row of the board.

    Attributes
    ----------
    values : str
        One of ``VALUES_STATES``: whose per-user values the statistics used.
    left_out : str or None
        Why the row is not among the compared teams (None when it is).
    tier : int or None
        1 for the teams that cannot be told apart from the leader, then down the board.
    rank_interval : tuple of int or None
        The best and worst place the team may really hold among the compared teams.
    pareto : bool or None
        No compared team is at least as good on every group of the score and better on one.
    first_place : bool or None
        Some group weights (non-negative, summing to 1) rank it first, ties included.
    first_place_share : float or None
        The share of the group weights (the weight triangle) under which it would rank
        first; 0 when no weights do (or only a set without area, such as an edge).
    borda_rank : int or None
        Its place in the consensus ranking over the tests (Borda).
    costs : RowCosts or None
    being_computed : bool
        Its statistics are being computed (its submission or values are newer than the
        reading the board shows): no tier, no interval until they are.
    """

    values: str
    left_out: str | None = None
    tier: int | None = None
    rank_interval: tuple[int, int] | None = None
    pareto: bool | None = None
    first_place: bool | None = None
    first_place_share: float | None = None
    borda_rank: int | None = None
    costs: RowCosts | None = None
    being_computed: bool = False


@dataclass(frozen=True)
class BoardStandings:
    """How the board's statistics were made, and what they compare.

    Attributes
    ----------
    score : str
        The score compared: ``leaderboard_score``, or ``private_score`` on a revealed board.
    level : float
        Joint coverage: the chance of any wrong call on the whole board is at most
        ``1 - level``.
    min_difference : float
        Score differences below it are ties however significant.
    n_boot, seed : int
        Paired bootstrap replicates and the seed of their resampling.
    method : str
        The procedure, in words.
    compared : int
        The teams compared (rank intervals run from 1 to it).
    groups : tuple of str
        The score's groups (the Pareto front's axes).
    updating : bool
        The statistics are being computed in the background: those shown (if any) are of the
        board as it was at ``as_of``, and only on the rows that have not changed since.
    as_of : datetime or None
        The time of the board the statistics shown were computed for (None: none yet).
    progress : tuple of int or None
        While updating: the teams whose replicates are computed, of those the new reading
        needs.
    unavailable : str or None
        Why the statistics could not be computed ("statistics unavailable: ..."), else None.
    scope : str
        What the guarantee covers: only the rows whose per-user values the organizers
        computed are compared.
    compared_users : str
        Which test users are compared, and why those.
    """

    score: str
    level: float
    min_difference: float
    n_boot: int
    seed: int
    method: str
    compared: int
    groups: tuple[str, ...]
    updating: bool = False
    as_of: datetime | None = None
    progress: tuple[int, int] | None = None
    unavailable: str | None = None
    scope: str = ""
    compared_users: str = ""


@dataclass(frozen=True)
class FactSheet:
    """A final selection's fact sheet (checked by ``read_fact_sheet``): what the team says of
    its method, and where its code is.

    Attributes
    ----------
    description : str
        The method, in plain text (line breaks allowed).
    code_url : str
        Where the code is (http or https).
    commit : str
        The commit of the code that made the submission (7 to 40 lowercase hex digits).
    """

    description: str
    code_url: str
    commit: str


@dataclass(frozen=True)
class BoardRow:
    """One line of the board: a team's best submission of the phase, or a pinned baseline.

    ``rank`` counts teams only (1 = best); baselines have ``rank=None`` and sit at the place
    their score gives them. When the phase's scores are hidden, nothing in the row tells which
    of the team's submissions scores best: scores, tests, ``submission_id`` and
    ``best_submitted`` are None, ``flagged`` is False and ``reproduction`` is "hidden". The
    private scores (the model on the organizers' private folds) are None until the phase is
    revealed, and for a submission that was not reproduced on the private folds.

    ``computed``: the row's scores are the organizers' own (a scoring job scored the uploaded
    predictions with their data, or a pinned baseline). Only computed rows are ranked and
    enter the paired statistics (tiers, intervals, win probabilities, the Pareto front) and
    their guarantee; a row that is not is a team's claim (unverified, or a prediction upload
    not yet scored), shown apart, after the computed rows, with ``rank=None``.

    ``carried_from``: the earlier phase the row's submission was carried from when this phase
    opened (None: uploaded to this phase). ``fact_sheet``: what the team said of the method
    and where its code is, given at final selection; None on the board until the phase is
    revealed (organizers see it before).
    ``harness_version``: the harness version that computed the row's scores (None: not
    known). After an organizers' rescore, ``previous_*`` are the numbers of the version
    before, until the organizers drop them.
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
    standing: RowStanding | None = None
    computed: bool = True
    carried_from: str | None = None
    fact_sheet: FactSheet | None = None
    harness_version: str | None = None
    previous_harness_version: str | None = None
    previous_score: float | None = None
    previous_phase1_score: float | None = None


@dataclass(frozen=True)
class Board:
    """The board of one phase, ordered best first (baselines among the teams).

    ``revealed``: the organizers revealed the phase's private scores; the rows are then
    ranked by the private score (then the public one), rows without one after the others.
    ``standings``: the paired statistics of its rows (each row's ``standing``), None when
    they were not asked for or the scores are hidden.
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
    standings: BoardStandings | None = None


def guarantee(board: Board) -> str:
    """Which rows the board's guarantee covers, in one sentence (the page, the JSON and the
    CSV's documentation say it)."""
    level = board.standings.level if board.standings is not None else None
    chance = f"at most a {1 - level:.0%} chance of any wrong call" if level is not None \
        else "its error control"
    return (f"The board's guarantee ({chance} on the tiers, rank intervals, win "
            f"probabilities and Pareto front) covers the computed rows only: scores the "
            f"organizers computed from the uploaded predictions with their data (computed = "
            f"true). Rows with computed = false are the teams' own claims, unverified: never "
            f"ranked, never compared.")


@dataclass(frozen=True)
class Opponent:
    """One other compared team, as a team's page shows it.

    ``win_probability``: the share of paired replicates in which the page's team scores
    above this one (ties half). ``told_apart``: "above" when the page's team beats it (more
    than the minimum practical difference, board-wide error controlled), "below" when it
    beats the page's team, "tied" otherwise.
    """

    team: str
    rank: int | None
    tier: int
    win_probability: float
    told_apart: str


@dataclass(frozen=True)
class FrontMember:
    """A compared team's group scores, whether it is on the Pareto front, and the share of
    group weights under which it would rank first."""

    team: str
    group_scores: tuple[float, ...]
    pareto: bool
    first_place_share: float


@dataclass(frozen=True)
class TeamStanding:
    """A team's page: its row, its pairwise win probabilities and its place on the front.

    ``standings`` is None when the board has no statistics (hidden scores): then nothing
    else is filled but the row as the board shows it.
    """

    competition: str
    phase: str
    team: str
    row: BoardRow
    standings: BoardStandings | None
    opponents: tuple[Opponent, ...] = ()
    groups: tuple[str, ...] = ()
    teams: tuple[FrontMember, ...] = ()
    dominated_by: tuple[str, ...] = ()
