"""Draw the organizers' guide figure: a simulated board read with its uncertainty.

``python images/make_board_figure.py`` writes ``images/board_tiers.png``. Twelve synthetic
teams, some equally good, are scored on the same simulated test users by the leaderboard's own
code (``evaluation.challenge.team_replicates`` on ``paired_resamples``, then
``evaluation.standings.read_board``), with and without a minimum practical difference; the
figure shows each team's score in its tier and the places it may really hold.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run from a clone, uninstalled

from evaluation.challenge import (  # noqa: E402  (after the path above)
    LEADERBOARD_TESTS,
    MRED_TESTS,
    References,
    UserScores,
    paired_resamples,
    team_replicates,
)
from evaluation.standings import BoardReading, read_board  # noqa: E402

OUT = HERE / "board_tiers.png"
#: The simulated teams' hit probabilities: equal pairs, small steps and clear gaps.
SKILLS = (0.36, 0.355, 0.35, 0.33, 0.33, 0.32, 0.28, 0.275, 0.27, 0.22, 0.2, 0.2)
FOLD_USERS = (3000, 3000)
N_BOOT = 500
SEED = 0
MIN_DIFFERENCE = 0.01
TIER_COLOURS = ("#dbe8f6", "#f6e7d8", "#e0f0dc", "#efdff0", "#f2f0d4", "#dcefef")


@dataclass(frozen=True)
class SimulatedBoard:
    """The simulated board: names, scores and its reading with and without the minimum
    practical difference."""

    teams: tuple[str, ...]
    score: np.ndarray
    plain: BoardReading
    practical: BoardReading


def references() -> References:
    """Scoring references of the simulation: each test normalised from a baseline to a best."""
    baseline = {t: 0.0 for t in LEADERBOARD_TESTS} | {t: -0.3 for t in MRED_TESTS}
    best = {t: 0.5 for t in LEADERBOARD_TESTS} | {t: 0.0 for t in MRED_TESTS}
    return References(baseline=baseline, best=best, hit_rate_threshold=0.0)


def team(skill: float, seed: int) -> list[UserScores]:
    """A team's per-user values: its hits drawn with ``skill``; the users' slice groups, and
    their BLW and LD spread, the same for every team."""
    folds = []
    for f, n in enumerate(FOLD_USERS):
        users = np.random.default_rng(1000 + f)
        slices = {t: users.integers(-1, 4, n).astype(np.int32) for t in MRED_TESTS}
        base_ld = users.normal(0.1, 0.05, n)
        rng = np.random.default_rng([seed, f])
        hit = rng.random(n) < skill
        rr = np.where(hit, 1.0 / rng.integers(1, 20, n), 0.0)
        blw = np.where(hit, np.nan, rng.uniform(0.0, 0.6, n))
        folds.append(UserScores(hit=hit, rr=rr, slices=slices, blw=blw,
                                ld=base_ld + 0.02 * skill))
    return folds


def simulate() -> SimulatedBoard:
    """Score the simulated teams on shared resamples and read the board in its order."""
    refs = references()
    resamples = paired_resamples(SEED, N_BOOT, FOLD_USERS)
    reps = [team_replicates(team(s, i), resamples, refs) for i, s in enumerate(SKILLS)]
    point = np.array([r.score for r in reps])
    order = np.argsort(-point, kind="stable")
    names = tuple(f"Team {chr(ord('A') + i)}" for i in order)
    args = (point[order], np.array([reps[i].replicates for i in order]),
            np.array([reps[i].group_scores for i in order]),
            np.array([[reps[i].tests[t] for t in LEADERBOARD_TESTS] for i in order]))
    return SimulatedBoard(teams=names, score=point[order], plain=read_board(*args),
                          practical=read_board(*args, min_difference=MIN_DIFFERENCE))


def figure(board: SimulatedBoard):
    """The figure: per reading, the scores in their tier bands and the rank intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.family": "DejaVu Sans", "font.size": 9,
                         "svg.hashsalt": "evalrs"})
    fig, axes = plt.subplots(1, 3, figsize=(11, 4.2), dpi=100,
                             gridspec_kw={"width_ratios": [1.2, 1.2, 1]}, sharey=True)
    n = len(board.teams)
    y = np.arange(n)
    titles = ("Tiers (min. difference 0)", f"Tiers (min. difference {MIN_DIFFERENCE:g})")
    for ax, reading, title in zip(axes[:2], (board.plain, board.practical), titles):
        _tier_bands(ax, reading.tier)
        ax.plot(board.score, y, "o", color="#1f5fa8", markersize=5)
        for i, tier in enumerate(reading.tier):
            ax.annotate(f"tier {tier}", (board.score[i], i), xytext=(6, -3),
                        textcoords="offset points", fontsize=7, color="#444")
        ax.set_title(title)
        ax.set_xlabel("score (leaderboard score)")
        ax.grid(axis="x", color="#ddd", linewidth=0.6)
    ranks = board.plain.rank_interval
    ax = axes[2]
    ax.hlines(y, ranks[:, 0], ranks[:, 1], color="#b34d00", linewidth=4, alpha=0.6)
    ax.plot(y + 1, y, "|", color="black", markersize=9)
    ax.set_xlim(0.5, n + 0.5)
    ax.set_xticks(range(1, n + 1))
    ax.set_title("Rank intervals (places each may hold)")
    ax.set_xlabel("place (| = the place on the board)")
    ax.grid(axis="x", color="#eee", linewidth=0.6)
    axes[0].set_yticks(y, board.teams)
    axes[0].invert_yaxis()
    fig.suptitle(f"A simulated board of {n} teams, {N_BOOT} paired replicates, 95 % joint "
                 f"level", fontsize=10)
    fig.tight_layout()
    return fig


def _tier_bands(ax, tier: np.ndarray) -> None:
    """A shaded band behind each tier's rows."""
    for t in np.unique(tier):
        rows = np.flatnonzero(tier == t)
        ax.axhspan(rows[0] - 0.45, rows[-1] + 0.45, color=TIER_COLOURS[(t - 1) %
                                                                   len(TIER_COLOURS)],
                   zorder=0)


def render(board: SimulatedBoard) -> np.ndarray:
    """The figure's pixels (RGBA), as the PNG holds them."""
    fig = figure(board)
    fig.canvas.draw()
    pixels = np.asarray(fig.canvas.buffer_rgba()).copy()
    import matplotlib.pyplot as plt

    plt.close(fig)
    return pixels


def main() -> None:
    fig = figure(simulate())
    fig.savefig(OUT, metadata={"Software": None})
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
