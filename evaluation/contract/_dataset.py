"""From what a run records about its data and folds to the ``ChallengeDataset`` keyword
arguments that rebuild them.

A results file (and a competition file) names the data by a source string and the folds by
their parameters. ``"synthetic:small:seed7"`` is the synthetic data of scale ``small`` drawn
with seed 7 (``ChallengeDataset(source="synthetic", scale="small", data_seed=7)``); any other
source is passed on as it is. The fold parameters are keyword arguments as they stand, except
``protocol``, which records the only protocol there is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The source of the official challenge data.
OFFICIAL_SOURCE = "lfm"
#: The source of the synthetic data; ``"synthetic:<scale>[:seed<n>]"`` names one draw of it.
SYNTHETIC_SOURCE = "synthetic"
#: The fold parameters that are no ``ChallengeDataset`` keyword argument.
NOT_DATASET_ARGUMENTS = ("protocol",)


def source_arguments(source: str) -> dict[str, Any]:
    """``ChallengeDataset``'s ``source`` (and ``scale``, ``data_seed``) for a recorded source.

    Parameters
    ----------
    source : str
        As a results file's ``dataset.source`` or a competition file's ``source`` writes it:
        ``"lfm"``, ``"synthetic"``, ``"synthetic:small"``, ``"synthetic:small:seed42"``, a
        path ...

    Returns
    -------
    dict
        ``{"source": ...}``, with ``scale`` and ``data_seed`` where a synthetic source names
        them (a part that is not ``seed<digits>`` is no seed, and left out).
    """
    if source != SYNTHETIC_SOURCE and not source.startswith(SYNTHETIC_SOURCE + ":"):
        return {"source": source}
    parts = source.split(":")
    options: dict[str, Any] = {"source": SYNTHETIC_SOURCE}
    if len(parts) > 1 and parts[1]:
        options["scale"] = parts[1]
    if len(parts) > 2 and parts[2].startswith("seed") and parts[2][4:].isdigit():
        options["data_seed"] = int(parts[2][4:])
    return options


def fold_arguments(fold_params: Mapping[str, Any]) -> dict[str, Any]:
    """The fold parameters that are ``ChallengeDataset`` keyword arguments (all but
    ``protocol``)."""
    return {k: v for k, v in fold_params.items() if k not in NOT_DATASET_ARGUMENTS}


def dataset_arguments(source: str, fold_params: Mapping[str, Any]) -> dict[str, Any]:
    """``ChallengeDataset`` keyword arguments that rebuild the data of ``source`` with the
    folds of ``fold_params``.

    Examples
    --------
    >>> dataset_arguments("synthetic:small:seed7", {"num_folds": 4, "protocol": "loo"})
    {'num_folds': 4, 'source': 'synthetic', 'scale': 'small', 'data_seed': 7}
    """
    return {**fold_arguments(fold_params), **source_arguments(source)}
