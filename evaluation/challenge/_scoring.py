"""Score saved predictions of one fold, without the model that made them."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import pandas as pd

from evaluation.challenge._reclist import EvalRSRecList
from evaluation.errors import ConfigError, PredictionError


def read_predictions(path: str | os.PathLike) -> pd.DataFrame:
    """Read predictions saved as parquet (or CSV) in the ``predict`` format."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"predictions file {str(path)!r} does not exist")
    try:
        if path.suffix.lower() == ".csv":
            frame = pd.read_csv(path)
        else:
            frame = pd.read_parquet(path)
    except Exception as exc:  # unreadable file: say which, not where pyarrow failed
        raise PredictionError(
            f"predictions file {str(path)!r} cannot be read as "
            f"{'CSV' if path.suffix.lower() == '.csv' else 'parquet'}: {exc}"
        ) from None
    return frame


def score(dataset, fold: int, predictions, *, k: int = 100,
          reclist_cls: type[EvalRSRecList] = EvalRSRecList, limit: int | None = None,
          model_name: str = "predictions", warn_training_items: bool = True) -> dict[str, Any]:
    """Score one fold's predictions with the challenge's tests (and any added by ``reclist_cls``).

    ``predictions``: a DataFrame in the ``predict`` format, or the path of a parquet/CSV file
    holding one. ``limit`` scores only the first ``limit`` test users (as the runner's
    ``limit``); ``warn_training_items`` warns about recommended training items. Returns
    ``{"fold", "k", "num_users", "tests": {name: value},
    "details": {name: detail}, "warnings": [...]}`` in plain JSON types; a slice test's value
    is its MRED and its detail holds MR and every MR_g.
    """
    if not isinstance(fold, int) or isinstance(fold, bool) or not 0 <= fold < dataset.num_folds:
        raise ConfigError(f"The 'fold' argument of score must be an int in [0, "
                          f"{dataset.num_folds - 1}]; got {fold!r}")
    if isinstance(predictions, (str, os.PathLike)):
        predictions = read_predictions(predictions)
    test = dataset.get_test_set(fold, limit=limit) if limit else dataset.get_test_set(fold)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reclist = reclist_cls(dataset, fold, predictions, k=k, y_test=test,
                              model_name=model_name, warn_training_items=warn_training_items)
        tests = reclist.results()
        details = reclist.details()
    for w in caught:  # still shown to the caller, and kept in the report
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return {
        "fold": fold,
        "k": k,
        "num_users": len(test),
        "tests": tests,
        "details": details,
        "warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
    }
