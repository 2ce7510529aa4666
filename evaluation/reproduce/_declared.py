"""The alternative protocols a competition file declares, as one reproduction runs them
(``reproduce CHECKOUT --competition FILE``), and each alternative's score as it prints it.

A worker receives the protocols with its claim, from the server that loaded the competition
file. A single reproduction reads them from the file itself: ``[[robustness.protocols]]``,
each turned into the plain JSON of a claim (a TOML date-time as its ISO text, the board's
``private`` flag left out: it decides who sees a result, not how the model runs) and checked
as a worker checks a claim's (``read_alternatives``). The harness alone reads them: the
server's extra is not needed on the machine that reproduces.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np

from evaluation.challenge import (
    LEADERBOARD_TESTS,
    References,
    decode_metric_values,
    decode_user_values,
    metric_score,
    phase2_score,
)
from evaluation.contract import FOLD_PARAMS_KEY, REFERENCES_KEY, read_competition_toml
from evaluation.errors import ConfigError, EvalRSError
from evaluation.reproduce._alternatives import KINDS, MAX_ALTERNATIVES, read_alternatives

#: The key of a protocol that only the board reads (who sees its results, and when).
_BOARD_ONLY = ("private",)


def declared_protocols(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The ``[[robustness.protocols]]`` of the competition file ``path``, as a claim's
    ``robustness`` list.

    Raises
    ------
    ConfigError
        Naming the file and the protocol: when the file cannot be read, declares no
        protocols, or declares one a reproduction cannot run (no name, an unknown kind, a
        missing or malformed parameter, a cut without a time zone, the official fold seed,
        a name twice, more than ``MAX_ALTERNATIVES``).
    """
    where = f"--competition {os.fspath(path)}"
    data = read_competition_toml(path)
    table = data.get("robustness")
    entries = table.get("protocols") if isinstance(table, Mapping) else None
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{where}: declares no [[robustness.protocols]], so there is no "
                          f"alternative protocol to run; add one (e.g. name = \"seed-7\", "
                          f"kind = \"fold_seed\", seed = 7) or leave --competition out.")
    if len(entries) > MAX_ALTERNATIVES:
        raise ConfigError(f"{where}: declares {len(entries)} robustness protocols, more than "
                          f"the {MAX_ALTERNATIVES} a reproduction runs; remove some.")
    official = (data.get("dataset") or {}).get(FOLD_PARAMS_KEY, {}).get("seed") \
        if isinstance(data.get("dataset"), Mapping) else None
    protocols: list[dict[str, Any]] = []
    for i, entry in enumerate(entries):
        key = f"{where}: robustness.protocols[{i}]"
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{key} must be a table; write it as [[robustness.protocols]] "
                              f"with name, kind and its parameter under it.")
        if not isinstance(entry.get("name"), str) or entry.get("kind") not in KINDS:
            raise ConfigError(f"{key} needs a name and a kind among {', '.join(KINDS)}; got "
                              f"name {entry.get('name')!r}, kind {entry.get('kind')!r}.")
        protocol = {name: _plain(key, name, value) for name, value in entry.items()
                    if name not in _BOARD_ONLY}
        try:
            read_alternatives([protocol])
        except ConfigError as exc:
            raise ConfigError(f"{key}: {str(exc).split(': ', 1)[-1]} (the competition "
                              f"file's [[robustness.protocols]]; `serve` checks the same "
                              f"file in full).") from None
        if protocol["kind"] == "fold_seed" and official is not None \
                and protocol.get("seed") == official:
            raise ConfigError(f"{key}: seed {official} is the official fold seed "
                              f"(dataset.fold_params.seed): this protocol is the official "
                              f"one again; give another seed.")
        if any(p["name"] == protocol["name"] for p in protocols):
            raise ConfigError(f"{key}: the name {protocol['name']!r} is another protocol's "
                              f"too; give each alternative its own name.")
        protocols.append(protocol)
    return protocols


def _plain(key: str, name: str, value: Any) -> Any:
    """A protocol's TOML value as a claim carries it: a date-time as its ISO UTC text."""
    if not isinstance(value, datetime):
        return value
    if value.tzinfo is None:
        raise ConfigError(f"{key}.{name} {value.isoformat()} has no time zone; write e.g. "
                          f"{name} = 2021-06-01T00:00:00Z (Z = UTC).")
    return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def alternative_score(result: Mapping[str, Any], results: Mapping[str, Any], *,
                      kind: str = "fold_seed") -> float | None:
    """An alternative's score as the board computes a team's point score under a protocol:
    the phase-2 score of its folds' mean leaderboard tests, against the references the
    upload was scored with (``results``: the uploaded results); for a ``sampled`` protocol
    (``kind``), the fold mean of its one metric's per-user means.

    None for a failed alternative, or when the upload names no references or the values
    cannot be scored.
    """
    blob = result.get("user_values")
    if kind == "sampled":
        try:
            score = metric_score(decode_metric_values(blob, None).folds) if blob else np.nan
        except EvalRSError:
            return None
        return float(score) if np.isfinite(score) else None
    refs = results.get(REFERENCES_KEY)
    values = refs.get("values") if isinstance(refs, Mapping) else None
    if not blob or not isinstance(values, Mapping):
        return None
    try:
        references = References.from_dict(values)
        folds = decode_user_values(blob, None, k=int(results.get("k", 100)))
        return float(phase2_score(_mean_tests([f.scores.tests() for f in folds]), references))
    except (EvalRSError, KeyError, ValueError):
        return None


def _mean_tests(per_fold: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Each leaderboard test's mean over the folds (of each fold's point value)."""
    return {t: float(np.mean([p[t][0] for p in per_fold])) for t in LEADERBOARD_TESTS}
