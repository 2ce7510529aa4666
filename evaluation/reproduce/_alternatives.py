"""The competition's declared alternative protocols, as a reproduction runs them.

A competition file may declare ``[[robustness.protocols]]``; the server hands them to the
worker with a reproduction's claim (plain JSON: ``{"name", "kind", "seed" | "cut", ...}``).
``fold_seed`` and ``global_time`` are a dataset with other folds, on the very same data:
``fold_seed`` cuts the official leave-one-out folds with another fold seed, ``global_time``
cuts once for every user at a time (the events before it train; each user who has one of them
is tested on their first event at or after the cut: ``evaluation.dataset.TimeCutDataset``).
The reproduction runs the model on each in the sandbox, as on the official folds, and scores
its predictions here. ``sampled`` keeps the official folds and asks the model to score each
test user's target among ``n_negatives`` sampled items instead
(``evaluation.reproduce._sampled_alternative``).

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
KINDS = ("fold_seed", "global_time", "sampled")
#: The most alternatives one reproduction runs (the server's limit).
MAX_ALTERNATIVES = 8
#: ``sampled``: the most negatives per test user, the corrections and the metrics (the
#: server's ``MAX_SAMPLED_NEGATIVES``, ``SAMPLED_CORRECTIONS``, ``SAMPLED_METRICS``).
MAX_NEGATIVES = 1000
CORRECTIONS = ("rank", "bv")
METRICS = ("hit_rate", "ndcg")
MAX_CUTOFF = 1000


@dataclass(frozen=True)
class Alternative:
    """One declared alternative protocol.

    Attributes
    ----------
    name : str
    kind : {"fold_seed", "global_time", "sampled"}
    seed : int or None
        ``fold_seed``: the fold seed; ``sampled``: the seed of the negatives' sampler.
    cut : float or None
        ``global_time``: the cut, in unix seconds.
    n_negatives : int or None
        ``sampled``: the negatives drawn per test user.
    correction : {"rank", "bv"} or None
        ``sampled``: the estimator of the full-ranking metric.
    metric : str or None
        ``sampled``: ``"hit_rate"`` or ``"ndcg"``, with its cutoff (``"@K"``) when it names
        one (else the run's ``k``).
    """

    name: str
    kind: str
    seed: int | None = None
    cut: float | None = None
    n_negatives: int | None = None
    correction: str | None = None
    metric: str | None = None

    def cutoff(self, k: int) -> int:
        """``sampled``: the metric's cutoff (the run's ``k`` when it names none)."""
        _, at, cutoff = str(self.metric).partition("@")
        return int(cutoff) if at else int(k)


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
    if kind == "sampled":
        return _sampled(name, entry)
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


def _sampled(name: str, entry: Mapping) -> Alternative:
    seed, n_negatives = entry.get("seed"), entry.get("n_negatives")
    correction, metric = entry.get("correction"), entry.get("metric")
    base, at, cutoff = str(metric).partition("@")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0 \
            or isinstance(n_negatives, bool) or not isinstance(n_negatives, int) \
            or not 1 <= n_negatives <= MAX_NEGATIVES or correction not in CORRECTIONS \
            or not isinstance(metric, str) or base not in METRICS \
            or (at and not (cutoff.isascii() and cutoff.isdigit()
                            and 1 <= int(cutoff) <= MAX_CUTOFF)):
        raise ConfigError(f"robustness protocol {name!r}: a sampled protocol needs a seed >= "
                          f"0, n_negatives in 1..{MAX_NEGATIVES}, a correction among "
                          f"{CORRECTIONS} and a metric among {METRICS} (with @1..@"
                          f"{MAX_CUTOFF} or none); update the worker to the server's harness "
                          f"version")
    return Alternative(name=name, kind="sampled", seed=seed, n_negatives=n_negatives,
                       correction=correction, metric=metric)


def alternative_config(config: Mapping[str, Any], alternative: Alternative) -> dict[str, Any]:
    """The worker's configuration for ``alternative``: the official one with its fold seed
    (``fold_seed``) or its folds (``global_time``: the cut replaces them), and no bootstrap of
    its own (``n_boot`` 0: the server resamples the per-user values, paired across teams)."""
    out = {**config, "n_boot": 0}
    if alternative.kind == "fold_seed":
        out["fold_params"] = {**config["fold_params"], "seed": alternative.seed}
    return out
