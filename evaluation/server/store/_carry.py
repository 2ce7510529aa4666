"""Phases that carry over: when a phase opens, the submissions of the earlier phase its
competition file names (``carry_from``) enter it without a new upload.

``carry`` says which: the ``"finals"`` (each team's final selections, or its best public ones
when it marked none: what the earlier phase's private ranking uses), each team's ``"best"``
(the board's order), or ``"all"``. Each becomes a submission of the new phase that names the
one it came from (``carried_from``, ``carried_phase``); the pinned baselines are on every
board already and are never carried.

What is scored where. A competition has one dataset and one set of fold parameters for all
its phases (``[dataset]`` in its file), and a run's hash covers them: the predictions a team
uploaded to the earlier phase were made for exactly the public folds the new phase scores. So
a carried submission is scored again by a scoring job on the kept predictions (nothing is
uploaded again), with the new phase's references; its row shows the claim until then, like an
upload's. A run whose data, folds or harness version are not the competition's any more (the
file changed between the phases) is not carried: its lists would be scored against folds they
were not made for; its team uploads it again. The private folds are never in an upload: a
carried submission gets a reproduction job (the model run again, on the private folds when
the new phase has ``private_folds``) when the phase reproduces at all (``reproduce`` not
``"none"``), for ``"finals"`` and ``"best"``; for ``"all"`` only where the phase reproduces
every upload (the team's final selections in the new phase queue theirs).

A carry happens once per phase (``phase_carries`` records it; the idempotency key of a
submission, its team, phase and run, backs it): opening twice carries nothing twice, and a
run the team uploaded to the new phase itself stays the team's upload. Carried submissions do
not count against the team's daily limit.

:func:`carry_phase` is the entry point (the ``admin phase carry`` command, the organizers'
API route and a rehearsal call it); :func:`carry_opened` carries into every phase that has
opened, as the server does at its start and before it answers about a phase.
"""

from __future__ import annotations

import json
import logging
import time
import weakref
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session

from evaluation.errors import SubmissionRejected
from evaluation.server.core import (
    Competition,
    Phase,
    claimed_differs,
    parse_submission,
    recompute,
)
from evaluation.server.db import (
    BEST_FIRST,
    PhaseCarryRow,
    PhaseRevealRow,
    PredictionsRow,
    SubmissionRow,
    TeamRow,
    UserValuesRow,
    WriteBusy,
    iso,
)
from evaluation.server.store._board import final_candidates
from evaluation.server.store._carried import predictions_owner
from evaluation.server.store._jobs import CARRY, new_job, new_scoring_job
from evaluation.server.store._user_values import UPLOAD, check_same_users

if TYPE_CHECKING:  # annotations only: a function's handle on the database
    from evaluation.server.db import Database

log = logging.getLogger("evaluation.server")

#: Seconds before a carry that failed on the database (read only, busy) is tried again by
#: :func:`carry_opened`.
RETRY_S = 30.0


@dataclass(frozen=True)
class Carry:
    """What a carry into a phase did (or did before).

    Attributes
    ----------
    phase, source, rule : str
        The phase carried into, the one carried from, and ``carry`` (finals, best, all).
    carried_at : datetime
        When it was carried.
    new : bool
        Carried now (False: carried before, nothing done).
    submission_ids : tuple of int
        The new phase's carried submissions made now (empty when ``new`` is False).
    skipped : tuple of (int, str)
        The earlier phase's submissions not carried now, and why.
    carried : int
        How many were carried (now or before).
    """

    phase: str
    source: str
    rule: str
    carried_at: datetime
    new: bool
    submission_ids: tuple[int, ...]
    skipped: tuple[tuple[int, str], ...]
    carried: int

    @property
    def message(self) -> str:
        """The carry in one sentence."""
        if not self.new:
            return (f"phase {self.phase!r} carried {self.carried} submission(s) of phase "
                    f"{self.source!r} ({self.rule}) already, on {iso(self.carried_at)}; "
                    f"nothing changed")
        return (f"{self.carried} submission(s) of phase {self.source!r} ({self.rule}) carried "
                f"into phase {self.phase!r}: each is scored again on the kept predictions and "
                f"queued as the phase reproduces; {len(self.skipped)} not carried")


def carry_phase(db: Database, phase_name: str) -> Carry:
    """Carry the submissions of the phase that ``phase_name`` carries from into it, once.

    Parameters
    ----------
    db : Database
    phase_name : str
        A phase whose competition file says ``carry_from`` and ``carry``. Its submissions
        are carried once the phase carried from has closed (or was revealed): at its opening
        by the server, or earlier by the organizers, so that their scoring jobs are done when
        it opens.

    Returns
    -------
    Carry
        ``new`` False (and nothing changed) when the phase was carried into before.

    Raises
    ------
    SubmissionRejected
        404 when there is no such phase; 409 when it carries from no phase, when the phase it
        carries from still takes submissions, or when it was revealed before any carry.
    """
    competition = db.require_competition()
    phase = competition.phase(phase_name)
    if phase.carry_from is None or phase.carry is None:
        raise SubmissionRejected(409, f"phase {phase.name!r} carries no submissions: its "
                                      f"competition file has no carry_from; add carry_from "
                                      f"and carry to its [[phases]] table to carry some")
    source = competition.phase(phase.carry_from)
    now = db.now()
    try:
        with db.writing() as session:
            done = session.get(PhaseCarryRow, phase.name)
            if done is not None:
                return _before(done)
            _check_may_carry(session, phase, source, now)
            # the record first: a second carry at once waits for this one on its key
            session.add(PhaseCarryRow(phase=phase.name, source=source.name, rule=phase.carry,
                                      carried=0, carried_at=now))
            session.flush()
            ids, skipped = _carry(session, competition, phase, source, now)
            session.get_one(PhaseCarryRow, phase.name).carried = len(ids)
    except IntegrityError:  # another process carried at the same time, and first
        with db.reading() as session:
            first = session.get(PhaseCarryRow, phase.name)
        if first is None:  # not that: another constraint, which this carry must not hide
            raise
        return _before(first)
    return Carry(phase=phase.name, source=source.name, rule=phase.carry, carried_at=now,
                 new=True, submission_ids=tuple(ids), skipped=tuple(skipped),
                 carried=len(ids))


def carried(db: Database) -> dict[str, Carry]:
    """``{phase: Carry}`` of the phases carried into so far (``new`` False)."""
    with db.reading() as session:
        return {row.phase: _before(row) for row in session.scalars(select(PhaseCarryRow))}


# phases each store has carried into, or tried to (then, the time of the next try); a
# process asks the database once per phase, and after that nothing
_KNOWN: weakref.WeakKeyDictionary[Any, dict[str, float]] = weakref.WeakKeyDictionary()


def carry_opened(db: Database) -> list[Carry]:
    """Carry into every phase that has opened and carries from another, unless this process
    knows it done: the server calls it at its start and before it answers about a phase.

    A carry that fails on the database (read only, busy) is logged and tried again after
    ``RETRY_S`` seconds; one refused for good (the phase was revealed) is logged once.
    Returns the carries made now.
    """
    known = _KNOWN.setdefault(db, {})
    made = []
    for phase in _due(db):
        try:
            carry = carry_phase(db, phase.name)
        except (SQLAlchemyError, WriteBusy) as exc:
            log.warning("phase %r: its carry from %r failed (%s); tried again in %.0f s",
                        phase.name, phase.carry_from, type(exc).__name__, RETRY_S)
            known[phase.name] = time.monotonic() + RETRY_S
            continue
        except SubmissionRejected as exc:
            log.warning("phase %r: not carried: %s", phase.name, exc.reason)
            known[phase.name] = float("inf")
            continue
        known[phase.name] = float("inf")
        if carry.new:
            log.info("%s", carry.message)
            made.append(carry)
    return made


def carry_due(db: Database) -> bool:
    """Whether :func:`carry_opened` has a phase to carry into (no database read: a request
    asks it before every answer about a phase)."""
    return bool(_due(db))


def _due(db: Database) -> list[Phase]:
    """The phases that have opened and carry from another, not known carried here."""
    competition = db.competition
    if competition is None:
        return []
    known, clock = _KNOWN.get(db, {}), time.monotonic()
    due = [p for p in competition.phases
           if p.carry_from is not None and known.get(p.name, 0.0) <= clock]
    if not due:
        return due
    now = db.now()
    return [p for p in due if p.opens <= now]


# --------------------------------------------------------------------------- helpers


def _before(row: PhaseCarryRow) -> Carry:
    return Carry(phase=row.phase, source=row.source, rule=row.rule, carried_at=row.carried_at,
                 new=False, submission_ids=(), skipped=(), carried=row.carried)


def _check_may_carry(session: Session, phase: Phase, source: Phase, now: datetime) -> None:
    """409 when the phase carried from still takes submissions, or the phase was revealed."""
    if session.get(PhaseRevealRow, phase.name) is not None:
        raise SubmissionRejected(409, f"phase {phase.name!r} was revealed: its board is final, "
                                      f"nothing is carried into it any more")
    if now < source.closes and session.get(PhaseRevealRow, source.name) is None:
        raise SubmissionRejected(
            409, f"phase {source.name!r} takes submissions until {iso(source.closes)}: its "
                 f"submissions and final selections may still change, so phase {phase.name!r} "
                 f"carries them once it has closed (the server does it when {phase.name!r} "
                 f"opens, {iso(phase.opens)}); carry after {iso(source.closes)}")


def _chosen(session: Session, source: Phase, rule: str) -> list[SubmissionRow]:
    """The submissions of ``source`` that ``rule`` carries, the baselines left out, by id."""
    query = select(SubmissionRow).join(TeamRow, TeamRow.id == SubmissionRow.team_id).where(
        SubmissionRow.phase == source.name, TeamRow.is_baseline.is_(False))
    if rule == "finals":
        query = query.where(SubmissionRow.id.in_(
            final_candidates(source.name, source.final_selections)))
    elif rule == "best":
        ranked = select(SubmissionRow.id.label("sid"), func.row_number().over(
            partition_by=SubmissionRow.team_id, order_by=BEST_FIRST).label("place")).where(
            SubmissionRow.phase == source.name).subquery()
        query = query.where(SubmissionRow.id.in_(
            select(ranked.c.sid).where(ranked.c.place == 1)))
    return list(session.scalars(query.order_by(SubmissionRow.id)))


def _carry(session: Session, competition: Competition, phase: Phase, source: Phase,
           now: datetime) -> tuple[list[int], list[tuple[int, str]]]:
    """Insert the carried submissions and their jobs; (their ids, the skipped and why)."""
    assert phase.carry is not None  # checked by the caller
    there = {(team, run) for team, run in session.execute(select(
        SubmissionRow.team_id, SubmissionRow.run_id).where(SubmissionRow.phase == phase.name))}
    ids: list[int] = []
    skipped: list[tuple[int, str]] = []
    for row in _chosen(session, source, phase.carry):
        if (row.team_id, row.run_id) in there:
            skipped.append((row.id, f"run {row.run_id} is in phase {phase.name!r} already"))
            continue
        owner = predictions_owner(session, row.id)
        has_lists = session.scalar(select(PredictionsRow.id).where(
            PredictionsRow.submission_id == owner)) is not None
        why = _refusal(competition, row.payload, has_lists)
        if why is not None:
            skipped.append((row.id, why))
            continue
        claim = parse_submission(row.payload.encode("utf-8"))
        scores = recompute(claim.fold_tests(), phase.references)
        new = SubmissionRow(
            team_id=row.team_id, phase=phase.name, run_id=row.run_id,
            body_sha256=row.body_sha256, payload=row.payload, submitted_at=row.submitted_at,
            phase1_score=scores.phase1_score, leaderboard_score=scores.leaderboard_score,
            interval_low=scores.interval[0], interval_high=scores.interval[1],
            tests=dict(scores.tests), num_folds=scores.num_folds,
            claimed_score=row.claimed_score, flagged=bool(claimed_differs(claim, scores)),
            computed=False, reproduction="pending", carried_from=row.id,
            carried_phase=source.name)
        session.add(new)
        session.flush()
        _copy_uploaded_values(session, row.id, new.id, phase.name, now)
        if has_lists:
            session.add(new_scoring_job(new.id, phase, CARRY, now))
        if phase.reproduce != "none" and (phase.carry != "all" or phase.reproduce == "every"):
            session.add(new_job(new.id, phase, CARRY, now))
        ids.append(new.id)
    return ids, skipped


def _refusal(competition: Competition, payload: str, has_lists: bool) -> str | None:
    """Why a submission is not carried (None: it is): its run is not of the competition's
    data, folds and harness versions now, or it is a claim the competition no longer takes."""
    try:
        competition.check_run(json.loads(payload))
    except SubmissionRejected as exc:
        return (f"its run is not one the competition accepts now ({exc.reason}): its lists "
                f"are never scored on folds they were not made for; upload a new run")
    if not has_lists and not competition.accept_claims:
        return ("it is a claim of scores only, which the competition no longer takes "
                "(accept_claims = false); upload the run's predictions")
    return None


def _copy_uploaded_values(session: Session, source_id: int, new_id: int, phase: str,
                          now: datetime) -> None:
    """Copy the upload's own values row (its costs; a claim's self-reported per-user values,
    when their test users are those of the new phase's trusted values of the run)."""
    found = session.scalars(select(UserValuesRow).where(
        UserValuesRow.submission_id == source_id, UserValuesRow.source == UPLOAD)
        .order_by(UserValuesRow.id).limit(1)).first()
    if found is None:
        return
    blob, k, n_users, hashes = found.blob, found.k, found.n_users, found.users_sha256
    try:
        check_same_users(session.connection(), phase, found.run_hash, hashes)
    except SubmissionRejected:  # other users than the phase compares: the costs only
        blob, k, n_users, hashes = None, None, None, None
    session.add(UserValuesRow(
        submission_id=new_id, source=UPLOAD, private=False, trusted=False, phase=phase,
        run_hash=found.run_hash, k=k, n_users=n_users, users_sha256=hashes, blob=blob,
        blob_sha256=found.blob_sha256 if blob is not None else None, costs=found.costs,
        recorded_at=now))

