"""Registers the harness's finder of the 2022/2023 module names (``reclist.abstractions``, ...)
in every interpreter of the environment, at start-up, without importing the harness.

The installed harness ships ``evalrs_harness_old_modules.pth`` beside it, whose one line
imports this module and calls :func:`install` while Python starts. That is what makes a
fresh interpreter (a spawn-started worker of PyTorch's ``DataLoader``, of
``concurrent.futures`` or joblib, a Ray task) able to import a 2022 model module, which
begins with ``from reclist.abstractions import RecModel``, before anything imported the
harness. The finder is the one of ``evaluation/_old_modules.py``: that file is run here
under a private name, since importing it as part of ``evaluation`` would import the harness.
A harness that cannot be found leaves the interpreter as it was.
"""

from __future__ import annotations

import importlib.machinery
import sys

#: The name the finder's file runs under here (``import evaluation`` runs it as
#: ``evaluation._old_modules``; the finder tells its copies apart from other finders by
#: a marker, not by class).
MODULE = "_evalrs_old_modules"


def _finder_file() -> str | None:
    """``evaluation/_old_modules.py`` of the harness this interpreter would import."""
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        spec = find_spec("evaluation", None) if find_spec is not None else None
        if spec is not None:
            folders = list(spec.submodule_search_locations or ())
            return f"{folders[0]}/_old_modules.py" if folders else None
    return None


def install() -> None:
    """Register the finder (once); nothing when the harness or its file is missing."""
    if MODULE in sys.modules:
        return
    path = _finder_file()
    if path is None:
        return
    loader = importlib.machinery.SourceFileLoader(MODULE, path)
    module = type(sys)(MODULE)
    module.__file__ = path
    module.__loader__ = loader
    try:
        loader.exec_module(module)  # compiled once into __pycache__, as any module
    except OSError:  # the file is gone (a broken install): start as if not installed
        return
    sys.modules[MODULE] = module
    module.install()
