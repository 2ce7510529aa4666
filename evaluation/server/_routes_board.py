"""The board of a phase: as JSON, as CSV (``/leaderboard.csv``, or ``?format=csv``), and as
the page (``GET /``), each with its paired statistics; a team's standing on it as JSON
(``/api/v1/leaderboard/team``) and as a page (``/team``).

An organizer's token shows the scores of a phase that is not public; the page never does.
"""

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, JSONResponse, Response

from evaluation.server._answers import Rejected, board_json, rejected, team_json
from evaluation.server._board import Board, TeamStanding
from evaluation.server._board_csv import board_csv
from evaluation.server._deps import OptionalCallerDep, StoreDep

router = APIRouter()


@router.get("/api/v1/leaderboard", response_model=Board,
            responses={401: {"model": Rejected}, 404: {"model": Rejected}},
            summary="The board of a phase (default: the current one)")
def get_leaderboard(caller: OptionalCallerDep, store: StoreDep,
                    phase: str | None = None, format: str = "json") -> Response:
    board = store.board(phase, admin=caller is not None and caller.admin, standings=True)
    if format == "csv":
        return _csv(board)
    if format != "json":
        return rejected(422, f"format {format[:20]!r} is not known: give json (the default) "
                             f"or csv")
    return JSONResponse(board_json(board))


@router.get("/leaderboard.csv", response_class=Response,
            responses={200: {"content": {"text/csv": {}}}, 401: {"model": Rejected},
                       404: {"model": Rejected}},
            summary="The board of a phase as CSV (default: the current one)")
def get_leaderboard_csv(caller: OptionalCallerDep, store: StoreDep,
                        phase: str | None = None) -> Response:
    return _csv(store.board(phase, admin=caller is not None and caller.admin, standings=True))


def _csv(board: Board) -> Response:
    """The board as a CSV download named after its phase."""
    return Response(board_csv(board), media_type="text/csv; charset=utf-8", headers={
        "Content-Disposition": f'attachment; filename="leaderboard-{board.phase}.csv"'})


@router.get("/", response_class=HTMLResponse, summary="The board as a page",
            responses={404: {"model": Rejected}, 503: {"model": Rejected}})
def page(store: StoreDep, phase: str | None = None) -> Response:
    try:
        # imported when asked for: the page needs Jinja2, the API does not
        from evaluation.server._page import render_board
    except ImportError:
        return rejected(503, "page not available")
    return HTMLResponse(render_board(store.board(phase, standings=True)))


@router.get("/api/v1/leaderboard/team", response_model=TeamStanding,
            responses={401: {"model": Rejected}, 404: {"model": Rejected}},
            summary="A team's standing on a phase's board: win probabilities, Pareto front")
def get_team(caller: OptionalCallerDep, store: StoreDep, name: str,
             phase: str | None = None) -> Response:
    found = store.team_standing(name, phase, admin=caller is not None and caller.admin)
    if found is None:
        return rejected(404, f"no team {name[:80]!r} on the board of this phase")
    return JSONResponse(team_json(found))


@router.get("/team", response_class=HTMLResponse, summary="A team's standing as a page",
            responses={404: {"model": Rejected}, 503: {"model": Rejected}})
def team_page(store: StoreDep, name: str, phase: str | None = None) -> Response:
    try:
        from evaluation.server._page_team import render_team
    except ImportError:
        return rejected(503, "page not available")
    found = store.team_standing(name, phase)
    if found is None:
        return rejected(404, f"no team {name[:80]!r} on the board of this phase")
    return HTMLResponse(render_team(found))
