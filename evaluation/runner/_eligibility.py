"""Whether a run may be submitted to a competition, and a finished run's results re-read for
another competition than the one it was made for.

A run belongs to a competition when it scored every test user (no ``limit``), with the official
list length, on the competition's data and folds, with a harness version it accepts, and every
leaderboard test applies to its data. None of that depends on the model, so a finished run can
be submitted to any competition it belongs to without being computed again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evaluation.contract import (
    COMPETITION_KEY,
    DATASET_KEY,
    ELIGIBLE_KEY,
    FOLDS_KEY,
    HARNESS_VERSION_KEY,
    K_KEY,
    LIMIT_KEY,
    NOT_APPLICABLE_KEY,
    NOT_ELIGIBLE_BECAUSE_KEY,
    CompetitionTarget,
)

#: List length of the official protocol; other lengths are not eligible for upload.
DEFAULT_K = 100


def ineligible_because(*, limit: int, k: int, dataset: Mapping[str, Any], version: Any,
                       competition: CompetitionTarget, not_applicable: Mapping[str, str],
                       folds: Any = ()) -> list[str]:
    """Why a run may not be submitted to ``competition``, one sentence each.

    Parameters
    ----------
    limit, k : int
        The test users scored per fold (0: all) and the list length.
    dataset : mapping
        The run's ``results["dataset"]``.
    version : Any
        The run's harness version.
    competition : CompetitionTarget
        Where the run would go.
    not_applicable : mapping of str to str
        The leaderboard tests the run's data cannot measure.
    folds : sequence of mapping, optional
        The run's folds (``results["folds"]``): their ``repeated_lists`` count where the
        competition makes repeated items an error.

    Returns
    -------
    list of str
        Empty when the run may be submitted.
    """
    reasons = []
    if limit:
        reasons.append(f"limit={limit} scores only part of the test users")
    if k != DEFAULT_K:
        reasons.append(f"k={k} (the official protocol has k={DEFAULT_K})")
    # relative to the competition: its data, folds (their count included), versions and
    # repeated items
    reasons += competition.not_eligible_because(dataset, version, folds)
    if not_applicable:
        reasons.append(f"tests not applicable to this dataset: {list(not_applicable)} (a "
                       f"leaderboard scores every test)")
    return reasons


def retarget(results: Mapping[str, Any], competition: CompetitionTarget) -> dict:
    """A finished run's results as if it had been made for ``competition``.

    Only the competition and the eligibility change: the run id, run hash, scores and folds
    are the run's own (the run hash names the data, folds, version and tests, not the
    competition).

    Parameters
    ----------
    results : mapping
        The run's ``results.json``.
    competition : CompetitionTarget

    Returns
    -------
    dict
        A copy of ``results`` with ``competition``, ``eligible_for_upload`` and
        ``not_eligible_because`` relative to ``competition``.
    """
    reasons = ineligible_because(
        limit=results.get(LIMIT_KEY) or 0, k=results.get(K_KEY, DEFAULT_K),
        dataset=results.get(DATASET_KEY) or {}, version=results.get(HARNESS_VERSION_KEY),
        competition=competition, not_applicable=results.get(NOT_APPLICABLE_KEY) or {},
        folds=results.get(FOLDS_KEY) or ())
    return {**results, ELIGIBLE_KEY: not reasons, NOT_ELIGIBLE_BECAUSE_KEY: reasons,
            COMPETITION_KEY: competition.to_dict()}
