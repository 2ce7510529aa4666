"""The board's robustness certificate as a page and as CSV: per declared alternative
protocol, Kendall's τ_b with its interval, the pairs kept, the first place's stability and
the cost; per team, its fragility mark.

As the board's page: no JavaScript, every string through a Jinja2 template with autoescaping.
"""

from __future__ import annotations

import csv
import io
from urllib.parse import urlencode

from evaluation.server.core import BoardRobustness
from evaluation.server.page._board_page import _environment

#: What the page says in place of the numbers, by ``BoardRobustness.state``.
STATE_NOTES = {
    "none declared": "The competition declares no alternative protocol ([robustness] in the "
                     "competition file): there is no certificate.",
    "hidden": "The certificate is shown once the phase's scores are: until then nothing is "
              "computed from them.",
    "waiting": "No team is compared on the board yet: the certificate is shown once the "
               "organizers have computed (reproduced) the teams' results.",
}
#: The columns of the certificate's CSV: one line per protocol, then one per team.
CSV_COLUMNS = ("phase", "line", "protocol", "kind", "tau_b", "tau_low", "tau_high",
               "n_compared", "could_not_run", "first_place_probability", "same_leader",
               "pairs_kept", "pairs_reversed", "mean_seconds", "max_peak_rss_mib", "team",
               "rank", "tier", "worst_rank", "worst_rank_protocol", "worst_tier",
               "worst_tier_protocol", "missing_from", "falls_below")


def share(value: float | None) -> str:
    """A share as a percentage ("—" when undefined)."""
    return "\u2014" if value is None else f"{value:.1%}"


def number(value: float | None, digits: int = 3) -> str:
    """A statistic ("—" when undefined)."""
    return "\u2014" if value is None else f"{value:.{digits}f}"


def render_robustness(view: BoardRobustness) -> str:
    """The HTML page of a board's robustness certificate (no scripts, every string escaped)."""
    board_href = "/?" + urlencode({"phase": view.phase})
    return _environment().get_template("robustness.html").render(
        v=view, note=STATE_NOTES.get(view.state), share=share, number=number,
        board_href=board_href)


def robustness_csv(view: BoardRobustness) -> str:
    """The certificate as CSV text: a "protocol" line per alternative, a "team" line per
    compared team (empty cells where a statistic is undefined or not of that line)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    empty = [""] * len(CSV_COLUMNS)

    def cell(value: object) -> str:
        return "" if value is None else str(value)

    for p in view.protocols:
        line = dict(zip(CSV_COLUMNS, empty))
        line.update(phase=view.phase, line="protocol", protocol=p.protocol, kind=p.kind,
                    tau_b=cell(p.tau), tau_low=cell(p.tau_low), tau_high=cell(p.tau_high),
                    n_compared=str(p.n_compared), could_not_run=";".join(p.could_not_run),
                    first_place_probability=cell(p.first_place_probability),
                    same_leader="yes" if p.same_leader else "no",
                    pairs_kept=cell(p.pairs_kept), pairs_reversed=cell(p.pairs_reversed),
                    mean_seconds=cell(p.mean_seconds),
                    max_peak_rss_mib=cell(p.max_peak_rss_mib))
        writer.writerow(line.values())
    for t in view.teams:
        line = dict(zip(CSV_COLUMNS, empty))
        line.update(phase=view.phase, line="team", team=t.team, rank=str(t.rank),
                    tier=str(t.tier), worst_rank=str(t.worst_rank),
                    worst_rank_protocol=t.worst_rank_protocol, worst_tier=str(t.worst_tier),
                    worst_tier_protocol=t.worst_tier_protocol,
                    missing_from=";".join(t.missing_from), falls_below=";".join(t.falls_below))
        writer.writerow(line.values())
    return out.getvalue()
