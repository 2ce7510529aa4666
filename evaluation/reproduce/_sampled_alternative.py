"""The sampled-negative alternative, on the organizer's side: draw each test user's candidates
on the official folds, and score what the sandboxed model sent back for them.

For every fold (the official leave-one-out folds, rebuilt here), each test user's target is
put among ``n_negatives`` items the user never interacted with, drawn by the harness's own
sampler (``evaluation.protocols.sampled_candidates``: uniform, seeded with
``fold_seed(seed, fold)``). The row the model receives is sorted by item id, so the target's
place says nothing; where it is stays here. The model scores the rows inside the sandbox
(``score_items``); the scores come back as untrusted data, are checked (one finite number per
candidate, the rows' exact shape) and ranked here with the protocol's pessimistic ties
(``evaluation.protocols.target_ranks``). Each user's value is the Krichene-Rendle corrected
estimate of the full-ranking metric (``evaluation.protocols.corrected_values``, with ``n`` = 1
+ the catalog's items the user never interacted with): one number per test user, in the
fold's test-user order, carried by an ``evaluation.challenge.MetricValues`` blob.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from evaluation._util.arrays import sorted_unique
from evaluation.challenge import MetricValues, encode_metric_values, users_sha256
from evaluation.errors import ConfigError, PredictionError, show_values
from evaluation.protocols import DEFAULT_GAMMA, corrected_values, sampled_candidates, target_ranks
from evaluation.reproduce._alternatives import Alternative
from evaluation.runner import fold_seed


@dataclass(frozen=True)
class FoldCandidates:
    """One fold's candidates as the model receives them, with what stays here.

    Attributes
    ----------
    items : numpy.ndarray
        ``(users, 1 + n_negatives)`` item ids, one row per test user in the fold's order,
        each row sorted.
    target_column : numpy.ndarray
        Where each row's target is.
    n_candidates : numpy.ndarray
        Each user's ``n``: 1 + the catalog's items the user never interacted with.
    """

    items: np.ndarray
    target_column: np.ndarray
    n_candidates: np.ndarray


def draw_fold_candidates(train: pd.DataFrame, test: pd.DataFrame, catalog: np.ndarray, *,
                         n_negatives: int, seed: int) -> FoldCandidates:
    """The candidates of one fold's test users (``test``: one row per user, the target).

    Raises
    ------
    ConfigError
        When a test user has more than one target, or fewer than ``n_negatives`` items of
        the catalog it never interacted with.
    """
    users = test["user_id"].to_numpy()
    if len(sorted_unique(users)) != len(users):
        raise ConfigError("the sampled-negative protocol needs one test target per user; "
                          "this fold has users with several")
    drawn = sampled_candidates(test, train, n_negatives=n_negatives, seed=seed, items=catalog)
    # drawn is in user order (one point per user): back to the fold's test-user order
    order = np.searchsorted(drawn.user_ids, users)
    rows = np.column_stack([drawn.target_ids, drawn.negative_ids])[order]
    items = np.sort(rows, axis=1)
    # the negatives are items the user never interacted with: the target is in its row once
    target_column = np.argmax(items == rows[:, :1], axis=1)
    return FoldCandidates(items=items, target_column=target_column,
                          n_candidates=drawn.n_candidates[order])


def sampled_fold_values(scores: object, candidates: FoldCandidates, *, n_negatives: int,
                        metric: str, k: int, correction: str) -> np.ndarray:
    """Each test user's corrected metric from the model's scores of its candidates.

    Parameters
    ----------
    scores : object
        What the sandbox sent for the fold: it must be a ``users x candidates`` array of
        finite numbers, in the layout of ``candidates.items``.
    candidates : FoldCandidates
    n_negatives : int
    metric : {"hit_rate", "ndcg"}
        The metric's base name (its cutoff is ``k``).
    k : int
    correction : {"rank", "bv"}

    Raises
    ------
    PredictionError
        When the scores are not such an array.
    """
    shape = candidates.items.shape
    if not isinstance(scores, np.ndarray) or scores.dtype.kind not in "fiu":
        kind = scores.dtype if isinstance(scores, np.ndarray) else type(scores).__name__
        raise PredictionError(f"score_items must return numbers; got {kind}")
    if scores.shape != shape:
        raise PredictionError(f"the scores have shape {scores.shape}; expected {shape} (one "
                              f"score per candidate of each test user)")
    scores = scores.astype(np.float64)
    rows = np.arange(shape[0])
    target = scores[rows, candidates.target_column]
    others = scores[np.arange(shape[1])[None, :] != candidates.target_column[:, None]]
    ranks = target_ranks(np.column_stack([target, others.reshape(shape[0], shape[1] - 1)]),
                         shape)
    hit_ks, ndcg_ks = ((k,), ()) if metric == "hit_rate" else ((), (k,))
    values = corrected_values(ranks, candidates.n_candidates, n_negatives, hit_ks, ndcg_ks,
                              correction, DEFAULT_GAMMA)
    return values[f"{metric}@{k}"]


class SampledScorer:
    """A sampled-negative alternative's candidates, drawn fold by fold as the inputs are
    written (:meth:`draw`), and the per-user values of the scores sent back for them
    (:meth:`user_values`).

    Parameters
    ----------
    alternative : Alternative
        A ``kind = "sampled"`` alternative.
    catalog : numpy.ndarray
        The item ids negatives are drawn from (the tracks the model receives).
    k : int
        The run's list length: the metric's cutoff when it names none.
    """

    def __init__(self, alternative: Alternative, catalog: np.ndarray, k: int) -> None:
        self.alternative = alternative
        self.catalog = np.asarray(catalog)
        self.n_negatives = int(alternative.n_negatives or 0)
        self.base = str(alternative.metric).partition("@")[0]
        self.k = alternative.cutoff(k)
        self.folds: dict[int, FoldCandidates] = {}

    def draw(self, fold: int, train: pd.DataFrame, test: pd.DataFrame) -> np.ndarray:
        """Fold ``fold``'s candidates as the model receives them (kept here with their
        targets' places)."""
        drawn = draw_fold_candidates(train, test, self.catalog, n_negatives=self.n_negatives,
                                     seed=fold_seed(int(self.alternative.seed or 0), fold))
        self.folds[fold] = drawn
        return drawn.items

    def user_values(self, scores: Mapping[int, object], errors: Mapping[int, str],
                    users: Mapping[int, pd.Series]) -> str:
        """The per-user values of every fold (an ``evaluation.challenge.MetricValues`` blob,
        named ``"<metric>@<k>"``) from the scores the sandbox sent.

        Raises
        ------
        PredictionError
            When a fold's scores are missing, malformed or not finite.
        """
        folds, hashes = [], []
        for fold in sorted(self.folds):
            if fold in errors:
                raise PredictionError(f"fold {fold}: {errors[fold]}")
            if fold not in scores:
                raise PredictionError(f"fold {fold}: the model sent no scores")
            try:
                folds.append(sampled_fold_values(
                    scores[fold], self.folds[fold], n_negatives=self.n_negatives,
                    metric=self.base, k=self.k, correction=str(self.alternative.correction)))
            except PredictionError as exc:
                raise PredictionError(f"fold {fold}: {exc}") from None
            hashes.append(users_sha256(users[fold].to_numpy()))
        extra = sorted(set(scores) - set(self.folds))
        if extra:
            raise PredictionError(f"scores of folds {show_values(np.array(extra))} that "
                                  f"were not asked for")
        return encode_metric_values(MetricValues(metric=f"{self.base}@{self.k}",
                                                 folds=tuple(folds),
                                                 users_sha256=tuple(hashes)))
