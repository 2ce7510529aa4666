"""The hook that lets 2022/2023 code import the reclist 0.x modules (``reclist.abstractions``,
``reclist.utils.train_w2v``, ...) and the 2023 module ``EvalRSReclist``: a finder at the front
of ``sys.meta_path``.

Every 2022 model file starts with ``from reclist.abstractions import RecModel``: a module of
reclist 0.x that reclist 2 no longer has. The finder is registered twice over, idempotently:

* at interpreter start-up, by the ``.pth`` file the installed harness ships (see
  ``_evalrs_startup``), so that a fresh interpreter (a spawn-started worker of PyTorch's
  ``DataLoader``, of ``concurrent.futures``, of joblib, a Ray task) can unpickle a 2022 model
  whose module imports ``reclist.abstractions`` before anything else;
* by ``import evaluation`` (:func:`install`), for a source tree used without installing it.

A finder rather than ``sys.modules`` entries because it is the least surprising hook:

* it answers only for the names of :data:`SHIMMED` and only when no other finder finds them,
  so an installed reclist that has them (0.x) is used as it is; for the modules of
  :data:`EXTENDED` it lets the installed reclist's module load and adds the 0.x names it lacks
  (on first access, PEP 562), so that module stays reclist 2's for the code that wants it;
* it imports nothing until old code asks for one of those modules or names: start-up,
  ``import evaluation`` and a modern run load neither reclist nor the compatibility layer
  (``evaluation.compat``);
* the module it builds is a real module with a ``__spec__``, so ``importlib.reload``,
  ``inspect`` and pickling of the classes behave as for any module.

It stands at the front of ``sys.meta_path`` because a module of :data:`EXTENDED` is found by
the path finder, which would answer first; for every other name it answers ``None`` after one
set lookup.

The start-up hook runs this file without importing the harness, so it imports nothing but
``sys`` and ``importlib.machinery`` at run time: not ``importlib.abc`` (its import costs
twenty times the rest of the hook), nor ``typing``. The finder and loaders are duck-typed to
the protocols of ``importlib``.

It stands at the top of the package, beside ``evaluation/__init__.py``, as an entry point of
the compatibility layer: it names the modules, and ``evaluation.compat``, below it, fills them
(see ``evaluation.compat.fill_old_module`` and ``evaluation.compat.old_module_name``). Nothing
of the harness imports this module but ``evaluation/__init__.py``.
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

#: Modules reclist 2 has without some public names of reclist 0.x: those names, which the
#: module offers on first access (reclist 2's own names are left as they are).
EXTENDED = {
    "reclist.metrics.standard_metrics": frozenset({
        "hit_rate_at_k_list", "hit_rate_at_k_nep", "mrr_at_k_list", "mrr_at_k_nep_list"}),
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
        _compatibility_layer().fill_old_module(module, SHIMMED[module.__name__])


def _compatibility_layer() -> types.ModuleType:
    """``evaluation.compat``, which fills the old modules, loaded when old code first asks."""
    # Deferred on purpose: this file runs at interpreter start-up, before the harness can be
    # imported, and the compatibility layer loads reclist, the runner and the RecList; it is
    # loaded only when old code imports one of these modules or names, never at start-up, by
    # ``import evaluation`` or by a modern run. (A plain import: the layer stands below this
    # file, so no circle is dodged.)
    from evaluation import compat

    return compat


def _old_name_getter(module_name: str) -> object:
    """The PEP 562 ``__getattr__`` of an :data:`EXTENDED` module: its reclist 0.x names."""

    def __getattr__(name: str) -> object:
        if name in EXTENDED[module_name]:
            return _compatibility_layer().old_module_name(module_name, name)
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return __getattr__


class _ExtendingLoader:
    """Runs the installed module of an :data:`EXTENDED` name with its own loader, then gives
    it the reclist 0.x names it lacks; any other attribute is the wrapped loader's."""

    def __init__(self, loader: object) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: types.ModuleType) -> None:
        # the wrapped loader is a real importlib loader; its type says only Loader's protocol
        self._loader.exec_module(module)  # type: ignore[attr-defined]
        if "__getattr__" not in vars(module):
            # PEP 562: consulted only for names the module does not define
            vars(module)["__getattr__"] = _old_name_getter(module.__name__)

    def __getattr__(self, name: str) -> object:
        return getattr(self._loader, name)  # get_source, get_filename, ...


class LegacyReclistFinder:
    """Finds the :data:`SHIMMED` modules when no other finder on ``sys.meta_path`` does, and
    extends the :data:`EXTENDED` ones another finder found."""

    #: Marks the finder whichever copy of this file defined it: the start-up hook runs the
    #: file under another module name than ``import evaluation`` does.
    evalrs_old_modules = True

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in SHIMMED and fullname not in EXTENDED:
            return None
        found = _found_elsewhere(fullname, path, target)
        if fullname in EXTENDED:
            if found is None or found.loader is None:
                return None
            # duck-typed loader (importlib.abc is not imported: it costs ~22 ms at start-up)
            found.loader = _ExtendingLoader(found.loader)  # type: ignore[assignment]
            return found
        if found is not None:  # an installed reclist 0.x has it: that one
            return None
        # the loader is duck-typed (importlib.abc.Loader is not imported, see above)
        return importlib.machinery.ModuleSpec(fullname, _OldModuleLoader(),  # type: ignore[arg-type]
                                              origin=ORIGIN, is_package=fullname in PACKAGES)

    def invalidate_caches(self) -> None:
        """Nothing is cached (``importlib.invalidate_caches`` calls it on every finder)."""


def _found_elsewhere(fullname: str, path: Sequence[str] | None,
                     target: types.ModuleType | None) -> importlib.machinery.ModuleSpec | None:
    """The spec another finder of ``sys.meta_path`` (not one of this hook) gives ``fullname``."""
    for finder in list(sys.meta_path):
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is None or getattr(finder, "evalrs_old_modules", False) is True:
            continue
        spec = find_spec(fullname, path, target)
        if spec is not None:
            return spec
    return None


def installed_finders() -> list[object]:
    """The finders of this hook on ``sys.meta_path``, from either registration."""
    return [f for f in sys.meta_path if getattr(f, "evalrs_old_modules", False) is True]


def install() -> None:
    """Put the finder at the front of ``sys.meta_path`` (once); a no-op when it is there."""
    if not installed_finders():
        sys.meta_path.insert(0, LegacyReclistFinder())
