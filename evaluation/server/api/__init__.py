"""The leaderboard's web service: the FastAPI app, its routers, dependencies and handlers.

It owns ``create_app`` (the database migrated and the baselines pinned before serving), the
routers of submissions, the board, reproductions, reproduction jobs, the phases' carries,
health and the docs, the
dependencies that authenticate a caller and read a bounded body, the error handlers that turn
refusals into JSON answers, the JSON answers' models, the cache of rendered boards, the
security headers and uvicorn's header deadline.
"""

from __future__ import annotations

from evaluation.server.api._answers import board_json
from evaluation.server.api._app import create_app
from evaluation.server.api._board_cache import BoardCache
from evaluation.server.api._deps import read_body
from evaluation.server.api._http_protocol import HEADER_TIMEOUT_S, HeaderDeadlineProtocol
from evaluation.server.api._security import SECURITY_HEADERS, SecurityHeaders

__all__ = [
    "BoardCache",
    "HEADER_TIMEOUT_S",
    "HeaderDeadlineProtocol",
    "SECURITY_HEADERS",
    "SecurityHeaders",
    "board_json",
    "create_app",
    "read_body",
]
