"""The phases, and the reveal of a phase's private scores (its board ranks by them from then).

The visibility rule, one for the board, the submission views, the receipts, the page and
``admin phase list``: a phase's public scores are shown to everyone while the competition file
says ``public = true`` for it, or once the organizers revealed it (``admin phase reveal``);
its private scores (from the reproductions on the private folds) only once it is revealed.
Organizers see the public scores always.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select

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


def scores_shown(public: bool, revealed: bool) -> bool:
    """The visibility rule for a phase's public scores: shown to everyone when the phase is
    ``public`` or ``revealed`` (its private scores: only when ``revealed``)."""
    return public or revealed


def visibility(public: bool | None, revealed: bool) -> str:
    """The visibility rule as it applies now to a phase, in words.

    Parameters
    ----------
    public : bool or None
        The phase's ``public`` in the competition file (None: not known, no file given).
    revealed : bool
        Whether the organizers revealed the phase.
    """
    if revealed:
        return "public and private scores shown to everyone"
    if public is None:
        return ("private scores hidden until the reveal; give --competition to see whether "
                "the public scores are shown")
    if public:
        return "public scores shown to everyone; private scores hidden until the reveal"
    return "all scores hidden (organizers see the public ones) until the reveal"


def reveal_warnings(db: Database, phase_name: str) -> list[str]:
    """Why revealing ``phase_name`` now may be a mistake: it has not closed (by the
    competition file's closing time), or none of its submissions has a private score."""
    warnings = []
    phases = {} if db.competition is None else {p.name: p for p in db.competition.phases}
    phase = phases.get(phase_name)
    if phase is not None and db.now() < phase.closes:
        warnings.append(f"phase {phase_name!r} has not closed: it takes submissions until "
                        f"{phase.closes:%Y-%m-%d %H:%M} UTC, and revealing shows every later "
                        f"upload's scores at once")
    with db.reading() as session:
        private = session.scalar(select(func.count()).select_from(SubmissionRow).where(
            SubmissionRow.phase == phase_name,
            SubmissionRow.private_leaderboard_score.is_not(None)))
    if not private:
        warnings.append(f"no submission of phase {phase_name!r} has a private score yet (record "
                        f"reproductions on the private folds first): the board would rank by "
                        f"public scores only")
    return warnings
