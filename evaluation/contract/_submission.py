"""The submission payload: what the runner sends to a leaderboard (``submission.json``), its
request body and idempotency key, and the check of its top-level structure."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evaluation.contract._keys import (
    EMAIL_KEY,
    LEADERBOARD_SCORE_KEY,
    PARTICIPANT_ID_KEY,
    PHASE1_SCORE_KEY,
    RESULTS_KEY,
    RUN_HASH_KEY,
    RUN_ID_KEY,
    RUN_NAME_KEY,
)
from evaluation.contract._problems import BAD, Checker, RecordRefused
from evaluation.contract._results import (
    RUN_ID_PATTERN,
    SHA256_PATTERN,
    ResultsRecord,
    check_results,
)
from evaluation.contract._text import escaped, has_control_characters
from evaluation.errors import ConfigError, DataError

#: Most characters of a run's name in a payload (the runner allows 80).
MAX_NAME = 128


def submission_payload(results: Mapping[str, Any], *, email: str | None,
                       participant_id: str | None) -> dict:
    """The payload that submits a run: who submits, the run's identity and its results.

    Parameters
    ----------
    results : mapping
        The run's ``results.json``.
    email, participant_id : str or None
        Who submits.

    Returns
    -------
    dict
        ``{"email", "participant_id", "run_id", "run_hash", "leaderboard_score",
        "results"}``: the identity and score repeat the results' own (None where the
        results lack them: the reader then says what is missing); ``"name"`` too when the
        run has one (a run without a name makes the same payload as before names existed).
    """
    named = {RUN_NAME_KEY: results[RUN_NAME_KEY]} if RUN_NAME_KEY in results else {}
    return {
        EMAIL_KEY: email,
        PARTICIPANT_ID_KEY: participant_id,
        RUN_ID_KEY: results.get(RUN_ID_KEY),
        RUN_HASH_KEY: results.get(RUN_HASH_KEY),
        LEADERBOARD_SCORE_KEY: results.get(LEADERBOARD_SCORE_KEY),
        **named,
        RESULTS_KEY: dict(results),
    }


def body_and_key(payload: Mapping[str, Any], run_id: str) -> tuple[bytes, str]:
    """The JSON body of ``payload`` and its idempotency key: the run id.

    The run id already names the model (its fingerprint), the data and the configuration, so
    every attempt of one submission, and a resend of its saved ``submission.json``, share one
    key; a different body under the same key is for the server to refuse as a conflict.

    Raises
    ------
    ConfigError
        When ``run_id`` is no run id (it goes into a header).
    DataError
        When ``payload`` is not strict JSON (NaN, infinity, objects JSON cannot hold).
    """
    if not re.fullmatch(RUN_ID_PATTERN, str(run_id)):
        raise ConfigError(f"run_id {escaped(str(run_id), 300)!r} is not a run id (letters, "
                          f"digits, _ . - only); was the submission file edited?")
    try:
        body = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                          allow_nan=False).encode("ascii")
    except (TypeError, ValueError) as exc:  # NaN/infinity (edited files) or non-JSON objects
        raise DataError(f"the submission of run {run_id} cannot be sent as strict JSON "
                        f"({escaped(str(exc), 300)}); NaN and infinity must be null.") from None
    return body, str(run_id)


@dataclass(frozen=True)
class SubmissionRecord:
    """A checked submission payload.

    The score fields are the client's claims: read, compared, never trusted.

    Attributes
    ----------
    run_id, run_hash : str
        The same as the results'.
    participant_id, email : str or None
        Without control characters; any other character is data, kept.
    name : str or None
        The run's name (optional; the results' own ``name``), without control characters.
    leaderboard_score : float or None
        The claimed phase-2 score.
    results : ResultsRecord
    raw : dict
        The whole payload read, unknown keys included (not to be changed).
    """

    run_id: str
    run_hash: str
    participant_id: str | None
    email: str | None
    leaderboard_score: float | None
    results: ResultsRecord
    raw: dict = field(repr=False, hash=False, compare=False)
    name: str | None = None

    def fold_tests(self, tests: tuple[str, ...] | list[str]) -> list[dict[str, float]]:
        """The values of ``tests`` in each fold, in fold order (fold 0 first)."""
        return self.results.fold_tests(tests)

    def claimed(self) -> dict[str, float | None]:
        """The scores the client claims (None where it claims none): ``{"phase1_score":
        results.phase1_score, "leaderboard_score": leaderboard_score}``."""
        return {PHASE1_SCORE_KEY: self.results.phase1_score,
                LEADERBOARD_SCORE_KEY: self.leaderboard_score}


def read_submission(data: Any, *,
                    leaderboard: Mapping[str, tuple[float, float]] | None) -> SubmissionRecord:
    """Check a submission payload and return its typed view.

    Parameters
    ----------
    data : Any
        The parsed payload.
    leaderboard : mapping of str to (float, float) or None
        The range of each leaderboard test (see :func:`read_results`).

    Returns
    -------
    SubmissionRecord

    Raises
    ------
    RecordRefused
        Listing every problem: the field (``results.folds[2].tests.HIT_RATE``), the rule and
        the offending value.
    """
    check = Checker()
    if not isinstance(data, dict):
        check.fail((), "Input should be a valid dictionary", data)
        raise RecordRefused(check.problems)
    parts = (check.text(data, RUN_ID_KEY, (), pattern=RUN_ID_PATTERN),
             check.text(data, RUN_HASH_KEY, (), pattern=SHA256_PATTERN),
             _printable(check, data, PARTICIPANT_ID_KEY, 1, 128),
             _printable(check, data, EMAIL_KEY, 3, 254),
             check.number(data, LEADERBOARD_SCORE_KEY, (), optional=True),
             _printable(check, data, RUN_NAME_KEY, 1, MAX_NAME))
    results = check.present(data, RESULTS_KEY, (), False)
    if results is not BAD:
        results = check_results(check, results, leaderboard=leaderboard, path=(RESULTS_KEY,))
    if check.problems or BAD in parts or results is BAD:
        raise RecordRefused(check.problems)
    run_id, run_hash, participant_id, email, score, name = parts
    _same_run(check, run_id, run_hash, results)
    _same_name(check, name, data[RESULTS_KEY])
    if check.problems:
        raise RecordRefused(check.problems)
    return SubmissionRecord(run_id=run_id, run_hash=run_hash, participant_id=participant_id,
                            email=email, leaderboard_score=score, results=results, raw=data,
                            name=name)


def _printable(check: Checker, data: dict, key: str, min_length: int, max_length: int) -> Any:
    """An optional string shown on pages and in logs: no control characters."""
    value = check.text(data, key, (), optional=True, min_length=min_length,
                       max_length=max_length)
    if value is None or value is BAD or not has_control_characters(value):
        return value
    return check.fail((key,), "must not contain control characters", value)


def _same_name(check: Checker, name: str | None, results: Any) -> None:
    """Record a problem when the payload's name is not its results' (both may lack one)."""
    own = results.get(RUN_NAME_KEY) if isinstance(results, dict) else None
    if name != own:
        check.fail((RUN_NAME_KEY,), f"differs from results.name {own!r}; the two come from "
                                    f"one run", name)


def _same_run(check: Checker, run_id: str, run_hash: str, results: ResultsRecord) -> None:
    """Record a problem when the payload's run id or hash is not its results'."""
    if run_id != results.run_id:
        check.fail((), f"run_id {run_id!r} differs from results.run_id {results.run_id!r}; "
                       f"the two come from one run")
    elif run_hash != results.run_hash:
        check.fail((), f"run_hash {run_hash[:12]}... differs from results.run_hash "
                       f"{results.run_hash[:12]}...; the two come from one run")
