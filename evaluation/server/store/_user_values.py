"""The per-user values and costs of submissions, as the board reads them.

Each submission has the row its upload brought (self-reported: a claim's per-user arrays, or
none, and the costs its run measured), the row of its scoring job (trusted: its uploaded
predictions scored by the organizers), and one row per reproduction that sent values
(trusted: computed by the organizers from the model's predictions, with the costs measured in
the sandbox). A pinned baseline's row is trusted from the start (the organizers' own run).
Every row is kept; a submission's values are its latest trusted row, whatever its source,
never an upload's.

The test users the board compares (``compared_users``) are those of the phase's first trusted
row: the organizers' own computation fixes them, never the uploads (see ``check_declared_folds``,
which refuses an upload on other folds before its values are read).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import bindparam, select

from evaluation.challenge import FoldUsers, UserScores, decode_user_values
from evaluation.contract import COST_KEYS
from evaluation.errors import SubmissionRejected
from evaluation.server.db import UserValuesRow

if TYPE_CHECKING:  # annotations only: a function's handle on the database
    from evaluation.server.db import Database

#: ``UserValuesRow.source`` of an upload's row, of a reproduction's, of a scoring job's (the
#: uploaded predictions scored with the organizers' data: trusted) and of a pinned baseline's
#: (the organizers' own run: trusted).
UPLOAD = "upload"
REPRODUCTION = "reproduction"
SCORED = "scored"
BASELINE = "baseline"


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


@dataclass(frozen=True)
class ComparedUsers:
    """The test users a board compares: each fold's user hash and size, as fixed by the
    phase's first trusted row (``submission_id``'s)."""

    users_sha256: tuple[str, ...]
    fold_sizes: tuple[int, ...]
    submission_id: int


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
        The latest trusted values (a scoring job's, a reproduction's or a baseline's); None
        when there are none: no such submission, a claim or a predictions upload not scored
        yet, or no private reproduction yet.
    """
    return phase_user_values(db, None, [submission_id], private=private).get(submission_id)


def phase_user_values(db: Database, phase: str | None, submission_ids: Iterable[int], *,
                      private: bool = False) -> dict[int, UserValues]:
    """:func:`user_scores` of many submissions at once.

    One query reads the rows without their blobs; the decoded values of a blob seen before
    come from memory (up to ``DECODED_CACHE_BYTES``, keyed by the blob's sha256), and the
    blobs of the others are read in one more query. So the board of 200 teams, after one new
    upload, decodes one blob.

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
        Only the submissions that have values (see :func:`user_scores`). The arrays are
        read-only (shared with later calls).
    """
    ids = sorted({int(i) for i in submission_ids})
    if not ids:
        return {}
    query = select(*_LIGHT).where(UserValuesRow.submission_id.in_(ids)).order_by(
        UserValuesRow.submission_id, UserValuesRow.recorded_at, UserValuesRow.id)
    if phase is not None:
        query = query.where(UserValuesRow.phase == phase)
    with db.reading() as session:
        rows = session.execute(query).all()
    by_submission: dict[int, list[Any]] = {}
    for row in rows:
        by_submission.setdefault(row.submission_id, []).append(row)
    chosen = {sid: _chosen(found, private)
              for sid, found in by_submission.items()}
    chosen = {sid: row for sid, row in chosen.items() if row is not None}
    folds = _decoded(db, list(chosen.values()))
    out = {}
    for sid, row in chosen.items():
        costs, costs_trusted = _costs(by_submission[sid])
        decoded = folds[row.id]
        out[sid] = UserValues(folds=[f.scores for f in decoded],
                              user_hashes=[f.users_sha256 for f in decoded],
                              trusted=row.trusted, labels=[f.labels for f in decoded],
                              costs=costs, costs_trusted=costs_trusted)
    return out


#: Every column but the blob.
_LIGHT = tuple(c for c in UserValuesRow.__table__.c if c.name != "blob")
#: The most memory the decoded values kept for later calls may take (bytes): about 25 teams at
#: full scale (4 folds of ~30k users: ~2.6 MB each). The board keeps each submission's
#: bootstrap replicates, not its values, so it decodes a blob once per submission; a board of
#: every team's values would be ~0.5 GiB in each server process.
DECODED_CACHE_BYTES = 64 << 20


class _DecodedCache:
    """Decoded blobs by (blob sha256, n_users, k), least recently used dropped first."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.size = 0
        self.entries: OrderedDict[tuple, tuple[list[FoldUsers], int]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: tuple) -> list[FoldUsers] | None:
        with self.lock:
            found = self.entries.get(key)
            if found is None:
                return None
            self.entries.move_to_end(key)
            return found[0]

    def clear(self) -> None:
        """Forget every decoded blob."""
        with self.lock:
            self.entries.clear()
            self.size = 0

    def put(self, key: tuple, folds: list[FoldUsers]) -> None:
        nbytes = sum(_nbytes(f) for f in folds)
        with self.lock:
            if key in self.entries or nbytes > self.budget:
                return
            self.entries[key] = (folds, nbytes)
            self.size += nbytes
            while self.size > self.budget:
                _, (_, dropped) = self.entries.popitem(last=False)
                self.size -= dropped


_CACHE = _DecodedCache(DECODED_CACHE_BYTES)


def _nbytes(fold: FoldUsers) -> int:
    s = fold.scores
    return sum(np.asarray(a).nbytes for a in (s.hit, s.rr, s.blw, s.ld, *s.slices.values()))


def _key(row: Any) -> tuple:
    return (row.blob_sha256, tuple(row.n_users or ()), row.k)


def _decoded(db: Database, rows: Sequence[Any]) -> dict[int, list[FoldUsers]]:
    """The decoded blob of each row (by row id): from memory, else read and decoded."""
    out = {}
    missing = []
    for row in rows:
        found = _CACHE.get(_key(row))
        if found is None:
            missing.append(row)
        else:
            out[row.id] = found
    if missing:
        with db.reading() as session:
            stored = session.execute(select(UserValuesRow.id, UserValuesRow.blob).where(
                UserValuesRow.id.in_([r.id for r in missing]))).all()
        blobs: dict[int, bytes] = {row_id: blob for row_id, blob in stored if blob is not None}
        for row in missing:
            folds = [_read_only(f) for f in decode_user_values(
                blobs[row.id], list(row.n_users or []), k=row.k)]
            _CACHE.put(_key(row), folds)
            out[row.id] = folds
    return out


def _read_only(fold: FoldUsers) -> FoldUsers:
    """``fold`` with every array read-only (decoded values are shared between calls)."""
    s = fold.scores
    for array in (s.hit, s.rr, s.blw, s.ld, *s.slices.values()):
        np.asarray(array).flags.writeable = False
    return fold


def _chosen(rows: Sequence[Any], private: bool) -> Any:
    """The row whose values the board reads, of one submission's rows (oldest first): the
    latest trusted one of that privacy; None when there is none. An upload's own values are
    kept for the record and never read: the board vouches only for what the organizers
    computed."""
    trusted = [r for r in rows if r.trusted and r.private == private and r.blob_sha256]
    return trusted[-1] if trusted else None


def blob_sha256(blob: bytes | None) -> str | None:
    """The hex sha256 of a stored blob (None for none)."""
    return None if blob is None else hashlib.sha256(blob).hexdigest()


def _costs(rows: Sequence[Any]) -> tuple[list[FoldCost] | None, bool]:
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


# the user hashes of a phase's submissions with per-user values of a run hash, public or
# private: the first trusted one (a reproduction's or a baseline's)
_FIRST_HASHES = (select(UserValuesRow.users_sha256, UserValuesRow.submission_id)
                 .where(UserValuesRow.phase == bindparam("phase"),
                        UserValuesRow.run_hash == bindparam("run_hash"),
                        UserValuesRow.private == bindparam("private"),
                        # a row with values has a blob hash (a JSON column holds null as JSON)
                        UserValuesRow.blob_sha256.is_not(None),
                        # only the organizers' own runs set the users: an upload that named
                        # other users first would have every honest upload refused
                        UserValuesRow.trusted.is_(True))
                 .order_by(UserValuesRow.id).limit(1))


def check_same_users(conn: Any, phase: str, run_hash: str, hashes: list[str] | None, *,
                     private: bool = False, what: str = "the upload") -> None:
    """Nothing when ``hashes`` (each fold's user hash) are those of the phase's first trusted
    values for ``run_hash`` (a reproduction's or a baseline's), or it has none yet; else 422
    naming the first fold that differs. Uploads never set the users for others: before a
    trusted run, the board compares no one (``compared_users``)."""
    if hashes is None:
        return
    keys = {"phase": phase, "run_hash": run_hash, "private": private}
    first = conn.execute(_FIRST_HASHES, keys).one_or_none()
    if first is None:
        return
    theirs = list(first.users_sha256 or [])
    for number, (mine, other) in enumerate(zip(hashes, theirs)):
        if mine != other:
            raise SubmissionRejected(
                422, f"per-user values, fold {number}: {what}'s test users (sha256 "
                     f"{mine[:12]}...) are not those of the other submissions of phase "
                     f"{phase!r} with the same run hash (submission {first.submission_id}: "
                     f"{other[:12]}...), so their values cannot be compared user by user; the "
                     f"folds must be the competition's: run the harness unchanged")
    if len(theirs) != len(hashes):
        raise SubmissionRejected(
            422, f"per-user values: {what} has {len(hashes)} fold(s), the other submissions of "
                 f"phase {phase!r} with the same run hash have {len(theirs)}")


# the phase's trusted rows with values, public or private, oldest first: the first (of the
# competition's fold sizes, when its file states them) gives the users the board compares
_TRUSTED = (select(UserValuesRow.users_sha256, UserValuesRow.n_users,
                   UserValuesRow.submission_id)
            .where(UserValuesRow.phase == bindparam("phase"),
                   UserValuesRow.private == bindparam("private"),
                   UserValuesRow.blob_sha256.is_not(None),
                   UserValuesRow.trusted.is_(True))
            .order_by(UserValuesRow.id))


def compared_users(db: Database, phase: str, *, private: bool = False) -> ComparedUsers | None:
    """The test users the board of ``phase`` compares (its public folds, or its private ones):
    those of the phase's first trusted row (a reproduction's, a pinned baseline's, the
    organizers' scoring), on the public folds the first of the sizes the competition file
    states (``Competition.fold_users``) if it does; None before there is one. A later row on
    other users is left out; no count of uploads can move them."""
    stated = None if private else db.require_competition().fold_users
    keys = {"phase": phase, "private": private}
    with db.read_engine.connect() as conn:
        first = conn.execute(_TRUSTED.limit(1), keys).one_or_none()
        if first is not None and stated is not None and _sizes(first) != stated:
            # rare: a trusted row on other folds came first; the stated sizes decide
            first = next((row for row in conn.execute(_TRUSTED, keys)
                          if _sizes(row) == stated), None)
    if first is None:
        return None
    return ComparedUsers(users_sha256=tuple(first.users_sha256 or ()), fold_sizes=_sizes(first),
                         submission_id=int(first.submission_id))


def _sizes(row: Any) -> tuple[int, ...]:
    return tuple(int(n) for n in row.n_users or ())


def check_declared_folds(db: Database, phase: str, n_users: Sequence[int]) -> None:
    """Nothing when an upload's declared fold sizes (its results' ``n_users``) are those of the
    users the board of ``phase`` compares (``compared_users``), else those the competition
    file states, or neither is known yet; else 422 naming the first fold that differs. Called
    before the upload's per-user values are read: a small body declaring millions of users
    costs nothing."""
    users = compared_users(db, phase)
    if users is not None:
        sizes, source = users.fold_sizes, (f"fixed by the organizers' computation of "
                                           f"submission {users.submission_id}")
    else:
        stated = db.require_competition().fold_users
        if stated is None:
            return
        sizes, source = stated, "as the competition file states (dataset.fold_users)"
    declared = [int(n) for n in n_users]
    if len(declared) != len(sizes):
        raise SubmissionRejected(
            422, f"per-user values: the run has {len(declared)} fold(s), the folds phase "
                 f"{phase!r} compares have {len(sizes)} ({source}); the folds must be the "
                 f"competition's: run the harness unchanged")
    for number, (mine, theirs) in enumerate(zip(declared, sizes)):
        if mine != theirs:
            raise SubmissionRejected(
                422, f"per-user values, fold {number}: the run declares {mine} test users, the "
                     f"competition's fold has {theirs} ({source}), so its values cannot be "
                     f"compared user by user; the folds must be the competition's: run the "
                     f"harness unchanged")
