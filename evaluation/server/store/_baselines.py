"""The baselines: the competition's reference runs, pinned on the board of every phase.

Each baseline file is read and checked like an upload, scored with each phase's references and
stored under a team of the baseline's name that has no token. The server pins them at every
start: a baseline already stored with the same content is left alone; a changed file replaces
what its baseline had stored. A baseline file with per-user values (``make_baselines.py`` copies
the run's ``submission.json``, which has them) has them checked like an upload's and stored as
trusted (the organizers' own runs): its test users are then those every upload of the phase
with its run hash must have.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from sqlalchemy import select

from evaluation.contract import RESULTS_KEY, USER_VALUES_KEY
from evaluation.errors import ConfigError, SubmissionRejected
from evaluation.server.core import (
    BaselineSpec,
    CheckedValues,
    Competition,
    Scores,
    Submission,
    canonical_json,
    read_uploaded,
    recompute,
)
from evaluation.server.db import SubmissionRow, TeamRow, UserValuesRow, check_team_name
from evaluation.server.store._user_values import BASELINE, blob_sha256

if TYPE_CHECKING:  # annotations only: a function's handle on the database
    from evaluation.server.db import Database


def pin_baselines(db: Database) -> list[tuple[str, str, int]]:
    """Store the competition's baselines on the board of every phase, once.

    Returns
    -------
    list of (str, str, int)
        (baseline, phase, submission id) of each baseline's submission on each board.

    Raises
    ------
    ConfigError
        When a baseline file is missing or is not a valid run of this competition (the
        message names the file), or a team (not a baseline) has a baseline's name.
    """
    competition = db.require_competition()
    pinned = []
    for spec in competition.baselines:
        submission = _checked_run(competition, spec)
        # the file as read (only read here: ``model_dump`` would copy it whole first)
        document = submission.raw
        text = canonical_json(document)
        digest = hashlib.sha256(text.encode("ascii")).hexdigest()
        payload = text if USER_VALUES_KEY not in document else canonical_json(
            {k: v for k, v in document.items() if k != USER_VALUES_KEY})
        values = _checked_values(spec, submission)
        team_id = _baseline_team(db, spec.name)
        for phase in competition.phases:
            scores = recompute(submission.fold_tests(), phase.references)
            row_id = _pin(db, team_id, phase.name, submission.run_id, digest, payload, scores,
                          _values_row(phase.name, submission.run_hash, values))
            pinned.append((spec.name, phase.name, row_id))
    return pinned


def _checked_values(spec: BaselineSpec, submission: Submission) -> CheckedValues:
    """The baseline's per-user values and costs, checked like an upload's; ConfigError naming
    its file."""
    try:
        return read_uploaded(submission.raw, submission.raw[RESULTS_KEY],
                             submission.fold_tests())
    except SubmissionRejected as exc:
        raise ConfigError(f"baseline {spec.name!r}: {spec.file}: {exc.reason}. Regenerate it "
                          f"(see the competition file's comments).") from None


def _values_row(phase: str, run_hash: str, values: CheckedValues) -> dict | None:
    """The columns of a baseline's ``user_values`` row (None with neither values nor costs)."""
    if values.blob is None and values.costs is None:
        return None
    return dict(source=BASELINE, private=False, trusted=values.blob is not None, phase=phase,
                run_hash=run_hash, k=values.k, n_users=values.n_users,
                users_sha256=values.users_sha256, blob=values.blob,
                blob_sha256=blob_sha256(values.blob), costs=values.costs)


def _checked_run(competition: Competition, spec: BaselineSpec) -> Submission:
    """The baseline's run, read and checked like an upload; ConfigError naming its file."""
    try:
        submission = spec.load()
        competition.check_run(submission)
    except SubmissionRejected as exc:
        raise ConfigError(f"baseline {spec.name!r}: {spec.file} is not a valid run of this "
                          f"competition: {exc.reason}. Regenerate it (see the competition "
                          f"file's comments).") from None
    return submission


def _baseline_team(db: Database, name: str) -> int:
    """The id of the baseline's team, created (without a token) the first time."""
    check_team_name(name)
    with db.writing() as session:
        team = session.scalars(select(TeamRow).where(TeamRow.name == name)).one_or_none()
        if team is None:
            team = TeamRow(name=name, email=None, token_hash=None, is_baseline=True,
                           created_at=db.now())
            session.add(team)
            session.flush()
        elif not team.is_baseline:
            raise ConfigError(f"baseline {name!r}: a team of that name exists already; "
                              f"rename the baseline in the competition file.")
        return team.id


def _pin(db: Database, team_id: int, phase: str, run_id: str, digest: str, payload: str,
         scores: Scores, values: dict | None = None) -> int:
    """The id of the baseline's submission to ``phase`` (with its ``user_values`` row
    ``values``), stored unless the same run is."""
    with db.writing() as session:
        stored = session.scalars(select(SubmissionRow).where(
            SubmissionRow.team_id == team_id, SubmissionRow.phase == phase)).all()
        same = [s for s in stored if s.run_id == run_id and s.body_sha256 == digest]
        if same:
            return same[0].id
        for old in stored:  # a changed baseline file replaces the old run
            session.delete(old)
        session.flush()
        row = SubmissionRow(
            team_id=team_id, phase=phase, run_id=run_id, body_sha256=digest,
            payload=payload, submitted_at=db.now(), phase1_score=scores.phase1_score,
            leaderboard_score=scores.leaderboard_score, interval_low=scores.interval[0],
            interval_high=scores.interval[1], tests=dict(scores.tests),
            num_folds=scores.num_folds, claimed_score=None, flagged=False,
            reproduction="pending", computed=True)  # the organizers' own run
        session.add(row)
        session.flush()
        if values is not None:
            session.add(UserValuesRow(submission_id=row.id, recorded_at=db.now(), **values))
        return row.id
