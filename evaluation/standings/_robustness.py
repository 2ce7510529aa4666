"""Would the board's order survive another protocol? The robustness certificate.

A competition may declare alternative evaluation protocols (a global temporal split,
leave-one-out with another fold seed, sampled negatives with a correction, ...). Each
alternative gives every team a point score and paired bootstrap replicates, like the official
protocol. The certificate compares the official ranking with each alternative's: Kendall's
τ_b with a bootstrap interval, the share of the pairs the official board tells apart whose
order every protocol keeps, the probability that the first place stays, and per team its
worst rank and tier over the alternatives (tiers by the board's own machinery).

A pair's point order can change under a noisier alternative by chance alone; a pair the
alternative's own board tells apart the other way (its simultaneous intervals, at the board's
level) has changed for real. The certificate gives both: the point reading
(``stable_pair_share``, ``pairs_kept``) and the reversals (``reversed_pair_share``,
``pairs_reversed``, each team's ``falls_below``), the flag to act on.

Teams missing from an alternative (the model could not run it) are a result, not an error:

* τ_b (point and replicates) is computed over the teams present in both protocols; the
  teams left out are listed (:attr:`AlternativeCertificate.missing`);
* everywhere an order is read (the pairs kept, the first place, a team's rank and tier under
  the alternative) a missing team is placed below every team that ran, tied with the other
  missing teams: it is never first, it ranks one below the teams that ran, and its tier is
  one below the alternative's last.

Teams of an alternative that are not on the official board are ignored (they have no
official place to compare with).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from evaluation._util.validation import check_number
from evaluation.errors import ConfigError
from evaluation.standings._pairwise import simultaneous_differences
from evaluation.standings._tiers import separated
from evaluation.standings._tiers import tiers as board_tiers

#: Coverage of the τ_b percentile interval unless the caller says otherwise.
TAU_LEVEL = 0.95

#: Replicates whose team pairs are compared at once (bounds memory to chunk x teams²).
_TAU_CHUNK = 16


@dataclass(frozen=True)
class ProtocolReplicates:
    """One protocol's scores of the teams it could score.

    Attributes
    ----------
    teams : tuple of str
        The teams, each once.
    scores : numpy.ndarray
        Shape ``(n_teams,)``: the point scores, higher is better.
    replicates : numpy.ndarray
        Shape ``(n_replicates, n_teams)``: the scores on paired bootstrap resamples (replicate
        r of every team uses the same resampled users of this protocol).

    Raises
    ------
    ConfigError
        When the shapes disagree with the teams, a team repeats or a value is not finite.
    """

    teams: tuple[str, ...]
    scores: np.ndarray = field(repr=False)
    replicates: np.ndarray = field(repr=False)

    def __post_init__(self) -> None:
        teams = tuple(str(t) for t in self.teams)
        scores = np.asarray(self.scores, dtype=np.float64)
        reps = np.asarray(self.replicates, dtype=np.float64)
        n = len(teams)
        if len(set(teams)) != n:
            repeated = sorted({t for t in teams if teams.count(t) > 1})
            raise ConfigError(f"ProtocolReplicates: each team must appear once; "
                              f"{repeated} repeat. Pass one score per team.")
        if scores.shape != (n,) or reps.ndim != 2 or reps.shape[1] != n:
            raise ConfigError(f"ProtocolReplicates: scores must have shape ({n},) and "
                              f"replicates (n_replicates, {n}) for {n} teams; got "
                              f"{scores.shape} and {reps.shape}")
        if not (np.isfinite(scores).all() and np.isfinite(reps).all()):
            raise ConfigError("ProtocolReplicates: scores and replicates must be finite; "
                              "leave out a team that could not be scored instead")
        object.__setattr__(self, "teams", teams)
        object.__setattr__(self, "scores", scores)
        object.__setattr__(self, "replicates", reps)


@dataclass(frozen=True)
class AlternativeCertificate:
    """How one alternative protocol's ranking compares with the official one.

    Attributes
    ----------
    protocol : str
        The alternative's name.
    tau : float
        Kendall's τ_b between the official and the alternative point scores, over the
        ``n_compared`` teams present in both (NaN when fewer than two, or when one
        protocol ties them all).
    tau_interval : tuple of float
        The percentile interval, at the certificate's level, of τ_b between official
        replicate r and alternative replicate r (replicates where τ_b is undefined are left
        out; NaN when none is defined).
    n_compared : int
        Teams present in both protocols.
    missing : tuple of str
        Official teams the alternative could not score (placed last under it).
    first_place_probability : float
        The share of replicates in which the teams tied at the top of the official replicate
        are the same as those at the top of the alternative replicate.
    same_leader : bool
        The same: on the point scores.
    pairs_kept : float
        The share of the pairs the official board tells apart (different tiers) whose order
        this alternative's point scores keep (NaN when the board tells no pair apart).
    pairs_reversed : float
        The share of those pairs this alternative's own board tells apart the other way (a
        team missing from it is told apart below every team that ran).
    rank : numpy.ndarray of int
        Per official team: its place under the alternative (1 + the teams that ran with a
        higher score; a missing team: 1 + the teams that ran).
    tier : numpy.ndarray of int
        Per official team: its tier under the alternative (a missing team: one below the
        alternative's last tier).
    """

    protocol: str
    tau: float
    tau_interval: tuple[float, float]
    n_compared: int
    missing: tuple[str, ...]
    first_place_probability: float
    same_leader: bool
    pairs_kept: float
    pairs_reversed: float
    rank: np.ndarray = field(repr=False)
    tier: np.ndarray = field(repr=False)


@dataclass(frozen=True)
class TeamFragility:
    """A team's fragility mark: how far it falls under the alternatives.

    Attributes
    ----------
    team : str
    rank, tier : int
        Its official place (1 + the teams with a higher official score) and tier.
    worst_rank, worst_tier : int
        Its worst place and tier over the alternatives (its official ones when there are
        none).
    worst_rank_protocol, worst_tier_protocol : str
        The first alternative (in the order given) where the worst is reached ("" when there
        are no alternatives).
    missing_from : tuple of str
        The alternatives it could not run.
    falls_below : tuple of str
        The teams the official board tells apart below it that some alternative tells apart
        above it (its fragility flag: empty when no alternative reverses its order).
    """

    team: str
    rank: int
    tier: int
    worst_rank: int
    worst_tier: int
    worst_rank_protocol: str
    worst_tier_protocol: str
    missing_from: tuple[str, ...]
    falls_below: tuple[str, ...] = ()

    @property
    def fragile(self) -> bool:
        """Some alternative tells a team apart above it that the official board puts below."""
        return bool(self.falls_below)

    @property
    def tiers_lost(self) -> int:
        """How many tiers it falls at worst (0 when it never falls)."""
        return max(self.worst_tier - self.tier, 0)


@dataclass(frozen=True)
class RobustnessCertificate:
    """The official ranking's robustness to the declared alternative protocols.

    Attributes
    ----------
    teams : tuple of str
        The official teams, in the order given.
    level : float
        Coverage of the τ_b intervals and joint level of the alternatives' tiers.
    n_replicates : int
        Replicates paired between the official protocol and each alternative (the smaller
        count of the two when they differ, the first replicates of each).
    alternatives : tuple of AlternativeCertificate
        One per alternative, in the order given.
    stable_pair_share : float
        The share of the pairs the official board tells apart whose order is the same under
        every protocol (a missing team ranks last); 1 with no alternatives, NaN when the board
        tells no pair apart.
    reversed_pair_share : float
        The share of those pairs that some alternative's own board tells apart the other way;
        0 with no alternatives, NaN when the board tells no pair apart.
    n_told_apart : int
        The pairs the official board tells apart.
    fragility : tuple of TeamFragility
        One per official team, in the order given.
    """

    teams: tuple[str, ...]
    level: float
    n_replicates: int
    alternatives: tuple[AlternativeCertificate, ...]
    stable_pair_share: float
    reversed_pair_share: float
    n_told_apart: int
    fragility: tuple[TeamFragility, ...]


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's τ_b between the rows of ``x`` and of ``y``, row by row.

    τ_b = (concordant - discordant) / sqrt(pairs untied in x * pairs untied in y), a pair
    tied in either counting neither concordant nor discordant (as ``scipy.stats.kendalltau``
    does by default). Vectorised over the rows: each row is sorted by x (ties by y), the ties
    are counted from the runs of equal values, and the discordant pairs are those whose y
    falls down the sorted row (one comparison of the pairs, O(rows * teams²) but cheap).

    Parameters
    ----------
    x, y : numpy.ndarray
        Shape ``(n_rows, n_teams)`` (or ``(n_teams,)`` for one row).

    Returns
    -------
    numpy.ndarray
        Shape ``(n_rows,)`` (a 0-d array for one row); NaN where a row ties every pair in
        ``x`` or in ``y``, or has fewer than two teams.

    Raises
    ------
    ConfigError
        When ``x`` and ``y`` differ in shape.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    x2, y2 = np.atleast_2d(x), np.atleast_2d(y)
    if x.shape != y.shape or x.ndim > 2:
        raise ConfigError(f"kendall_tau_b: x and y must be two arrays of the same shape, "
                          f"(n_rows, n_teams) or (n_teams,); got {x.shape} and {y.shape}")
    n_rows, n = x2.shape
    out = np.full(n_rows, np.nan)
    if n >= 2 and n_rows:
        order = np.lexsort((y2, x2), axis=-1)
        xs = np.take_along_axis(x2, order, axis=1)
        ys = np.take_along_axis(y2, order, axis=1)
        tied_x = _tied_pairs(xs[:, 1:] == xs[:, :-1])
        tied_y = _tied_pairs(np.diff(np.sort(ys, axis=1), axis=1) == 0)
        tied_both = _tied_pairs((xs[:, 1:] == xs[:, :-1]) & (ys[:, 1:] == ys[:, :-1]))
        # sorted by x then y, a pair (j < k) is discordant exactly when y_j > y_k: a pair
        # tied in x is in y's order, so it never counts
        later = np.triu(np.ones((n, n), dtype=bool), k=1)
        discordant = np.empty(n_rows, dtype=np.int64)
        for start in range(0, n_rows, _TAU_CHUNK):
            block = ys[start:start + _TAU_CHUNK]
            falls = (block[:, :, None] > block[:, None, :]) & later
            discordant[start:start + _TAU_CHUNK] = [np.count_nonzero(f) for f in falls]
        pairs = n * (n - 1) // 2
        concordant = pairs - tied_x - tied_y + tied_both - discordant
        untied = (pairs - tied_x) * (pairs - tied_y).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(untied > 0, (concordant - discordant) / np.sqrt(untied), np.nan)
    return out[0] if x.ndim == 1 else out


def _tied_pairs(same_as_previous: np.ndarray) -> np.ndarray:
    """Per row, the pairs within runs of equal values, from "equal to the previous" flags.

    A value in a run of equal values ties with every value before it in the run: it adds
    its distance to the run's start.
    """
    n_rows, n = same_as_previous.shape[0], same_as_previous.shape[1] + 1
    position = np.arange(n)
    starts = np.ones((n_rows, n), dtype=bool)
    starts[:, 1:] = ~same_as_previous
    run_start = np.maximum.accumulate(np.where(starts, position, 0), axis=1)
    return (position - run_start).sum(axis=1)


def robustness_certificate(official: ProtocolReplicates,
                           alternatives: Mapping[str, ProtocolReplicates],
                           tiers: Sequence[int], *, level: float = TAU_LEVEL,
                           min_difference: float = 0.0) -> RobustnessCertificate:
    """The robustness certificate of the official ranking against the alternatives.

    Parameters
    ----------
    official : ProtocolReplicates
        The official protocol's scores of the board's teams.
    alternatives : Mapping of str to ProtocolReplicates
        Each declared alternative's scores of the teams that could run it.
    tiers : Sequence of int
        The official board's tier of each team (same order as ``official.teams``): pairs in
        one tier are those the board does not tell apart.
    level : float
        Coverage of the τ_b percentile intervals and joint level of the alternatives' tiers
        (the board's own level, normally), in (0, 1).
    min_difference : float
        The board's minimum practical difference (>= 0), for the alternatives' tiers.

    Returns
    -------
    RobustnessCertificate

    Raises
    ------
    ConfigError
        When ``tiers`` does not give one tier per official team, or a parameter is out of
        range.
    """
    level = check_number("level", level, low=0.0, high=1.0, low_open=True, high_open=True,
                         owner="robustness_certificate")
    min_difference = check_number("min_difference", min_difference, low=0.0,
                                  owner="robustness_certificate")
    official_tier = np.asarray(tiers, dtype=np.int64)
    n = len(official.teams)
    if official_tier.shape != (n,):
        raise ConfigError(f"robustness_certificate: tiers must give one tier per official "
                          f"team ({n}); got shape {official_tier.shape}")
    official_rank = _places(official.scores, np.ones(n, dtype=bool))
    # [i, j]: the official board puts i in a better tier than j
    above = official_tier[:, None] < official_tier[None, :]
    n_told_apart = int(above.sum())
    kept_everywhere = above.copy()
    reversed_somewhere = np.zeros_like(above)
    n_reps = len(official.replicates)
    certificates = []
    for name, alternative in alternatives.items():
        cert, kept, reversed_ = _alternative(str(name), official, alternative, above, level,
                                             min_difference)
        certificates.append(cert)
        kept_everywhere &= kept
        reversed_somewhere |= reversed_
        n_reps = min(n_reps, len(alternative.replicates))
    return RobustnessCertificate(
        teams=official.teams, level=level, n_replicates=n_reps,
        alternatives=tuple(certificates), stable_pair_share=_share(kept_everywhere, above),
        reversed_pair_share=_share(reversed_somewhere, above), n_told_apart=n_told_apart,
        fragility=_fragility(official.teams, official_rank, official_tier, certificates,
                             reversed_somewhere))


def _share(pairs: np.ndarray, told_apart: np.ndarray) -> float:
    """The share of the told-apart pairs in ``pairs`` (NaN when none is told apart)."""
    n = int(told_apart.sum())
    return float((pairs & told_apart).sum() / n) if n else float("nan")


def _alternative(name: str, official: ProtocolReplicates, alternative: ProtocolReplicates,
                 above: np.ndarray, level: float,
                 min_difference: float
                 ) -> tuple[AlternativeCertificate, np.ndarray, np.ndarray]:
    """One alternative's certificate, and which official pairs ``[i, j]`` (i above j) it
    keeps in its point order and which it tells apart the other way."""
    n = len(official.teams)
    where = {team: k for k, team in enumerate(alternative.teams)}
    index = np.array([where.get(team, -1) for team in official.teams], dtype=np.int64)
    present = index >= 0
    n_reps = min(len(official.replicates), len(alternative.replicates))
    # the alternative's scores aligned with the official teams; a missing team scores -inf,
    # below every team that ran and tied with the other missing ones
    scores = np.full(n, -np.inf)
    scores[present] = alternative.scores[index[present]]
    reps = np.full((n_reps, n), -np.inf)
    reps[:, present] = alternative.replicates[:n_reps, index[present]]
    official_reps = official.replicates[:n_reps]

    tau = float(kendall_tau_b(official.scores[present], scores[present]))
    tau_reps = kendall_tau_b(official_reps[:, present], reps[:, present])
    defined = tau_reps[~np.isnan(tau_reps)]
    low, high = ((float("nan"), float("nan")) if not len(defined) else
                 tuple(float(q) for q in np.quantile(defined, [(1 - level) / 2,
                                                               (1 + level) / 2])))
    first_same = _same_top(official_reps, reps)
    kept = above & (scores[:, None] > scores[None, :])
    tier, beats = _tiers_of(alternative, index, present, level, min_difference)
    reversed_ = above & beats.T
    cert = AlternativeCertificate(
        protocol=name, tau=tau, tau_interval=(low, high), n_compared=int(present.sum()),
        missing=tuple(t for t, ok in zip(official.teams, present) if not ok),
        first_place_probability=float(first_same.mean()) if n_reps else float("nan"),
        same_leader=bool(_same_top(official.scores[None, :], scores[None, :])[0]),
        pairs_kept=_share(kept, above), pairs_reversed=_share(reversed_, above),
        rank=_places(scores, present), tier=tier)
    return cert, kept, reversed_


def _same_top(official: np.ndarray, alternative: np.ndarray) -> np.ndarray:
    """Per row: the teams tied at the top are the same in both (rows of aligned scores)."""
    if not official.shape[1]:
        return np.ones(len(official), dtype=bool)
    top_official = official == official.max(axis=1, keepdims=True)
    top_alternative = alternative == alternative.max(axis=1, keepdims=True)
    return np.all(top_official == top_alternative, axis=1)


def _places(scores: np.ndarray, present: np.ndarray) -> np.ndarray:
    """1 + the present teams with a higher score; a team not present: 1 + the present teams."""
    scores = np.asarray(scores, dtype=np.float64)
    ahead = (scores[present][None, :] > scores[:, None]).sum(axis=1)
    return np.where(present, 1 + ahead, 1 + int(present.sum())).astype(np.int64)


def _tiers_of(alternative: ProtocolReplicates, index: np.ndarray, present: np.ndarray,
              level: float, min_difference: float) -> tuple[np.ndarray, np.ndarray]:
    """The official teams' tiers under an alternative, by the board's tier rules, and which
    team it tells apart above which (``[i, j]``: i beats j; both indexed like the official
    teams).

    The teams that ran are read as a board in the order of their alternative scores (ties
    in the official order); a missing team gets the tier below the last, and every team that
    ran beats it.
    """
    n = len(index)
    tier = np.ones(n, dtype=np.int64)
    beats = np.zeros((n, n), dtype=bool)
    if not present.any():
        return tier, beats
    rows = index[present]
    point = alternative.scores[rows]
    reps = alternative.replicates[:, rows].T
    order = np.argsort(-point, kind="stable")
    if reps.shape[1] >= 2:
        ran_beats = separated(simultaneous_differences(reps, point, level), min_difference)
    else:  # no replicates to tell teams apart with: one tier
        ran_beats = np.zeros((len(rows), len(rows)), dtype=bool)
    ran = board_tiers(order, ran_beats)
    tier[present] = ran
    tier[~present] = ran.max() + 1
    where = np.flatnonzero(present)
    beats[np.ix_(where, where)] = ran_beats
    beats[np.ix_(present, ~present)] = True
    return tier, beats


def _fragility(teams: tuple[str, ...], rank: np.ndarray, tier: np.ndarray,
               certificates: list[AlternativeCertificate],
               reversed_: np.ndarray) -> tuple[TeamFragility, ...]:
    """Per team: its worst rank and tier over the alternatives, where it cannot run and the
    teams it falls below (``reversed_[i, j]``: officially i above j, reversed somewhere)."""
    if not certificates:
        return tuple(TeamFragility(team=t, rank=int(r), tier=int(k), worst_rank=int(r),
                                   worst_tier=int(k), worst_rank_protocol="",
                                   worst_tier_protocol="", missing_from=())
                     for t, r, k in zip(teams, rank, tier))
    ranks = np.stack([c.rank for c in certificates])
    tier_table = np.stack([c.tier for c in certificates])
    worst_rank_at = ranks.argmax(axis=0)
    worst_tier_at = tier_table.argmax(axis=0)
    names = [c.protocol for c in certificates]
    out = []
    for i, team in enumerate(teams):
        out.append(TeamFragility(
            team=team, rank=int(rank[i]), tier=int(tier[i]),
            worst_rank=int(ranks[worst_rank_at[i], i]),
            worst_tier=int(tier_table[worst_tier_at[i], i]),
            worst_rank_protocol=names[worst_rank_at[i]],
            worst_tier_protocol=names[worst_tier_at[i]],
            missing_from=tuple(c.protocol for c in certificates if team in c.missing),
            falls_below=tuple(teams[j] for j in np.flatnonzero(reversed_[i]))))
    return tuple(out)
