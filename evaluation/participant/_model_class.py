"""A participant's model class, loaded by path from their checkout.

The model's module is imported from ``<checkout>/submission/MyModel.py`` under its usual name,
``submission.MyModel``: the class's qualified name is part of the model's fingerprint, and the
participant's own ``from submission.x import y`` (or ``from .x import y``) keeps working. What
the participant's code raises while it is imported is left as it is, so that its traceback
starts in their code (``evaluation.cli.guarded`` shows it from there).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from pathlib import Path

from evaluation.errors import ConfigError

#: The package of a checkout's model, its module and its class.
MODEL_PACKAGE, MODEL_MODULE, MODEL_CLASS = "submission", "submission.MyModel", "MyModel"
#: The constructor arguments the harness gives the model; ``--param`` may not name them.
MODEL_ARGUMENTS = ("items", "top_k")


def load_model_class(checkout: str | os.PathLike) -> type:
    """The class ``MyModel`` of ``<checkout>/submission/MyModel.py``.

    A module already loaded from that file is reused; one loaded from another checkout is
    replaced, with the rest of its package.

    Parameters
    ----------
    checkout : str or os.PathLike
        The folder that holds ``submission/``.

    Returns
    -------
    type
        The model class, from the module ``submission.MyModel``.

    Raises
    ------
    ConfigError
        When the file is missing or defines no class ``MyModel``. Whatever the module itself
        raises when imported goes through unchanged.
    """
    folder = Path(checkout).resolve() / MODEL_PACKAGE
    path = folder / "MyModel.py"
    if not path.is_file():
        raise ConfigError(f"{path} not found: a checkout holds its model in "
                          f"submission/MyModel.py (a class MyModel, subclass of "
                          f"evaluation.RecModel).")
    module = _loaded(path) or _load(folder, path)
    model_class = getattr(module, MODEL_CLASS, None)
    if not isinstance(model_class, type):
        raise ConfigError(f"{path} defines no class {MODEL_CLASS}; the harness builds "
                          f"MyModel(items=..., top_k=..., **params) from it.")
    return model_class


def _loaded(path: Path) -> types.ModuleType | None:
    """The model module, when it is already loaded from ``path``."""
    module = sys.modules.get(MODEL_MODULE)
    file = getattr(module, "__file__", None)
    return module if file and Path(file).resolve() == path else None


def _load(folder: Path, path: Path) -> types.ModuleType:
    """Import ``folder`` as the package ``submission`` and ``path`` as its ``MyModel``."""
    for name in [n for n in sys.modules if n == MODEL_PACKAGE
                 or n.startswith(MODEL_PACKAGE + ".")]:
        del sys.modules[name]  # another checkout's, or a stale copy
    init = folder / "__init__.py"
    if init.is_file():
        package = _execute(MODEL_PACKAGE, init, [str(folder)])
    else:  # a namespace package, as a plain import would make it
        package = types.ModuleType(MODEL_PACKAGE)
        package.__path__ = [str(folder)]
        sys.modules[MODEL_PACKAGE] = package
    module = _execute(MODEL_MODULE, path, None)
    package.MyModel = module  # type: ignore[attr-defined]  # as the import system does
    return module


def _execute(name: str, path: Path, search: list[str] | None) -> types.ModuleType:
    """Run the module ``name`` from ``path`` (a package when ``search`` is given)."""
    spec = importlib.util.spec_from_file_location(name, path,
                                                  submodule_search_locations=search)
    if spec is None or spec.loader is None:
        raise ConfigError(f"{path} cannot be imported as the module {name}.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]  # as a failed import leaves nothing behind
        raise
    return module
