"""The 2022/2023 module paths: ``evaluation.EvalRSRunner``, ``evaluation.EvalRSRecList`` and
``evaluation.utils``: the module ``__getattr__`` that each of those thin modules installs
with its own table of names.

Each path warns once per process (``DeprecationWarning``) with the modern import. The names
are looked up on first use, by their public module (the classes with the 2022 signatures
live with the classes they extend: ``evaluation.runner`` and ``evaluation.challenge``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from evaluation.compat._once import warn_once


def legacy_module_getattr(old: str, offered: Mapping[str, tuple[str, str]],
                          modern: str) -> Callable[[str], Any]:
    """The module ``__getattr__`` of the old path ``old``.

    Parameters
    ----------
    old : str
        ``"evaluation.EvalRSRunner"``, ``"evaluation.EvalRSRecList"`` or
        ``"evaluation.utils"``.
    offered : mapping
        Name -> (the module that defines it, its attribute there): looked up on first use,
        so that the old module (above the packages it names) imports nothing until asked.
    modern : str
        The modern spelling, which the warning and the errors name.

    Returns
    -------
    callable
        ``__getattr__(name)``: the 2022 object, after one ``DeprecationWarning`` per process
        for the path; ``AttributeError`` naming the names offered for any other name.
    """
    def __getattr__(name: str) -> Any:
        if name not in offered:
            if name.startswith("__"):
                raise AttributeError(name)
            raise AttributeError(f"module {old!r} (the EvalRSRunner 2022/2023 path kept for old "
                                 f"code) has no attribute {name!r}; it offers "
                                 f"{sorted(offered)}. Modern spelling: {modern}")
        warn_once(f"module:{old}", f"{old} is the 2022/2023 module path, kept for old code. "
                  f"Modern spelling: {modern}", stacklevel=2)
        module, attribute = offered[name]
        return getattr(importlib.import_module(module), attribute)

    return __getattr__
