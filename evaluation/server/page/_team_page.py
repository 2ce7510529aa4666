"""A team's page: its row of the board, its win probabilities against every other compared team
and its place on the Pareto front over the score's groups, drawn on the server; and the
workers' queue: its length for everyone, the team's own jobs when the team asks with its token.

As the board's page: no JavaScript, every string through a Jinja2 template with autoescaping.
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluation.server.core import TeamStanding
from evaluation.server.page._board_page import _environment, cost_lines, standings_status, team_href
from evaluation.server.page._cells import fixed
from evaluation.server.page._queue_page import queue_section
from evaluation.server.store import TeamQueue

#: How an opponent reads, by ``Opponent.told_apart``.
VERDICTS = {"above": "better (told apart)", "below": "worse (told apart)",
            "tied": "cannot be told apart"}


@dataclass(frozen=True)
class OpponentView:
    """One line of the win-probability table, as text."""

    team: str
    href: str
    rank: str
    tier: int
    win: str
    verdict: str


@dataclass(frozen=True)
class FrontView:
    """One line of the Pareto table, as text."""

    team: str
    href: str
    scores: tuple[str, ...]
    pareto: bool
    share: str
    is_this: bool


def render_team(standing: TeamStanding, queue: TeamQueue | None = None) -> str:
    """The HTML page of a team's standing (UTF-8 text, no scripts, every string escaped),
    with ``queue`` (the queue's length; the team's own jobs only when it is the caller)."""
    row, info = standing.row, standing.standings
    opponents = tuple(OpponentView(team=o.team, href=team_href(standing.phase, o.team),
                                   rank="\u2014" if o.rank is None else str(o.rank), tier=o.tier,
                                   win=f"{o.win_probability:.1%}",
                                   verdict=VERDICTS[o.told_apart])
                      for o in standing.opponents)
    front = tuple(FrontView(team=m.team, href=team_href(standing.phase, m.team),
                            scores=tuple(fixed(v) for v in m.group_scores), pareto=m.pareto,
                            share=f"{m.first_place_share:.1%}", is_this=m.team == standing.team)
                  for m in standing.teams)
    score = row.private_score if (info is not None and info.score == "private_score") \
        else row.leaderboard_score
    s = row.standing
    return _environment().get_template("team.html").render(
        t=standing, info=info, row=row, standing=s, score=fixed(score),
        status=standings_status(info),
        board_href="/?phase=" + standing.phase,
        ranks="" if s is None or s.rank_interval is None else
        "\u2013".join(str(v) for v in dict.fromkeys(s.rank_interval)),
        costs=() if s is None or s.costs is None else cost_lines(s.costs),
        opponents=opponents, front=front,
        queue=None if queue is None else queue_section(queue))
