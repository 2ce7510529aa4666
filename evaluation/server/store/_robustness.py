"""The submissions' results under the competition's declared alternative protocols, as the
reproductions stored them (``robustness_results``): the latest per submission and protocol,
and a scored one's per-user values decoded (a sampled-negative protocol's, one metric per user,
with :func:`alternative_metric_values`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from sqlalchemy import func, select

from evaluation.challenge import UserScores, decode_metric_values, decode_user_values
from evaluation.errors import DataError
from evaluation.server.db import RobustnessResultRow

if TYPE_CHECKING:  # annotations only: a function's handle on the database
    from evaluation.server.db import Database

#: ``RobustnessResultRow.status`` of a result with per-user values, and of one without.
SCORED_ALTERNATIVE, FAILED_ALTERNATIVE = "scored", "failed"


@dataclass(frozen=True)
class AlternativeResult:
    """One submission's latest result under one alternative protocol.

    Attributes
    ----------
    row_id : int
        The stored row (a newer result is another row).
    submission_id : int
    protocol : str
    status : {"scored", "failed"}
    reason : str or None
        Why it failed.
    users_sha256 : tuple of str
        Each of its folds' test-user hash (empty when it failed).
    fold_sizes : tuple of int
    cost : dict
        ``{"seconds", "train_seconds", "predict_seconds", "peak_rss_mib"}`` (None: unknown).
    """

    row_id: int
    submission_id: int
    protocol: str
    status: str
    reason: str | None
    users_sha256: tuple[str, ...]
    fold_sizes: tuple[int, ...]
    cost: dict


def alternative_results(db: Database, phase: str, submission_ids: Iterable[int]
                        ) -> dict[tuple[int, str], AlternativeResult]:
    """(submission id, protocol) -> the latest result, for the given submissions of
    ``phase``."""
    ids = sorted({int(i) for i in submission_ids})
    if not ids:
        return {}
    row = RobustnessResultRow
    latest = (select(func.max(row.id)).where(row.submission_id.in_(ids), row.phase == phase)
              .group_by(row.submission_id, row.protocol))
    query = select(row.id, row.submission_id, row.protocol, row.status, row.reason,
                   row.users_sha256, row.n_users, row.cost).where(row.id.in_(latest))
    with db.reading() as session:
        found = session.execute(query).all()
    return {(int(sid), str(protocol)): AlternativeResult(
        row_id=int(row_id), submission_id=int(sid), protocol=str(protocol), status=str(status),
        reason=reason, users_sha256=tuple(hashes or ()), fold_sizes=tuple(n_users or ()),
        cost=dict(cost or {}))
        for row_id, sid, protocol, status, reason, hashes, n_users, cost in found}


def alternative_values(db: Database, row_ids: Sequence[int]) -> dict[int, list[UserScores]]:
    """Row id -> the per-user values of each of its folds (scored rows only; a row whose
    blob is of the other format, stored while its protocol was of another kind, is left
    out)."""
    if not row_ids:
        return {}
    row = RobustnessResultRow
    with db.reading() as session:
        found = session.execute(select(row.id, row.blob, row.n_users, row.k).where(
            row.id.in_(list(row_ids)), row.blob.is_not(None))).all()
    out = {}
    for row_id, blob, n_users, k in found:
        with suppress(DataError):
            out[int(row_id)] = [f.scores for f in decode_user_values(blob, list(n_users or []),
                                                                     k=k)]
    return out


def alternative_metric_values(db: Database, row_ids: Sequence[int]
                              ) -> dict[int, list[np.ndarray]]:
    """Row id -> each of its folds' per-user values of one metric (the scored rows of a
    sampled-negative protocol; a row whose blob is of the other format, stored while its
    protocol was of another kind, is left out)."""
    if not row_ids:
        return {}
    row = RobustnessResultRow
    with db.reading() as session:
        found = session.execute(select(row.id, row.blob, row.n_users).where(
            row.id.in_(list(row_ids)), row.blob.is_not(None))).all()
    out = {}
    for row_id, blob, n_users in found:
        with suppress(DataError):
            out[int(row_id)] = list(decode_metric_values(blob, list(n_users or [])).folds)
    return out
