"""What the board's robustness certificate shows: would the official ranking survive the
competition's declared alternative protocols?"""

from __future__ import annotations

from dataclasses import dataclass

#: The states of a board's certificate: shown; no protocol declared; the board's scores are
#: hidden (nothing is computed from them); no compared team yet.
ROBUSTNESS_STATES = ("shown", "none declared", "hidden", "waiting")


@dataclass(frozen=True)
class ProtocolCertificate:
    """How one alternative protocol's ranking compares with the official one.

    Attributes
    ----------
    protocol, kind : str
        Its name and kind (``RobustnessProtocol``).
    tau : float or None
        Kendall's τ_b between the official and the alternative scores of the teams that ran
        both (None: undefined, fewer than two teams or all tied).
    tau_low, tau_high : float or None
        Its paired bootstrap interval at the board's level (users resampled within each
        protocol, replicates paired across teams).
    n_compared : int
        Teams scored under both.
    could_not_run : tuple of str
        Compared teams without a result under it (the model failed, it is not reproduced
        yet, or its values are on other users): ranked last under it.
    first_place_probability : float or None
        The share of paired replicates whose first place is the same under both.
    same_leader : bool
        Whether the point scores put the same team(s) first.
    pairs_kept : float or None
        The share of the pairs the official board tells apart whose order it keeps.
    pairs_reversed : float or None
        The share of those pairs its own board (its paired replicates) tells apart the other
        way: a change for real, not noise.
    mean_seconds : float or None
        The mean wall-clock seconds the alternative's run took per team (its cost).
    max_peak_rss_mib : float or None
        The largest peak memory (MiB) of a team's run under it.
    """

    protocol: str
    kind: str
    tau: float | None
    tau_low: float | None
    tau_high: float | None
    n_compared: int
    could_not_run: tuple[str, ...]
    first_place_probability: float | None
    same_leader: bool
    pairs_kept: float | None
    pairs_reversed: float | None
    mean_seconds: float | None
    max_peak_rss_mib: float | None


@dataclass(frozen=True)
class TeamFragilityMark:
    """A compared team's fragility mark: its official place and tier, its worst ones over the
    alternatives (and where), and the teams the official board tells apart below it that some
    alternative tells apart above it (``falls_below``: fragile when not empty)."""

    team: str
    rank: int
    tier: int
    worst_rank: int
    worst_tier: int
    worst_rank_protocol: str
    worst_tier_protocol: str
    missing_from: tuple[str, ...]
    falls_below: tuple[str, ...] = ()


@dataclass(frozen=True)
class AlternativeFailure:
    """Why a team's model could not run under a protocol (shown to the organizers and to
    the team itself only)."""

    team: str
    protocol: str
    reason: str


@dataclass(frozen=True)
class BoardRobustness:
    """A board's robustness certificate.

    Attributes
    ----------
    competition, phase : str
    state : str
        One of ``ROBUSTNESS_STATES``; only "shown" fills the numbers.
    declared : tuple of str
        The competition's alternative protocols.
    withheld : tuple of str
        The private protocols, not shown until the phase's private scores are revealed.
    level : float or None
        Coverage of the τ_b intervals (the board's level).
    n_replicates : int
    stable_pair_share : float or None
        The share of the pairs the official board tells apart whose order is the same under
        every shown protocol.
    reversed_pair_share : float or None
        The share of those pairs some shown protocol's own board tells apart the other way.
    n_told_apart : int
    protocols : tuple of ProtocolCertificate
    teams : tuple of TeamFragilityMark
        In the official order.
    failures : tuple of AlternativeFailure
        Those the caller may read: every one for an organizer, the team's own for a team.
    """

    competition: str
    phase: str
    state: str
    declared: tuple[str, ...] = ()
    withheld: tuple[str, ...] = ()
    level: float | None = None
    n_replicates: int = 0
    stable_pair_share: float | None = None
    reversed_pair_share: float | None = None
    n_told_apart: int = 0
    protocols: tuple[ProtocolCertificate, ...] = ()
    teams: tuple[TeamFragilityMark, ...] = ()
    failures: tuple[AlternativeFailure, ...] = ()
