"""The 2022 and 2023 keyword arguments of ``ChallengeDataset``, mapped to the modern ones.

Each old argument either has an equivalent (it is mapped, with one ``DeprecationWarning``
per argument per process naming the modern spelling) or none (a ``ConfigError`` that says
why and what to do instead).
"""

from __future__ import annotations

import os
from typing import Any

from evaluation._util.once import warn_once
from evaluation.errors import ConfigError

#: The old ``ChallengeDataset`` arguments :func:`dataset_arguments` knows.
OLD_DATASET_ARGUMENTS = ("dataset_out_path", "folded_dataset_split", "force_download",
                         "min_user_item_freq", "sample_users_perc")
#: The sources that download their data (and so take ``cache_dir``).
_DOWNLOADED = ("lfm", "lfm2023")


def _source_name(source: Any) -> str:
    return os.fspath(source) if isinstance(source, (str, os.PathLike)) else type(source).__name__


def dataset_arguments(options: dict[str, Any], *, source: Any, frac: float, k_core: int,
                      default_frac: float, default_k_core: int
                      ) -> tuple[float, int, dict[str, Any]]:
    """Map the old arguments among ``options``; return ``(frac, k_core, other options)``.

    Parameters
    ----------
    options : dict
        The keyword arguments ``ChallengeDataset`` did not recognise.
    source : str, path or Tables
        The dataset's source (``dataset_out_path`` is a download folder).
    frac, k_core : float, int
        The values given for the modern arguments.
    default_frac, default_k_core : float, int
        Their defaults: an old argument may replace a default, never a value given.

    Returns
    -------
    tuple
        ``frac``, ``k_core`` and the options left (the source's own, checked later).

    Raises
    ------
    ConfigError
        For an old argument without an equivalent, or given with its modern one.
    """
    rest = dict(options)
    if "force_download" in rest:
        rest.pop("force_download")
        warn_once("arg:force_download",
                  "ChallengeDataset(force_download=...) is a 2022/2023 argument: a download is "
                  "verified by its sha256 and cached, so it is never fetched again unless it "
                  "is missing or corrupt; drop the argument", stacklevel=4)
    if "folded_dataset_split" in rest:
        folded = rest.pop("folded_dataset_split")
        if not folded:
            raise ConfigError(
                "evaluation.ChallengeDataset(folded_dataset_split=False) is the 2023 split on "
                "each user's last interaction, which has several targets per user; the "
                "leaderboard's per-user tests score one target per user, so this class has no "
                "such split. Fix: for 2023 code, from evaluation.EvalRSRunner import "
                "ChallengeDataset (the 2023 class: its EvalRSReclist scores the split with "
                "the 2023 protocol); else drop the argument (bootstrapped leave-one-out "
                "folds), split='last_one' (each user's single latest event), or "
                "evaluation.splits.leave_last_out(...) with evaluate_split.")
        warn_once("arg:folded_dataset_split",
                  "ChallengeDataset(folded_dataset_split=True) is the 2023 default and the "
                  "only folded split: drop the argument", stacklevel=4)
    frac = _renamed(rest, "sample_users_perc", "frac", frac, default_frac)
    k_core = _renamed(rest, "min_user_item_freq", "k_core", k_core, default_k_core)
    if "dataset_out_path" in rest:
        out = rest.pop("dataset_out_path")
        name = _source_name(source)
        if out is not None:
            if name not in _DOWNLOADED:
                raise ConfigError(
                    f"ChallengeDataset(dataset_out_path={os.fspath(out)!r}) is the 2023 "
                    f"download folder, but the source {name!r} downloads nothing. Fix: drop "
                    f"the argument, or pass source='lfm2023' (or 'lfm') with it.")
            if "cache_dir" in rest:
                raise ConfigError("ChallengeDataset got dataset_out_path (2023) and cache_dir; "
                                  "pass cache_dir only.")
            warn_once("arg:dataset_out_path",
                      "ChallengeDataset(dataset_out_path=...) is the 2023 name of cache_dir",
                      stacklevel=4)
            rest["cache_dir"] = out
    return frac, k_core, rest


def _renamed(rest: dict[str, Any], old: str, new: str, value: Any, default: Any) -> Any:
    """The value of the modern argument ``new``, taken from the old name ``old`` if given."""
    if old not in rest:
        return value
    given = rest.pop(old)
    if value != default and value != given:
        raise ConfigError(f"ChallengeDataset got {old}={given!r} (its 2023 name) and "
                          f"{new}={value!r}; pass {new} only.")
    warn_once(f"arg:{old}", f"ChallengeDataset({old}=...) is the 2023 name of {new}: pass "
              f"{new}={given!r}", stacklevel=5)
    return given
