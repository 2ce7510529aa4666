"""A predictions upload, read for the server: its stream strictly, its claim as a submission.

The stream (:func:`evaluation.contract.read_predictions`) is bounded by the competition's
``max_upload_bytes`` and its lists by ``INFLATE_RATIO`` times that. Its claim (the run's
``submission.json``) is read exactly as an upload of scores is (:func:`read_submission`) and
must describe the same run as the lists: the same run hash, harness version and ``k``, one
list section per fold, each with the fold's number of test users and the fold's test users
(their sha256, ``test_users_sha256``, which the run recorded). Which users the fold really
has, and whether each list names tracks of the catalogue, is for the scoring job to check
against the organizers' data; the server reads no data.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from evaluation._util.arrays import sorted_unique
from evaluation.challenge import users_sha256
from evaluation.contract import (
    FOLD_KEY,
    FOLDS_KEY,
    HARNESS_VERSION_KEY,
    K_KEY,
    RESULTS_KEY,
    TEST_USERS_SHA256_KEY,
    PredictionsUpload,
    read_predictions,
)
from evaluation.errors import DataError, SubmissionRejected
from evaluation.server.core._competition import INFLATE_RATIO, Competition
from evaluation.server.core._schema import Submission, read_submission


@dataclass(frozen=True)
class PredictionUpload:
    """A predictions upload, read: the claim as a submission, its JSON, and the lists."""

    submission: Submission
    document: dict
    lists: PredictionsUpload


def read_prediction_upload(body: bytes, competition: Competition) -> PredictionUpload:
    """Read a predictions upload (see the module).

    Raises
    ------
    SubmissionRejected
        413 when it is larger than ``max_upload_bytes``; 422 naming the part and the rule
        otherwise.
    """
    if len(body) > competition.max_upload_bytes:
        raise SubmissionRejected(
            413, f"the predictions upload is {len(body)} bytes, more than the "
                 f"{competition.max_upload_bytes} bytes the competition takes "
                 f"(max_upload_bytes in its competition file)")
    try:
        lists = read_predictions(body, max_bytes=competition.max_upload_bytes,
                                 max_inflated=INFLATE_RATIO * competition.max_upload_bytes)
    except DataError as exc:
        raise SubmissionRejected(422, f"invalid predictions: {exc}") from None
    claim = json.dumps(lists.claim, allow_nan=False).encode("ascii")
    submission, document = read_submission(claim)
    _check_same_run(lists, submission, document)
    return PredictionUpload(submission=submission, document=document, lists=lists)


def _check_same_run(lists: PredictionsUpload, submission: Submission, document: dict) -> None:
    """Nothing when the lists are those of the claimed run; else 422 naming what differs."""
    results = document[RESULTS_KEY]
    claimed = {"run_hash": submission.run_hash, "harness_version":
               results.get(HARNESS_VERSION_KEY), "k": results.get(K_KEY)}
    found = {"run_hash": lists.run_hash, "harness_version": lists.harness_version,
             "k": lists.k}
    for key, value in claimed.items():
        if found[key] != value:
            raise SubmissionRejected(
                422, f"invalid predictions: their {key} {str(found[key])[:70]!r} is not the "
                     f"claimed run's {str(value)[:70]!r}; upload the run's own predictions "
                     f"(`evalrs submit` on its run directory)")
    folds = sorted(results[FOLDS_KEY], key=lambda f: f[FOLD_KEY])
    if len(folds) != len(lists.folds):
        raise SubmissionRejected(422, f"invalid predictions: {len(lists.folds)} fold(s) of "
                                      f"lists, the claimed run has {len(folds)}")
    for fold, section in zip(folds, lists.folds):
        users = np.frombuffer(section.users, dtype="<i4")
        if section.n_users != fold.get("n_users"):
            raise SubmissionRejected(
                422, f"invalid predictions, fold {section.fold}: {section.n_users} users' "
                     f"lists, the claimed run's fold has {str(fold.get('n_users'))[:20]} test "
                     f"users")
        if len(sorted_unique(users)) != len(users):
            raise SubmissionRejected(422, f"invalid predictions, fold {section.fold}: a user "
                                          f"has two lists")
        recorded = fold.get(TEST_USERS_SHA256_KEY)
        if recorded is not None and users_sha256(users) != recorded:
            raise SubmissionRejected(
                422, f"invalid predictions, fold {section.fold}: the lists are for other "
                     f"users than the fold's test users the run recorded; upload the run's "
                     f"own predictions")
