"""The compared runs as a board reads them: tiers and rank intervals by the ranking score.

The leaderboard's own reading of a board (``evaluation.standings.read_board``) fed with the
paired bootstrap replicates of each run's score, the runs in board order (best score first,
equal scores by run id), so that a participant sees locally how a board would read their
runs: which cannot be told apart (a tier), and which places each may really hold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from rich import box
from rich.console import JustifyMethod
from rich.table import Table

from evaluation.analysis._results import LoadedRun
from evaluation.standings import read_board


def run_standings(runs: Sequence[LoadedRun], replicates: Mapping[str, np.ndarray],
                  point: Mapping[str, np.ndarray], *, level: float,
                  min_difference: float = 0.0) -> dict | None:
    """The runs' tiers and rank intervals by the leaderboard score (else the phase-1 score).

    Parameters
    ----------
    runs : sequence of LoadedRun
        In the order of the replicates' rows.
    replicates, point : mapping of str to numpy.ndarray
        ``paired_bootstrap``'s output: per test and score, shape ``(n_runs, n_boot)`` and
        ``(n_runs,)``.
    level : float
        Joint coverage of the pairwise intervals (the chance that any two runs are told
        apart wrongly is at most ``1 - level``).
    min_difference : float
        Differences below it are ties however significant.

    Returns
    -------
    dict or None
        ``{"score", "level", "min_difference", "method", "rows"}``, one row per run in board
        order: ``run_id``, ``name``, ``params``, ``place``, ``score``, ``tier``,
        ``rank_interval`` ([best, worst]), ``win_probability`` (run id -> the share of
        replicates in which this run scores above it) and ``beats`` (the run ids it is told
        apart above: the relation the tiers are drawn from); None when the score is not a
        finite number for every run.
    """
    score = "phase2_score" if "phase2_score" in replicates else "phase1_score"
    reps, values = np.asarray(replicates[score]), np.asarray(point[score])
    if not (np.isfinite(reps).all() and np.isfinite(values).all()):
        return None
    ids = [r.run_id for r in runs]
    order = sorted(range(len(runs)), key=lambda i: (-values[i], ids[i]))
    board = read_board(values[order], reps[order], level=level, min_difference=min_difference)
    rows = [{"run_id": ids[i], "name": runs[i].name, "params": runs[i].params, "place": place,
             "score": float(values[i]), "tier": int(board.tier[place - 1]),
             "rank_interval": [int(v) for v in board.rank_interval[place - 1]],
             "win_probability": {ids[j]: float(board.win_probability[place - 1, k])
                                 for k, j in enumerate(order) if j != i},
             "beats": [ids[j] for k, j in enumerate(order) if board.beats[place - 1, k]]}
            for place, i in enumerate(order, start=1)]
    return {"score": score, "level": board.level, "min_difference": board.min_difference,
            "method": f"tiers and rank intervals from simultaneous {board.level:.0%} "
                      f"intervals of every pairwise difference (max-t over the paired "
                      f"bootstrap replicates): the chance that any two runs are told apart "
                      f"wrongly is at most {1 - board.level:.0%}",
            "rows": rows}


def told_apart(board: dict, a: str, b: str) -> bool:
    """Whether the standings tell runs ``a`` and ``b`` apart (either beats the other): the
    relation its tiers and the comparison's verdict on the ranking score both come from."""
    beats = {row["run_id"]: set(row["beats"]) for row in board["rows"]}
    return b in beats.get(a, set()) or a in beats.get(b, set())


def standings_heading(board: dict) -> str:
    """The sentence above the standings: the score, what a tier is, the error controlled."""
    ties = (f"; differences below {board['min_difference']:g} are ties"
            if board["min_difference"] else "")
    return (f"As a board reads them, by {board['score']}: runs in one tier cannot be told "
            f"apart, and Ranks is the range of places each may really hold (at most a "
            f"{1 - board['level']:.0%} chance of any wrong call on the whole board{ties}):")


def standings_table(board: dict, labels: Mapping[str, str]) -> Table:
    """The standings as a rich table: tier, place, rank interval, run, score."""
    table = Table(box=box.SIMPLE_HEAD)
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("Tier", "right"), ("Place", "right"), ("Ranks", "right"), ("Run", "left"),
        ("Score", "right"))
    for name, justify in columns:
        table.add_column(name, justify=justify, no_wrap=name != "Run")
    for row in board["rows"]:
        best, worst = row["rank_interval"]
        table.add_row(str(row["tier"]), str(row["place"]),
                      str(best) if best == worst else f"{best}-{worst}",
                      labels.get(row["run_id"], row["run_id"]), f"{row['score']:.4g}")
    return table
