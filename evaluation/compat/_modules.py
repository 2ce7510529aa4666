"""What the reclist 0.x modules (``reclist.abstractions``, ``reclist.utils``,
``reclist.utils.train_w2v``, ``reclist.utils.config``, ``reclist.current``,
``reclist.recommenders.prod2vec``) and the 2023 module ``EvalRSReclist`` hold for old code,
where the installed reclist lacks them.

The finder that provides those modules (``evaluation._old_modules``, installed by
``import evaluation``) calls :func:`fill_old_module` when old code first imports one. The
modules hold the 2022 names, mapped to the harness's: ``RecModel`` (the harness's
``RecModel``), ``RecList`` (reclist's), ``RecDataset`` (the 2022 container of a fold),
``rec_test`` (reclist's decorator, which takes the same arguments); ``reclist.utils`` holds
the 2022 download helpers; the other modules hold what reclist 0.x's did (the version the
2022 challenge pinned), written for this harness. Using one warns once
(``DeprecationWarning``).
"""

from __future__ import annotations

import types
from typing import Any

from reclist.reclist import RecList, rec_test

from evaluation._util.once import warn_once
from evaluation.compat import (
    _legacy_utils,
    _list_metrics,
    _prod2vec,
    _reclist_config,
    _reclist_current,
)
from evaluation.compat._reclist_2022 import EvalRSRecList2022
from evaluation.compat._simple_model import EvalRSSimpleModel
from evaluation.compat._train_w2v import train_embeddings
from evaluation.legacy import RecDataset
from evaluation.model import RecModel


def _names_of(module: types.ModuleType) -> dict[str, Any]:
    """The public names of ``module`` (its ``__all__``), with that ``__all__``."""
    return {**{n: getattr(module, n) for n in module.__all__}, "__all__": list(module.__all__)}


def _contents(name: str) -> dict[str, Any]:
    """The names of the old module ``name``."""
    if name == "reclist.abstractions":
        return {"RecModel": RecModel, "RecList": RecList, "RecDataset": RecDataset,
                "rec_test": rec_test,
                "__all__": ["RecDataset", "RecList", "RecModel", "rec_test"]}
    if name == "reclist.utils":
        # the download helpers of the 2022 evaluation/utils.py (reclist 0.x's package held
        # only its submodules)
        return _names_of(_legacy_utils)
    if name == "reclist.utils.config":
        return _names_of(_reclist_config)
    if name == "reclist.utils.train_w2v":
        return {"train_embeddings": train_embeddings, "__all__": ["train_embeddings"]}
    if name == "reclist.current":
        return {"Current": _reclist_current.Current, "current": _reclist_current.current,
                "__all__": ["Current", "current"]}
    if name == "reclist.recommenders":
        return {"__all__": []}  # a package of submodules only, as in reclist 0.x
    if name == "reclist.recommenders.prod2vec":
        return {**_names_of(_prod2vec), "RecModel": RecModel,
                "train_embeddings": train_embeddings}
    # the 2023 EvalRSReclist: the RecList on its 2022 path (NaN kept) and the example model
    return {"EvalRSReclist": EvalRSRecList2022, "EvalRSSimpleModel": EvalRSSimpleModel,
            "TOP_K_CHALLENGE": _legacy_utils.TOP_K_CHALLENGE,
            "__all__": ["EvalRSReclist", "EvalRSSimpleModel", "TOP_K_CHALLENGE"]}


def fill_old_module(module: types.ModuleType, modern: str) -> None:
    """Fill ``module`` (``reclist.abstractions``, ``reclist.utils`` or the 2023
    ``EvalRSReclist``) with its 2022/2023 names, warning once with the modern spelling.

    Parameters
    ----------
    module : module
        The new module, named by its ``__name__``.
    modern : str
        What to import instead, for the warning.
    """
    name = module.__name__
    what = ("a reclist 0.x module of the 2022 challenge that the installed reclist does "
            "not have" if name.startswith("reclist.") else "the 2023 RecList module")
    # stacklevel: the import statement of the old code, past the import machinery's frames
    warn_once(f"module:{name}", f"{name} is {what}; the harness provides it. Modern "
              f"spelling: {modern}", stacklevel=3)
    vars(module).update(_contents(name))


def old_module_name(module_name: str, name: str) -> Any:
    """A reclist 0.x name the installed reclist's module ``module_name`` lacks (one of
    ``evaluation._old_modules.EXTENDED``), warning once with the modern spelling.

    Parameters
    ----------
    module_name : str
        The module, e.g. ``"reclist.metrics.standard_metrics"``.
    name : str
        The name, e.g. ``"mrr_at_k_list"``.

    Returns
    -------
    Any
        What reclist 0.x's module held under that name.
    """
    if module_name != "reclist.metrics.standard_metrics" or name not in _list_metrics.__all__:
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
    # stacklevel: the `from ... import` of the old code, past the module's __getattr__
    warn_once(f"name:{module_name}.{name}",
              f"{module_name}.{name} is a list-wise metric of reclist 0.x that the installed "
              f"reclist does not have; the harness provides it. Modern spelling: from "
              f"evaluation.metrics import hit_rate_at_k, mrr_at_k (over ranked arrays)",
              stacklevel=3)
    return getattr(_list_metrics, name)
