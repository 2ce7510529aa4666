"""One fold of a run: train, predict, validate and score, as a plain function.

``compute_fold`` takes only picklable inputs (the model, the dataset, a ``FoldJob``) and
writes nothing but reclist's report folder, so the same function runs in the runner's own
process and in a Ray task on another machine; the caller saves what it returns.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from evaluation._util.hugepages import no_hugepage_advice
from evaluation._util.jsonable import to_jsonable
from evaluation.challenge import (
    MRED_SLICES,
    FoldScorer,
    Slice,
    UserScores,
    fold_slices,
    users_sha256,
)
from evaluation.contract import (
    REPEATED_LISTS_KEY,
    SLICE_LABELS_KEY,
    TEST_USERS_SHA256_KEY,
    CompetitionTarget,
)
from evaluation.dataset import ChallengeDataset
from evaluation.errors import PredictionError, PredictionWarning
from evaluation.participant import fold_seed, seed_global_generators
from evaluation.predictions import validate_predictions
from evaluation.protocols import rating_errors, supports_ratings
from evaluation.runner._profile import FoldProfile
from evaluation.runner._reclist import reclist_base

#: The stages of a fold, in order; each is timed.
STAGES = ("data", "train", "predict", "validate", "score")


@dataclass(frozen=True)
class FoldJob:
    """What one fold needs besides the model and the dataset (every field picklable).

    Attributes
    ----------
    fold : int
        The fold.
    name : str
        The model's name in the run (reclist's ``model_name``).
    seed : int
        The run's seed; the fold seeds the global generators from it.
    limit : int
        Score only the first ``limit`` test users (0: all).
    k : int
        Length of the recommendation lists.
    reclist_cls : type or None
        A custom RecList class to score with; None for the challenge's own tests, scored
        without reclist unless ``reports`` asks for reclist's loop.
    reports : bool
        Run reclist's own loop (its table and its report folder).
    verbose : bool
        Let reclist print its table.
    progress : bool
        Show the fold's stage bar.
    report_dir : pathlib.Path
        reclist's report folder for this fold.
    train_kwargs : dict
        Passed to ``model.train``.
    repeated : {"first", "error"}
        Lists that name a track twice: scored as the 2022 harness did, or refused.
    repeated_rule : str
        Who refuses them, said after the refusal (a competition file); "" for the dataset.
    """

    fold: int
    name: str
    seed: int
    limit: int
    k: int
    reclist_cls: type | None
    reports: bool
    verbose: bool
    progress: bool
    report_dir: Path
    train_kwargs: dict = field(default_factory=dict)
    repeated: str = "first"
    repeated_rule: str = ""


@dataclass(frozen=True)
class FoldOutput:
    """A computed fold, as the runner saves it.

    Attributes
    ----------
    fold : int
        The fold.
    result : dict
        Its JSON-ready results (``compute_fold``).
    scores : UserScores
        Its per-user scores.
    report_files : dict of str to bytes
        reclist's report files by path relative to the fold's report folder, when they were
        written elsewhere (a Ray worker) and still have to be written into the run directory.
    printed : str
        What the fold printed elsewhere, for the runner to print.
    lists : FoldPredictions, optional
        The fold's checked predictions, kept in the run directory for the upload.
    """

    fold: int
    result: dict
    scores: UserScores
    report_files: dict[str, bytes] = field(default_factory=dict)
    printed: str = ""
    lists: FoldPredictions | None = None


@dataclass(frozen=True)
class FoldPredictions:
    """A fold's checked top-k lists as the leaderboard receives them: the test user ids and
    the ``(users, k)`` track ids, both int32 (what a scoring job scores)."""

    users: np.ndarray
    items: np.ndarray

    @classmethod
    def from_frame(cls, predictions: pd.DataFrame) -> FoldPredictions:
        """The lists of a validated predictions frame (indexed by user id, int columns).

        Raises
        ------
        PredictionError
            When a user or track id does not fit an int32 (the upload's compact type).
        """
        users = predictions.index.to_numpy()
        items = predictions.to_numpy()
        for name, values in (("user", users), ("track", items)):
            if values.size and (values.min() < _INT32.min or values.max() > _INT32.max):
                raise PredictionError(f"a {name} id outside the int32 range: the upload of "
                                      f"predictions carries int32 ids; re-index the data")
        return cls(users=users.astype(np.int32), items=np.ascontiguousarray(items, np.int32))


_INT32 = np.iinfo(np.int32)


def compute_fold(model, dataset: ChallengeDataset, job: FoldJob
                 ) -> tuple[dict, UserScores, FoldPredictions]:
    """Train, predict, validate and score one fold.

    Parameters
    ----------
    model : RecModel
        The model; trained in place.
    dataset : ChallengeDataset
        The data and its folds.
    job : FoldJob
        The fold and the run's settings.

    Returns
    -------
    tuple of (dict, UserScores, FoldPredictions)
        The fold's JSON-ready results (``fold``, counts, ``tests``, ``details``, the sha256
        of its test user ids and its slices' group labels, maybe ``rating_errors``, and
        ``runtime`` last: what the fold cost is read from it, ``contract.fold_cost``), its
        per-user scores, ready for ``_store.write_fold``, and its checked lists (what an
        upload carries).
    """
    profile = FoldProfile()
    bar = tqdm(total=len(STAGES), desc=f"fold {job.fold}", leave=False, unit="step",
               disable=not job.progress)
    with _stage(profile, bar, "data"):
        train_df, test_df = dataset.get_train_and_test_sets(job.fold, limit=job.limit or None)
    # A model may change the frames it gets (add columns, drop rows in place, write with
    # .loc): under pandas' copy-on-write a shallow copy takes those changes without
    # copying any data, so validation, scoring and the recorded counts use the
    # harness's own frames. The catalog comes from the tables, not from a model's copy.
    seed_global_generators(fold_seed(job.seed, job.fold))
    with _stage(profile, bar, "train"):
        model.train(train_df.copy(deep=False), **job.train_kwargs)
    with _stage(profile, bar, "predict"):
        raw = model.predict(test_df[["user_id"]].reset_index(drop=True))
    n_train_rows = len(train_df)
    train_df = _scoring_rows(train_df, job.reclist_cls)
    return _check_and_score(model, raw, dataset, job, (train_df, test_df, n_train_rows),
                            profile, bar)


@dataclass(frozen=True)
class PreparedFold:
    """What scoring lists on one fold needs that no list changes, prepared once
    (:func:`prepare_fold`) for every upload a scoring worker scores on that fold.

    Attributes
    ----------
    fold : int
        The fold.
    test : pandas.DataFrame
        Its test rows (``user_id``, ``track_id``), as ``compute_fold`` reads them.
    slices : dict of str to Slice
        Its MRED slices, from its training rows (``fold_slices``).
    n_train_rows : int
        Its training rows.
    """

    fold: int
    test: pd.DataFrame
    slices: dict[str, Slice]
    n_train_rows: int


def prepare_fold(dataset: ChallengeDataset, fold: int, limit: int = 0) -> PreparedFold:
    """The fold's test rows and slices, computed as ``compute_fold`` computes them; its
    training rows are let go."""
    train_df, test_df = dataset.get_train_and_test_sets(fold, limit=limit or None)
    n_train_rows = len(train_df)
    train_df = _scoring_rows(train_df, None)
    slices = fold_slices(train_df, dataset.df_users, dataset.df_tracks,
                         test_df["user_id"].to_numpy(), test_df["track_id"].to_numpy())
    return PreparedFold(fold, test_df, slices, n_train_rows)


def score_fold(raw: pd.DataFrame, dataset: ChallengeDataset, job: FoldJob,
               prepared: PreparedFold) -> tuple[dict, UserScores, FoldPredictions]:
    """Validate and score lists made elsewhere (an upload's), as ``compute_fold`` does once
    a model has predicted, on a prepared fold of the challenge's own tests.

    The same validation, the same ``FoldScorer`` and the same per-user values, to the bit;
    the training rows are not read again, so the training-items note (how many listed
    tracks the users have in training: no test's value) is not counted (``seen_in_training``
    is None).

    Raises
    ------
    PredictionError
        When the lists are not valid predictions for the fold's test users.
    """
    if job.reclist_cls is not None or job.reports or prepared.fold != job.fold:
        raise ValueError("score_fold scores the challenge's own tests of the prepared fold, "
                         "without reclist reports")
    profile = FoldProfile()
    bar = tqdm(total=len(STAGES), desc=f"fold {job.fold}", leave=False, unit="step",
               disable=not job.progress)
    return _check_and_score(None, raw, dataset, job,
                            (None, prepared.test, prepared.n_train_rows), profile, bar,
                            slices=prepared.slices)


def _check_and_score(model, raw, dataset: ChallengeDataset, job: FoldJob,
                     frames: tuple[pd.DataFrame | None, pd.DataFrame, int],
                     profile: FoldProfile, bar, slices: dict[str, Slice] | None = None
                     ) -> tuple[dict, UserScores, FoldPredictions]:
    """The validate and score stages of a fold and its results (see ``compute_fold``)."""
    train_df, test_df, n_train_rows = frames
    with _stage(profile, bar, "validate"), _prediction_notes() as (seen, repeated):
        predictions = _validate(raw, test_df, dataset, train_df, job)
    with _stage(profile, bar, "score"):
        tests, details, challenge_fold = _score(dataset, job, train_df, test_df, predictions,
                                                slices)
    bar.close()
    scores = UserScores.from_challenge_fold(challenge_fold)
    result = to_jsonable({"fold": job.fold, "n_users": int(len(test_df)),
                          "n_train_rows": n_train_rows, "tests": tests,
                          "details": details,
                          "seen_in_training": seen if train_df is not None else None,
                          REPEATED_LISTS_KEY: repeated["lists"],
                          TEST_USERS_SHA256_KEY: users_sha256(test_df["user_id"].to_numpy()),
                          SLICE_LABELS_KEY: slice_labels(challenge_fold)})
    rating = None if model is None else _rating_errors(model, dataset, test_df)
    if rating is not None:
        result["rating_errors"] = to_jsonable(rating)
    result["runtime"] = profile.to_dict()
    return result, scores, FoldPredictions.from_frame(predictions)


def slice_labels(fold: object) -> dict[str, list[str]]:
    """Each MRED test's group labels in a scored fold (a user's code ``g`` names
    ``labels[g]``); none for a slice the fold's scoring state lacks."""
    slices = getattr(fold, "slices", {}) or {}
    return {test: [str(v) for v in slices[name].labels] if name in slices else []
            for test, name in MRED_SLICES.items()}


def repeated_mode(dataset: ChallengeDataset, competition: CompetitionTarget) -> str:
    """How a run treats lists that name a track twice: ``"error"`` when the dataset or the
    competition the run is made for says so, else ``"first"`` (scored as 2022 did)."""
    modes = (getattr(dataset, "repeated_items", "first"), competition.repeated_items)
    return "error" if "error" in modes else "first"


def _validate(raw, test_df: pd.DataFrame, dataset: ChallengeDataset,
              train_df: pd.DataFrame | None, job: FoldJob) -> pd.DataFrame:
    """The fold's checked predictions; a refusal of repeated items names who refuses them."""
    try:
        return validate_predictions(
            raw, test_df["user_id"].to_numpy(), k=job.k, catalog=dataset.tables.tracks.index,
            train=train_df, repeated=job.repeated)
    except PredictionError as exc:
        if job.repeated_rule and getattr(exc, "repeated_lists", None):
            raise PredictionError(f"{exc}\n{job.repeated_rule}") from None
        raise


#: The training columns the challenge's own tests read (the training items and the slices).
SCORING_COLUMNS = ("user_id", "track_id", "artist_id", "user_track_count")


def _scoring_rows(train_df: pd.DataFrame, reclist_cls: type | None) -> pd.DataFrame:
    """What validation and scoring keep of the fold's training rows once the model is done.

    The challenge's RecList reads four of the columns and not the index: keeping only those
    lets the others go while the fold is scored (about 110 MiB at full scale, when the model
    kept no reference to its copy of the frame). A custom RecList keeps the whole frame,
    since its tests may read any column of ``x_train``.
    """
    if reclist_cls is not None:
        return train_df
    columns = [c for c in SCORING_COLUMNS if c in train_df.columns]
    # copy=False: the arrays themselves, not a consolidated copy of them
    return pd.DataFrame({c: train_df[c].to_numpy() for c in columns}, copy=False)


def _score(dataset: ChallengeDataset, job: FoldJob, train_df, test_df, predictions,
           slices: dict[str, Slice] | None = None):
    """Score one fold: its tests as JSON-ready values, details, the fold.

    The challenge's own tests are scored by a ``FoldScorer``; a custom RecList, or reclist's
    own loop (``reports``), by the RecList, which wraps the same scorer (the same numbers).
    """
    if job.reclist_cls is None and not job.reports:
        scorer = FoldScorer(dataset, job.fold, predictions, k=job.k, x_train=train_df,
                            y_test=test_df, validate=False, slices=slices)
        return scorer.results(), scorer.details(), scorer.state
    cls: Any = job.reclist_cls
    if cls is None:
        cls = reclist_base()  # reclist is loaded only when its report is asked for
    # for_fold: also a custom RecList with the 2022 constructor (model, dataset, y_preds)
    rl = cls.for_fold(dataset, job.fold, predictions, model_name=job.name, k=job.k,
                      x_train=train_df, y_test=test_df, validate=False,
                      meta_data_folder=job.report_dir)
    if job.reports:
        # reclist's own loop prints its table and writes its report folder (plots, JSON).
        out = contextlib.nullcontext() if job.verbose else \
            contextlib.redirect_stdout(io.StringIO())
        with out:
            rl(verbose=job.verbose)  # keeps the results: the tests do not run a second time
    scored = rl.results(), rl.details(), rl.state
    # A RecList keeps its own bound methods (a reference cycle), so it would live, with the
    # fold's frames, until a later garbage collection: two folds' data at once. Drop them.
    rl.__dict__.clear()
    return scored


def _rating_errors(model, dataset: ChallengeDataset, test_df: pd.DataFrame) -> dict | None:
    """The model's rating errors on the fold, if the data has ratings and the model rates."""
    events = dataset.tables.events
    if "rating" not in events.columns or not supports_ratings(model):
        return None
    ratings = events["rating"]
    # the scale of the whole dataset, so that NRMSE/NMAE compare across folds
    scale = (float(ratings.min()), float(ratings.max()))
    return rating_errors(model, test_df.assign(rating=ratings.reindex(test_df.index)
                                               .to_numpy()), rating_range=scale)


@contextlib.contextmanager
def _prediction_notes() -> Iterator[tuple[dict, dict]]:
    """Collect the training-items and repeated-items ``PredictionWarning`` of the ``with``
    block into the dicts it yields (training items: ``items``, recommended tracks the user has
    in training, and ``lists``, the lists holding one; repeated items: ``lists``, the lists
    naming a track twice), instead of letting them through once per fold: the runner warns
    once per run with every fold's counts. Other warnings pass through unchanged."""
    seen = {"items": 0, "lists": 0}
    repeated = {"lists": 0}
    with warnings.catch_warnings(record=True) as caught:
        # counted whatever the caller's filters say; the runner's own warning obeys them
        warnings.simplefilter("always", PredictionWarning)
        yield seen, repeated
    for w in caught:
        counts = getattr(w.message, "counts", {})
        if issubclass(w.category, PredictionWarning) and "items" in counts:
            seen["items"] += counts["items"]
            seen["lists"] += counts["lists"]
        elif issubclass(w.category, PredictionWarning) and "repeated_lists" in counts:
            repeated["lists"] += counts["repeated_lists"]
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno,
                                   source=w.source)


#: The stages whose large temporaries are allocated and freed once per fold: NumPy's
#: huge-page advice is off in them (the training frame's gather, in "data", turns it off
#: itself; cutting a fold, also in "data", is faster with it).
CHURN_STAGES = ("validate", "score")


@contextlib.contextmanager
def _stage(profile: FoldProfile, bar, name: str) -> Iterator[None]:
    """Time the ``with`` block as stage ``name`` of ``profile`` and advance ``bar``."""
    bar.set_postfix_str(name)
    harness = no_hugepage_advice() if name in CHURN_STAGES else contextlib.nullcontext()
    with profile.stage(name), harness:
        yield
    bar.update(1)
