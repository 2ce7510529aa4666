"""A board's reading as bytes, with its teams' replicates: what a restarted server shows first.

The payload is an uncompressed NumPy archive (``numpy.savez``, read without pickle): the
reading's arrays, the compared teams' replicates stacked, and one JSON document with the rest
(teams, rows' standings, settings, each team's inputs and the key its statistics are kept
under). ``FORMAT`` names the layout: a payload of another layout is not read (the board is
then computed afresh).
"""

from __future__ import annotations

import io
import json
from collections.abc import Hashable, Mapping
from dataclasses import asdict
from typing import Any

import numpy as np

from evaluation.challenge import TeamReplicates
from evaluation.server.core import BoardStandings, RowCosts, RowStanding
from evaluation.server.standings._results import Reading, TeamStats
from evaluation.standings import BoardReading

#: The layout of the payload this module writes and reads.
FORMAT = "evalrs-standings-snapshot/1"
#: The arrays of a ``BoardReading``, in the archive under these names.
_READING_ARRAYS = ("tier", "rank_interval", "win_probability", "beats", "pareto",
                   "first_place_share", "first_place", "borda_points", "borda_rank")


class SnapshotUnreadable(ValueError):
    """A payload that is not one this module wrote (another layout, truncated, edited)."""


def encode_snapshot(reading: Reading, inputs: Mapping[str, tuple],
                    teams: Mapping[tuple, TeamStats]) -> bytes:
    """The payload of ``reading``, the inputs it was computed from (team -> submission,
    values version, score) and the statistics of its teams (by the key they are kept under).

    Raises
    ------
    TypeError
        When a key or an input is not made of JSON values (str, int, float, bool, None and
        tuples of them): such a reading is not kept.
    """
    with_reps = [(key, stats) for key, stats in teams.items() if stats.replicates is not None]
    arrays: dict[str, np.ndarray] = {f"reading_{name}": np.asarray(getattr(reading.reading, name))
                                     for name in _READING_ARRAYS}
    arrays["group_scores"] = np.asarray(reading.group_scores, dtype=np.float64)
    reps = [s.replicates for _, s in with_reps if s.replicates is not None]
    if reps:
        arrays["replicates"] = np.stack([r.replicates for r in reps])
        arrays["group_replicates"] = np.stack([r.group_replicates for r in reps])
        arrays["team_group_scores"] = np.stack([r.group_scores for r in reps])
    meta = {
        "format": FORMAT,
        "teams": list(reading.teams), "groups": list(reading.groups),
        "level": reading.reading.level, "min_difference": reading.reading.min_difference,
        "standings": {k: v for k, v in asdict(reading.standings).items()
                      if k not in ("as_of", "progress")},
        "rows": {team: asdict(row) for team, row in reading.rows.items()},
        "team_keys": {team: _plain(key) for team, key in reading.team_keys.items()},
        "inputs": {team: _plain(made) for team, made in inputs.items()},
        "stats": [_stats_meta(key, stats, i if stats.replicates is not None else None)
                  for i, (key, stats) in enumerate(with_reps)]
        + [_stats_meta(key, stats, None) for key, stats in teams.items()
           if stats.replicates is None],
    }
    arrays["meta"] = np.frombuffer(json.dumps(meta, allow_nan=True).encode("utf-8"),
                                   dtype=np.uint8)
    out = io.BytesIO()
    # object arrays never come here (each array is numbers, booleans or bytes): no pickle
    named: dict[str, Any] = dict(arrays)
    np.savez(out, **named)
    return out.getvalue()


def decode_snapshot(payload: bytes
                    ) -> tuple[Reading, dict[str, tuple], dict[tuple, TeamStats]]:
    """The reading, inputs and teams' statistics of a payload of ``encode_snapshot``.

    Raises
    ------
    SnapshotUnreadable
        When the payload is not one of this layout.
    """
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
        meta = json.loads(bytes(arrays.pop("meta")).decode("utf-8"))
        if meta.get("format") != FORMAT:
            raise SnapshotUnreadable(f"a payload of layout {meta.get('format')!r}, not "
                                     f"{FORMAT!r}")
        return _decoded(meta, arrays)
    except SnapshotUnreadable:
        raise
    except (ValueError, KeyError, TypeError, OSError, IndexError) as exc:
        raise SnapshotUnreadable(f"not a standings snapshot: {type(exc).__name__}: "
                                 f"{exc}") from None


def _decoded(meta: dict, arrays: dict[str, np.ndarray]
             ) -> tuple[Reading, dict[str, tuple], dict[tuple, TeamStats]]:
    board = BoardReading(**{name: arrays[f"reading_{name}"] for name in _READING_ARRAYS},
                         level=float(meta["level"]), min_difference=float(meta["min_difference"]))
    info = dict(meta["standings"])
    info["groups"] = tuple(info["groups"])
    reading = Reading(teams=tuple(meta["teams"]), reading=board,
                      group_scores=arrays["group_scores"], groups=tuple(meta["groups"]),
                      standings=BoardStandings(**info),
                      rows={team: _row(row) for team, row in meta["rows"].items()},
                      team_keys={team: _tuples(key) for team, key in meta["team_keys"].items()})
    inputs = {team: _tuples(made) for team, made in meta["inputs"].items()}
    teams = {_tuples(s["key"]): _stats(s, arrays) for s in meta["stats"]}
    return reading, inputs, teams


def _stats_meta(key: tuple, stats: TeamStats, index: int | None) -> dict[str, Any]:
    reps = stats.replicates
    return {"key": _plain(key), "index": index, "reason": stats.reason,
            "trusted": stats.trusted, "user_hashes": list(stats.user_hashes),
            "fold_sizes": list(stats.fold_sizes),
            "costs": None if stats.costs is None else asdict(stats.costs),
            "score": None if reps is None else reps.score,
            "groups": None if reps is None else list(reps.groups),
            "tests": None if reps is None else dict(reps.tests)}


def _stats(meta: dict, arrays: Mapping[str, np.ndarray]) -> TeamStats:
    index = meta["index"]
    reps = None
    if index is not None:
        reps = TeamReplicates(score=float(meta["score"]), replicates=arrays["replicates"][index],
                              groups=tuple(meta["groups"]),
                              group_scores=arrays["team_group_scores"][index],
                              group_replicates=arrays["group_replicates"][index],
                              tests={k: float(v) for k, v in meta["tests"].items()})
    return TeamStats(replicates=reps, reason=meta["reason"], trusted=bool(meta["trusted"]),
                     user_hashes=tuple(meta["user_hashes"]),
                     fold_sizes=tuple(int(n) for n in meta["fold_sizes"]),
                     costs=_costs(meta["costs"]))


def _row(data: dict) -> RowStanding:
    data = dict(data)
    if data.get("rank_interval") is not None:
        data["rank_interval"] = tuple(data["rank_interval"])
    data["costs"] = _costs(data.get("costs"))
    return RowStanding(**data)


def _costs(data: dict | None) -> RowCosts | None:
    if data is None:
        return None
    fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v
                              for k, v in data.items()}
    return RowCosts(**fields)


def _plain(value: Hashable) -> Any:
    """A key as JSON values (tuples as lists); TypeError for anything else."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"a standings key holds a {type(value).__name__}: only JSON values are "
                    f"kept")


def _tuples(value: Any) -> Any:
    """A key read back: lists as tuples, as it was made."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value
