"""The server's own scores: phase-1 and phase-2 from the per-fold tests, the bootstrap-over-folds
interval (exact enumeration for few folds), and the comparison with the client's claims."""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path

import numpy as np
import pytest

for _module in ("pydantic", "fastapi", "sqlalchemy"):  # the server extra
    pytest.importorskip(_module, reason="the server extra is not installed (pip install "
                                        ".[server])")

from evaluation.challenge import (  # noqa: E402
    GATED_SCORE,
    LEADERBOARD_TESTS,
    MRED_TESTS,
    References,
    aggregate,
    load_references,
    phase2_score,
)
from evaluation.errors import SubmissionRejected  # noqa: E402
from evaluation.server.core import (  # noqa: E402
    EXACT_MAX_FOLDS,
    N_RESAMPLES,
    claimed_differs,
    parse_submission,
    recompute,
)

REPO = Path(__file__).resolve().parents[2]
BASELINES = REPO / "competition" / "baselines"


def unit_references(threshold: float = 0.05) -> References:
    """References under which every test normalises to itself (baseline 0, best 1)."""
    return References(baseline={t: 0.0 for t in LEADERBOARD_TESTS},
                      best={t: 1.0 for t in LEADERBOARD_TESTS}, hit_rate_threshold=threshold)


def fold(hr, mrr, mred, blw, ld) -> dict[str, float]:
    return {"HIT_RATE": hr, "MRR": mrr, **{t: mred for t in MRED_TESTS},
            "BEING_LESS_WRONG": blw, "LATENT_DIVERSITY": ld}


TWO_FOLDS = [fold(0.2, 0.1, -0.1, 0.3, -0.2), fold(0.4, 0.3, -0.3, 0.1, 0.0)]


# --------------------------------------------------------------------------- point scores


def test_two_folds_by_hand():
    scores = recompute(TWO_FOLDS, unit_references())
    # fold means: HR 0.3, MRR 0.2, each MRED -0.2, BLW 0.2, LD -0.1
    assert scores.tests == pytest.approx(fold(0.3, 0.2, -0.2, 0.2, -0.1), abs=1e-15)
    assert scores.num_folds == 2
    # phase 1: (0.3 + 0.2 + 5 * -0.2 + 0.2 - 0.1) / 9
    assert scores.phase1_score == pytest.approx(-0.4 / 9, abs=1e-15)
    # phase 2: (1 * mean(0.3, 0.2) + 1.5 * -0.2 + 1.5 * mean(0.2, -0.1)) / 4 = 0.025 / 4
    assert scores.leaderboard_score == pytest.approx(0.00625, abs=1e-15)
    # the 4 resamples: fold 0 twice -> (0.15 - 0.15 + 0.075) / 4 = 0.01875; fold 1 twice ->
    # (0.35 - 0.45 + 0.075) / 4 = -0.00625; one of each (twice) -> 0.00625. Sorted
    # [-0.00625, 0.00625, 0.00625, 0.01875]; NumPy's linear percentiles sit at positions
    # 0.075 and 2.925.
    low = -0.00625 + 0.075 * (0.00625 - -0.00625)
    high = 0.00625 + 0.925 * (0.01875 - 0.00625)
    assert scores.interval == pytest.approx((low, high), abs=1e-15)


def test_two_folds_by_hand_with_the_gate():
    # a HIT_RATE gate of 0.25: fold 0 alone (HR 0.2) scores GATED_SCORE, the other
    # resamples (HR 0.3 and 0.4) as before: sorted [-100, -0.00625, 0.00625, 0.00625]
    scores = recompute(TWO_FOLDS, unit_references(threshold=0.25))
    assert scores.leaderboard_score == pytest.approx(0.00625, abs=1e-15)
    low = GATED_SCORE + 0.075 * (-0.00625 - GATED_SCORE)
    assert scores.interval == pytest.approx((low, 0.00625), abs=1e-12)
    gated = recompute(TWO_FOLDS, unit_references(threshold=0.5))
    assert gated.leaderboard_score == GATED_SCORE
    assert gated.interval == (GATED_SCORE, GATED_SCORE)


@pytest.mark.parametrize("name", ["popularity", "random"])
def test_a_real_run_scores_as_the_harness_aggregates_it(name):
    raw = json.loads((BASELINES / f"{name}.json").read_text(encoding="utf-8"))
    results = raw["results"]
    references = load_references("synthetic-small")
    scores = recompute(parse_submission(json.dumps(raw).encode()).fold_tests(), references)
    expected = aggregate([f["tests"] for f in results["folds"]], references)
    assert scores.phase1_score == expected["phase1_score"]
    assert scores.leaderboard_score == expected["phase2_score"]
    assert scores.tests == {t: expected["mean"][t] for t in LEADERBOARD_TESTS}
    # ... and as the run itself recorded them
    assert scores.phase1_score == results["aggregate"]["phase1_score"]
    assert scores.leaderboard_score == results["leaderboard_score"] == raw["leaderboard_score"]
    assert scores.num_folds == results["dataset"]["num_folds"] == 4


# --------------------------------------------------------------------------- the interval


def brute_force_interval(folds, references, resamples) -> tuple[float, float]:
    """2.5/97.5 percentiles of the phase-2 score of the fold means of each resample."""
    values = [phase2_score({t: float(np.mean([folds[i][t] for i in sample]))
                            for t in LEADERBOARD_TESTS}, references)
              for sample in resamples]
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def random_folds(rng, n: int) -> list[dict[str, float]]:
    return [fold(*rng.uniform([0.0, 0.0, -0.5, -0.2, -0.6], [0.2, 0.05, 0.0, 0.3, 0.1]))
            for _ in range(n)]


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_the_exact_bootstrap_enumerates_every_resample(rng, n):
    references = load_references("synthetic-small")
    folds = random_folds(rng, n)
    # some folds below the gate, so that some resamples are gated and others not
    folds[0]["HIT_RATE"] = 0.5 * references.hit_rate_threshold
    scores = recompute(folds, references)
    expected = brute_force_interval(folds, references, itertools.product(range(n), repeat=n))
    assert scores.interval == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert scores.interval[0] <= scores.interval[1]


def test_the_interval_does_not_depend_on_the_order_of_the_folds(rng):
    references = load_references("synthetic-small")
    folds = random_folds(rng, 3)
    assert recompute(folds, references).interval == pytest.approx(
        recompute(folds[::-1], references).interval, rel=1e-12)


@pytest.mark.parametrize("n", [1, 3, 4, 7])
def test_equal_folds_give_an_interval_at_the_point_score(rng, n):
    references = load_references("synthetic-small")
    one = random_folds(rng, 1)[0]
    scores = recompute([dict(one) for _ in range(n)], references)
    low, high = scores.interval
    assert low <= scores.leaderboard_score <= high
    assert low == high == scores.leaderboard_score


def test_many_folds_use_seeded_resamples(rng):
    n = EXACT_MAX_FOLDS + 1
    references = load_references("synthetic-small")
    folds = random_folds(rng, n)
    scores = recompute(folds, references)
    draws = np.random.default_rng(0).integers(0, n, size=(N_RESAMPLES, n))
    assert scores.interval == pytest.approx(
        brute_force_interval(folds, references, draws), rel=1e-12, abs=1e-12)
    assert recompute(folds, references) == scores  # no clock, no global state


def test_unscorable_folds_are_refused():
    references = unit_references()
    with pytest.raises(SubmissionRejected, match="no folds"):
        recompute([], references)
    incomplete = [{t: 0.1 for t in LEADERBOARD_TESTS if t != "MRR"}]
    with pytest.raises(SubmissionRejected, match=r"fold 0 lacks the leaderboard test\(s\) "
                                                 r"\['MRR'\]") as info:
        recompute(incomplete, references)
    assert info.value.status == 422
    for bad in (float("nan"), float("inf"), "0.1", True, None):
        folds = [fold(0.2, 0.1, -0.1, 0.3, -0.2), fold(0.2, bad, -0.1, 0.3, -0.2)]
        with pytest.raises(SubmissionRejected, match="fold 1: the test value"):
            recompute(folds, references)


# --------------------------------------------------------------------------- the claims


@pytest.fixture(scope="module")
def baseline() -> dict:
    return json.loads((BASELINES / "popularity.json").read_text(encoding="utf-8"))


def scored(data: dict, references: References | None = None):
    sub = parse_submission(json.dumps(data).encode())
    return sub, recompute(sub.fold_tests(), references or load_references("synthetic-small"))


def test_true_claims_do_not_differ(baseline):
    assert not claimed_differs(*scored(baseline))


@pytest.mark.parametrize("where", [
    ("leaderboard_score",), ("results", "leaderboard_score"), ("results", "phase2_score"),
    ("results", "phase1_score"), ("results", "aggregate", "phase1_score"),
    ("results", "aggregate", "phase2_score"),
])
def test_an_edited_claim_differs(baseline, where):
    data = copy.deepcopy(baseline)
    parent = data
    for key in where[:-1]:
        parent = parent[key]
    value = parent[where[-1]]
    parent[where[-1]] = value * (1 + 1e-12)  # within the tolerance
    assert not claimed_differs(*scored(data))
    parent[where[-1]] = value * (1 + 1e-6)
    assert claimed_differs(*scored(data))


def test_no_claim_is_no_difference(baseline):
    data = copy.deepcopy(baseline)
    data["leaderboard_score"] = None
    for key in ("leaderboard_score", "phase2_score", "phase1_score"):
        data["results"][key] = None
    data["results"]["aggregate"] = None
    assert not claimed_differs(*scored(data))


def test_claims_made_with_other_references_are_compared_on_phase1_only(baseline):
    data = copy.deepcopy(baseline)
    data["leaderboard_score"] += 1.0  # a phase-2 claim the server's references cannot check
    server_refs = unit_references()  # not the references the client scored with
    sub, scores = scored(data, server_refs)
    assert scores.leaderboard_score != pytest.approx(baseline["leaderboard_score"])
    assert not claimed_differs(sub, scores)
    data["results"]["phase1_score"] += 0.5  # phase 1 needs no references: compared
    assert claimed_differs(*scored(data, server_refs))
    # with the client's references the same phase-2 claim is compared
    data = copy.deepcopy(baseline)
    data["leaderboard_score"] += 1.0
    assert claimed_differs(*scored(data))
