"""``reclist.abstractions`` and ``reclist.utils`` for 2022 model files, where reclist lacks them
(and the 2023 module ``EvalRSReclist``).

Every 2022 model file starts with ``from reclist.abstractions import RecModel``: a module of
reclist 0.x that reclist 2 no longer has. :func:`install_reclist_modules` appends a finder
to the end of ``sys.meta_path`` (``import evaluation`` calls it). A finder rather than
``sys.modules`` entries because it is the least surprising hook:

* it answers only for those two names and only when no other finder found them, so an
  installed reclist that has them (0.x) is used as it is;
* it imports nothing until a 2022 file asks for the module, so ``import evaluation`` stays as
  fast as before and reclist 2 is loaded only by code that uses it;
* the module it builds is a real module with a ``__spec__``, so ``importlib.reload``,
  ``inspect`` and pickling of the classes behave as for any module.

The modules hold the 2022 names, mapped to the harness's: ``RecModel`` (the harness's
``RecModel``), ``RecList`` (reclist's), ``RecDataset`` (the 2022 container of a fold),
``rec_test`` (reclist's decorator, which takes the same arguments); ``reclist.utils``
holds the 2022 download helpers. Using one warns once (``DeprecationWarning``).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Mapping, Sequence
from typing import Any

from evaluation.compat._once import warn_once

#: The modules this finder provides, and what to import instead.
SHIMMED = {
    "reclist.abstractions": "from evaluation import RecModel (RecList and rec_test: "
                            "reclist.reclist; a custom RecList subclasses evaluation."
                            "EvalRSRecList)",
    "reclist.utils": "the download helpers of evaluation.utils, or evaluation.load_source",
    # the 2023 RecList module, imported with the evaluation/ folder on sys.path (its file
    # name differs from evaluation/EvalRSRecList.py only in case, so it cannot be a file)
    "EvalRSReclist": "from evaluation import EvalRSRecList (it takes the 2023 call)",
    "evaluation.EvalRSReclist": "from evaluation import EvalRSRecList (it takes the 2023 call)",
}


class RecDataset:
    """The 2022 ``RecDataset``: a fold's frames under the 2022 attribute names.

    ``load(x_train=..., x_test=..., y_test=..., users=..., items=...)`` sets them, as the
    2022 runner did; ``x_train``, ``x_test``, ``y_test`` and ``catalog`` read them back.
    """

    def __init__(self, **kwargs: Any) -> None:
        self._x_train: Any = None
        self._y_train: Any = None
        self._x_test: Any = None
        self._y_test: Any = None
        self._catalog: dict[str, Any] = {}
        if kwargs:
            self.load(**kwargs)

    def load(self, **kwargs: Any) -> None:
        """Keep the fold's frames: ``x_train``, ``x_test``, ``y_test``, ``users``, ``items``."""
        self._x_train = kwargs.get("x_train")
        self._y_train = kwargs.get("y_train")
        self._x_test = kwargs.get("x_test")
        self._y_test = kwargs.get("y_test")
        self._catalog = {"users": kwargs.get("users"), "items": kwargs.get("items")}

    @property
    def x_train(self) -> Any:
        return self._x_train

    @property
    def y_train(self) -> Any:
        return self._y_train

    @property
    def x_test(self) -> Any:
        return self._x_test

    @property
    def y_test(self) -> Any:
        return self._y_test

    @property
    def catalog(self) -> dict[str, Any]:
        return self._catalog


#: Names the shimmed modules take from the harness's higher packages: name -> (module,
#: attribute), given by ``install_reclist_modules`` (the package stands below them, so it names
#: none of them itself) and looked up when a shimmed module is first imported.
_PROVIDED: dict[str, tuple[str, str]] = {}


def _provided(name: str) -> Any:
    """The harness's object for ``name`` (see :data:`_PROVIDED`)."""
    module, attribute = _PROVIDED[name]
    return getattr(importlib.import_module(module), attribute)


def _fill_abstractions(module: types.ModuleType) -> None:
    """The names of reclist 0.x's ``reclist.abstractions`` that 2022 code imports."""
    from reclist.reclist import RecList, rec_test

    vars(module).update(RecModel=_provided("RecModel"), RecList=RecList,
                        RecDataset=RecDataset, rec_test=rec_test,
                        __all__=["RecDataset", "RecList", "RecModel", "rec_test"])


def _fill_utils(module: types.ModuleType) -> None:
    """The download helpers of the 2022 ``evaluation/utils.py`` under ``reclist.utils``."""
    legacy = importlib.import_module("evaluation.compat._legacy_utils")
    for name in legacy.__all__:
        setattr(module, name, getattr(legacy, name))
    vars(module)["__all__"] = list(legacy.__all__)


def _fill_reclist_2023(module: types.ModuleType) -> None:
    """The names of the 2023 ``EvalRSReclist`` module: the RecList and the example model."""
    simple = importlib.import_module("evaluation.compat._simple_model")
    # the RecList is the harness's, on its 2022 path (NaN kept, see there)
    vars(module).update(
        EvalRSReclist=_provided("EvalRSReclist"),
        EvalRSSimpleModel=simple.EvalRSSimpleModel, TOP_K_CHALLENGE=100,
        __all__=["EvalRSReclist", "EvalRSSimpleModel", "TOP_K_CHALLENGE"])


class _ShimLoader(importlib.abc.Loader):
    """Builds one of the :data:`SHIMMED` modules."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # the default module object

    def exec_module(self, module: types.ModuleType) -> None:
        name = module.__name__
        what = ("a reclist 0.x module of the 2022 challenge that the installed reclist does "
                "not have" if name.startswith("reclist.") else "the 2023 RecList module")
        warn_once(f"module:{name}", f"{name} is {what}; the harness provides it. Modern "
                  f"spelling: {SHIMMED[name]}", stacklevel=2)
        if name == "reclist.abstractions":
            _fill_abstractions(module)
        elif name == "reclist.utils":
            _fill_utils(module)
        else:
            _fill_reclist_2023(module)


class LegacyReclistFinder(importlib.abc.MetaPathFinder):
    """Finds the :data:`SHIMMED` modules when nothing before it on ``sys.meta_path`` did."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in SHIMMED:
            return None
        return importlib.machinery.ModuleSpec(fullname, _ShimLoader(), origin="evaluation.compat")


def install_reclist_modules(provided: Mapping[str, tuple[str, str]]) -> None:
    """Append the finder to ``sys.meta_path`` (once); a no-op when it is there already.

    Parameters
    ----------
    provided : mapping
        ``RecModel`` and ``EvalRSReclist`` -> (the harness module that defines the object, its
        attribute), looked up when old code first imports a shimmed module.
    """
    _PROVIDED.update(provided)
    if not any(isinstance(f, LegacyReclistFinder) for f in sys.meta_path):
        sys.meta_path.append(LegacyReclistFinder())
