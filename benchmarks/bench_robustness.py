"""Calibration of the robustness certificate by simulation, and its time at 200 teams.

Simulated boards whose truth is known, at the level the certificate reads: per-user values
of every team under every protocol, resampled per protocol by the board's own paired
resampling (``paired_resamples``: the same resampled users for every team, within each
protocol), scored as means over users. Each protocol draws its own test users (a temporal
split's users are not leave-one-out's), so the protocols' noise is independent; each
protocol's resampling is drawn once from its seed, as a competition's board draws its own once
from ``[board] seed``.

Models:

* protocol-insensitive teams: the same true quality under every protocol (a temporal split,
  leave-one-out with another fold seed, sampled negatives: the last on another scale and
  noisier, the same order);
* a leaker: it exploits future interactions, which only leave-one-out leaves in the training
  data; it leads under leave-one-out (any seed, and sampled negatives drawn from the same
  split) and falls to the bottom under the global temporal split;
* a milder sensitive team, which drops a few places under the temporal split.

Scenarios (``--boards`` boards each, one seed per board):

* ``separated``: insensitive teams only, each told apart from the next (about 5.6 standard
  errors apart);
* ``close``: insensitive teams only, about one standard error apart (the board's tiers hold
  several teams);
* ``sensitive``: the separated teams plus the leaker and the milder one.

The calibration (``--check`` exits 1 when a line fails):

* a separated insensitive board is not flagged: every alternative's τ_b interval covers 1
  in at least 95 % of the boards, every told-apart pair keeps its order under every protocol
  in at least 95 %, and no team loses a tier in at least 95 %;
* a close insensitive board is not flagged either: its told-apart pairs keep their order in
  at least 95 % of the boards. Its τ_b interval does not cover 1, rightly: teams the board
  cannot tell apart are ordered by noise in each protocol, so τ_b between two protocols'
  replicates sits below 1 whatever the protocols; the figures show by how much. "Covering 1"
  is therefore the criterion of boards whose teams are told apart, and the pairs kept that of
  every board;
* a sensitive board is flagged under the temporal split: τ_b's interval lies wholly below
  0.95 and the order of some told-apart pair changes, in at least 95 % of the boards; the
  leaker loses tiers and the first place changes (probability of the same first place at
  most 5 %) in at least 95 %; and no alternative but the temporal split is flagged.

Then the certificate's time for 200 teams, 1000 replicates and three alternatives (the
whole certificate recomputed, as after one new reproduction): median of 3 runs, wall and CPU;
``--check`` holds it to 2 s of CPU time (``--smoke`` at 40 teams and 200 replicates, untimed
by the check). Usage::

    python benchmarks/bench_robustness.py              # 200 boards per scenario
    python benchmarks/bench_robustness.py --check      # and exit 1 when the calibration fails
    python benchmarks/bench_robustness.py --smoke      # 30 boards, checked (the test suite)
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone, uninstalled

from evaluation.challenge import paired_resamples
from evaluation.standings import (
    ProtocolReplicates,
    RobustnessCertificate,
    read_board,
    robustness_certificate,
)

#: The official protocol and the declared alternatives.
OFFICIAL = "leave-one-out"
ALTERNATIVES = ("leave-one-out, other seed", "temporal split", "sampled negatives")
SENSITIVE_TO = "temporal split"
#: Insensitive teams per board, and the gap between neighbours (per-user noise sd is 1).
N_TEAMS = 10
SEPARATED_GAP = 0.25
CLOSE_GAP = 0.05
#: Sd of the users' own effect (shared by all teams: what makes the replicates paired).
USER_SD = 0.5
#: The share of boards a criterion must hold in.
SHARE = 0.95
#: The CPU seconds the certificate may take at 200 teams, 1000 replicates, 3 alternatives.
TIME_BUDGET_S = 2.0


@dataclass(frozen=True)
class Sizes:
    boards: int
    users: int
    n_boot: int
    timing_teams: int
    timing_boot: int


FULL = Sizes(boards=200, users=1000, n_boot=500, timing_teams=200, timing_boot=1000)
SMOKE = Sizes(boards=30, users=1000, n_boot=300, timing_teams=40, timing_boot=200)


def qualities(scenario: str) -> dict[str, dict[str, float]]:
    """Each team's true mean per-user value under each protocol."""
    gap = CLOSE_GAP if scenario == "close" else SEPARATED_GAP
    teams = {f"team {i:02d}": {p: -gap * i for p in (OFFICIAL, *ALTERNATIVES)}
             for i in range(N_TEAMS)}
    if scenario == "sensitive":
        # leaves future interactions in training only under leave-one-out: first there, last
        # under the temporal split
        teams["leaker"] = {p: gap for p in (OFFICIAL, *ALTERNATIVES)}
        teams["leaker"][SENSITIVE_TO] = -gap * N_TEAMS
        # a milder dependence on the protocol: three places down under the temporal split
        teams["mild"] = {p: -gap * 2.5 for p in (OFFICIAL, *ALTERNATIVES)}
        teams["mild"][SENSITIVE_TO] = -gap * 5.5
    return teams


@functools.lru_cache(maxsize=8)
def resample_counts(seed: int, n_boot: int, users: int) -> np.ndarray:
    """The board's paired resampling of ``users`` users (counts per replicate and user).

    A competition resamples every board from its one ``[board] seed``: each protocol's
    resampling is drawn once and serves every simulated board (whose values are drawn anew).
    """
    return paired_resamples(seed, n_boot, (users,)).counts[0].astype(np.float64)


def protocol_scores(truth: Mapping[str, float], teams: list[str], protocol: str, users: int,
                    n_boot: int, rng: np.random.Generator, seed: int) -> ProtocolReplicates:
    """One protocol's per-user values of every team on its own users, resampled by the
    board's paired resampling, as point scores and replicates."""
    scale, noise = (0.6, 1.5) if protocol == "sampled negatives" else (1.0, 1.0)
    mean = np.array([truth[t] for t in teams])
    values = scale * (mean[None, :] + rng.normal(0.0, USER_SD, (users, 1))) \
        + rng.normal(0.0, noise, (users, len(teams)))
    counts = resample_counts(seed, n_boot, users)
    return ProtocolReplicates(teams=tuple(teams), scores=values.mean(axis=0),
                              replicates=counts @ values / users)


def simulate_board(scenario: str, board: int, sizes: Sizes) -> RobustnessCertificate:
    """One simulated board's certificate."""
    truth = qualities(scenario)
    teams = list(truth)
    rng = np.random.default_rng([board, len(scenario)])
    protocols = {}
    for k, name in enumerate((OFFICIAL, *ALTERNATIVES)):
        protocols[name] = protocol_scores({t: truth[t][name] for t in teams}, teams, name,
                                          sizes.users, sizes.n_boot, rng, seed=k)
    official = protocols.pop(OFFICIAL)
    order = np.argsort(-official.scores, kind="stable")
    reading = read_board(official.scores[order], official.replicates[:, order].T)
    tier = np.empty(len(teams), dtype=np.int64)
    tier[order] = reading.tier
    return robustness_certificate(official, protocols, tier)


def covers_one(low: float, high: float) -> bool:
    """The interval holds 1 (to the rounding of τ_b's division)."""
    return low <= 1.0 + 1e-12 and high >= 1.0 - 1e-12


def figures(scenario: str, certs: list[RobustnessCertificate]) -> dict:
    """The scenario's figures over its boards."""
    out: dict = {"boards": len(certs), "alternatives": {}}
    for k, name in enumerate(ALTERNATIVES):
        alts = [c.alternatives[k] for c in certs]
        out["alternatives"][name] = {
            "tau_median": float(np.median([a.tau for a in alts])),
            "tau_interval_median": [float(np.median([a.tau_interval[i] for a in alts]))
                                    for i in (0, 1)],
            "interval_covers_1": float(np.mean([covers_one(*a.tau_interval) for a in alts])),
            "interval_below_0_95": float(np.mean([a.tau_interval[1] < 0.95 for a in alts])),
            "point_order_kept": float(np.mean([a.pairs_kept == 1.0 for a in alts])),
            "no_pair_reversed": float(np.mean([a.pairs_reversed == 0.0 for a in alts])),
            "first_place_probability_median": float(np.median(
                [a.first_place_probability for a in alts])),
        }
    out["all_intervals_cover_1"] = float(np.mean(
        [all(covers_one(*a.tau_interval) for a in c.alternatives) for c in certs]))
    out["point_order_kept"] = float(np.mean([c.stable_pair_share == 1.0 for c in certs]))
    out["no_pair_reversed"] = float(np.mean([c.reversed_pair_share == 0.0 for c in certs]))
    out["no_team_fragile"] = float(np.mean(
        [not any(f.fragile for f in c.fragility) for c in certs]))
    out["tiers_median"] = float(np.median([max(f.tier for f in c.fragility) for c in certs]))
    if scenario == "sensitive":
        k = ALTERNATIVES.index(SENSITIVE_TO)
        out["flagged_under_temporal"] = float(np.mean(
            [c.alternatives[k].tau_interval[1] < 0.95 and c.alternatives[k].pairs_reversed > 0
             for c in certs]))
        out["leaker_fragile"] = float(np.mean([_team(c, "leaker").fragile for c in certs]))
        out["mild_fragile"] = float(np.mean([_team(c, "mild").fragile for c in certs]))
        out["insensitive_teams_not_fragile"] = float(np.mean(
            [not any(f.fragile for f in c.fragility if f.team.startswith("team"))
             for c in certs]))
        out["first_place_changes"] = float(np.mean(
            [c.alternatives[k].first_place_probability <= 0.05 for c in certs]))
        out["others_not_flagged"] = float(np.mean(
            [all(covers_one(*a.tau_interval) and a.pairs_reversed == 0.0
                 for j, a in enumerate(c.alternatives) if j != k) for c in certs]))
    return out


def _team(cert: RobustnessCertificate, team: str):
    return next(f for f in cert.fragility if f.team == team)


def calibration_failures(results: Mapping[str, dict]) -> list[str]:
    """The criteria that fail (empty when the calibration holds)."""
    checks = [
        ("separated", "all_intervals_cover_1", "every τ_b interval covers 1"),
        ("separated", "no_pair_reversed", "no told-apart pair is reversed"),
        ("separated", "no_team_fragile", "no team is marked fragile"),
        ("close", "no_pair_reversed", "no told-apart pair is reversed"),
        ("close", "no_team_fragile", "no team is marked fragile"),
        ("sensitive", "flagged_under_temporal", "the temporal split is flagged"),
        ("sensitive", "leaker_fragile", "the leaker is marked fragile"),
        ("sensitive", "mild_fragile", "the milder sensitive team is marked fragile"),
        ("sensitive", "insensitive_teams_not_fragile", "no insensitive team is marked fragile"),
        ("sensitive", "first_place_changes", "the first place changes"),
        ("sensitive", "others_not_flagged", "no other alternative is flagged"),
    ]
    return [f"{scenario}: {words} in {results[scenario][key]:.1%} of the boards, fewer than "
            f"{SHARE:.0%}" for scenario, key, words in checks
            if results[scenario][key] < SHARE]


def time_certificate(teams: int, n_boot: int, runs: int = 3) -> dict:
    """The certificate's wall and CPU seconds at ``teams`` teams and ``n_boot`` replicates
    with three alternatives (one team missing from one of them), median of ``runs``."""
    rng = np.random.default_rng(0)
    names = tuple(f"team {i:03d}" for i in range(teams))
    truth = np.sort(rng.normal(0.0, 0.05, teams))[::-1]

    def protocol(shift: float) -> ProtocolReplicates:
        point = truth + rng.normal(0.0, 0.005, teams) + shift * rng.normal(0.0, 0.01, teams)
        return ProtocolReplicates(teams=names, scores=point,
                                  replicates=point + rng.normal(0.0, 0.005, (n_boot, teams)))

    official = protocol(0.0)
    tier = read_board(official.scores, official.replicates.T).tier
    alternatives = {"other seed": protocol(0.0), "temporal": protocol(1.0),
                    "sampled": protocol(0.5)}
    alternatives["temporal"] = ProtocolReplicates(
        teams=names[1:], scores=alternatives["temporal"].scores[1:],
        replicates=alternatives["temporal"].replicates[:, 1:])
    wall, cpu = [], []
    for _ in range(runs):
        w0, c0 = time.perf_counter(), time.process_time()
        robustness_certificate(official, alternatives, tier)
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    return {"teams": teams, "n_boot": n_boot, "alternatives": len(alternatives),
            "wall_s": statistics.median(wall), "cpu_s": statistics.median(cpu),
            "wall_range_s": [min(wall), max(wall)]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true",
                        help="fewer boards and a small timing (the test suite's run)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when the calibration (or, at full size, the time) fails")
    parser.add_argument("--boards", type=int, default=None, help="boards per scenario")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args(argv)
    sizes = SMOKE if args.smoke else FULL
    if args.boards is not None:
        sizes = Sizes(args.boards, sizes.users, sizes.n_boot, sizes.timing_teams,
                      sizes.timing_boot)
    started = time.perf_counter()
    results = {}
    for scenario in ("separated", "close", "sensitive"):
        certs = [simulate_board(scenario, b, sizes) for b in range(sizes.boards)]
        results[scenario] = figures(scenario, certs)
    simulated_s = time.perf_counter() - started
    timing = time_certificate(sizes.timing_teams, sizes.timing_boot)
    _report(results, timing, sizes, simulated_s)
    if args.json is not None:
        args.json.write_text(json.dumps({"sizes": sizes.__dict__, "results": results,
                                         "timing": timing}, indent=2))
    # the smoke run checks the calibration always (the suite's reduced check)
    failures = calibration_failures(results) if (args.check or args.smoke) else []
    if args.check and not args.smoke and timing["cpu_s"] > TIME_BUDGET_S:
        failures.append(f"the certificate took {timing['cpu_s']:.2f} s of CPU for "
                        f"{timing['teams']} teams, more than {TIME_BUDGET_S:g} s")
    for line in failures:
        print(f"CALIBRATION FAILS: {line}")
    return 1 if failures else 0


def _report(results: Mapping[str, dict], timing: dict, sizes: Sizes, seconds: float) -> None:
    print(f"robustness certificate calibration: {sizes.boards} boards per scenario, "
          f"{sizes.users} users per protocol, {sizes.n_boot} replicates ({seconds:.1f} s)")
    for scenario, made in results.items():
        print(f"\n{scenario}: {made['boards']} boards, median {made['tiers_median']:g} tiers")
        for name, alt in made["alternatives"].items():
            low, high = alt["tau_interval_median"]
            print(f"  {name:28s} tau {alt['tau_median']:.3f} [{low:.3f}, {high:.3f}]  "
                  f"covers 1 {alt['interval_covers_1']:.0%}  below .95 "
                  f"{alt['interval_below_0_95']:.0%}  point order {alt['point_order_kept']:.0%}  "
                  f"unreversed {alt['no_pair_reversed']:.0%}  "
                  f"P(same first) {alt['first_place_probability_median']:.2f}")
        keys = [k for k in made if k not in ("boards", "alternatives", "tiers_median")]
        print("  " + ", ".join(f"{k} {made[k]:.1%}" for k in keys))
    print(f"\ncertificate time: {timing['teams']} teams, {timing['n_boot']} replicates, "
          f"{timing['alternatives']} alternatives: {timing['wall_s']:.3f} s wall "
          f"({timing['wall_range_s'][0]:.3f}-{timing['wall_range_s'][1]:.3f}), "
          f"{timing['cpu_s']:.3f} s CPU")


if __name__ == "__main__":
    sys.exit(main())
