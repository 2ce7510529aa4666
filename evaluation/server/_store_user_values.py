"""The per-user values and costs of submissions, as the board reads them.

Each submission has the row its upload brought (self-reported: its per-user arrays, or none
from a client older than them, and the costs its run measured) and one row per reproduction
that sent values (trusted: computed by the organizers from the model's predictions, with the
costs measured in the sandbox). Every row is kept; the board reads the latest trusted one,
else the upload's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import select

from evaluation.challenge import UserScores, decode_user_values
from evaluation.contract import COST_KEYS
from evaluation.server._store_session import Database
from evaluation.server._tables import UserValuesRow

#: ``UserValuesRow.source`` of an upload's row and of a reproduction's.
UPLOAD = "upload"
REPRODUCTION = "reproduction"


@dataclass(frozen=True)
class FoldCost:
    """What one fold cost: seconds to train and to predict, peak resident memory (MiB) of the
    process during the fold; None where unknown."""

    train_seconds: float | None
    predict_seconds: float | None
    peak_rss_mib: float | None


@dataclass(frozen=True)
class UserValues:
    """A submission's per-user values on its public (or private) folds, and its costs.

    Attributes
    ----------
    folds : list of UserScores
        One per fold, fold 0 first, each in the fold's test-user order: ``rr = 1 / rank``,
        BLW and LD as float32 (NaN: left out), slice codes as int8.
    user_hashes : list of str
        The sha256 of each fold's test user ids: submissions with equal hashes pair user by
        user (the store refuses an upload whose hashes differ from its phase's for its run
        hash).
    trusted : bool
        True when a reproduction computed the values; False when the upload reported them.
    labels : list of dict
        Per fold, each MRED test's group labels (code ``g`` names ``labels[f][test][g]``).
    costs : list of FoldCost or None
        Per fold; None when neither the upload nor a reproduction recorded them.
    costs_trusted : bool
        True when the costs were measured by a reproduction (in its sandbox); False when
        self-reported.
    """

    folds: list[UserScores]
    user_hashes: list[str]
    trusted: bool
    labels: list[dict[str, tuple[str, ...]]]
    costs: list[FoldCost] | None = None
    costs_trusted: bool = False


def user_scores(db: Database, submission_id: int, *, private: bool = False
                ) -> UserValues | None:
    """The per-user values of a submission for the board.

    Parameters
    ----------
    db : Database
    submission_id : int
    private : bool
        The private folds' values (only a reproduction with ``private`` brings them).

    Returns
    -------
    UserValues or None
        The latest trusted values (a reproduction's), else the upload's; None when there are
        none: no such submission, an upload without per-user values (an older client), or no
        private reproduction yet.
    """
    return phase_user_values(db, None, [submission_id], private=private).get(submission_id)


def phase_user_values(db: Database, phase: str | None, submission_ids: Iterable[int], *,
                      private: bool = False) -> dict[int, UserValues]:
    """:func:`user_scores` of many submissions at once (one query).

    Parameters
    ----------
    db : Database
    phase : str or None
        The phase they belong to (a submission of another phase is left out); None: any.
    submission_ids : iterable of int
    private : bool

    Returns
    -------
    dict of int to UserValues
        Only the submissions that have values (see :func:`user_scores`).
    """
    ids = sorted({int(i) for i in submission_ids})
    if not ids:
        return {}
    query = select(UserValuesRow).where(UserValuesRow.submission_id.in_(ids)).order_by(
        UserValuesRow.submission_id, UserValuesRow.recorded_at, UserValuesRow.id)
    if phase is not None:
        query = query.where(UserValuesRow.phase == phase)
    with db.reading() as session:
        rows = list(session.execute(query).scalars())
    by_submission: dict[int, list[UserValuesRow]] = {}
    for row in rows:
        by_submission.setdefault(row.submission_id, []).append(row)
    out = {}
    for submission_id, found in by_submission.items():
        values = _values(found, private)
        if values is not None:
            out[submission_id] = values
    return out


def _values(rows: Sequence[UserValuesRow], private: bool) -> UserValues | None:
    """The values the board reads from one submission's rows (oldest first)."""
    trusted = [r for r in rows if r.trusted and r.private == private and r.blob is not None]
    uploaded = [r for r in rows if r.source == UPLOAD and r.blob is not None]
    chosen = trusted[-1] if trusted else (None if private or not uploaded else uploaded[-1])
    if chosen is None or chosen.blob is None:
        return None
    folds = decode_user_values(chosen.blob, list(chosen.n_users or []), k=chosen.k)
    costs, costs_trusted = _costs(rows)
    return UserValues(folds=[f.scores for f in folds],
                      user_hashes=[f.users_sha256 for f in folds], trusted=chosen.trusted,
                      labels=[f.labels for f in folds], costs=costs,
                      costs_trusted=costs_trusted)


def _costs(rows: Sequence[UserValuesRow]) -> tuple[list[FoldCost] | None, bool]:
    """The latest trusted costs, else the upload's; and whether they are trusted."""
    with_costs = [r for r in rows if r.costs]
    trusted = [r for r in with_costs if r.trusted]
    chosen = trusted[-1] if trusted else (with_costs[-1] if with_costs else None)
    if chosen is None:
        return None, False
    return [fold_cost(c) for c in chosen.costs or []], chosen.trusted


def fold_cost(value: object) -> FoldCost:
    """A stored fold's costs (a dict with ``COST_KEYS``) as a :class:`FoldCost`."""
    data = value if isinstance(value, dict) else {}
    return FoldCost(**{k: _number(data.get(k)) for k in COST_KEYS})


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else None
