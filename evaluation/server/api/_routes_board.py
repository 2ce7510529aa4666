"""The board of a phase: as JSON, as CSV (``/leaderboard.csv``, or ``?format=csv``), and as
the page (``GET /``), each with its paired statistics; a team's standing on it as JSON
(``/api/v1/leaderboard/team``) and as a page (``/team``, with the workers' queue: its length,
and the team's own jobs when the team's token asks); its robustness certificate as JSON
(``/api/v1/leaderboard/robustness``, ``?format=csv``) and as a page (``/robustness``).

An organizer's token shows the scores of a phase that is not public; the page never does.
Each is answered from the process's ``BoardCache`` while the board has not changed (a request
with ``Cache-Control: no-cache`` gets a board made after every write before it). None
computes the statistics: a background thread does, and a board shows the latest it made
(marked as being updated while it computes anew; see ``evaluation.server.standings``).
"""

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from evaluation.server.api._answers import (
    Rejected,
    board_json,
    rejected,
    robustness_json,
    team_json,
)
from evaluation.server.api._board_cache import BoardCache
from evaluation.server.api._deps import OptionalCallerDep, StoreDep, carry_if_due
from evaluation.server.core import Board, BoardRobustness, TeamStanding
from evaluation.server.db import Database
from evaluation.server.page import (
    board_csv,
    render_board,
    render_robustness,
    render_team,
    robustness_csv,
)
from evaluation.server.standings import board_robustness, standing_of
from evaluation.server.store import team_queue

router = APIRouter()


def _cache(request: Request, store: Database) -> BoardCache:
    """The app's board cache (made on the first board asked for), after the carry into a
    phase that has opened (its board shows the carried submissions from its opening)."""
    carry_if_due(store)
    state = request.app.state
    if getattr(state, "board_cache", None) is None:
        state.board_cache = BoardCache(store)
    return state.board_cache


def _fresh(request: Request) -> bool:
    """Whether the request asks for a board made after every write before it."""
    return "no-cache" in request.headers.get("cache-control", "").lower()


def _json_body(board: Board) -> bytes:
    return bytes(JSONResponse(board_json(board)).body)


@router.get("/api/v1/leaderboard", response_model=Board,
            responses={401: {"model": Rejected}, 404: {"model": Rejected}},
            summary="The board of a phase (default: the current one)")
def get_leaderboard(request: Request, caller: OptionalCallerDep, store: StoreDep,
                    phase: str | None = None, format: str = "json") -> Response:
    if format == "csv":
        return get_leaderboard_csv(request, caller, store, phase)
    if format != "json":
        if phase is not None:  # an unknown phase is 404 whatever the format
            store.require_competition().phase(phase)
        return rejected(422, f"format {format[:20]!r} is not known: give json (the default) "
                             f"or csv")
    admin = caller is not None and caller.admin
    body = _cache(request, store).answer("json", phase, admin, _json_body, _fresh(request))
    return Response(body, media_type="application/json")


@router.get("/leaderboard.csv", response_class=Response,
            responses={200: {"content": {"text/csv": {}}}, 401: {"model": Rejected},
                       404: {"model": Rejected}},
            summary="The board of a phase as CSV (default: the current one)")
def get_leaderboard_csv(request: Request, caller: OptionalCallerDep, store: StoreDep,
                        phase: str | None = None) -> Response:
    admin = caller is not None and caller.admin
    name, text = _cache(request, store).answer("csv", phase, admin,
                                               lambda b: (b.phase, board_csv(b)),
                                               _fresh(request))
    return _csv(name, text)


def _csv(phase: str, text: str) -> Response:
    """The board as a CSV download named after its phase."""
    return Response(text, media_type="text/csv; charset=utf-8", headers={
        "Content-Disposition": f'attachment; filename="leaderboard-{phase}.csv"'})


@router.get("/", response_class=HTMLResponse, summary="The board as a page",
            responses={404: {"model": Rejected}, 503: {"model": Rejected}})
def page(request: Request, store: StoreDep, phase: str | None = None) -> Response:
    # the certificate is linked where the competition declares alternative protocols
    linked = bool(store.require_competition().robustness)
    return HTMLResponse(_cache(request, store).answer(
        "page", phase, False, lambda board: render_board(board, robustness=linked),
        _fresh(request)))


@router.get("/api/v1/leaderboard/team", response_model=TeamStanding,
            responses={401: {"model": Rejected}, 404: {"model": Rejected}},
            summary="A team's standing on a phase's board: win probabilities, Pareto front")
def get_team(caller: OptionalCallerDep, store: StoreDep, name: str,
             phase: str | None = None) -> Response:
    carry_if_due(store)
    found = standing_of(store, name, phase, admin=caller is not None and caller.admin)
    if found is None:
        return rejected(404, f"no team {name[:80]!r} on the board of this phase")
    return JSONResponse(team_json(found))


@router.get("/team", response_class=HTMLResponse, summary="A team's standing as a page",
            responses={404: {"model": Rejected}, 503: {"model": Rejected}})
def team_page(caller: OptionalCallerDep, store: StoreDep, name: str,
              phase: str | None = None) -> Response:
    carry_if_due(store)
    found = standing_of(store, name, phase)
    if found is None:
        return rejected(404, f"no team {name[:80]!r} on the board of this phase")
    # the team's own jobs only to its own token; everyone sees the queue's length
    own = caller is not None and caller.team_id is not None and caller.team == found.team
    queue = team_queue(store, caller.team_id if own and caller else None, found.phase)
    return HTMLResponse(render_team(found, queue))


@router.get("/api/v1/leaderboard/robustness", response_model=BoardRobustness,
            responses={200: {"content": {"text/csv": {}}}, 401: {"model": Rejected},
                       404: {"model": Rejected}},
            summary="The robustness certificate of a phase's board: would its ranking survive "
                    "the declared alternative protocols?")
def get_robustness(caller: OptionalCallerDep, store: StoreDep, phase: str | None = None,
                   format: str = "json") -> Response:
    admin = caller is not None and caller.admin
    if format not in ("json", "csv"):
        return rejected(422, f"format {format[:20]!r} is not known: give json (the default) "
                             f"or csv")
    view = board_robustness(store, phase, admin=admin,
                            team=None if caller is None else caller.team)
    if format == "csv":
        return Response(robustness_csv(view), media_type="text/csv; charset=utf-8", headers={
            "Content-Disposition": f'attachment; filename="robustness-{view.phase}.csv"'})
    return JSONResponse(robustness_json(view))


@router.get("/robustness", response_class=HTMLResponse,
            summary="The robustness certificate of a phase's board as a page",
            responses={404: {"model": Rejected}, 503: {"model": Rejected}})
def robustness_page(store: StoreDep, phase: str | None = None) -> Response:
    return HTMLResponse(render_robustness(board_robustness(store, phase)))
