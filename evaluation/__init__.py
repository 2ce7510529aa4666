"""EvalRS: a competition-grade evaluation harness for recommender systems.

The public API is listed in ``__all__``; names are imported on first use so that
``import evaluation`` (and the CLI's ``--help``) stays fast.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING

from evaluation._version import __version__ as __version__

if TYPE_CHECKING:
    # Named here for type checkers: the 2022 modules evaluation/EvalRSRunner.py and
    # evaluation/EvalRSRecList.py would otherwise be taken for these two names.
    from evaluation.challenge import EvalRSRecList as EvalRSRecList
    from evaluation.runner import EvalRSRunner as EvalRSRunner

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # errors
    "ConfigError": "evaluation.errors",
    "DataError": "evaluation.errors",
    "DownloadError": "evaluation.errors",
    "EvalRSError": "evaluation.errors",
    "FoldCacheWarning": "evaluation.errors",
    "PredictionError": "evaluation.errors",
    "UploadError": "evaluation.errors",
    "PredictionWarning": "evaluation.errors",
    "RunWarning": "evaluation.errors",
    "ScoringWarning": "evaluation.errors",
    "SubmissionRejected": "evaluation.errors",
    "SyntheticCacheWarning": "evaluation.errors",
    # data
    "Tables": "evaluation.data",
    "TrackVectors": "evaluation.data",
    "load_source": "evaluation.data",
    "read_tables": "evaluation.data",
    "synthetic_tables": "evaluation.data",
    "validate_tables": "evaluation.data",
    "write_tables": "evaluation.data",
    # dataset and folds
    "ChallengeDataset": "evaluation.dataset",
    # models, predictions and scoring
    "EvalRSRecList": "evaluation.challenge",
    "RecModel": "evaluation.model",
    "predictions_frame": "evaluation.predictions",
    "score": "evaluation.challenge",
    "validate_predictions": "evaluation.predictions",
    # runner, leaderboard and reference models
    "CBOWModel": "evaluation.baselines",
    "EvalRSRunner": "evaluation.runner",
    "RunResult": "evaluation.runner",
    "UploadSettings": "evaluation.runner",
    "PopularityModel": "evaluation.baselines",
    "RandomModel": "evaluation.baselines",
    "References": "evaluation.challenge",
    "load_references": "evaluation.challenge",
    # beyond leave-one-out: temporal splits, leakage audit, replay, rating prediction
    "BiasModel": "evaluation.baselines",
    "LeakageAudit": "evaluation.splits",
    "ReplayResult": "evaluation.protocols",
    "Split": "evaluation.splits",
    "SplitResult": "evaluation.protocols",
    "audit_leakage": "evaluation.splits",
    "evaluate_split": "evaluation.protocols",
    "global_time_split": "evaluation.splits",
    "rating_errors": "evaluation.protocols",
    "replay": "evaluation.protocols",
    "temporal_user_split": "evaluation.splits",
    # metric library, sampled negatives, top-k from embeddings
    "METRICS": "evaluation.metrics",
    "SampledResult": "evaluation.protocols",
    "evaluate_ranking": "evaluation.metrics",
    "evaluate_ratings": "evaluation.metrics",
    "evaluate_sampled": "evaluation.protocols",
    "get_metric": "evaluation.metrics",
    "ranking_inputs": "evaluation.metrics",
    "relevance_matrix": "evaluation.metrics",
    "topk_from_embeddings": "evaluation.topk",
    # finished runs read back and compared
    "Comparison": "evaluation.analysis",
    "LoadedRun": "evaluation.analysis",
    "compare": "evaluation.analysis",
    "load_results": "evaluation.analysis",
    # figures and the HTML report of finished runs
    "forest_plot": "evaluation.analysis",
    "plot_score_distribution": "evaluation.analysis",
    "plot_slices": "evaluation.analysis",
    "plot_tests": "evaluation.analysis",
    "write_report": "evaluation.analysis",
}

__all__ = sorted([*_EXPORTS, "__version__"])

# ``from reclist.abstractions import RecModel``, the first line of every 2022 model file,
# finds a module where the installed reclist has none (see evaluation.compat).
from evaluation.compat import install_reclist_modules  # noqa: E402

install_reclist_modules({"RecModel": ("evaluation.model", "RecModel"),
                         "EvalRSReclist": ("evaluation.challenge", "EvalRSRecList2022")})

#: The 2022 module paths named like a class of this package (evaluation/EvalRSRunner.py).
_OLD_MODULES_NAMED_LIKE_CLASSES = frozenset({"EvalRSRunner", "EvalRSRecList"})


class _Package(types.ModuleType):
    """This package's module type: importing ``evaluation.EvalRSRunner`` (the 2022 module)
    leaves ``evaluation.EvalRSRunner`` the class.

    Python sets a submodule as an attribute of its package once imported; for the two 2022
    modules named like classes that would turn ``from evaluation import EvalRSRunner`` into
    the module for the rest of the process. The module stays in ``sys.modules``.
    """

    def __setattr__(self, name: str, value: object) -> None:
        if name in _OLD_MODULES_NAMED_LIKE_CLASSES and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evaluation' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
