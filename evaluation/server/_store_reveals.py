"""The phases, and the reveal of a phase's private scores (its board ranks by them from then)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from evaluation.errors import ConfigError
from evaluation.server._store_session import Database
from evaluation.server._tables import PhaseRevealRow, SubmissionRow


def reveal_phase(db: Database, phase_name: str) -> tuple[datetime, bool]:
    """Reveal a phase's private scores: its board ranks by them from now on.

    Parameters
    ----------
    db : Database
    phase_name : str
        A phase of the competition file when the store has one; else a phase that has
        submissions in the database (the server pins the baselines on every phase).

    Returns
    -------
    (datetime, bool)
        When the phase was revealed, and whether it was now (False: revealed before).

    Raises
    ------
    ConfigError
        When there is no such phase.
    """
    known = phase_names(db)
    if phase_name not in known:
        shown = ", ".join(repr(p) for p in known) or "none yet"
        raise ConfigError(f"no phase named {phase_name!r}; the phases are: {shown}.")
    with db.writing() as session:
        found = session.get(PhaseRevealRow, phase_name)
        if found is not None:
            return found.revealed_at, False
        now = db.now()
        session.add(PhaseRevealRow(phase=phase_name, revealed_at=now))
        return now, True


def phase_names(db: Database) -> list[str]:
    """The phases: the competition file's, in its order; without one, those with submissions
    in the database, by name."""
    if db.competition is not None:
        return [p.name for p in db.competition.phases]
    with db.reading() as session:
        return sorted(session.scalars(select(SubmissionRow.phase).distinct()))


def reveals(db: Database) -> dict[str, datetime]:
    """``{phase: revealed_at}`` of the revealed phases."""
    with db.reading() as session:
        return {r.phase: r.revealed_at for r in session.scalars(select(PhaseRevealRow))}


def is_revealed(db: Database, phase_name: str) -> bool:
    """Whether the organizers have revealed the phase's private scores."""
    with db.reading() as session:
        return session.get(PhaseRevealRow, phase_name) is not None


def is_public(db: Database, phase_name: str) -> bool:
    """Whether the competition shows the phase's scores to everyone (False for a phase that
    is no longer in the competition file)."""
    phases = {p.name: p for p in db.require_competition().phases}
    return phases[phase_name].public if phase_name in phases else False
