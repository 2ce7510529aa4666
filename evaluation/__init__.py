"""EvalRS: a competition-grade evaluation harness for recommender systems.

The public API is listed in ``__all__``; names are imported on first use so that
``import evaluation`` (and the CLI's ``--help``) stays fast.
"""

from __future__ import annotations

import importlib

from evaluation._version import __version__ as __version__

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # errors
    "ConfigError": "evaluation.errors",
    "DataError": "evaluation.errors",
    "DownloadError": "evaluation.errors",
    "EvalRSError": "evaluation.errors",
    "PredictionError": "evaluation.errors",
    # data
    "Tables": "evaluation.data",
    "TrackVectors": "evaluation.data",
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evaluation' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
