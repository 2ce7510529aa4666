"""``EvalRSRecList`` as the 2022 path (``from evaluation.EvalRSRecList import EvalRSRecList``)
and the 2023 module ``EvalRSReclist`` give it."""

from __future__ import annotations

import datetime
import os
from typing import Any

from reclist.reclist import LOGGER, METADATA_STORE, RecList

from evaluation._util.jsonable import to_jsonable
from evaluation._util.once import warn_once
from evaluation.challenge import TESTS
from evaluation.challenge_reclist import EvalRSRecList
from evaluation.compat._helpers import RecListHelpers2022
from evaluation.compat._last_interactions import (
    PROTOCOL_2023,
    PROTOCOL_2023_NOTE,
    TESTS_2023,
    LastInteractionScorer,
)
from evaluation.errors import ConfigError


def _last_interaction_dataset(dataset: Any) -> bool:
    """Whether ``dataset`` is a 2023 dataset built with ``folded_dataset_split=False``."""
    return getattr(dataset, "folded_dataset_split", True) is False


class EvalRSRecList2022(RecListHelpers2022, EvalRSRecList):
    """The harness's ``EvalRSRecList`` with the 2022 names and helpers (``_x_test``,
    ``product_data``, ``_dense_repr``, ``miss_rate_at_k_slice``,
    ``miss_rate_equality_difference``, ``mrr_at_k_slice``, ``cosine_sim``); a test a subclass
    adds may return NaN or an infinity, as 2022 accepted: the value is kept as ``null`` with a
    ``ScoringWarning``.

    On a 2023 dataset built with ``folded_dataset_split=False`` (the 2023 call
    ``EvalRSReclist(dataset=..., predictions=..., model_name=...)``), the tests are the 2023
    RecList's, over the last-interaction split with several targets per user, one case per
    test row (see ``evaluation.compat.LastInteractionScorer``); :attr:`protocol` is then
    ``"evalrs-2023-last-interactions"`` and the printed table and ``report.json`` name it.
    """

    nonfinite_results = "warn"
    #: ``None`` on the leaderboard's folds; :data:`PROTOCOL_2023` on the 2023 split.
    protocol: str | None = None

    def __init__(self, dataset=None, fold=None, predictions=None, **kwargs: Any) -> None:
        if not _last_interaction_dataset(dataset):
            super().__init__(dataset, fold, predictions, **kwargs)
            return
        if fold not in (None, 0) or predictions is None:
            raise ConfigError(
                f"EvalRSReclist on the 2023 last-interaction split (folded_dataset_split="
                f"False) scores its one test set: got fold={fold!r} and "
                f"{'no' if predictions is None else 'some'} predictions. Fix: "
                f"EvalRSReclist(dataset=dataset, model_name=..., predictions=...).")
        warn_once("protocol:2023",
                  f"EvalRSReclist on a folded_dataset_split=False dataset: {PROTOCOL_2023_NOTE}",
                  UserWarning, stacklevel=2)
        self.protocol = PROTOCOL_2023
        self.similarity_model = kwargs.pop("similarity_model", None)
        # FoldScorer's interface, over the 2023 split's cases
        self.scorer = LastInteractionScorer(  # type: ignore[assignment]
            dataset, predictions, k=kwargs.pop("k", 100))
        for name in ("dataset", "fold", "k", "x_test", "y_test", "x_train", "y_preds", "state"):
            setattr(self, name, getattr(self.scorer, name))
        self._results = None
        folder = kwargs.pop("meta_data_folder", None)
        self.META_DATA_FOLDER = str(
            folder or os.environ.get("RECLIST_META_DATA_FOLDER", ".reclist"))
        RecList.__init__(self, kwargs.pop("model_name", "model"),
                         kwargs.pop("logger", LOGGER.LOCAL),
                         kwargs.pop("metadata_store", METADATA_STORE.LOCAL), **kwargs)

    def get_tests(self):
        """The tests in report order; on the 2023 split only those the 2023 RecList had
        (the challenge's less LATENT_DIVERSITY) and the added ones."""
        tests = super().get_tests()
        if self.protocol is None:
            return tests
        return {name: t for name, t in tests.items()
                if t.test_type not in TESTS or t.test_type in TESTS_2023}

    def __call__(self, verbose=True, *args, **kwargs):
        """reclist's loop; on the 2023 split its first printed line names the protocol."""
        if self.protocol is not None and verbose:
            print(PROTOCOL_2023_NOTE)
        super().__call__(verbose, *args, **kwargs)

    def _display_rich_table(self, table_name: str, results: list):
        """reclist's table; on the 2023 split its title names the protocol."""
        if self.protocol is not None:
            table_name = f"{table_name} ({self.protocol})"
        return super()._display_rich_table(table_name, results)

    def _dump_results_to_json(self, test_results: list, report_path: str):
        """reclist's ``report.json``; on the 2023 split its metadata name the protocol."""
        if self.protocol is None:
            return super()._dump_results_to_json(test_results, report_path)
        for r in test_results:  # fail here, naming the test, not halfway through the file
            self._check_result(r["name"], r["result"])
        report = {
            "metadata": {
                "finish_time": datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
                "model_name": self.model_name,
                "reclist": self.name,
                "tests": list(self.rec_tests.keys()),
                "protocol": self.protocol,
                "protocol_note": PROTOCOL_2023_NOTE,
            },
            "data": [{**r, "result": to_jsonable(r["result"])} for r in test_results],
        }
        path = os.path.join(report_path, "results", "report.json")
        self.metadata_store_service.write_file(path, report, is_json=True)
        return path
