"""The competition's declared alternative protocols, as a reproduction runs them.

A competition file may declare ``[[robustness.protocols]]``; the server hands them to the
worker with a reproduction's claim (plain JSON: ``{"name", "kind", "seed" | "cut"}``). Each is
a dataset with other folds, on the very same data: ``fold_seed`` cuts the official
leave-one-out folds with another fold seed, ``global_time`` cuts once for every user at a
time (the events before it train; each user who has one of them is tested on their first
event at or after the cut: ``evaluation.dataset.TimeCutDataset``). The reproduction runs the
model on each in the sandbox, as on the official folds, and scores its predictions here.

Nothing the worker receives is trusted beyond its shape: a protocol that is not one of these
is a failed alternative with its reason, never a crash.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluation.errors import ConfigError

#: The kinds of alternative the worker runs (the server's ``ROBUSTNESS_KINDS``).
KINDS = ("fold_seed", "global_time")
#: The most alternatives one reproduction runs (the server's limit).
MAX_ALTERNATIVES = 8


@dataclass(frozen=True)
class Alternative:
    """One declared alternative protocol.

    Attributes
    ----------
    name : str
    kind : {"fold_seed", "global_time"}
    seed : int or None
        ``fold_seed``: the fold seed.
    cut : float or None
        ``global_time``: the cut, in unix seconds.
    """

    name: str
    kind: str
    seed: int | None = None
    cut: float | None = None


def read_alternatives(raw: Any) -> list[Alternative]:
    """The alternatives of a claim's ``robustness`` list (None or empty: none).

    Raises
    ------
    ConfigError
        When the list or one of its protocols is malformed (the server checked them at load:
        this is a server of another version, or no server of this harness).
    """
    if raw is None:
        return []
    if not isinstance(raw, list) or len(raw) > MAX_ALTERNATIVES:
        raise ConfigError(f"the claim's robustness protocols must be a list of at most "
                          f"{MAX_ALTERNATIVES}; got {type(raw).__name__}: is the server a "
                          f"leaderboard of this harness version?")
    return [_alternative(i, entry) for i, entry in enumerate(raw)]


def _alternative(i: int, entry: Any) -> Alternative:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str) \
            or entry.get("kind") not in KINDS:
        raise ConfigError(f"robustness protocol {i}: needs a name and a kind among {KINDS}; "
                          f"update the worker to the server's harness version")
    name, kind = entry["name"][:64], entry["kind"]
    if kind == "fold_seed":
        seed = entry.get("seed")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ConfigError(f"robustness protocol {name!r}: seed must be an integer >= 0")
        return Alternative(name=name, kind=kind, seed=seed)
    cut = entry.get("cut")
    if not isinstance(cut, str):
        raise ConfigError(f"robustness protocol {name!r}: cut must be an ISO date-time")
    try:
        seconds = np.datetime64(cut.replace("Z", "").replace("+00:00", ""), "s")
    except ValueError:
        raise ConfigError(f"robustness protocol {name!r}: cut {cut[:40]!r} is not an ISO "
                          f"UTC date-time") from None
    return Alternative(name=name, kind=kind, cut=float(seconds.astype(np.int64)))


def alternative_config(config: Mapping[str, Any], alternative: Alternative) -> dict[str, Any]:
    """The worker's configuration for ``alternative``: the official one with its fold seed
    (``fold_seed``) or its folds (``global_time``: the cut replaces them), and no bootstrap of
    its own (``n_boot`` 0: the server resamples the per-user values, paired across teams)."""
    out = {**config, "n_boot": 0}
    if alternative.kind == "fold_seed":
        out["fold_params"] = {**config["fold_params"], "seed": alternative.seed}
    return out
