"""The last statistics computed of each board, kept in the database for a restart.

The statistics worker writes, after each computation of a board, what it computed (an opaque
payload, made and read by ``evaluation.server.standings``) with the signature of what it
depends on; a restarted server reads it back and shows it at once: as current when the
signature is the board's, else marked as being updated until it is computed again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import delete, select

from evaluation.server.db import StandingsSnapshotRow

if TYPE_CHECKING:  # annotations only: a function's handle on the database
    from evaluation.server.db import Database


@dataclass(frozen=True)
class Snapshot:
    """A board's last computed statistics: the sha256 of what they depend on, the payload,
    and the time of the board they were computed for."""

    signature: str
    payload: bytes
    computed_at: datetime


def save_snapshot(db: Database, phase: str, revealed: bool, snapshot: Snapshot) -> None:
    """Keep ``snapshot`` as the board's last statistics (replacing the one before)."""
    with db.writing() as session:
        session.execute(delete(StandingsSnapshotRow).where(
            StandingsSnapshotRow.phase == phase, StandingsSnapshotRow.revealed.is_(revealed)))
        session.add(StandingsSnapshotRow(phase=phase, revealed=revealed,
                                         signature=snapshot.signature,
                                         payload=snapshot.payload,
                                         computed_at=snapshot.computed_at))


def load_snapshot(db: Database, phase: str, revealed: bool) -> Snapshot | None:
    """The board's last statistics kept, or None."""
    query = select(StandingsSnapshotRow.signature, StandingsSnapshotRow.payload,
                   StandingsSnapshotRow.computed_at).where(
        StandingsSnapshotRow.phase == phase, StandingsSnapshotRow.revealed.is_(revealed))
    with db.reading() as session:
        found = session.execute(query).one_or_none()
    if found is None:
        return None
    return Snapshot(signature=found.signature, payload=bytes(found.payload),
                    computed_at=found.computed_at)
