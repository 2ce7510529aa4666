"""EvalRSRecList: the challenge's tests (design §4) as a reclist ``RecList``.

One instance scores one fold: it validates the predictions, computes the shared per-fold state
(hit ranks, slice codes) once, and every ``@rec_test`` derives from that state. Calling the
instance runs reclist's loop (table + report folder); :meth:`EvalRSRecList.results` returns the
same numbers as a plain dict without printing anything.

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
``self.k`` and ``self.state`` (a :class:`~evaluation.metrics.ChallengeFold` with the arrays
``user_ids``, ``targets``, ``predictions`` and the slice codes), all in the same row order.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pandas as pd
from reclist.charts import CHART_TYPE
from reclist.logs import LOGGER
from reclist.metadata import METADATA_STORE
from reclist.reclist import RecList, rec_test

from evaluation._util.jsonable import to_jsonable
from evaluation.challenge._fold import MRED_SLICES, ChallengeFold, SliceMissRates
from evaluation.errors import EvalRSError, PredictionError
from evaluation.predictions import validate_predictions

#: The challenge's tests in report order; all but ``stats`` enter the leaderboard score.
TESTS: tuple[str, ...] = (
    "HIT_RATE", "MRR", "MRED_COUNTRY", "MRED_USER_ACTIVITY", "MRED_TRACK_POPULARITY",
    "MRED_ARTIST_POPULARITY", "MRED_GENDER", "BEING_LESS_WRONG", "LATENT_DIVERSITY", "stats",
)
LEADERBOARD_TESTS: tuple[str, ...] = TESTS[:-1]


def _check_finite(name: str, value: Any) -> None:
    """A test result must be JSON-writable with finite numbers: no silent NaN in reports."""
    try:
        json.dumps(to_jsonable(value, nonfinite_to_none=False), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise EvalRSError(
            f"test {name!r} returned {value!r}, which cannot go into the results: {exc}. "
            "Return a finite float, or a dict/list of finite numbers and strings."
        ) from None


def _scalar(value: Any) -> Any:
    """The leaderboard value of a test result: the MRED for a slice test, else the result."""
    if isinstance(value, SliceMissRates):
        return value.value
    return to_jsonable(value)


def _printable(value: Any) -> Any:
    if isinstance(value, SliceMissRates):
        groups = ", ".join(f"{g} {mr:.3f}" for g, mr in value.items())
        return f"{value.value:.4f}\n(MR {value.miss_rate:.3f}; {groups})"
    if isinstance(value, dict) and all(np.isscalar(v) for v in value.values()):
        return "\n".join(f"{k}: {v}" for k, v in to_jsonable(value).items())
    return to_jsonable(value)


class EvalRSRecList(RecList):
    """The challenge's tests on one fold.

    ``predictions`` is what the model's ``predict`` returned for the fold's test users (it is
    validated unless ``validate=False``, which expects the output of
    :func:`~evaluation.predictions.validate_predictions`; ``warn_training_items=False`` skips the
    check for recommended training items, the costliest part of validation).
    ``x_train``/``y_test`` default to the dataset's fold; pass them when already at hand.
    The report folder goes under ``meta_data_folder`` (default: ``$RECLIST_META_DATA_FOLDER``
    or ``.reclist``).
    """

    def __init__(self, dataset, fold: int, predictions: pd.DataFrame, *, model_name: str = "model",
                 k: int = 100, x_train: pd.DataFrame | None = None,
                 y_test: pd.DataFrame | None = None, validate: bool = True,
                 warn_training_items: bool = True,
                 meta_data_folder: str | os.PathLike | None = None,
                 logger: LOGGER = LOGGER.LOCAL,
                 metadata_store: METADATA_STORE = METADATA_STORE.LOCAL, **kwargs: Any) -> None:
        self.dataset = dataset
        self.fold = fold
        self.k = k
        test = dataset.get_test_set(fold) if y_test is None else y_test
        if "user_id" not in test.columns:
            test = test.reset_index()
        self.x_test = test[["user_id"]].reset_index(drop=True)
        self.y_test = test.set_index("user_id")[["track_id"]]
        self.x_train = dataset.get_train_set(fold) if x_train is None else x_train
        users = self.x_test["user_id"].to_numpy()
        if validate:
            predictions = validate_predictions(
                predictions, users, k=k, catalog=dataset.df_tracks.index,
                train=self.x_train if warn_training_items else None)
        elif (not isinstance(predictions, pd.DataFrame) or predictions.shape != (len(users), k)
              or not np.array_equal(predictions.index.to_numpy(), users)):
            raise PredictionError(
                "EvalRSRecList(validate=False) expects predictions already normalised by "
                "validate_predictions (one row per test user, in test order, k columns); "
                "pass validate=True"
            )
        self.y_preds = predictions
        self.state = ChallengeFold.from_frames(
            users, self.y_test["track_id"].to_numpy(), predictions.to_numpy(),
            train=self.x_train, users=dataset.df_users, tracks=dataset.df_tracks,
            vectors=dataset.track_vectors, k=k,
        )
        self._results: dict[str, Any] | None = None
        self.META_DATA_FOLDER = str(
            meta_data_folder or os.environ.get("RECLIST_META_DATA_FOLDER", ".reclist"))
        super().__init__(model_name, logger, metadata_store, **kwargs)

    # ----------------------------------------------------------------- what tests can use

    @property
    def ranks(self) -> np.ndarray:
        """Hit rank of each test user's target (1 = first prediction, 0 = not in the top-k)."""
        return self.state.ranks

    @property
    def _x_train(self) -> pd.DataFrame:  # 2022 name
        return self.x_train

    @property
    def _y_test(self) -> pd.DataFrame:  # 2022 name
        return self.y_test

    @property
    def _y_preds(self) -> pd.DataFrame:  # 2022 name
        return self.y_preds

    # ----------------------------------------------------------------- the tests

    @rec_test(test_type="HIT_RATE", display_type=CHART_TYPE.SCALAR)
    def hit_rate_at_k(self):
        """Share of test users whose target is among their top-k predictions."""
        return self.state.hit_rate()

    @rec_test(test_type="MRR", display_type=CHART_TYPE.SCALAR)
    def mrr_at_k(self):
        """Mean reciprocal rank of the target in the top-k (0 when absent)."""
        return self.state.mrr()

    @rec_test(test_type="MRED_COUNTRY", display_type=CHART_TYPE.BARS)
    def mred_country(self):
        """Miss-rate equality difference across user countries (13 countries + missing)."""
        return self.state.mred(MRED_SLICES["MRED_COUNTRY"])

    @rec_test(test_type="MRED_USER_ACTIVITY", display_type=CHART_TYPE.BARS)
    def mred_user_activity(self):
        """Miss-rate equality difference across user activity bins (training plays)."""
        return self.state.mred(MRED_SLICES["MRED_USER_ACTIVITY"])

    @rec_test(test_type="MRED_TRACK_POPULARITY", display_type=CHART_TYPE.BARS)
    def mred_track_popularity(self):
        """Miss-rate equality difference across target-track popularity bins."""
        return self.state.mred(MRED_SLICES["MRED_TRACK_POPULARITY"])

    @rec_test(test_type="MRED_ARTIST_POPULARITY", display_type=CHART_TYPE.BARS)
    def mred_artist_popularity(self):
        """Miss-rate equality difference across target-artist popularity bins."""
        return self.state.mred(MRED_SLICES["MRED_ARTIST_POPULARITY"])

    @rec_test(test_type="MRED_GENDER", display_type=CHART_TYPE.BARS)
    def mred_gender(self):
        """Miss-rate equality difference across user genders."""
        return self.state.mred(MRED_SLICES["MRED_GENDER"])

    @rec_test(test_type="BEING_LESS_WRONG", display_type=CHART_TYPE.SCALAR)
    def being_less_wrong(self):
        """Mean cosine between a missed target and the first prediction (track vectors)."""
        return self._detail("BEING_LESS_WRONG")["value"]

    @rec_test(test_type="LATENT_DIVERSITY", display_type=CHART_TYPE.SCALAR)
    def latent_diversity(self):
        """0.3 * diversity - 0.7 * bias of the first 20 predictions in the vector space."""
        return self._detail("LATENT_DIVERSITY")["value"]

    @rec_test(test_type="stats", display_type=CHART_TYPE.SCALAR)
    def stats(self):
        """Number of test users; fewest and most predictions per user."""
        return self.state.stats()

    # ----------------------------------------------------------------- results without printing

    def _detail(self, name: str) -> dict:
        cache = self.__dict__.setdefault("_details_cache", {})
        if name not in cache:
            cache[name] = (self.state.being_less_wrong() if name == "BEING_LESS_WRONG"
                           else self.state.latent_diversity())
        return cache[name]

    def run_tests(self) -> dict[str, Any]:
        """Run every test once (no printing, no files): ``{test_type: raw result}``."""
        if self._results is None:
            results = {t.test_type: t() for t in self.rec_tests.values()}
            for name, value in results.items():
                _check_finite(name, value)
            self._results = results
        return self._results

    def results(self) -> dict[str, Any]:
        """``{test_type: value}`` in plain Python types; a slice test's value is its MRED."""
        return {name: _scalar(value) for name, value in self.run_tests().items()}

    def details(self) -> dict[str, Any]:
        """Per-test detail: MR and each MR_g of the slice tests, the users behind the vector
        tests, and the raw result of any other test."""
        out = {}
        for name, value in self.run_tests().items():
            if name in ("BEING_LESS_WRONG", "LATENT_DIVERSITY"):
                out[name] = to_jsonable(self._detail(name))
            else:
                out[name] = to_jsonable(value)
        return out

    # ----------------------------------------------------------------- reclist hooks

    def __call__(self, verbose=True, *args, **kwargs):
        """reclist's loop: run the tests, print the table, write the report folder
        (``self.meta_store_path``: ``results/report.json`` and a bar chart per slice test).
        The results stay available through :meth:`results` without running the tests again."""
        self._test_results = []  # calling twice reports each test once, not twice
        super().__call__(verbose, *args, **kwargs)
        self._results = {r["name"]: r["result"] for r in self._test_results}

    def get_tests(self):
        """The tests in report order: the challenge's first, then added ones by name."""
        tests = super().get_tests()
        rank = {name: i for i, name in enumerate(TESTS)}
        ordered = sorted(tests.items(), key=lambda kv: (rank.get(kv[1].test_type, len(rank)),
                                                        kv[0]))
        return dict(ordered)

    def _display_rich_table(self, table_name: str, results: list):
        rows = [{**r, "result": _printable(r["result"])} for r in results]
        return super()._display_rich_table(table_name, rows)

    def _dump_results_to_json(self, test_results: list, report_path: str):
        for r in test_results:  # fail here, naming the test, not halfway through the file
            _check_finite(r["name"], r["result"])
        rows = [{**r, "result": to_jsonable(r["result"])} for r in test_results]
        return super()._dump_results_to_json(rows, report_path)

    def _bar_chart(self, test_result: dict):
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
        import matplotlib.pyplot as plt

        figures = super()._generate_report_and_plot(test_results, meta_store_path)
        for fig in figures.values():
            plt.close(fig)  # saved already; keep pyplot from accumulating one figure per test
        return figures
