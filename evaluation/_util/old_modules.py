"""The hook that lets 2022/2023 code import the reclist 0.x modules (``reclist.abstractions``,
``reclist.utils.train_w2v``, ...) and the 2023 module ``EvalRSReclist``: a finder at the end
of ``sys.meta_path``.

Every 2022 model file starts with ``from reclist.abstractions import RecModel``: a module of
reclist 0.x that reclist 2 no longer has. The finder is registered twice over, idempotently:

* at interpreter start-up, by the ``.pth`` file the installed harness ships (see
  ``_evalrs_startup``), so that a fresh interpreter (a spawn-started worker of PyTorch's
  ``DataLoader``, of ``concurrent.futures``, of joblib, a Ray task) can unpickle a 2022 model
  whose module imports ``reclist.abstractions`` before anything else;
* by ``import evaluation`` (:func:`install`), for a source tree used without installing it.

A finder rather than ``sys.modules`` entries because it is the least surprising hook:

* it answers only for the names of :data:`SHIMMED` and only when no other finder found them,
  so an installed reclist that has them (0.x) is used as it is;
* it imports nothing until old code asks for one of those modules: start-up, ``import
  evaluation`` and a modern run load neither reclist nor the compatibility layer
  (``evaluation.compat``);
* the module it builds is a real module with a ``__spec__``, so ``importlib.reload``,
  ``inspect`` and pickling of the classes behave as for any module.

The start-up hook runs this file without importing the harness, so it imports nothing but
``sys`` and ``importlib.machinery`` at run time: not ``importlib.abc`` (its import costs
twenty times the rest of the hook), nor ``typing``. The finder and
loader are duck-typed to the protocols of ``importlib``.

This module is the compatibility layer's one entry point below it: it names the modules,
and ``evaluation.compat`` fills them (see ``evaluation.compat.fill_old_module``).
"""

from __future__ import annotations

import importlib.machinery
import sys

# Only for the type checker (mypy reads MYPY as true): importing typing or collections.abc at
# start-up would cost more than the whole hook.
MYPY = False
if MYPY:
    import types
    from collections.abc import Sequence

#: The modules the finder provides, and what to import instead.
SHIMMED = {
    "reclist.abstractions": "from evaluation import RecModel (RecList and rec_test: "
                            "reclist.reclist; a custom RecList subclasses evaluation."
                            "EvalRSRecList)",
    "reclist.current": "nothing: the report path is the runner's results folder",
    "reclist.recommenders": "a model of your own subclassing evaluation.RecModel",
    "reclist.recommenders.prod2vec": "a model of your own subclassing evaluation.RecModel "
                                     "(train_embeddings trains the same word2vec)",
    "reclist.utils": "the download helpers of evaluation.utils, or evaluation.load_source",
    "reclist.utils.config": "evaluation.load_source for data; requests for other downloads",
    "reclist.utils.train_w2v": "gensim.models.Word2Vec(sentences, min_count=3, "
                               "vector_size=48, window=5, epochs=15, ns_exponent=0.75).wv",
    # the 2023 RecList module, imported with the evaluation/ folder on sys.path (its file
    # name differs from evaluation/EvalRSRecList.py only in case, so it cannot be a file)
    "EvalRSReclist": "from evaluation import EvalRSRecList (it takes the 2023 call)",
    "evaluation.EvalRSReclist": "from evaluation import EvalRSRecList (it takes the 2023 call)",
}

#: The modules of :data:`SHIMMED` that are packages in reclist 0.x (they have submodules).
PACKAGES = frozenset({"reclist.recommenders", "reclist.utils"})

#: Where a spec of the finder says it comes from.
ORIGIN = "evaluation.compat"


class _OldModuleLoader:
    """Builds one of the :data:`SHIMMED` modules with the compatibility layer."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # the default module object

    def exec_module(self, module: types.ModuleType) -> None:
        # Deferred on purpose: the compatibility layer stands above every other package (it
        # builds on the runner and the RecList) and is loaded only when old code imports one
        # of these modules, never at start-up, by ``import evaluation`` or a modern run.
        from evaluation.compat import fill_old_module

        fill_old_module(module, SHIMMED[module.__name__])


class LegacyReclistFinder:
    """Finds the :data:`SHIMMED` modules when nothing before it on ``sys.meta_path`` did."""

    #: Marks the finder whichever copy of this file defined it: the start-up hook runs the
    #: file under another module name than ``import evaluation`` does.
    evalrs_old_modules = True

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in SHIMMED:
            return None
        # the loader is duck-typed (importlib.abc.Loader is not imported, see above)
        return importlib.machinery.ModuleSpec(fullname, _OldModuleLoader(),  # type: ignore[arg-type]
                                              origin=ORIGIN, is_package=fullname in PACKAGES)

    def invalidate_caches(self) -> None:
        """Nothing is cached (``importlib.invalidate_caches`` calls it on every finder)."""


def installed_finders() -> list[object]:
    """The finders of this hook on ``sys.meta_path``, from either registration."""
    return [f for f in sys.meta_path if getattr(f, "evalrs_old_modules", False) is True]


def install() -> None:
    """Append the finder to ``sys.meta_path`` (once); a no-op when it is there already."""
    if not installed_finders():
        sys.meta_path.append(LegacyReclistFinder())
