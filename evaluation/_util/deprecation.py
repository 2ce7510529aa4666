"""Old import paths that keep working for one release, with a ``DeprecationWarning``."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterable
from typing import Any


def moved(old: str, new: str, names: Iterable[str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``old`` that forwards ``names`` to the module ``new``.

    Parameters
    ----------
    old, new : str
        Dotted names of the old module (the one the returned function is installed in) and of
        the module that now defines the names.
    names : iterable of str
        The names the old path still offers.

    Returns
    -------
    callable
        ``__getattr__(name)``: the object from ``new`` after a ``DeprecationWarning`` that
        names both paths; ``AttributeError`` for any other name.
    """
    offered = frozenset(names)

    def __getattr__(name: str) -> Any:
        if name not in offered:
            raise AttributeError(f"module {old!r} has no attribute {name!r} (the module moved "
                                 f"to {new!r})")
        warnings.warn(f"{old}.{name} moved to {new}.{name}; import it from there (the old "
                      "path will be removed in the next release)", DeprecationWarning,
                      stacklevel=2)
        return getattr(importlib.import_module(new), name)

    return __getattr__
