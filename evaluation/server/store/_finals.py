"""Final selections: the submissions a team marks as final in a phase, which its private
ranking uses.

A team marks up to the phase's ``final_selections`` of its submissions while the phase is open
and not revealed (a reveal shows the private scores: the selections are frozen from then on);
a team that marks none is judged on its best public ones (as many, best leaderboard score
first). The marks are counted and set in one transaction that holds the team's row, so that
two marks at once cannot pass the limit; the same transaction queues a marked submission's
reproduction job, or cancels it when unmarked before a worker took it.

Where the phase's competition file says ``fact_sheet = "required"`` (or ``"optional"``), a
mark takes a fact sheet (checked before: ``evaluation.server.core.read_fact_sheet``): a
description of the method, the code's URL and commit, stored with the submission in the same
transaction; a mark again with a new one replaces it. A required one missing refuses the mark.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import select

from evaluation.errors import SubmissionRejected
from evaluation.server.core import FactSheet, Phase
from evaluation.server.db import (
    PhaseRevealRow,
    ReproductionJobRow,
    SubmissionRow,
    TeamRow,
    as_utc,
    iso,
)
from evaluation.server.store._board import fact_sheet_of, final_candidates
from evaluation.server.store._jobs import new_job, queue_final

if TYPE_CHECKING:  # annotations only: a function's handle on the database
    from evaluation.server.db import Database


@dataclass(frozen=True)
class FinalMark:
    """The answer to a mark or an unmark: the submission, whether it is final now, and the
    team's final selections of its phase (ids, oldest mark first) out of ``allowed``."""

    submission_id: int
    phase: str
    final: bool
    changed: bool
    selections: tuple[int, ...]
    allowed: int
    message: str
    fact_sheet: FactSheet | None = None


def mark_final(db: Database, team_id: int, submission_id: int, final: bool = True,
               fact_sheet: FactSheet | None = None) -> FinalMark:
    """Mark (``final``) or unmark one of the team's submissions as a final selection.

    ``fact_sheet``: the selection's fact sheet (checked), stored with the mark (a mark of a
    submission marked already replaces its fact sheet).

    Raises
    ------
    SubmissionRejected
        404 when the submission is not the team's; 409 when its phase was revealed (the
        selections are frozen from the reveal on); 403 when its phase has closed (frozen too)
        or is no longer in the competition file; 409 when marking would pass the phase's
        ``final_selections``; 422 for a fact sheet where the phase takes none
        (``fact_sheet = "off"``) or with an unmark, and for a mark without one where the phase
        requires it. Nothing changes when it raises.
    """
    competition = db.require_competition()
    now = db.now()
    with db.writing() as session:
        # the team's row: one mark at a time per team (PostgreSQL; SQLite's writer is alone)
        session.execute(select(TeamRow.id).where(TeamRow.id == team_id).with_for_update())
        row = session.scalars(select(SubmissionRow).where(
            SubmissionRow.id == submission_id, SubmissionRow.team_id == team_id)).one_or_none()
        if row is None:
            raise SubmissionRejected(404, f"no submission {submission_id} of your team")
        phase_name = row.phase
        revealed = session.get(PhaseRevealRow, phase_name)
        if revealed is not None:  # read under the team's lock, which a reveal waits for
            raise SubmissionRejected(
                409, f"phase {phase_name!r} was revealed on {iso(as_utc(revealed.revealed_at))}"
                     f": its private scores are shown, so its final selections are frozen "
                     f"as they were then; submission {submission_id} stays "
                     f"{'marked' if row.final_at is not None else 'unmarked'}")
        phases = {p.name: p for p in competition.phases}
        phase = phases.get(phase_name)
        if phase is None or now >= phase.closes:
            when = "" if phase is None else f" on {iso(phase.closes)}"
            raise SubmissionRejected(403, f"phase {phase_name!r} has closed{when}: its final "
                                          f"selections are frozen")
        marked = list(session.scalars(select(SubmissionRow.id).where(
            SubmissionRow.team_id == team_id, SubmissionRow.phase == phase_name,
            SubmissionRow.final_at.is_not(None)).order_by(SubmissionRow.final_at,
                                                          SubmissionRow.id)))
        _check_fact_sheet(phase, submission_id, final, fact_sheet,
                          row.fact_description is not None)
        changed = (row.final_at is None) == final
        if changed and final and len(marked) >= phase.final_selections:
            raise SubmissionRejected(
                409, f"your team has marked {len(marked)} of {phase.final_selections} final "
                     f"selections of phase {phase_name!r} already (submissions "
                     f"{', '.join(map(str, marked))}); unmark one first "
                     f"(python -m evaluation final ID --unmark)")
        if changed:
            row.final_at = now if final else None
            queue_final(session, row, phase, now, final)
            marked = [i for i in marked if i != submission_id] + ([submission_id] if final
                                                                  else [])
        if fact_sheet is not None:
            row.fact_description, row.fact_code_url = fact_sheet.description, fact_sheet.code_url
            row.fact_commit, row.fact_sheet_at = fact_sheet.commit, now
        stored = fact_sheet_of(row)
    state = "marked as final" if final else "not final"
    message = (f"submission {submission_id} is {state}" + ("" if changed else " already")
               + f"; your team's final selections of phase {phase_name!r}: "
               + (", ".join(map(str, marked)) or "none (your best public ones count)")
               + f" ({len(marked)} of {phase.final_selections})")
    if fact_sheet is not None:
        message += ("; its fact sheet is recorded (shown on the board once the phase is "
                    "revealed)")
    return FinalMark(submission_id=submission_id, phase=phase_name, final=final,
                     changed=changed, selections=tuple(marked),
                     allowed=phase.final_selections, message=message + ".",
                     fact_sheet=stored)


def _check_fact_sheet(phase: Phase, submission_id: int, final: bool, fact_sheet: FactSheet | None,
                      has_one: bool) -> None:
    """422 for a fact sheet the mark may not take, or none where the phase requires one."""
    if fact_sheet is not None and phase.fact_sheet == "off":
        raise SubmissionRejected(
            422, f"phase {phase.name!r} takes no fact sheets (fact_sheet = \"off\" in its "
                 f"competition file): mark the submission without --description, --code-url "
                 f"and --commit; nothing was changed")
    if fact_sheet is not None and not final:
        raise SubmissionRejected(422, "an unmark takes no fact sheet: give it with the mark "
                                      "(python -m evaluation final ID --description ...); "
                                      "nothing was changed")
    if final and fact_sheet is None and not has_one and phase.fact_sheet == "required":
        raise SubmissionRejected(
            422, f"phase {phase.name!r} requires a fact sheet with each final selection: mark "
                 f"submission {submission_id} with a short description of the method, the "
                 f"link to its code and the commit (python -m evaluation final "
                 f"{submission_id} --description TEXT --code-url URL --commit SHA); nothing "
                 f"was changed")


def queue_selections(db: Database, phase_name: str) -> list[int]:
    """Queue a reproduction job for each submission the private ranking of ``phase_name``
    may use that has none: the teams' final selections, and the best public ones of each team
    that marked none (``final_candidates``; baselines left out). Returns their ids.

    Raises
    ------
    SubmissionRejected
        404 when the competition file has no such phase.
    """
    phase = db.require_competition().phase(phase_name)
    now = db.now()
    with db.writing() as session:
        ids = list(session.scalars(
            select(SubmissionRow.id).join(TeamRow, TeamRow.id == SubmissionRow.team_id)
            .where(SubmissionRow.id.in_(final_candidates(phase.name, phase.final_selections)),
                   TeamRow.is_baseline.is_(False),
                   ~select(ReproductionJobRow.id).where(
                       ReproductionJobRow.submission_id == SubmissionRow.id).exists())
            .order_by(SubmissionRow.id)))
        session.add_all(new_job(sid, phase, "organizer", now) for sid in ids)
    return ids
