"""The queue as a page: the organizers' overview (``/queue``) and the queue's part of a team's
page (its own jobs when the team asks with its token, the queue's length for everyone).

As the board's page: no JavaScript, every string through a Jinja2 template with autoescaping.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from evaluation.server.page._board_page import _environment
from evaluation.server.store import Estimate, QueueOverview, QueuePlace, TeamQueue


@dataclass(frozen=True)
class PlaceView:
    """One job of a team's submission, as text."""

    submission: int
    kind: str
    state: str
    position: str
    start: str
    basis: str
    reason: str


def when(moment: datetime | None) -> str:
    """A time as ``YYYY-MM-DD HH:MM:SS UTC``; "\u2014" for none."""
    return "\u2014" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def place_views(places: tuple[QueuePlace, ...]) -> tuple[PlaceView, ...]:
    """The lines of a team's queue table."""
    return tuple(PlaceView(submission=p.submission_id, kind=p.kind, state=p.state,
                           position="\u2014" if p.position is None else str(p.position),
                           start=("unknown" if p.state == "queued" else "\u2014")
                           if p.estimated_start is None else when(p.estimated_start),
                           basis=p.basis, reason=p.reason or "")
                 for p in places)


def estimate_lines(estimates: tuple[Estimate, ...]) -> tuple[str, ...]:
    """One line per kind of job: how many wait and how long one takes."""
    return tuple(f"{e.kind}: {e.queued} queued, {e.running} running; "
                 + ("a job's duration is unknown (none finished yet)" if e.median_s is None
                    else f"a job takes {e.median_s:.1f} s (median of the last {e.timed})")
                 for e in estimates)


def render_queue(overview: QueueOverview) -> str:
    """The organizers' page of the queue (UTF-8 text, no scripts, every string escaped)."""
    return _environment().get_template("queue.html").render(
        q=overview, when=when, estimates=estimate_lines(overview.estimates))


def queue_section(queue: TeamQueue) -> dict:
    """What a team's page shows of the queue (the template's ``queue`` block)."""
    return {"places": place_views(queue.places), "estimates": estimate_lines(queue.estimates)}
