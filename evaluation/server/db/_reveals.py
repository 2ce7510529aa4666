"""The phases, and the reveal of a phase's private scores (its board ranks by them from then).

A reveal freezes the phase: from then on it takes no uploads and its final selections cannot
be marked or unmarked (a team that sees its private scores must not move its selections to
its best one); a phase that still takes submissions is revealed only when the organizers say
to close it now (``close_now``).

The visibility rule, one for the board, the submission views, the receipts, the page and
``admin phase list``: a phase's public scores are shown to everyone while the competition file
says ``public = true`` for it, or once the organizers published it (``admin phase publish``)
or revealed it (``admin phase reveal``);
its private scores (from the reproductions on the private folds) only once it is revealed.
Organizers see the public scores always.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import func, select

from evaluation.errors import ConfigError
from evaluation.server.db._tables import (
    PhasePublicationRow,
    PhaseRevealRow,
    SubmissionRow,
    TeamRow,
)

if TYPE_CHECKING:  # annotations only: a function's handle on the database
    from evaluation.server.db._session import Database


def reveal_phase(db: Database, phase_name: str, *, close_now: bool = False
                 ) -> tuple[datetime, bool]:
    """Reveal a phase's private scores: its board ranks by them from now on, and the phase is
    frozen: it takes no more uploads, and its final selections stay as they are.

    Parameters
    ----------
    db : Database
    phase_name : str
        A phase of the competition file when the store has one; else a phase that has
        submissions in the database (the server pins the baselines on every phase).
    close_now : bool
        Reveal a phase that still takes submissions (by the competition file), ending its
        uploads and final selections now; without it such a phase is refused.

    Returns
    -------
    (datetime, bool)
        When the phase was revealed, and whether it was now (False: revealed before).

    Raises
    ------
    ConfigError
        When there is no such phase, or it still takes submissions and ``close_now`` is not
        given (the message says until when, and the fix).
    """
    if not close_now:
        refusal = reveal_refusal(db, phase_name)
        if refusal is not None:
            raise ConfigError(refusal)
    return _mark_phase(db, phase_name, PhaseRevealRow, "revealed_at")


def reveal_refusal(db: Database, phase_name: str) -> str | None:
    """Why ``phase_name`` cannot be revealed now without closing it: it still takes
    submissions by the competition file's closing time (None when it has closed, was
    revealed already, or no competition file says when it closes).

    A reveal shows each team the private scores of its submissions; while the phase is open
    the team could then upload again and move its final selections to its best private
    score, which the reveal prevents by freezing the phase.
    """
    phases = {} if db.competition is None else {p.name: p for p in db.competition.phases}
    phase = phases.get(phase_name)
    if phase is None or db.now() >= phase.closes or is_revealed(db, phase_name):
        return None
    return (f"phase {phase_name!r} takes submissions until {phase.closes:%Y-%m-%d %H:%M} UTC: "
            f"revealing it now would show each team its private scores while it can still "
            f"upload and change its final selections. Reveal it after it closes, or close it "
            f"now and reveal it (`admin phase reveal {phase_name} --close-now`: its uploads "
            f"and final selections end at once; cannot be undone).")


def publish_phase(db: Database, phase_name: str) -> tuple[datetime, bool]:
    """Publish a phase's public scores: everyone sees them from now on (the private ones
    wait for the reveal). Returns when, and whether it was now; ConfigError for no such
    phase."""
    return _mark_phase(db, phase_name, PhasePublicationRow, "published_at")


def _mark_phase(db: Database, phase_name: str, row: type[PhaseRevealRow | PhasePublicationRow],
                when: str) -> tuple[datetime, bool]:
    """Record once that ``phase_name`` was revealed or published (``row``, its time column
    ``when``): the time it was, and whether it was now; ConfigError for no such phase."""
    known = phase_names(db)
    if phase_name not in known:
        shown = ", ".join(repr(p) for p in known) or "none yet"
        raise ConfigError(f"no phase named {phase_name!r}; the phases are: {shown}.")
    with db.writing() as session:
        if row is PhaseRevealRow:
            # every team's row, which a mark of a final selection and an upload hold while
            # they check the phase: those under way finish first, later ones see the reveal
            session.execute(select(TeamRow.id).with_for_update())
        found = session.get(row, phase_name)
        if found is not None:
            return getattr(found, when), False
        now = db.now()
        session.add(row(phase=phase_name, **{when: now}))
        return now, True


def publications(db: Database) -> dict[str, datetime]:
    """``{phase: published_at}`` of the published phases."""
    with db.reading() as session:
        return {r.phase: r.published_at
                for r in session.scalars(select(PhasePublicationRow))}


def is_published(db: Database, phase_name: str) -> bool:
    """Whether the organizers published the phase's public scores."""
    with db.reading() as session:
        return session.get(PhasePublicationRow, phase_name) is not None


def publish_warnings(db: Database, phase_name: str) -> list[str]:
    """Why publishing ``phase_name`` now may be a mistake: it has not closed, or its scores
    are shown already (a public phase)."""
    phases = {} if db.competition is None else {p.name: p for p in db.competition.phases}
    phase = phases.get(phase_name)
    warnings = []
    if phase is not None and db.now() < phase.closes:
        warnings.append(f"phase {phase_name!r} has not closed: it takes submissions until "
                        f"{phase.closes:%Y-%m-%d %H:%M} UTC, and every later upload's scores "
                        f"show at once")
    if phase is not None and phase.public:
        warnings.append(f"phase {phase_name!r} is public already: there is nothing to "
                        f"publish")
    return warnings


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


def scores_shown(public: bool, revealed: bool, published: bool = False) -> bool:
    """The visibility rule for a phase's public scores: shown to everyone when the phase is
    ``public``, ``published`` or ``revealed`` (its private scores: only when ``revealed``)."""
    return public or published or revealed


def visibility(public: bool | None, revealed: bool, published: bool = False) -> str:
    """The visibility rule as it applies now to a phase, in words.

    Parameters
    ----------
    public : bool or None
        The phase's ``public`` in the competition file (None: not known, no file given).
    revealed : bool
        Whether the organizers revealed the phase.
    published : bool
        Whether the organizers published its public scores.
    """
    if revealed:
        return "public and private scores shown to everyone"
    if published:
        return "public scores shown to everyone (published); private scores hidden until the " \
               "reveal"
    if public is None:
        return ("private scores hidden until the reveal; give --competition to see whether "
                "the public scores are shown")
    if public:
        return "public scores shown to everyone; private scores hidden until the reveal"
    return "all scores hidden (organizers see the public ones) until the reveal"


def reveal_warnings(db: Database, phase_name: str) -> list[str]:
    """Why revealing ``phase_name`` now may be a mistake: none of its submissions has a
    private score. (A phase that still takes submissions is refused: ``reveal_refusal``.)"""
    warnings = []
    with db.reading() as session:
        private = session.scalar(select(func.count()).select_from(SubmissionRow).where(
            SubmissionRow.phase == phase_name,
            SubmissionRow.private_leaderboard_score.is_not(None)))
    if not private:
        warnings.append(f"no submission of phase {phase_name!r} has a private score yet (record "
                        f"reproductions on the private folds first): the board would rank by "
                        f"public scores only")
    return warnings
