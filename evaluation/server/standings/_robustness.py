"""The board's robustness certificate: would the official ranking survive the competition's
declared alternative protocols?

The official protocol's scores and paired replicates are the board's own (its reading: the
compared rows, their trusted per-user values, the board's resamples). Each alternative's are
made the same way from the per-user values the reproductions computed under it
(``robustness_results``): the teams' values on the protocol's test users (fixed by its first
stored result; a result on other users is left out), resampled with the board's seed and
replicates (``paired_resamples``, drawn as the board draws its own) and scored with the
phase's references (``team_replicates``): users are resampled within each protocol and
replicate r of every team uses the same resample. A sampled-negative protocol's values are
one corrected metric per test user of the official folds: its score is their fold mean, on
the same resamples (``metric_replicates``). The statistics themselves are
``evaluation.standings.robustness_certificate``.

Each team's replicates under a protocol are kept (per stored result), and so are the
protocols' resamples, apart from the official board's (``MAX_PROTOCOL_RESAMPLE_BYTES``):
after one new reproduction only its team's replicates under each protocol are computed, and
drawing a protocol's resamples again (seconds at full scale) is not part of it.

Nothing is computed for a board whose scores are hidden, and a protocol declared ``private``
is withheld until the phase's private scores are revealed (an organizer sees it). Why a
team's model could not run under a protocol is shown to the organizers and to that team
only; the others see that it could not.
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from evaluation.challenge import (
    PairedResamples,
    References,
    TeamReplicates,
    metric_replicates,
    paired_resamples,
    team_replicates,
)
from evaluation.errors import EvalRSError
from evaluation.server.core import (
    AlternativeFailure,
    Board,
    BoardRobustness,
    ProtocolCertificate,
    RobustnessProtocol,
    TeamFragilityMark,
    references_sha256,
)
from evaluation.server.standings._reading import StoreValues, board_reading, cache_of, is_hidden
from evaluation.server.standings._results import Reading, TeamStats
from evaluation.server.store import (
    SCORED_ALTERNATIVE,
    AlternativeResult,
    alternative_metric_values,
    alternative_results,
    alternative_values,
    phase_board,
)
from evaluation.standings import ProtocolReplicates, RobustnessCertificate, robustness_certificate

if TYPE_CHECKING:  # annotations only: a function's handle on the database
    from evaluation.server.db import Database

#: Per store, the last certificate of each board (phase, reveal, protocols shown) with what it
#: was computed from: a request recomputes it only when a row, its values or a result changed.
_KEPT: weakref.WeakKeyDictionary[Database, dict[tuple, tuple[tuple, RobustnessCertificate]]] \
    = weakref.WeakKeyDictionary()
_KEPT_LOCK = threading.Lock()
#: The most memory the protocols' resamples kept by one store may take (bytes): three
#: full-scale fold-seed protocols and a time cut (1000 replicates of ~120k users each, one
#: byte per count; a time cut's one fold ~55k). Beyond it the oldest are dropped and drawn
#: again when needed; a protocol whose resamples alone exceed it has them drawn each time.
MAX_PROTOCOL_RESAMPLE_BYTES = 416 << 20
#: Per store, the protocols' resamples by (seed, replicates, fold sizes), apart from the
#: official board's (whose own budget they would exhaust, making it draw its own again).
_RESAMPLES: weakref.WeakKeyDictionary[Database, dict[tuple, PairedResamples]] = \
    weakref.WeakKeyDictionary()
_RESAMPLES_LOCK = threading.Lock()


def board_robustness(db: Database, phase_name: str | None = None, *, admin: bool = False,
                     team: str | None = None) -> BoardRobustness:
    """The robustness certificate of a phase's board (default: the current phase).

    Parameters
    ----------
    db : Database
    phase_name : str, optional
    admin : bool
        As an organizer sees it: a phase's hidden scores and private protocols, every
        failure's reason.
    team : str, optional
        The caller's team: its own failures' reasons are shown to it.

    Raises
    ------
    SubmissionRejected
        404 when there is no such phase.
    """
    competition = db.require_competition()
    board = phase_board(db, phase_name, admin=admin)
    declared = tuple(p.name for p in competition.robustness)
    base = BoardRobustness(competition=board.competition, phase=board.phase,
                           state="none declared" if not declared else "hidden",
                           declared=declared)
    if not declared or is_hidden(board):
        return base  # hidden: nothing may depend on the scores
    shown = [p for p in competition.robustness if admin or board.revealed or not p.private]
    withheld = tuple(p.name for p in competition.robustness if p not in shown)
    base = BoardRobustness(competition=board.competition, phase=board.phase, state="waiting",
                           declared=declared, withheld=withheld)
    reading = board_reading(db, board, StoreValues(db))
    if reading is None or not reading.teams:
        return base
    official = _official(db, board, reading)
    if official is None:
        return base
    ids = {row.team: row.submission_id for row in board.rows
           if row.team in reading.teams and row.submission_id is not None}
    results = alternative_results(db, board.phase, ids.values())
    # the protocols themselves, not their names: a name whose kind the file now changes
    # reads its stored values another way
    key = (board.phase, board.revealed, tuple(shown))
    signature = (tuple(reading.team_keys.get(t) for t in reading.teams),
                 tuple(sorted((k, r.row_id) for k, r in results.items())),
                 tuple(float(v) for v in official.scores), competition.board,
                 competition.phase(board.phase).min_difference,
                 tuple(int(t) for t in reading.reading.tier))
    with _KEPT_LOCK:
        kept = _KEPT.setdefault(db, {}).get(key)
    if kept is not None and kept[0] == signature:
        certificate = kept[1]
    else:
        alternatives = {p.name: _alternative(db, board, p, reading.teams, ids, results)
                        for p in shown}
        settings = competition.board
        phase = competition.phase(board.phase)
        certificate = robustness_certificate(
            official, alternatives, [int(t) for t in reading.reading.tier],
            level=settings.level, min_difference=settings.for_phase(phase.min_difference))
        with _KEPT_LOCK:
            _KEPT.setdefault(db, {})[key] = (signature, certificate)
    return _view(base, certificate, shown, reading.teams, ids, results, admin=admin,
                 team=team)


def _official(db: Database, board: Board, reading: Reading) -> ProtocolReplicates | None:
    """The official scores and replicates of the reading's teams (None while one's
    statistics are no longer kept: the next request computes them again)."""
    cache = cache_of(db)
    scores = {row.team: row.private_score if board.revealed else row.leaderboard_score
              for row in board.rows}
    with cache.lock:
        stats = [cache.teams.get(reading.team_keys.get(team, ())) for team in reading.teams]
    if any(s is None or s.replicates is None for s in stats):
        return None
    return ProtocolReplicates(
        teams=reading.teams,
        scores=np.array([scores[t] for t in reading.teams], dtype=np.float64),
        replicates=np.stack([s.replicates.replicates for s in stats if s is not None
                             and s.replicates is not None], axis=1))


def _alternative(db: Database, board: Board, protocol: RobustnessProtocol,
                 teams: Sequence[str], ids: Mapping[str, int],
                 results: Mapping[tuple[int, str], AlternativeResult]) -> ProtocolReplicates:
    """One protocol's scores and paired replicates of the teams scored under it, on the
    protocol's users (its first stored result's)."""
    competition = db.require_competition()
    settings = competition.board
    references = competition.phase(board.phase).references
    refs_key = references_sha256(references)
    scored = {team: results[(ids[team], protocol.name)] for team in teams
              if team in ids and (ids[team], protocol.name) in results
              and results[(ids[team], protocol.name)].status == SCORED_ALTERNATIVE}
    kept: dict[str, TeamStats] = {}
    if scored:
        first = min(scored.values(), key=lambda r: r.row_id)
        users = (first.users_sha256, first.fold_sizes)
        same = {t: r for t, r in scored.items() if (r.users_sha256, r.fold_sizes) == users}
        cache = cache_of(db)
        keys = {t: ("robustness", r.row_id, protocol.kind, settings.seed, settings.n_boot,
                    refs_key)
                for t, r in same.items()}
        with cache.lock:
            missing = [t for t in same if keys[t] not in cache.teams]
        rows = [same[t].row_id for t in missing]
        values: Mapping[int, Sequence] = (
            alternative_metric_values(db, rows) if protocol.kind == "sampled"
            else alternative_values(db, rows))
        if missing:
            resamples = protocol_resamples(db, settings.seed, settings.n_boot,
                                           first.fold_sizes)
        for t in missing:
            with cache.lock:
                cache.keep(keys[t], _stats(resamples, values.get(same[t].row_id), references,
                                           first, metric=protocol.kind == "sampled"))
        with cache.lock:
            kept = {t: cache.teams[keys[t]] for t in same if keys[t] in cache.teams}
    names = tuple(t for t in teams if t in kept and kept[t].replicates is not None)
    reps = [kept[t].replicates for t in names]
    return ProtocolReplicates(
        teams=names, scores=np.array([r.score for r in reps if r is not None], dtype=np.float64),
        replicates=np.stack([r.replicates for r in reps if r is not None], axis=1) if names
        else np.zeros((settings.n_boot, 0)))


def protocol_resamples(db: Database, seed: int, n_boot: int, sizes: tuple[int, ...]
                       ) -> PairedResamples:
    """A protocol's resamples for folds of ``sizes`` users: the board's draw
    (``paired_resamples`` with its seed and replicates), kept per store within
    ``MAX_PROTOCOL_RESAMPLE_BYTES``."""
    key = (int(seed), int(n_boot), tuple(int(n) for n in sizes))
    with _RESAMPLES_LOCK:
        kept = _RESAMPLES.setdefault(db, {})
        found = kept.pop(key, None)
        if found is not None:
            kept[key] = found  # the most recently used last: dropped last
            return found
    made = paired_resamples(*key)
    with _RESAMPLES_LOCK:
        kept = _RESAMPLES.setdefault(db, {})
        if made.nbytes <= MAX_PROTOCOL_RESAMPLE_BYTES:
            while kept and made.nbytes + sum(r.nbytes for r in kept.values()) \
                    > MAX_PROTOCOL_RESAMPLE_BYTES:
                kept.pop(next(iter(kept)))
            kept[key] = made
    return made


def _stats(resamples: PairedResamples, folds: Sequence | None, references: References,
           first: AlternativeResult, *, metric: bool = False) -> TeamStats:
    """One team's replicates under a protocol (none, with the reason, when its values
    cannot be scored or are not finite on every resample). ``metric``: the values are one
    metric's per user (a sampled-negative protocol's), not the challenge's."""
    made = TeamStats(replicates=None, reason=None, trusted=True,
                     user_hashes=first.users_sha256, fold_sizes=first.fold_sizes, costs=None)
    if folds is None:
        return replace(made, reason="no per-user values")
    try:
        reps: TeamReplicates = (metric_replicates(folds, resamples, first.protocol) if metric
                                else team_replicates(folds, resamples, references))
    except EvalRSError as exc:
        return replace(made, reason=str(exc))
    if not (math.isfinite(reps.score) and np.isfinite(reps.replicates).all()):
        return replace(made, reason="its score is undefined on some resample")
    return replace(made, replicates=reps)


def _number(value: float) -> float | None:
    """A statistic as shown: None where it is undefined (NaN)."""
    return None if value is None or not math.isfinite(value) else float(value)


def _view(base: BoardRobustness, certificate: RobustnessCertificate,
          shown: Sequence[RobustnessProtocol], teams: Sequence[str], ids: Mapping[str, int],
          results: Mapping[tuple[int, str], AlternativeResult], *, admin: bool,
          team: str | None) -> BoardRobustness:
    """The certificate as the board shows it, with the failures the caller may read."""
    kinds = {p.name: p.kind for p in shown}
    protocols = []
    for cert in certificate.alternatives:
        mine = [results[(ids[t], cert.protocol)] for t in teams
                if t in ids and (ids[t], cert.protocol) in results]
        seconds = [float(r.cost["seconds"]) for r in mine
                   if r.cost.get("seconds") is not None]
        peaks = [float(r.cost["peak_rss_mib"]) for r in mine
                 if r.cost.get("peak_rss_mib") is not None]
        protocols.append(ProtocolCertificate(
            protocol=cert.protocol, kind=kinds[cert.protocol], tau=_number(cert.tau),
            tau_low=_number(cert.tau_interval[0]), tau_high=_number(cert.tau_interval[1]),
            n_compared=cert.n_compared, could_not_run=cert.missing,
            first_place_probability=_number(cert.first_place_probability),
            same_leader=cert.same_leader, pairs_kept=_number(cert.pairs_kept),
            pairs_reversed=_number(cert.pairs_reversed),
            mean_seconds=float(np.mean(seconds)) if seconds else None,
            max_peak_rss_mib=float(max(peaks)) if peaks else None))
    marks = tuple(TeamFragilityMark(
        team=f.team, rank=f.rank, tier=f.tier, worst_rank=f.worst_rank, worst_tier=f.worst_tier,
        worst_rank_protocol=f.worst_rank_protocol, worst_tier_protocol=f.worst_tier_protocol,
        missing_from=f.missing_from, falls_below=f.falls_below) for f in certificate.fragility)
    failures = tuple(
        AlternativeFailure(team=t, protocol=p.name, reason=str(results[(ids[t], p.name)].reason))
        for t in teams for p in shown
        if (admin or t == team) and t in ids and (ids[t], p.name) in results
        and results[(ids[t], p.name)].status != SCORED_ALTERNATIVE)
    return BoardRobustness(
        competition=base.competition, phase=base.phase, state="shown", declared=base.declared,
        withheld=base.withheld, level=certificate.level, n_replicates=certificate.n_replicates,
        stable_pair_share=_number(certificate.stable_pair_share),
        reversed_pair_share=_number(certificate.reversed_pair_share),
        n_told_apart=certificate.n_told_apart, protocols=tuple(protocols), teams=marks,
        failures=failures)
