"""The board's paired statistics: which of its differences are real, gathered and cached.

The statistics follow the board's own rows: each team's row (its best public submission, or on
a revealed board its final selection with the best private score) in the board's order. They
read only per-user values the organizers computed (trusted rows: a reproduction's, a pinned
baseline's, the organizers' scoring, whatever their source): an upload's own values never
give a tier, a rank interval, a win probability or a place on the Pareto front.

Every team is scored on the same resamples of the same test users, so that the comparisons are
paired. The users are the competition's folds as the phase's first trusted row gives them
(``compared_users``): never a vote of the rows. A trusted row on other users is left out, and
its fold sizes are compared before anything is drawn for it; the resamples are drawn once per
process from the ``[board]`` seed for those users only, within ``MAX_RESAMPLE_BYTES``. A team's
replicate scores depend only on its own per-user values and the resamples: they are computed
once per submission (and per values, seed, replicates, references and users) and kept, so that
after a new trusted row only its team's replicates are computed; the board's reading is kept
until a row changes.

A row without trusted per-user values (not yet computed by the organizers, a baseline, no
private score, other test users than the board's) is left out of the comparisons, with the
reason shown. Nothing is computed for a board whose scores are hidden: the answer cannot depend
on them.

The board's requests do not compute here: a background thread does (``_worker``),
and a request shows the latest reading it made (``_now``).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Container, Hashable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

import numpy as np
from sqlalchemy import and_, case, func, select

from evaluation.challenge import (
    GATED_SCORE,
    LEADERBOARD_TESTS,
    PairedResamples,
    References,
    TeamReplicates,
    paired_resamples,
    team_replicates,
)
from evaluation.errors import ConfigError, EvalRSError
from evaluation.server.core import (
    Board,
    BoardRow,
    BoardSettings,
    BoardStandings,
    FrontMember,
    Opponent,
    RowCosts,
    RowStanding,
    TeamStanding,
    references_sha256,
)
from evaluation.server.db import UserValuesRow
from evaluation.server.standings._costs import measured_costs, tiers_by_cost
from evaluation.server.standings._results import Reading, TeamStats
from evaluation.server.store import ComparedUsers, UserValues, compared_users, phase_user_values
from evaluation.standings import METHOD, front_probability, read_board

if TYPE_CHECKING:  # annotations only: a function's handle on the database
    from evaluation.server.db import Database

#: Submissions' replicates kept per process (about 32 KiB each at 1000 replicates and three
#: groups, so at most ~125 MiB): boards of hundreds of teams, with room for the submissions
#: they held before; the oldest kept go first.
MAX_CACHED_TEAMS = 4_000
#: Submissions whose per-user values are read (and held) at once.
VALUES_BATCH = 2
#: Resamples kept per process (each is n_boot x users bytes per fold, 120 MiB at full scale).
MAX_CACHED_RESAMPLES = 2
#: The most memory the resamples kept by one process may take (bytes): two full-scale sets
#: (public and private folds, 1000 replicates of ~120k users each), with room for the rare
#: fold whose counts need two bytes. They are drawn only for the users the board compares
#: (fixed by the organizers' first trusted row), never for what an upload declares.
MAX_RESAMPLE_BYTES = 384 << 20

BASELINE = "baseline: pinned on the board, not ranked"
NO_VALUES = ("not yet computed by the organizers: the statistics use only per-user values "
             "the organizers computed, never an upload's own")
NO_PRIVATE = "no private score"
OTHER_USERS = ("its per-user values are on other test users than the competition's folds "
               "the board compares")
#: What the statistics' guarantee covers (``BoardStandings.scope``).
SCOPE = ("only rows whose per-user values the organizers computed (a reproduction, a pinned "
         "baseline, the organizers' scoring) are compared, and the guarantee covers those rows "
         "only: an upload's own values never give a tier, a rank interval, a win probability "
         "or a place on the Pareto front")


def users_text(users: ComparedUsers | None) -> str:
    """Which test users the board compares, and why those (``BoardStandings.compared_users``).
    """
    if users is None:
        return ("none yet: the competition's folds are fixed by the organizers' first "
                "computation of a submission's per-user values")
    sizes = ", ".join(str(n) for n in users.fold_sizes)
    return (f"the competition's {len(users.fold_sizes)} folds ({sizes} test users), as the "
            f"organizers' first computation (submission {users.submission_id}) gives them: "
            f"every compared team is scored on the same users, so that the comparisons are "
            f"paired; a row on other users is left out, however many rows declare them")


class ValuesSource(Protocol):
    """Where the statistics read the submissions' per-user values."""

    def versions(self, phase: str, submission_ids: Sequence[int], private: bool
                 ) -> dict[int, Hashable]:
        """Submission id -> a token that changes whenever its values or costs change, for
        those that have values (cheap: no values read)."""

    def values(self, phase: str, submission_ids: Sequence[int], private: bool
               ) -> Mapping[int, UserValues]:
        """Submission id -> its per-user values, for those that have them."""

    def users(self, phase: str, private: bool) -> ComparedUsers | None:
        """The test users the board compares (None before any trusted values)."""


class StandingsCache:
    """The statistics kept by one store: resamples, teams' replicates, the boards' readings."""

    def __init__(self) -> None:
        # one team's computation at a time: two computations after an upload compute its
        # team once (re-entrant: a whole board's computation holds it around its teams')
        self.lock = threading.RLock()
        self.resamples: dict[tuple, PairedResamples] = {}
        self.teams: dict[tuple, TeamStats] = {}
        self.readings: dict[tuple, tuple[tuple, Reading]] = {}

    def resamples_for(self, settings: BoardSettings, sizes: tuple[int, ...]) -> PairedResamples:
        """The board's resamples for folds of ``sizes`` users, drawn once per process.

        Raises
        ------
        ConfigError
            When they would take more than ``MAX_RESAMPLE_BYTES`` (nothing is drawn).
        """
        key = (settings.seed, settings.n_boot, sizes)
        found = self.resamples.get(key)
        if found is None:
            need = resample_bytes(settings.n_boot, sizes)
            if need > MAX_RESAMPLE_BYTES:
                raise ConfigError(
                    f"the board's resamples of folds of {list(sizes)} test users would take "
                    f"{need / 2**20:.0f} MiB ({settings.n_boot} replicates), more than the "
                    f"{MAX_RESAMPLE_BYTES >> 20} MiB a server process keeps "
                    f"(MAX_RESAMPLE_BYTES); lower [board] n_boot")
            while self.resamples and (len(self.resamples) >= MAX_CACHED_RESAMPLES or need
                                      + sum(r.nbytes for r in self.resamples.values())
                                      > MAX_RESAMPLE_BYTES):
                self.resamples.pop(next(iter(self.resamples)))
            found = self.resamples[key] = paired_resamples(settings.seed, settings.n_boot, sizes)
        return found

    def keep(self, key: tuple, team: TeamStats) -> None:
        """Keep a team's statistics (the oldest go first beyond ``MAX_CACHED_TEAMS``)."""
        while len(self.teams) >= MAX_CACHED_TEAMS:
            self.teams.pop(next(iter(self.teams)))
        self.teams[key] = team


def resample_bytes(n_boot: int, sizes: Sequence[int]) -> int:
    """The memory the resamples of folds of ``sizes`` users take (one byte per count)."""
    return int(n_boot) * sum(int(n) for n in sizes)


class StoreValues:
    """The store's trusted per-user values (``user_values``) as the statistics read them."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def versions(self, phase: str, submission_ids: Sequence[int], private: bool
                 ) -> dict[int, Hashable]:
        """Submission id -> the id of its latest values row (any new row, values or costs,
        changes it), for the submissions with trusted values of that privacy."""
        ids = sorted({int(i) for i in submission_ids})
        if not ids:
            return {}
        row = UserValuesRow
        # the rows the statistics read: trusted ones, whatever their source (never an upload's)
        readable = and_(row.blob_sha256.is_not(None), row.trusted.is_(True),
                        row.private.is_(private))
        query = (select(row.submission_id, func.max(row.id),
                        func.max(case((readable, 1), else_=0)))
                 .where(row.submission_id.in_(ids), row.phase == phase)
                 .group_by(row.submission_id))
        with self.db.reading() as session:
            found = session.execute(query).all()
        return {int(sid): int(latest) for sid, latest, usable in found if usable}

    def values(self, phase: str, submission_ids: Sequence[int], private: bool
               ) -> Mapping[int, UserValues]:
        """Submission id -> its trusted per-user values and costs (``phase_user_values``)."""
        return phase_user_values(self.db, phase, submission_ids, private=private)

    def users(self, phase: str, private: bool) -> ComparedUsers | None:
        """The users the board compares: the phase's first trusted row's
        (``compared_users``)."""
        return compared_users(self.db, phase, private=private)


_CACHES: weakref.WeakKeyDictionary[Database, StandingsCache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def cache_of(db: Database) -> StandingsCache:
    """The statistics cache of a store (one per store object, made on first use)."""
    with _CACHES_LOCK:
        found = _CACHES.get(db)
        if found is None:
            found = _CACHES[db] = StandingsCache()
        return found


def with_standings(db: Database, board: Board, source: ValuesSource) -> Board:
    """``board`` with its paired statistics (``Board.standings`` and each row's ``standing``).

    Parameters
    ----------
    db : Database
        Its competition gives the phase's references and the ``[board]`` settings.
    board : Board
        A board of the store, rows in the official order.
    source : ValuesSource
        The submissions' per-user values.

    Returns
    -------
    Board
        Unchanged when its scores are hidden (nothing is computed from them).
    """
    reading = board_reading(db, board, source)
    if reading is None:
        return board
    rows = tuple(replace(row, standing=reading.rows.get(row.team, left_out(row, board)))
                 for row in board.rows)
    return tiers_by_cost(replace(board, rows=rows, standings=reading.standings))


def board_reading(db: Database, board: Board, source: ValuesSource) -> Reading | None:
    """The statistics of a board's rows (None when its scores are hidden), computed here."""
    if is_hidden(board):
        return None  # hidden: nothing may depend on the scores
    cache = cache_of(db)
    with cache.lock:
        versions = source.versions(board.phase, _ids(compared_rows(board)), board.revealed)
        users = source.users(board.phase, board.revealed)
        return compute_reading(db, board, source, versions, users)


def is_hidden(board: Board) -> bool:
    """Whether the board's scores are hidden (or it has no rows): no statistics then."""
    return not board.rows or any(row.leaderboard_score is None for row in board.rows)


def compared_rows(board: Board) -> list[BoardRow]:
    """The rows that may be compared (not a baseline, a score to rank by)."""
    return [row for row in board.rows if left_out(row, board) is None]


def compute_reading(db: Database, board: Board, source: ValuesSource,
                    versions: Mapping[int, Hashable], users: ComparedUsers | None,
                    progress: Callable[[int, int], None] | None = None) -> Reading:
    """The statistics of a board whose scores are shown, for its rows' values ``versions``.

    Parameters
    ----------
    db : Database
    board : Board
    source : ValuesSource
    versions : mapping
        ``source.versions`` of the board's compared rows, read before.
    users : ComparedUsers or None
        ``source.users`` of the board: the users compared (a row on others is left out).
    progress : callable, optional
        Called with (teams computed, teams to compute) after each team's replicates; it may
        raise to stop the computation (the teams computed are kept).
    """
    competition = db.require_competition()
    phase = competition.phase(board.phase)
    settings = competition.board
    cache = cache_of(db)
    candidates = compared_rows(board)
    refs_key = references_sha256(phase.references)
    teams, keys = _team_stats(cache, candidates, board, phase.references, settings, refs_key,
                              source, versions, users, progress)
    with cache.lock:
        made = _reading(cache, board, candidates, teams, settings,
                        settings.for_phase(phase.min_difference), refs_key, users)
    return replace(made, team_keys={row.team: keys[row.submission_id] for row in candidates
                                    if row.submission_id in teams})


def unvalued_reading(db: Database, board: Board, users: ComparedUsers | None = None
                     ) -> Reading:
    """The reading of a board none of whose rows has trusted per-user values: nothing to
    compute, every compared row left out for it (what ``compute_reading`` gives then)."""
    competition = db.require_competition()
    settings = competition.board
    standing = {row.team: RowStanding(values=_values_state(None), left_out=NO_VALUES)
                for row in compared_rows(board)}
    return _read(board, [], standing, settings,
                 settings.for_phase(competition.phase(board.phase).min_difference), users)


def empty_standings(db: Database, board: Board, users: ComparedUsers | None = None
                    ) -> BoardStandings:
    """How the board's statistics are made, before any is computed (no team compared)."""
    competition = db.require_competition()
    settings = competition.board
    return BoardStandings(
        score="private_score" if board.revealed else "leaderboard_score",
        level=settings.level,
        min_difference=settings.for_phase(competition.phase(board.phase).min_difference),
        n_boot=settings.n_boot, seed=settings.seed, method=METHOD, compared=0, groups=(),
        scope=SCOPE, compared_users=users_text(users), tie_break=settings.tie_break)


def row_inputs(board: Board, versions: Mapping[int, Hashable]
               ) -> dict[str, tuple[int, Hashable, float | None]]:
    """Team -> what its statistics are computed from (submission, values version, score),
    for the compared rows with per-user values."""
    return {row.team: (row.submission_id, versions[row.submission_id], _score(row, board))
            for row in compared_rows(board)
            if row.submission_id is not None and row.submission_id in versions}


def _ids(rows: Iterable[BoardRow]) -> list[int]:
    return [row.submission_id for row in rows if row.submission_id is not None]


def left_out(row: BoardRow, board: Board) -> RowStanding | None:
    """The standing of a row that cannot be compared for what it is (None otherwise)."""
    if row.is_baseline:
        return RowStanding(values="missing", left_out=BASELINE)
    if not row.computed:  # a claim: scores only, or predictions not scored yet
        return RowStanding(values="missing", left_out=NO_VALUES)
    if _score(row, board) is None:
        return RowStanding(values="missing", left_out=NO_PRIVATE)
    return None


def _score(row: BoardRow, board: Board) -> float | None:
    """The score the row ranks by: the private one on a revealed board."""
    return row.private_score if board.revealed else row.leaderboard_score


def _team_stats(cache: StandingsCache, rows: Sequence[BoardRow], board: Board,
                references: References, settings: BoardSettings, refs_key: str,
                source: ValuesSource, versions: Mapping[int, Hashable],
                users: ComparedUsers | None,
                progress: Callable[[int, int], None] | None = None
                ) -> tuple[dict[int, TeamStats], dict[int, tuple]]:
    """Submission id -> its statistics, computing only those not kept yet; and the key each
    is kept under."""
    ids = _ids(rows)
    fixed = _users_key(users)
    keys = {sid: (sid, board.revealed, versions[sid], settings.seed, settings.n_boot, refs_key,
                  fixed)
            for sid in ids if sid in versions}
    with cache.lock:
        missing = [sid for sid, key in keys.items() if key not in cache.teams]
    done = 0
    if progress is not None and missing:
        progress(done, len(missing))
    for start in range(0, len(missing), VALUES_BATCH):
        # two teams at a time: a full-scale team's values and the design matrices its
        # replicates are summed from take ~40 MiB, dropped once its replicates are kept
        batch = missing[start:start + VALUES_BATCH]
        values = source.values(board.phase, batch, board.revealed)
        for sid in batch:
            # one team at a time under the lock: another computation waits a team at most
            with cache.lock:
                if sid in values and keys[sid] not in cache.teams:
                    cache.keep(keys[sid], _compute(cache, values[sid], references, settings,
                                                   users))
            done += 1
            if progress is not None:
                progress(done, len(missing))
        del values
    with cache.lock:
        return ({sid: cache.teams[key] for sid, key in keys.items() if key in cache.teams},
                keys)


def _users_key(users: ComparedUsers | None) -> tuple | None:
    """The users compared, as a key of the teams' statistics (None: none fixed yet)."""
    return None if users is None else (users.users_sha256, users.fold_sizes)


def _compute(cache: StandingsCache, values: UserValues, references: References,
             settings: BoardSettings, users: ComparedUsers | None) -> TeamStats:
    """One submission's replicates and costs; none (with the reason) for values that are not
    trusted or not on the users compared, decided before any resample is drawn."""
    sizes = tuple(len(f) for f in values.folds)
    made = TeamStats(replicates=None, reason=None, trusted=bool(values.trusted),
                     user_hashes=tuple(values.user_hashes), fold_sizes=sizes,
                     costs=_costs(values))
    if not values.trusted:
        return replace(made, reason=NO_VALUES)
    if users is None or (made.user_hashes, sizes) != (users.users_sha256, users.fold_sizes):
        return replace(made, reason=OTHER_USERS)
    try:
        reps = team_replicates(values.folds, cache.resamples_for(settings, sizes), references)
    except EvalRSError as exc:
        return replace(made, reason=f"its per-user values cannot be scored: {exc}")
    if not (np.isfinite(reps.replicates).all() and np.isfinite(reps.group_replicates).all()):
        return replace(made, reason="its score is undefined on some resample (a test without "
                                    "a measured user)")
    return replace(made, replicates=reps)


def _costs(values: UserValues) -> RowCosts | None:
    """The costs per fold and their means over folds (None where a fold lacks one)."""
    if not values.costs:
        return None

    def column(name: str) -> tuple[float | None, ...]:
        return tuple(getattr(c, name) for c in values.costs or ())

    def mean(column: tuple[float | None, ...]) -> float | None:
        known = [v for v in column if v is not None]
        return None if len(known) < len(column) else float(np.mean(known))

    train, predict, peak = (column(n) for n in ("train_seconds", "predict_seconds",
                                                "peak_rss_mib"))
    return RowCosts(train_seconds=mean(train), predict_seconds=mean(predict),
                    peak_rss_mib=mean(peak), train_seconds_per_fold=train,
                    predict_seconds_per_fold=predict, peak_rss_mib_per_fold=peak,
                    trusted=bool(values.costs_trusted))


def _reading(cache: StandingsCache, board: Board, rows: Sequence[BoardRow],
             teams: Mapping[int, TeamStats], settings: BoardSettings, min_difference: float,
             refs_key: str, users: ComparedUsers | None) -> Reading:
    """The board's reading from its rows' statistics (kept until a row changes)."""
    compared, standing = [], {}
    for row in rows:
        stats = teams.get(row.submission_id) if row.submission_id is not None else None
        reason = _reason(stats)
        if reason is None and stats is not None:
            compared.append((row, stats))
        else:
            standing[row.team] = RowStanding(
                values=_values_state(stats), left_out=reason,
                costs=None if stats is None else stats.costs)
    # what the reading shows: a row's values, costs or reason changing makes it again
    signature = (tuple((row.team, row.submission_id, stats.trusted, stats.costs,
                        _score(row, board)) for row, stats in compared),
                 tuple(sorted(standing.items())), settings, min_difference, refs_key,
                 _users_key(users))
    key = (board.phase, board.revealed)
    kept = cache.readings.get(key)
    if kept is not None and kept[0] == signature:
        return kept[1]
    made = _read(board, compared, standing, settings, min_difference, users)
    cache.readings[key] = (signature, made)
    return made


def _reason(stats: TeamStats | None) -> str | None:
    """Why a row with these statistics is not compared (None when it is)."""
    if stats is None:
        return NO_VALUES
    return stats.reason if stats.replicates is None else None


def _values_state(stats: TeamStats | None) -> str:
    if stats is None:
        return "missing"
    return "trusted" if stats.trusted else "self-reported"


def _read(board: Board, compared: Sequence[tuple[BoardRow, TeamStats]],
          standing: dict[str, RowStanding], settings: BoardSettings,
          min_difference: float, users: ComparedUsers | None) -> Reading:
    """Compute the reading of the compared rows (in the board's order)."""
    names = tuple(row.team for row, _ in compared)
    reps = [stats.replicates for _, stats in compared if stats.replicates is not None]
    point = np.array([_score(row, board) for row, _ in compared], dtype=np.float64)
    groups = tuple(reps[0].groups) if reps else ()
    group_scores = np.array([r.group_scores for r in reps]).reshape(len(reps), len(groups))
    tests = np.array([[r.tests[t] for t in LEADERBOARD_TESTS] for r in reps]
                     ).reshape(len(reps), len(LEADERBOARD_TESTS))
    replicates = np.array([r.replicates for r in reps]).reshape(len(reps), settings.n_boot)
    reading = read_board(point, replicates, group_scores, tests, eligible=point > GATED_SCORE,
                         level=settings.level, min_difference=min_difference)
    front = _front_probability(compared, reps, point, settings.n_boot, len(groups))
    rows = dict(standing)
    for i, (row, stats) in enumerate(compared):
        best, worst = (int(v) for v in reading.rank_interval[i])
        rows[row.team] = RowStanding(
            values=_values_state(stats), tier=int(reading.tier[i]), rank_interval=(best, worst),
            pareto=bool(reading.pareto[i]), first_place=bool(reading.first_place[i]),
            first_place_share=float(reading.first_place_share[i]),
            borda_rank=int(reading.borda_rank[i]), costs=stats.costs,
            front_probability=None if np.isnan(front[i]) else float(front[i]))
    info = BoardStandings(
        score="private_score" if board.revealed else "leaderboard_score",
        level=settings.level, min_difference=min_difference, n_boot=settings.n_boot,
        seed=settings.seed, method=METHOD, compared=len(compared), groups=groups,
        scope=SCOPE, compared_users=users_text(users), tie_break=settings.tie_break)
    return Reading(teams=names, reading=reading, group_scores=group_scores, groups=groups,
                   standings=info, rows=rows)


def _front_probability(compared: Sequence[tuple[BoardRow, TeamStats]],
                       reps: Sequence[TeamReplicates], point: np.ndarray, n_boot: int,
                       n_groups: int) -> np.ndarray:
    """Each compared row's probability of being on the cost–quality front (its group
    replicates and measured costs; NaN without measured costs or when gated)."""
    costs = np.array([measured_costs(stats.costs) for _, stats in compared]
                     ).reshape(len(compared), 2)
    if not np.isfinite(costs).all(axis=1).any():
        return np.full(len(compared), np.nan)  # nothing measured: no front to be on
    group_reps = np.array([r.group_replicates for r in reps]).reshape(len(reps), n_groups,
                                                                       n_boot)
    return front_probability(group_reps, costs, eligible=point > GATED_SCORE)


def team_standing(db: Database, board: Board, team: str, source: ValuesSource
                  ) -> TeamStanding | None:
    """A team's page: its row, pairwise win probabilities and place on the Pareto front.

    Parameters
    ----------
    db : Database
    board : Board
        The board the team is on (as the store gives it, without statistics).
    team : str
        The team's name.
    source : ValuesSource

    Returns
    -------
    TeamStanding or None
        None when the team has no row on the board. On a board whose scores are hidden, the
        row as the hidden board shows it and nothing else.
    """
    reading = board_reading(db, board, source)
    full = board if reading is None else with_standings(db, board, source)
    row = next((r for r in full.rows if r.team == team), None)
    if row is None:
        return None
    base = TeamStanding(competition=board.competition, phase=board.phase, team=team, row=row,
                        standings=None if reading is None else reading.standings)
    if reading is None:
        return base
    return with_pairwise(base, reading, board)


def with_pairwise(base: TeamStanding, reading: Reading, board: Board,
                  shown: Container[str] | None = None) -> TeamStanding:
    """A team's page with its win probabilities and the Pareto front from ``reading``.

    ``shown``: the teams whose statistics in ``reading`` are still those of their row on
    ``board`` (default: all); the others are left off the page.
    """
    team = base.team
    if team not in reading.teams or (shown is not None and team not in shown):
        return base
    i = reading.teams.index(team)
    ranks = {r.team: r.rank for r in board.rows}
    r = reading.reading
    kept = [j for j, name in enumerate(reading.teams) if shown is None or name in shown]
    opponents = tuple(
        Opponent(team=reading.teams[j], rank=ranks.get(reading.teams[j]), tier=int(r.tier[j]),
                 win_probability=float(r.win_probability[i, j]),
                 told_apart="above" if r.beats[i, j] else "below" if r.beats[j, i] else "tied")
        for j in kept if j != i)
    members = tuple(FrontMember(team=reading.teams[j],
                                group_scores=tuple(float(v) for v in reading.group_scores[j]),
                                pareto=bool(r.pareto[j]),
                                first_place_share=float(r.first_place_share[j]))
                    for j in kept)
    mine = reading.group_scores[i]
    dominated_by = tuple(reading.teams[j] for j in kept
                         if j != i and r.pareto[j] and (reading.group_scores[j] >= mine).all()
                         and (reading.group_scores[j] > mine).any())
    return replace(base, opponents=opponents, groups=reading.groups, teams=members,
                   dominated_by=dominated_by)
