"""Receiving a submission: check it, score it, and store it once, within the team's daily limit.

A submission is a predictions upload (``evaluation.contract.encode_predictions``: every
fold's top-k lists, with the run's ``submission.json`` as the team's claim): it is stored with
its lists and a scoring job is queued, whose worker scores the lists with the organizers'
data; until then the row shows the claim's numbers, as a claim (``computed`` false: not
ranked, not compared). An upload of scores only (the ``submission.json`` alone, as in 2022)
is refused unless the competition says ``accept_claims = true``; then it is kept as a claim
for good.

``submit`` is where a submission's rules meet the database. Everything that does not need the
database (parsing, the run's checks, the phase, the recomputed scores) happens first; then one
transaction locks the team's row, looks for the run under its idempotency key, counts the
team's submissions of the day and inserts. On PostgreSQL the lock is ``SELECT ... FOR UPDATE``
on the team's row; on SQLite every write transaction starts with ``BEGIN IMMEDIATE`` (see
``make_engine``), which serialises the writers. So two uploads of one team never both pass the
daily limit, and one run is stored once, however many threads or processes send it; a unique
constraint on (team, phase, run) backs the idempotency in the schema as well.
"""

from __future__ import annotations

import hashlib
import math
from datetime import datetime, time, timedelta, timezone
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, func, insert, select
from sqlalchemy.exc import IntegrityError

from evaluation.contract import RESULTS_KEY, USER_VALUES_KEY, cut, is_predictions
from evaluation.errors import SubmissionRejected
from evaluation.server.core import (
    CheckedValues,
    Competition,
    Phase,
    Scores,
    Submission,
    canonical_json,
    claimed_differs,
    fold_users,
    read_costs,
    read_prediction_upload,
    read_submission,
    read_uploaded,
    recompute,
)
from evaluation.server.db import (
    PhaseRevealRow,
    PredictionsRow,
    ReproductionJobRow,
    SubmissionRow,
    TeamRow,
    UserValuesRow,
    as_utc,
    iso,
)
from evaluation.server.store._jobs import (
    FAILED,
    REPRODUCE,
    SCORE,
    queue_scoring,
    queue_upload,
)
from evaluation.server.store._limits import LimitReached, given_back
from evaluation.server.store._user_values import (
    UPLOAD,
    blob_sha256,
    check_declared_folds,
    check_same_users,
)
from evaluation.server.store._views import STORED_FIELDS, Receipt, Stored, receipt

if TYPE_CHECKING:  # annotations only: a function's handle on the database
    from sqlalchemy.engine import Connection

    from evaluation.server.db import Database

# The statements of ``_insert`` (parameters team_id, phase, run_id, start, end), built once:
# Core statements on a connection, without the ORM's unit of work on the hot path.
_TEAM_FOR_UPDATE = (select(TeamRow.name, TeamRow.is_baseline)
                    .where(TeamRow.id == bindparam("team_id")).with_for_update())
_REVEALED = select(PhaseRevealRow.revealed_at).where(PhaseRevealRow.phase == bindparam("phase"))
# the team, and when its upload's phase was revealed (None: not revealed), in one query
_TEAM_AND_REVEAL = select(TeamRow.name, TeamRow.is_baseline,
                          _REVEALED.scalar_subquery().label("revealed_at")).where(
    TeamRow.id == bindparam("team_id"))
_EXISTING = select(*(getattr(SubmissionRow, f) for f in STORED_FIELDS)).where(
    SubmissionRow.team_id == bindparam("team_id"), SubmissionRow.phase == bindparam("phase"),
    SubmissionRow.run_id == bindparam("run_id"))
# a submission whose scoring or reproduction job failed for a reason in ``free`` (the
# platform's, and the team's where the competition says ``count_refused = false``) is not
# counted; a submission carried into the phase from an earlier one is not the team's upload:
# never counted against its daily limit
_GIVEN_BACK = select(ReproductionJobRow.id).where(
    ReproductionJobRow.submission_id == SubmissionRow.id,
    ReproductionJobRow.kind.in_((SCORE, REPRODUCE)), ReproductionJobRow.state == FAILED,
    ReproductionJobRow.cause.in_(bindparam("free", expanding=True)))
_COUNT_TODAY = select(func.count()).select_from(SubmissionRow).where(
    SubmissionRow.team_id == bindparam("team_id"), SubmissionRow.phase == bindparam("phase"),
    SubmissionRow.submitted_at >= bindparam("start"),
    SubmissionRow.submitted_at < bindparam("end"), ~_GIVEN_BACK.exists(),
    SubmissionRow.carried_from.is_(None))
_INSERT = insert(SubmissionRow).returning(SubmissionRow.id)
_INSERT_VALUES = insert(UserValuesRow)
_INSERT_PREDICTIONS = insert(PredictionsRow)

#: The refusal of an upload of scores only where the competition takes none.
CLAIMS_REFUSED = (
    "this upload carries scores only (a submission.json without predictions), and the "
    "competition does not take claims (accept_claims = false in its competition file): the "
    "board shows only numbers the organizers computed. Upload the run's predictions with "
    "`python -m evaluation submit results/<run>/submission.json` (it sends "
    "submission.predictions, which this harness keeps in every run directory); organizers "
    "who want to show unverified claims set accept_claims = true.")


def submit(db: Database, team_id: int, body: bytes, idempotency_key: str | None = None,
           phase_name: str | None = None) -> Receipt:
    """Check, score and store a team's submission.

    Parameters
    ----------
    db : Database
    team_id : int
        The submitting team (authenticated by the caller).
    body : bytes
        The upload: the ``submission.json`` the runner writes.
    idempotency_key : str, optional
        The client's ``Idempotency-Key``; when given it must be the run id.
    phase_name : str, optional
        The phase the upload is for (the request's URL or ``X-Phase`` header); None: the
        phase open now.

    Returns
    -------
    Receipt
        "accepted" (a new submission) or "duplicate" (this run was stored already with the
        same body: nothing is counted again).

    Raises
    ------
    SubmissionRejected
        422 for an invalid payload or another competition's run, 404 for a phase the
        competition does not have, 403 when the phase (or, without ``phase_name``, any phase)
        is not open or was revealed, 409 for another body under a run id already stored, 429
        (``LimitReached``) when the team has used its submissions of the day.
    """
    competition = db.require_competition()
    now = db.now()
    predictions: bytes | None = None
    if is_predictions(body):
        upload = read_prediction_upload(body, competition)
        submission, document, predictions = upload.submission, upload.document, body
    elif not competition.accept_claims:
        raise SubmissionRejected(422, CLAIMS_REFUSED)
    else:
        submission, document = read_submission(body)
    if idempotency_key is not None and idempotency_key != submission.run_id:
        raise SubmissionRejected(
            422, f"the Idempotency-Key header {idempotency_key[:140]!r} is not the "
                 f"submission's run_id {submission.run_id!r}; send the run id as the key.")
    competition.check_run(document)
    if predictions is not None:
        _check_repeated_rule(competition, document[RESULTS_KEY])
    phase = open_phase(competition, phase_name, now)
    # the claim's own numbers, shown as its claim until (for a predictions upload) a scoring
    # job replaces them with the organizers'
    scores = recompute(submission.fold_tests(), phase.references)
    if predictions is None:
        if document.get(USER_VALUES_KEY) is not None:
            # before the values are read: a small body declaring other folds (millions of
            # users) is refused before anything is allocated for them
            check_declared_folds(db, phase.name, fold_users(document[RESULTS_KEY]))
        uploaded = read_uploaded(document, document[RESULTS_KEY], submission.fold_tests())
    else:  # the lists are what counts: per-user values the claim may hold are not read
        uploaded = CheckedValues(blob=None, k=None, n_users=None, users_sha256=None,
                                 costs=read_costs(document[RESULTS_KEY]))
    values = _columns(team_id, phase, submission, document, scores, now, predictions)
    extra = _values_row(phase, submission, uploaded, now)
    try:
        stored, new, used = _insert(db, values, phase, now, extra, predictions)
    except IntegrityError:
        # only when the schema's unique constraint caught what the lock should have: the
        # other insert has committed, so the repeat is answered from it
        stored, new, used = _insert(db, values, phase, now, extra, predictions)
    return receipt(db, stored, new, phase, used)


def check_before_body(db: Database, team_id: int, idempotency_key: str | None = None,
                      phase_name: str | None = None) -> Phase:
    """Refuse an upload before its body is read when it would be refused anyway: its phase is
    unknown, not open or revealed, or the team has used its submissions of the day. A read
    of the headers' facts only (``submit`` checks again under the lock); returns the phase.

    A repeat of a stored run is still answered ("duplicate") at the daily limit and in a
    revealed phase, and it is known by its ``idempotency_key`` (the run id) alone: without
    one the upload is refused at once, so a refused team never has its body read.

    Raises
    ------
    SubmissionRejected
        404 when the competition has no phase ``phase_name``; 403 when the phase (without
        ``phase_name``: any phase) is not open now, or was revealed; 429 (``LimitReached``)
        at the daily limit; the last two unless ``idempotency_key`` names a run the team
        stored in the phase.
    """
    competition = db.require_competition()
    now = db.now()
    phase = open_phase(competition, phase_name, now)
    start = datetime.combine(now.date(), time(0), tzinfo=timezone.utc)
    end = start + timedelta(days=1)
    keys = {"team_id": team_id, "phase": phase.name}
    with db.read_engine.connect() as conn:
        team = conn.execute(_TEAM_AND_REVEAL, keys).one()
        used = conn.execute(_COUNT_TODAY, {**keys, "start": start, "end": end,
                                           "free": given_back(competition)}).scalar_one()
        at_limit = not team.is_baseline and used >= phase.daily_limit
        if team.revealed_at is None and not at_limit:
            return phase
        # refused unless a repeat of a stored run, which is answered from it
        if idempotency_key is not None and conn.execute(
                _EXISTING, {**keys, "run_id": idempotency_key}).one_or_none() is not None:
            return phase
    if team.revealed_at is not None:
        raise _revealed(phase, team.revealed_at)
    raise _limit_reached(team.name, used, phase, now, end, keyless=idempotency_key is None)


def _check_repeated_rule(competition: Competition, results: Any) -> None:
    """422 unless the run scores repeated tracks by the competition's rule: the scoring job
    reads the rule from the stored run, so a run that says otherwise is refused here, never
    scored more leniently than the competition says."""
    section = results.get("competition") if isinstance(results, dict) else None
    rule = section.get("repeated_items", "first") if isinstance(section, dict) else "first"
    if rule != competition.repeated_items:
        raise SubmissionRejected(
            422, f"the run scores lists that name a track twice by the rule {cut(str(rule))!r}, "
                 f"the competition by {competition.repeated_items!r} (repeated_items in its "
                 f"competition file): run again with --competition pointing at the "
                 f"competition's file, so that the run is scored by its rule.")


def open_phase(competition: Competition, phase_name: str | None, now: datetime) -> Phase:
    """The phase an upload is for: ``phase_name`` when it is open at ``now``; without a name,
    the phase open at ``now``.

    Raises
    ------
    SubmissionRejected
        404 when the competition has no phase ``phase_name``; 403 when it (or, without a
        name, every phase) is not open at ``now``.
    """
    if phase_name is None:
        phase = competition.phase_at(now)
        if phase is None:
            raise SubmissionRejected(403, _closed_reason(competition, now))
        return phase
    phase = competition.phase(phase_name)
    if not phase.is_open(now):
        current = competition.phase_at(now)
        instead = (f"; phase {current.name!r} is open now" if current is not None
                   else "; no phase is open now")
        raise SubmissionRejected(
            403, f"phase {phase.name!r} of {competition.name!r} is not open now ({iso(now)}): "
                 f"it takes submissions from {iso(phase.opens)} until {iso(phase.closes)} "
                 f"(UTC){instead}.")
    return phase


def _refuse_revealed(conn: Connection, phase: Phase) -> None:
    """403 when the organizers revealed ``phase`` (see ``_revealed``)."""
    revealed_at = conn.execute(_REVEALED, {"phase": phase.name}).scalar_one_or_none()
    if revealed_at is not None:
        raise _revealed(phase, revealed_at)


def _revealed(phase: Phase, revealed_at: datetime | str) -> SubmissionRejected:
    """The refusal of an upload to ``phase``, revealed at ``revealed_at``: its private scores
    are shown, so it takes no more uploads (nor final marks)."""
    return SubmissionRejected(
        403, f"phase {phase.name!r} was revealed on {iso(as_utc(revealed_at))}: its private "
             f"scores are shown, so it takes no more submissions and its final selections "
             f"are frozen.")


def _limit_reached(team: str, used: int, phase: Phase, now: datetime, end: datetime,
                   keyless: bool = False) -> LimitReached:
    wait = max(1, math.ceil((end - now).total_seconds()))
    repeat = (" A repeat of a stored run is answered only when the request names it: send "
              "its run id as the Idempotency-Key header (the upload client does)."
              if keyless else "")
    return LimitReached(
        f"daily limit reached: team {team!r} has made {used} of {phase.daily_limit} "
        f"submissions to phase {phase.name!r} today (UTC); the next is accepted from "
        f"{iso(end)}, in {wait} s.{repeat}", wait)


def _columns(team_id: int, phase: Phase, submission: Submission, document: Any,
             scores: Scores, now: datetime, predictions: bytes | None = None
             ) -> dict[str, Any]:
    """The columns of the submission's row (``computed`` false: the claim's numbers).

    ``body_sha256`` hashes the whole body (a resend is a repeat only when all of it is equal:
    the predictions stream as sent, or the claim's canonical JSON); ``payload`` keeps the
    claim without its per-user values, which ``user_values`` holds once, compressed.
    """
    body_sha256 = hashlib.sha256(
        predictions if predictions is not None
        else canonical_json(document).encode("ascii")).hexdigest()
    payload = canonical_json({k: v for k, v in document.items() if k != USER_VALUES_KEY})
    return dict(
        team_id=team_id, phase=phase.name, run_id=submission.run_id,
        body_sha256=body_sha256, payload=payload,
        submitted_at=now, phase1_score=scores.phase1_score,
        leaderboard_score=scores.leaderboard_score, interval_low=scores.interval[0],
        interval_high=scores.interval[1], tests=dict(scores.tests),
        num_folds=scores.num_folds, claimed_score=submission.claimed().get("leaderboard_score"),
        flagged=bool(claimed_differs(submission, scores)), reproduction="pending",
        computed=False)


def _values_row(phase: Phase, submission: Submission, uploaded: CheckedValues,
                now: datetime) -> dict[str, Any] | None:
    """The columns of the upload's ``user_values`` row (None when it has neither per-user
    values nor costs)."""
    if uploaded.blob is None and uploaded.costs is None:
        return None
    return dict(source=UPLOAD, private=False, trusted=False, phase=phase.name,
                run_hash=submission.run_hash, k=uploaded.k, n_users=uploaded.n_users,
                users_sha256=uploaded.users_sha256, blob=uploaded.blob,
                blob_sha256=blob_sha256(uploaded.blob), costs=uploaded.costs, recorded_at=now)


def _insert(db: Database, values: dict[str, Any], phase: Phase, now: datetime,
            extra: dict[str, Any] | None = None, predictions: bytes | None = None
            ) -> tuple[Stored, bool, int]:
    """Store a submission (the columns' ``values``, its ``user_values`` row ``extra`` and its
    ``predictions`` stream, with a scoring job) unless its run is there; returns (the stored
    submission, new?, submissions of the team in the phase today)."""
    start = datetime.combine(now.date(), time(0), tzinfo=timezone.utc)
    end = start + timedelta(days=1)
    keys = {"team_id": values["team_id"], "phase": values["phase"]}
    with db.write_lock, db.engine.begin() as conn:
        # the lock that makes counting and inserting one step (PostgreSQL; on SQLite the
        # transaction's BEGIN IMMEDIATE holds the database's write lock already)
        team = conn.execute(_TEAM_FOR_UPDATE, keys).one()
        existing = conn.execute(_EXISTING, {**keys, "run_id": values["run_id"]}).one_or_none()
        if existing is not None:
            if existing.body_sha256 != values["body_sha256"]:
                raise SubmissionRejected(
                    409, f"run {values['run_id']} was submitted already (submission "
                         f"{existing.id}, {iso(existing.submitted_at)}) with another body; a "
                         f"run id names one result. Submit a changed run as a new run (a new "
                         f"run id), or send the stored file unchanged.")
            return Stored(**existing._mapping), False, 0
        _refuse_revealed(conn, phase)  # under the team's lock, which a reveal waits for
        used = conn.execute(_COUNT_TODAY, {**keys, "start": start, "end": end,
                                           "free": given_back(db.require_competition())}
                            ).scalar_one()
        if used >= phase.daily_limit and not team.is_baseline:
            raise _limit_reached(team.name, used, phase, now, end)
        if extra is not None:
            check_same_users(conn, extra["phase"], extra["run_hash"], extra["users_sha256"])
        new_id = conn.execute(_INSERT, values).scalar_one()
        queue_upload(conn, new_id, phase, now)
        if extra is not None:
            conn.execute(_INSERT_VALUES, {**extra, "submission_id": new_id})
        if predictions is not None:
            conn.execute(_INSERT_PREDICTIONS, {
                "submission_id": new_id, "body": predictions, "size": len(predictions),
                "body_sha256": values["body_sha256"], "recorded_at": now})
            queue_scoring(conn, new_id, phase, now)
    stored = Stored(id=new_id, **{f: values[f] for f in STORED_FIELDS if f != "id"})
    return stored, True, used + 1


def _closed_reason(competition: Competition, now: datetime) -> str:
    phases = "; ".join(f"{p.name!r} from {iso(p.opens)} until {iso(p.closes)}"
                       for p in competition.phases)
    return (f"no phase of {competition.name!r} is open now ({iso(now)}); submissions are "
            f"accepted in: {phases} (UTC).")
