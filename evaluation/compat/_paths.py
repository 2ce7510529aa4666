"""The 2022/2023 module paths: ``evaluation.EvalRSRunner``, ``evaluation.EvalRSRecList`` and
``evaluation.utils``: the module ``__getattr__`` that each of those thin modules installs
with its own table of names.

Each path warns once per process (``DeprecationWarning``) with the modern import. The objects
are imported by the thin module itself (plain imports, which the package's import rules see);
the ``__getattr__`` hands them out, so that the warning is given on use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from evaluation._util.once import warn_once


def legacy_module_getattr(old: str, offered: Mapping[str, Any],
                          modern: str) -> Callable[[str], Any]:
    """The module ``__getattr__`` of the old path ``old``.

    Parameters
    ----------
    old : str
        ``"evaluation.EvalRSRunner"``, ``"evaluation.EvalRSRecList"`` or
        ``"evaluation.utils"``.
    offered : mapping
        Name -> the 2022 object the old path gives under that name.
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
        return offered[name]

    return __getattr__
