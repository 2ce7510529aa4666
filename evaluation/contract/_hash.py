"""The run hash: what makes two runs' scores comparable, as one digest."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from evaluation._util.jsonable import json_sha256
from evaluation._version import __version__
from evaluation.contract._keys import FOLD_PARAMS_KEY


def run_hash(dataset_fingerprint: str, fold_params: Mapping[str, Any], tests: Iterable[str],
             harness_version: str = __version__) -> str:
    """Hash what makes two runs' scores comparable.

    Parameters
    ----------
    dataset_fingerprint : str
        The dataset's content fingerprint.
    fold_params : mapping
        The parameters the folds were drawn with.
    tests : iterable of str
        The RecList's tests (order does not matter).
    harness_version : str, optional
        The harness version (default: this one).

    Returns
    -------
    str
        The hex sha256 of the four as compact JSON with sorted keys (values JSON cannot hold
        written with ``str``): equal parts, equal hash, on any machine.
    """
    payload = {
        "dataset_fingerprint": dataset_fingerprint,
        FOLD_PARAMS_KEY: fold_params,
        "harness_version": harness_version,
        "tests": sorted(tests),
    }
    return json_sha256(payload, default=str)
