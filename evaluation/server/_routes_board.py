"""The board of a phase: as JSON, and as the page (``GET /``).

An organizer's token shows the scores of a phase that is not public; the page never does.
"""

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, JSONResponse, Response

from evaluation.server._answers import Rejected, board_json, rejected
from evaluation.server._board import Board
from evaluation.server._deps import OptionalCallerDep, StoreDep

router = APIRouter()


@router.get("/api/v1/leaderboard", response_model=Board,
            responses={401: {"model": Rejected}, 404: {"model": Rejected}},
            summary="The board of a phase (default: the current one)")
def get_leaderboard(caller: OptionalCallerDep, store: StoreDep,
                    phase: str | None = None) -> JSONResponse:
    board = store.board(phase, admin=caller is not None and caller.admin)
    return JSONResponse(board_json(board))


@router.get("/", response_class=HTMLResponse, summary="The board as a page",
            responses={404: {"model": Rejected}, 503: {"model": Rejected}})
def page(store: StoreDep, phase: str | None = None) -> Response:
    try:
        # imported when asked for: the page needs Jinja2, the API does not
        from evaluation.server._page import render_board
    except ImportError:
        return rejected(503, "page not available")
    return HTMLResponse(render_board(store.board(phase)))
