"""Code written for EvalRS 2022 and 2023, run unchanged on this harness.

The old module paths (``evaluation.EvalRSRunner``, ``evaluation.EvalRSRecList``,
``evaluation.utils``), the reclist 0.x modules 2022 model files import
(``reclist.abstractions``, ``reclist.utils``), the 2022/2023 constructor arguments, the
RecList helpers 2022 custom tests call, the track vectors as gensim ``KeyedVectors`` and the
recognition of a copied official ``evaluation/`` folder. Each old spelling warns once per
process (``DeprecationWarning``) with its modern one; each difference from 2022 that changes
a number is said once (``UserWarning``).

Names are imported on first use (the package is imported by ``evaluation`` itself, and by
modules that the legacy classes build on).
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> private module that defines it
_EXPORTS: dict[str, str] = {
    "Fold2022": "evaluation.compat._reclist_calls",
    "LegacyReclistFinder": "evaluation.compat._modules",
    "OLD_DATASET_ARGUMENTS": "evaluation.compat._arguments",
    "RecDataset": "evaluation.compat._modules",
    "RecListHelpers2022": "evaluation.compat._helpers",
    "build_reclist": "evaluation.compat._reclist_calls",
    "check_reclist": "evaluation.compat._reclist_calls",
    "dataset_arguments": "evaluation.compat._arguments",
    "first_hit_positions": "evaluation.compat._helpers",
    "forget_warnings": "evaluation.compat._once",
    "install_reclist_modules": "evaluation.compat._modules",
    "keyed_vectors": "evaluation.compat._vectors",
    "legacy_module_getattr": "evaluation.compat._paths",
    "takes_2022_arguments": "evaluation.compat._reclist_calls",
    "unpack_call": "evaluation.compat._reclist_calls",
    "vectors_folder": "evaluation.compat._vectors",
    "vendored_evaluation": "evaluation.compat._vendored",
    "warn_once": "evaluation.compat._once",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evaluation.compat' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
