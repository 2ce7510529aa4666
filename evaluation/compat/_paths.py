"""The 2022/2023 module paths: ``evaluation.EvalRSRunner``, ``evaluation.EvalRSRecList`` and
``evaluation.utils``, each a thin module whose names come from here.

Each path warns once per process (``DeprecationWarning``) with the modern import. The names
are looked up on first use, by their public module (the classes with the 2022 signatures
live with the classes they extend: ``evaluation.runner`` and ``evaluation.challenge``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from evaluation.compat._once import warn_once

#: old module -> {name: (module defining it, attribute)}
OLD_PATHS: dict[str, dict[str, tuple[str, str]]] = {
    "evaluation.EvalRSRunner": {
        "ChallengeDataset": ("evaluation.runner", "LegacyChallengeDataset"),
        "EvalRSRunner": ("evaluation.runner", "LegacyEvalRSRunner"),
        "EvalRSRecList": ("evaluation.challenge", "EvalRSRecList2022"),
        "EvalRSDataset": ("evaluation.compat._modules", "RecDataset"),
        "LEADERBOARD_TESTS": ("evaluation.compat._legacy_utils", "LEADERBOARD_TESTS"),
        "TOP_K_CHALLENGE": ("evaluation.compat._legacy_utils", "TOP_K_CHALLENGE"),
    },
    "evaluation.EvalRSRecList": {
        "EvalRSRecList": ("evaluation.challenge", "EvalRSRecList2022"),
        "EvalRSDataset": ("evaluation.compat._modules", "RecDataset"),
        "TOP_K_CHALLENGE": ("evaluation.compat._legacy_utils", "TOP_K_CHALLENGE"),
        "rec_test": ("reclist.reclist", "rec_test"),
        "RecList": ("reclist.reclist", "RecList"),
    },
    "evaluation.utils": {
        name: ("evaluation.compat._legacy_utils", name)
        for name in ("LEADERBOARD_TESTS", "LFM_DATASET_PATH", "TOP_K_CHALLENGE",
                     "decompress_zipfile", "download_with_progress", "get_cache_directory",
                     "upload_submission")
    },
}

#: old module -> the modern spelling its warning names
MODERN = {
    "evaluation.EvalRSRunner": "from evaluation import EvalRSRunner, ChallengeDataset (and "
                               "EvalRSRunner(dataset, upload=UploadSettings(...)))",
    "evaluation.EvalRSRecList": "from evaluation import EvalRSRecList (tests: from "
                                "reclist.reclist import rec_test)",
    "evaluation.utils": "evaluation.load_source('lfm') downloads and verifies the data; "
                        "evaluation.challenge.LEADERBOARD_TESTS lists the tests",
}


def legacy_module_getattr(old: str) -> Callable[[str], Any]:
    """The module ``__getattr__`` of the old path ``old``.

    Parameters
    ----------
    old : str
        ``"evaluation.EvalRSRunner"``, ``"evaluation.EvalRSRecList"`` or
        ``"evaluation.utils"``.

    Returns
    -------
    callable
        ``__getattr__(name)``: the 2022 object, after one ``DeprecationWarning`` per process
        for the path; ``AttributeError`` naming the names offered for any other name.
    """
    offered = OLD_PATHS[old]

    def __getattr__(name: str) -> Any:
        if name not in offered:
            if name.startswith("__"):
                raise AttributeError(name)
            raise AttributeError(f"module {old!r} (the EvalRSRunner 2022/2023 path kept for old "
                                 f"code) has no attribute {name!r}; it offers "
                                 f"{sorted(offered)}. Modern spelling: {MODERN[old]}")
        warn_once(f"module:{old}", f"{old} is the 2022/2023 module path, kept for old code. "
                  f"Modern spelling: {MODERN[old]}", stacklevel=2)
        module, attribute = offered[name]
        return getattr(importlib.import_module(module), attribute)

    return __getattr__
