"""The hook that lets 2022/2023 code import ``reclist.abstractions``, ``reclist.utils`` and
the 2023 module ``EvalRSReclist``: a finder at the end of ``sys.meta_path``.

Every 2022 model file starts with ``from reclist.abstractions import RecModel``: a module of
reclist 0.x that reclist 2 no longer has. ``import evaluation`` appends
:class:`LegacyReclistFinder` (:func:`install`). A finder rather than ``sys.modules`` entries
because it is the least surprising hook:

* it answers only for the names of :data:`SHIMMED` and only when no other finder found them,
  so an installed reclist that has them (0.x) is used as it is;
* it imports nothing until old code asks for one of those modules: ``import evaluation`` and
  a modern run load neither reclist nor the compatibility layer (``evaluation.compat``);
* the module it builds is a real module with a ``__spec__``, so ``importlib.reload``,
  ``inspect`` and pickling of the classes behave as for any module.

This module is the compatibility layer's one entry point below it: it names the modules,
and ``evaluation.compat`` fills them (see ``evaluation.compat.fill_old_module``).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Sequence

#: The modules the finder provides, and what to import instead.
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


class _OldModuleLoader(importlib.abc.Loader):
    """Builds one of the :data:`SHIMMED` modules with the compatibility layer."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # the default module object

    def exec_module(self, module: types.ModuleType) -> None:
        # Deferred on purpose: the compatibility layer stands above every other package (it
        # builds on the runner and the RecList) and is loaded only when old code imports one
        # of these modules, never by ``import evaluation`` or a modern run.
        from evaluation.compat import fill_old_module

        fill_old_module(module, SHIMMED[module.__name__])


class LegacyReclistFinder(importlib.abc.MetaPathFinder):
    """Finds the :data:`SHIMMED` modules when nothing before it on ``sys.meta_path`` did."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in SHIMMED:
            return None
        return importlib.machinery.ModuleSpec(fullname, _OldModuleLoader(),
                                              origin="evaluation.compat")


def install() -> None:
    """Append the finder to ``sys.meta_path`` (once); a no-op when it is there already."""
    if not any(isinstance(f, LegacyReclistFinder) for f in sys.meta_path):
        sys.meta_path.append(LegacyReclistFinder())
