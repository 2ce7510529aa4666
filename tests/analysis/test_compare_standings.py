"""``compare``'s significance of the ranking score and its tiers come from one reading of the
board, so that they cannot contradict each other; its p-values' floor is said and, by
default, kept below alpha after Holm's correction."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

from evaluation.analysis import compare, holm, load_results
from evaluation.analysis._compare import default_replicates, mark_by_standings, p_floor_note
from evaluation.analysis._tiers import run_standings, told_apart
from evaluation.baselines import PopularityModel
from evaluation.errors import PredictionWarning
from evaluation.runner import EvalRSRunner
from evaluation.standings import read_board


class Oracle(PopularityModel):
    """Popularity, with the fold's true target first for a share of the test users."""

    def __init__(self, targets: dict[int, pd.Series], share: float):
        super().__init__()
        self.targets = targets  # train size -> the fold's target per test user
        self.share = share

    def train(self, train_df, **kwargs):
        self.fold_targets = self.targets[len(train_df)]
        return super().train(train_df, **kwargs)

    def predict(self, user_ids):
        frame = super().predict(user_ids)
        users = frame.index.to_numpy()
        told = users[: int(round(self.share * len(users)))]
        values = frame.to_numpy().copy()
        for i, user in enumerate(told):
            target = self.fold_targets[user]
            row = [t for t in values[i] if t != target][: values.shape[1] - 1]
            values[i] = [target, *row]
        return pd.DataFrame(values, index=frame.index, columns=frame.columns)


@pytest.fixture(scope="module")
def four_runs(tiny, tmp_path_factory):
    """Four runs of clearly different quality on the tiny data: popularity, and popularity
    with the target first for 20, 40 and 70 % of the test users (every run misses some
    users: BEING_LESS_WRONG, over the misses, has a value)."""
    results = tmp_path_factory.mktemp("standings") / "results"
    targets = {len(tiny.get_train_set(f)): tiny.get_test_set(f).set_index("user_id")["track_id"]
               for f in range(tiny.num_folds)}
    runner = EvalRSRunner(tiny, results_dir=results, progress=False, verbose=False,
                          reports=False, n_boot=0)
    runs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PredictionWarning)  # popularity recommends heard tracks
        runs.append(runner.evaluate(PopularityModel()))
        for share in (0.2, 0.4, 0.7):
            runs.append(runner.evaluate(Oracle(targets, share), name=f"oracle-{share}"))
    return [load_results(results / r.run_id) for r in runs]


def test_clearly_different_runs_are_significant_and_the_tiers_agree(four_runs):
    cmp = compare(four_runs)
    score = cmp.standings["score"]
    ranked = [r for r in cmp.rows if r["test"] == score]
    assert len(ranked) == 3 and all(r["significant"] for r in ranked)
    # every run in its own tier: the tier table separates what the rows call significant
    tiers = [row["tier"] for row in cmp.standings["rows"]]
    assert sorted(tiers) == [1, 2, 3, 4]
    # the default replicates keep Holm's floor within alpha for the largest family the
    # runs can make, 3 x 11 tests
    assert cmp.n_boot == default_replicates(33, 0.05, 2) == 1319
    assert cmp.permutations == 1000  # 33 / 1001 < 0.05 already
    assert cmp.family_size <= 33 and cmp.family_size * 2 / (cmp.n_boot + 1) <= cmp.alpha
    # so the scores' rows are significant by Holm too, as the standings say
    assert all(r["p_holm"] <= cmp.alpha for r in ranked)


def test_the_p_floor_is_printed_and_flags_a_family_too_large(four_runs):
    cmp = compare(four_runs, n_boot=200, permutations=100)
    console = Console(record=True, width=200)
    console.print(cmp)
    out = " ".join(console.export_text().split())
    assert ("p-values have a floor: at least 2/(n_boot+1) = 0.00995 from the bootstrap (200 "
            "replicates) and 1/(permutations+1) = 0.0099 from the swap test") in out
    m = cmp.family_size
    assert (f"Holm multiplies the smallest p-value by the family's {m} tests, so no adjusted "
            f"p-value lies below {m / 101:.3g}, above alpha = 0.05: no row can be significant "
            f"by Holm. Raise permutations to at least {default_replicates(m, 0.05, 1)} and "
            f"n_boot to at least {default_replicates(m, 0.05, 2)}.") in out
    assert not any(r["significant"] for r in cmp.rows if r["test"] != cmp.standings["score"])
    # the ranking score's verdict is the standings', not Holm's: it still tells them apart
    assert any(r["significant"] for r in cmp.rows if r["test"] == cmp.standings["score"])
    assert f"for {cmp.standings['score']}, * = told apart by the standings" in out
    assert cmp.to_dict()["p_floor"] == cmp.p_floor


def test_the_floor_note_says_when_only_the_bootstrap_rows_are_held_back():
    note = p_floor_note(1000, 1000, 33, 0.05)
    assert ("the bootstrap's floor times the family is 0.0659 > alpha = 0.05: a row tested "
            "by the bootstrap (the MRED tests, the scores) is significant by Holm only behind "
            "enough smaller p-values. Raise n_boot to at least 1319.") in note
    assert p_floor_note(1319, 1000, 33, 0.05).endswith("no adjusted p-value lies below 0.033.")


@pytest.mark.parametrize("family_size", [1, 11, 22, 33, 44, 110])
@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.1])
def test_the_default_replicates_are_the_least_that_let_holm_reach_alpha(family_size, alpha):
    for numerator in (1, 2):
        b = default_replicates(family_size, alpha, numerator)
        assert b >= 1000
        # the smallest p-value b replicates resolve, times the family: within alpha
        assert holm(np.full(family_size, numerator / (b + 1)))[0] <= alpha
        if b > 1000:  # and one replicate fewer would not do
            assert family_size * numerator / b > alpha


def _random_standings(rng: np.random.Generator, n: int):
    runs = [SimpleNamespace(run_id=f"run-{i}", name=f"run-{i}", params={}) for i in range(n)]
    n_boot = int(rng.integers(50, 300))
    point = rng.normal(0, 1, n) * rng.choice([0.01, 0.1, 1.0])
    spread = rng.uniform(0.05, 1.0, n)
    common = rng.normal(0, 1, n_boot) * rng.uniform(0, 1)  # paired: a shared component
    reps = point[:, None] + spread[:, None] * rng.normal(0, 1, (n, n_boot)) * 0.3 + common
    score = "phase2_score"
    min_difference = float(rng.choice([0.0, 0.0, 0.05]))
    standings = run_standings(runs, {score: reps}, {score: point}, level=0.95,
                              min_difference=min_difference)
    # the relation is the board's own: read_board on the runs in board order
    order = [int(row["run_id"].split("-")[1]) for row in standings["rows"]]
    board = read_board(point[order], reps[order], level=0.95, min_difference=min_difference)
    for a, i in enumerate(order):
        for b, j in enumerate(order):
            if a != b:
                assert told_apart(standings, f"run-{i}", f"run-{j}") == \
                    bool(board.beats[a, b] or board.beats[b, a])
    return runs, standings


@pytest.mark.parametrize("case", range(40))
def test_significance_and_tiers_cannot_contradict(case):
    rng = np.random.default_rng(case)
    runs, standings = _random_standings(rng, int(rng.integers(3, 8)))
    tier = {row["run_id"]: row["tier"] for row in standings["rows"]}
    board_order = [row["run_id"] for row in standings["rows"]]
    heads = {}
    for run_id in board_order:
        heads.setdefault(tier[run_id], run_id)
    for base in runs:
        rows = [{"run_id": r.run_id, "test": t, "significant": bool(rng.integers(2))}
                for r in runs if r is not base for t in ("HIT_RATE", "phase2_score")]
        before = [dict(r) for r in rows]
        mark_by_standings(rows, standings, base.run_id)
        for row, old in zip(rows, before):
            if row["test"] != "phase2_score":
                assert row == old  # the other tests keep Holm's verdict
                continue
            other = row["run_id"]
            assert row["significant"] == told_apart(standings, other, base.run_id)
            if base.run_id == heads[tier[base.run_id]]:
                # the baseline heads its tier: its tier-mates are not told apart from it,
                # and the head of the next tier is
                if tier[other] == tier[base.run_id]:
                    assert not row["significant"]
                if other == heads.get(tier[base.run_id] + 1):
                    assert row["significant"]
            if other == heads[tier[other]] and tier[base.run_id] == tier[other] - 1 \
                    and base.run_id == heads[tier[base.run_id]]:
                assert row["significant"]
