"""EvalRSRecList: the challenge's tests as a reclist ``RecList``, to render and report them.

One instance scores one fold through a :class:`~evaluation.challenge.FoldScorer` (which
validates the predictions and computes the shared per-fold state once; every ``@rec_test`` of
the challenge returns the scorer's value). Calling the instance runs reclist's loop (table +
report folder); :meth:`EvalRSRecList.results` returns the same numbers as a plain dict without
printing anything.

Adding a test takes a subclass and one method::

    from reclist.charts import CHART_TYPE
    from reclist.reclist import rec_test

    class MyRecList(EvalRSRecList):
        @rec_test(test_type="HIT_RATE_AT_10", display_type=CHART_TYPE.SCALAR)
        def hit_rate_at_10(self):
            \"\"\"Share of test users whose target is in their top 10.\"\"\"
            return float(((self.ranks > 0) & (self.ranks <= 10)).mean())

Inside a test: ``self.ranks`` (hit rank per test user, 0 = miss), ``self.y_preds`` (the
validated predictions, indexed by ``user_id``), ``self.y_test`` (target ``track_id`` per
``user_id``), ``self.x_train`` (the fold's training rows), ``self.dataset``, ``self.fold``,
``self.k`` and ``self.state`` (a :class:`~evaluation.challenge.ChallengeFold` with the arrays
``user_ids``, ``targets``, ``predictions`` and the slice codes), all in the same row order.
"""

from __future__ import annotations

import inspect
import json
import os
import warnings
from typing import Any, cast

import numpy as np
import pandas as pd
from reclist.charts import CHART_TYPE
from reclist.logs import LOGGER
from reclist.metadata import METADATA_STORE
from reclist.reclist import RecList, rec_test

from evaluation._util.jsonable import to_jsonable
from evaluation.challenge import (
    BEING_LESS_WRONG,
    HIT_RATE,
    LATENT_DIVERSITY,
    MRED_ARTIST_POPULARITY,
    MRED_COUNTRY,
    MRED_GENDER,
    MRED_TRACK_POPULARITY,
    MRED_USER_ACTIVITY,
    MRR,
    STATS,
    TESTS,
    FoldScorer,
    SliceMissRates,
    check_result,
    leaderboard_value,
)
from evaluation.errors import ConfigError, EvalRSError, ScoringWarning
from evaluation.legacy import build_reclist, unpack_call


def _printable(value: Any) -> Any:
    """A test result as the reclist table shows it: an MRED with its groups' miss rates."""
    if value is None:
        return "n/a (not applicable to the dataset)"
    if isinstance(value, SliceMissRates):
        groups = ", ".join(f"{g} {mr:.3f}" for g, mr in value.items())
        return f"{value.value:.4f}\n(MR {value.miss_rate:.3f}; {groups})"
    if isinstance(value, dict) and all(np.isscalar(v) for v in value.values()):
        return "\n".join(f"{k}: {v}" for k, v in to_jsonable(value).items())
    return to_jsonable(value)


def _fits_once_nonfinite_dropped(value: Any) -> bool:
    """Whether ``value`` goes into the results once NaN and infinities become ``None``."""
    try:
        json.dumps(to_jsonable(value), allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def _init_of(cls: type) -> Any:
    """The ``__init__`` a call of ``cls`` runs (found along the MRO)."""
    return next(vars(k)["__init__"] for k in cls.__mro__ if "__init__" in vars(k))


def _takes_2022_arguments(cls: type) -> bool:
    """Whether ``cls.__init__`` is the 2022 constructor ``(self, model, dataset, ...)``."""
    try:
        params = list(inspect.signature(_init_of(cls)).parameters)
    except (TypeError, ValueError):
        return False
    return params[1:3] == ["model", "dataset"]


def _old_call(fold: Any, kwargs: dict[str, Any]) -> bool:
    """Whether ``EvalRSRecList.__init__`` got a 2022 or 2023 call: no fold number (2023, or
    the 2022 ``(model, dataset, y_preds)``), or the 2022 keywords."""
    is_fold = isinstance(fold, (int, np.integer)) and not isinstance(fold, bool)
    return not is_fold or "model" in kwargs or "y_preds" in kwargs


class EvalRSRecList(RecList):
    """The challenge's tests on one fold, as a reclist ``RecList``.

    2022 and 2023 code works unchanged: the 2022 names ``_x_train``, ``_y_test`` and
    ``_y_preds`` are there; a subclass with the 2022 constructor
    ``__init__(self, model, dataset, y_preds=None)`` is built by :meth:`for_fold` (the
    runner's call); the 2023 call without ``fold`` scores fold 0 (with a
    ``DeprecationWarning``). Those two calls are converted by ``evaluation.legacy``. The
    2022 helpers (``product_data``, ``_dense_repr``,
    ``miss_rate_at_k_slice``, ...) come with the 2022 path,
    ``from evaluation.EvalRSRecList import EvalRSRecList``.

    Parameters
    ----------
    dataset, fold, predictions, k, x_train, y_test, validate, warn_training_items
        As for :class:`FoldScorer`, which computes the challenge's tests. ``fold`` omitted:
        fold 0 (the 2023 call).
    model_name : str
        The model's name in reclist's report.
    meta_data_folder : str or PathLike, optional
        Where the report folder goes (default: ``$RECLIST_META_DATA_FOLDER`` or
        ``.reclist``).
    logger, metadata_store, **kwargs
        Passed to ``reclist.reclist.RecList``.

    Raises
    ------
    PredictionError
        When the predictions are invalid.
    """

    #: What a test of a subclass returning NaN or an infinity does: ``"error"`` stops the
    #: run naming the test; ``"warn"`` (the 2022 behaviour, which
    #: ``from evaluation.EvalRSRecList import EvalRSRecList`` gives) keeps it, as ``null`` in
    #: the results, with a ``ScoringWarning``. The challenge's own tests never return one.
    nonfinite_results: str = "error"

    def __init__(self, dataset=None, fold: int | None = None,
                 predictions: pd.DataFrame | None = None, *, model_name: str = "model",
                 k: int = 100, x_train: pd.DataFrame | None = None,
                 y_test: pd.DataFrame | None = None, validate: bool = True,
                 warn_training_items: bool = True,
                 meta_data_folder: str | os.PathLike | None = None,
                 logger: LOGGER = LOGGER.LOCAL,
                 metadata_store: METADATA_STORE = METADATA_STORE.LOCAL, **kwargs: Any) -> None:
        carried: dict[str, Any] = {}
        if _old_call(fold, kwargs):
            # the 2022 form (model, fold's frames, y_preds) and the 2023 form (no fold) enter
            # here, and are converted to the modern one
            dataset, fold, predictions, carried = unpack_call(dataset, fold, predictions,
                                                              kwargs)
        if predictions is None:
            raise ConfigError("EvalRSRecList needs predictions: the model's predict() output "
                              "for the fold's test users (predictions=...).")
        if carried:
            model_name = carried.get("model_name", model_name)
            k, x_train, y_test = (carried.get("k", k), carried.get("x_train", x_train),
                                  carried.get("y_test", y_test))
            validate = carried.get("validate", validate)
            warn_training_items = carried.get("warn_training_items", warn_training_items)
            meta_data_folder = carried.get("meta_data_folder", meta_data_folder)
        # 2023: the similarity model (the dataset's track vectors)
        self.similarity_model = kwargs.pop("similarity_model", None)
        # a fold number by now (_old_call)
        self.scorer = FoldScorer(dataset, cast(int, fold), predictions, k=k, x_train=x_train,
                                 y_test=y_test, validate=validate,
                                 warn_training_items=warn_training_items)
        # what a test of a subclass may use (see the module's docstring)
        for name in ("dataset", "fold", "k", "x_test", "y_test", "x_train", "y_preds", "state"):
            setattr(self, name, getattr(self.scorer, name))
        self._results: dict[str, Any] | None = None
        self.META_DATA_FOLDER = str(
            meta_data_folder or os.environ.get("RECLIST_META_DATA_FOLDER", ".reclist"))
        super().__init__(model_name, logger, metadata_store, **kwargs)

    @classmethod
    def for_fold(cls, dataset, fold: int, predictions: pd.DataFrame,
                 **options: Any) -> EvalRSRecList:
        """The RecList of one fold, as the runner builds it: ``cls(dataset, fold,
        predictions, **options)``, or the 2022 call for a class with the 2022 constructor
        ``__init__(self, model, dataset, y_preds=None)``.

        Parameters
        ----------
        dataset, fold, predictions, **options
            As for ``EvalRSRecList``.

        Returns
        -------
        EvalRSRecList
            The RecList of the fold.
        """
        if not _takes_2022_arguments(cls):
            return cls(dataset, fold, predictions, **options)
        # a class with the 2022 constructor enters here: it is built with the 2022 call
        rl: EvalRSRecList = build_reclist(cls, dataset, fold, predictions, **options)
        return rl

    # ----------------------------------------------------------------- what tests can use

    @property
    def ranks(self) -> np.ndarray:
        """Hit rank of each test user's target (1 = first prediction, 0 = not in the top-k)."""
        return self.state.ranks

    @property
    def _x_train(self) -> pd.DataFrame:
        """``x_train`` under its 2022 name."""
        return self.x_train

    @property
    def _y_test(self) -> pd.DataFrame:
        """``y_test`` under its 2022 name."""
        return self.y_test

    @property
    def _y_preds(self) -> pd.DataFrame:
        """``y_preds`` under its 2022 name."""
        return self.y_preds

    # ----------------------------------------------------------------- the tests

    @rec_test(test_type=HIT_RATE, display_type=CHART_TYPE.SCALAR)
    def hit_rate_at_k(self):
        """Share of test users whose target is among their top-k predictions."""
        return self.scorer.test(HIT_RATE)

    @rec_test(test_type=MRR, display_type=CHART_TYPE.SCALAR)
    def mrr_at_k(self):
        """Mean reciprocal rank of the target in the top-k (0 when absent)."""
        return self.scorer.test(MRR)

    @rec_test(test_type=MRED_COUNTRY, display_type=CHART_TYPE.BARS)
    def mred_country(self):
        """Miss-rate equality difference across user countries (13 countries + missing)."""
        return self.scorer.test(MRED_COUNTRY)

    @rec_test(test_type=MRED_USER_ACTIVITY, display_type=CHART_TYPE.BARS)
    def mred_user_activity(self):
        """Miss-rate equality difference across user activity bins (training plays)."""
        return self.scorer.test(MRED_USER_ACTIVITY)

    @rec_test(test_type=MRED_TRACK_POPULARITY, display_type=CHART_TYPE.BARS)
    def mred_track_popularity(self):
        """Miss-rate equality difference across target-track popularity bins."""
        return self.scorer.test(MRED_TRACK_POPULARITY)

    @rec_test(test_type=MRED_ARTIST_POPULARITY, display_type=CHART_TYPE.BARS)
    def mred_artist_popularity(self):
        """Miss-rate equality difference across target-artist popularity bins."""
        return self.scorer.test(MRED_ARTIST_POPULARITY)

    @rec_test(test_type=MRED_GENDER, display_type=CHART_TYPE.BARS)
    def mred_gender(self):
        """Miss-rate equality difference across user genders."""
        return self.scorer.test(MRED_GENDER)

    @rec_test(test_type=BEING_LESS_WRONG, display_type=CHART_TYPE.SCALAR)
    def being_less_wrong(self):
        """Mean cosine between a missed target and the first prediction (track vectors)."""
        return self.scorer.test(BEING_LESS_WRONG)

    @rec_test(test_type=LATENT_DIVERSITY, display_type=CHART_TYPE.SCALAR)
    def latent_diversity(self):
        """0.3 * diversity - 0.7 * bias of the first 20 predictions in the vector space."""
        return self.scorer.test(LATENT_DIVERSITY)

    @rec_test(test_type=STATS, display_type=CHART_TYPE.SCALAR)
    def stats(self):
        """Number of test users; fewest and most predictions per user."""
        return self.scorer.test(STATS)

    # ----------------------------------------------------------------- results without printing

    def run_tests(self) -> dict[str, Any]:
        """Run every test once (no printing, no files): ``{test_type: raw result}``."""
        if self._results is None:
            results = {t.test_type: t() for t in self.rec_tests.values()}
            for name, value in results.items():
                self._check_result(name, value)
            self._results = results
        return self._results

    def _check_result(self, name: str, value: Any) -> None:
        """``check_result``; a non-finite value of an added test only warns under
        ``nonfinite_results = "warn"``."""
        if (self.nonfinite_results == "warn" and name not in TESTS
                and _fits_once_nonfinite_dropped(value)):
            try:
                check_result(name, value)
            except EvalRSError:
                warnings.warn(ScoringWarning(
                    f"test {name!r} of {type(self).__qualname__} returned {value!r}: kept as "
                    f"null (None) in the results, as 2022 kept it; return a finite number to "
                    f"have it averaged over the folds"), stacklevel=3)
            return
        check_result(name, value)

    def results(self) -> dict[str, Any]:
        """``{test_type: value}`` in plain Python types; a slice test's value is its MRED."""
        return {name: leaderboard_value(value) for name, value in self.run_tests().items()}

    def details(self) -> dict[str, Any]:
        """Per-test detail: MR and each MR_g of the slice tests, the users behind the vector
        tests, and the raw result of any other test."""
        return self.scorer.details(self.run_tests())

    # ----------------------------------------------------------------- reclist hooks

    def __call__(self, verbose=True, *args, **kwargs):
        """reclist's loop: run the tests, print the table, write the report folder
        (``self.meta_store_path``: ``results/report.json`` and a bar chart per slice test).
        The results stay available through :meth:`results` without running the tests again."""
        # calling twice reports each test once, not twice
        self._test_results: list[dict[str, Any]] = []
        super().__call__(verbose, *args, **kwargs)
        self._results = {r["name"]: r["result"] for r in self._test_results}

    def get_tests(self):
        """The tests in report order: the challenge's first, then added ones by name.

        Found on the class, as reclist does on the instance, so that looking for them does
        not compute the properties (the 2022 ``_dense_repr`` builds the KeyedVectors).
        """
        tests = {}
        for name in dir(type(self)):
            found = getattr(type(self), name, None)
            if found is not None and getattr(found, "is_test", False):
                tests[found.name] = getattr(self, name)
        rank = {name: i for i, name in enumerate(TESTS)}
        ordered = sorted(tests.items(), key=lambda kv: (rank.get(kv[1].test_type, len(rank)),
                                                        kv[0]))
        return dict(ordered)

    def _display_rich_table(self, table_name: str, results: list):
        """reclist's table, with each MRED shown with its groups' miss rates."""
        rows = [{**r, "result": _printable(r["result"])} for r in results]
        return super()._display_rich_table(table_name, rows)

    def _dump_results_to_json(self, test_results: list, report_path: str):
        """reclist's ``report.json`` (its path), with every result in plain JSON types."""
        for r in test_results:  # fail here, naming the test, not halfway through the file
            self._check_result(r["name"], r["result"])
        rows = [{**r, "result": to_jsonable(r["result"])} for r in test_results]
        return super()._dump_results_to_json(rows, report_path)

    def _bar_chart(self, test_result: dict):
        """reclist's bar chart of a test, with the overall miss rate of a slice test drawn;
        None (no chart) for a test that is not applicable."""
        if test_result["result"] is None:
            return None
        fig = super()._bar_chart(test_result)
        value = test_result["result"]
        if isinstance(value, SliceMissRates):
            ax = fig.axes[0]
            ax.axhline(value.miss_rate, color="black", linestyle="--", linewidth=1,
                       label=f"MR (all) = {value.miss_rate:.3f}")
            ax.set_ylabel("miss rate")
            ax.set_xlabel("group")
            ax.set_title(f"{test_result['name']}: MRED = {value.value:.4f}")
            if len(value):
                ax.legend(loc="best")
            fig.tight_layout()
        return fig

    def _generate_report_and_plot(self, test_results: list, meta_store_path: str):
        """reclist's report and plots (test -> figure), each figure closed once saved."""
        import matplotlib.pyplot as plt  # heavy; reclist itself imports it only to draw

        figures = super()._generate_report_and_plot(test_results, meta_store_path)
        for fig in figures.values():
            plt.close(fig)  # saved already; keep pyplot from accumulating one figure per test
        return figures

