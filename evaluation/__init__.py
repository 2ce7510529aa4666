"""EvalRS: a competition-grade evaluation harness for recommender systems.

The public API is listed in ``__all__``; names are imported on first use so that
``import evaluation`` (and the CLI's ``--help``) stays fast: importing every subpackage
takes about thirty times as long (pandas, pyarrow, rich...). The mechanism is PEP 562's
module ``__getattr__``, which imports the subpackage named in ``_EXPORTS``; the package's
import rules (``tests/test_architecture.py``) read that table.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from evaluation._version import __version__ as __version__

if TYPE_CHECKING:
    # Named here for type checkers: the 2022 modules evaluation/EvalRSRunner.py and
    # evaluation/EvalRSRecList.py would otherwise be taken for these two names.
    from evaluation.challenge_reclist import EvalRSRecList as EvalRSRecList
    from evaluation.runner import EvalRSRunner as EvalRSRunner

# public name -> the subpackage (or module) of ``evaluation`` that defines it
_EXPORTS: dict[str, str] = {
    # errors
    "ConfigError": "errors",
    "DataError": "errors",
    "DownloadError": "errors",
    "EvalRSError": "errors",
    "FoldCacheWarning": "errors",
    "PredictionError": "errors",
    "UploadError": "errors",
    "PredictionWarning": "errors",
    "RunWarning": "errors",
    "ScoringWarning": "errors",
    "SubmissionRejected": "errors",
    "SyntheticCacheWarning": "errors",
    # data
    "Tables": "data",
    "TrackVectors": "data",
    "load_source": "data",
    "read_tables": "data",
    "synthetic_tables": "data",
    "validate_tables": "data",
    "write_tables": "data",
    # dataset and folds
    "ChallengeDataset": "dataset",
    # models, predictions and scoring
    "EvalRSRecList": "challenge_reclist",
    "RecModel": "model",
    "predictions_frame": "predictions",
    "score": "challenge",
    "validate_predictions": "predictions",
    # runner, leaderboard and reference models
    "CBOWModel": "baselines",
    "EvalRSRunner": "runner",
    "RunResult": "runner",
    "UploadSettings": "runner",
    "PopularityModel": "baselines",
    "RandomModel": "baselines",
    "References": "challenge",
    "load_references": "challenge",
    # beyond leave-one-out: temporal splits, leakage audit, replay, rating prediction
    "BiasModel": "baselines",
    "LeakageAudit": "splits",
    "ReplayResult": "protocols",
    "Split": "splits",
    "SplitResult": "protocols",
    "audit_leakage": "splits",
    "evaluate_split": "protocols",
    "global_time_split": "splits",
    "rating_errors": "protocols",
    "replay": "protocols",
    "temporal_user_split": "splits",
    # metric library, sampled negatives, top-k from embeddings
    "METRICS": "metrics",
    "SampledResult": "protocols",
    "evaluate_ranking": "metrics",
    "evaluate_ratings": "metrics",
    "evaluate_sampled": "protocols",
    "get_metric": "metrics",
    "ranking_inputs": "metrics",
    "relevance_matrix": "metrics",
    "topk_from_embeddings": "topk",
    # finished runs read back and compared
    "Comparison": "analysis",
    "LoadedRun": "analysis",
    "compare": "analysis",
    "load_results": "analysis",
    # figures and the HTML report of finished runs
    "forest_plot": "analysis",
    "plot_score_distribution": "analysis",
    "plot_slices": "analysis",
    "plot_tests": "analysis",
    "write_report": "analysis",
}

__all__ = sorted([*_EXPORTS, "__version__"])

# ``from reclist.abstractions import RecModel``, the first line of every 2022 model file,
# finds a module where the installed reclist has none: a finder that loads the compatibility
# layer (evaluation.compat) only when old code imports such a module.
from evaluation import _old_modules  # noqa: E402

_old_modules.install()

#: The 2022 module paths named like a class of this package (evaluation/EvalRSRunner.py).
_OLD_MODULES_NAMED_LIKE_CLASSES = frozenset({"EvalRSRunner", "EvalRSRecList"})


class _Package(types.ModuleType):
    """This package's module type: importing the 2022 module ``evaluation.EvalRSRunner``
    leaves ``evaluation.EvalRSRunner`` the class (the same for ``EvalRSRecList``).

    Why: Python sets a submodule as an attribute of its package once imported (after the
    submodule ran, so the submodule cannot undo it), which would turn
    ``from evaluation import EvalRSRunner`` into the 2022 module for the rest of the process.
    The one hook on that assignment is the package's ``__setattr__``: a module's type is set
    as Python's documentation shows for customising module attribute access. The module
    stays in ``sys.modules``, where ``from evaluation.EvalRSRunner import ...`` finds it.
    """

    def __setattr__(self, name: str, value: object) -> None:
        if name in _OLD_MODULES_NAMED_LIKE_CLASSES and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    """The public name ``name`` (see ``_EXPORTS``), imported on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evaluation' has no attribute {name!r}")
    # importlib: this package's own subpackages, below it, by the table above (PEP 562); a
    # static import per name would only spell the table out again.
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
