"""Score saved predictions of one fold, without the model that made them."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import pandas as pd

from evaluation._util.validation import check_int
from evaluation.challenge._scorer import FoldScorer
from evaluation.errors import ConfigError, PredictionError


def read_predictions(path: str | os.PathLike) -> pd.DataFrame:
    """Read predictions saved as parquet (or CSV) in the ``predict`` format.

    Parameters
    ----------
    path : str or PathLike
        A ``.csv`` file, or any other name for parquet.

    Returns
    -------
    pandas.DataFrame
        The file's frame as written (validation happens when it is scored).

    Raises
    ------
    ConfigError
        When the file does not exist.
    PredictionError
        When it cannot be read.
    """
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


def score(dataset, fold: int, predictions, *, k: int = 100, reclist_cls: type | None = None,
          limit: int | None = None, model_name: str = "predictions",
          warn_training_items: bool = True) -> dict[str, Any]:
    """Score one fold's predictions with the challenge's tests (and any added by ``reclist_cls``).

    Parameters
    ----------
    dataset : ChallengeDataset
        The dataset the predictions were made on.
    fold : int
        The fold, in ``[0, dataset.num_folds - 1]``.
    predictions : pandas.DataFrame or str or PathLike
        A frame in the ``predict`` format, or the path of a parquet/CSV file holding one.
    k : int
        Predictions per user.
    reclist_cls : type, optional
        A subclass of ``EvalRSRecList`` whose added ``@rec_test`` tests are scored too. The
        default scores the challenge's tests without importing reclist.
    limit : int, optional
        Score only the first ``limit`` test users (as the runner's ``limit``).
    model_name : str
        The model's name in a RecList's report (with ``reclist_cls`` only).
    warn_training_items : bool
        Warn about recommended training items.

    Returns
    -------
    dict
        ``{"fold", "k", "num_users", "tests": {name: value}, "details": {name: detail},
        "warnings": [...]}`` in plain JSON types; a slice test's value is its MRED and its
        detail holds MR and every MR_g. Warnings raised while scoring are shown to the caller
        and kept in ``warnings``.

    Raises
    ------
    ConfigError
        When ``fold`` is out of range or the predictions file does not exist.
    PredictionError
        When the predictions cannot be read or are invalid.
    """
    fold = check_int("fold", fold, minimum=0, maximum=dataset.num_folds - 1, owner="score")
    if isinstance(predictions, (str, os.PathLike)):
        predictions = read_predictions(predictions)
    test = dataset.get_test_set(fold, limit=limit) if limit else dataset.get_test_set(fold)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if reclist_cls is None:
            scorer = FoldScorer(dataset, fold, predictions, k=k, y_test=test,
                                warn_training_items=warn_training_items)
        else:
            scorer = reclist_cls(dataset, fold, predictions, k=k, y_test=test,
                                 model_name=model_name, warn_training_items=warn_training_items)
        tests = scorer.results()
        details = scorer.details()
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
