"""The leaderboard service: receives, checks, scores and ranks challenge submissions.

Optional: it needs the server extra (``pip install .[server]``: FastAPI, uvicorn, SQLAlchemy,
Alembic, Jinja2). Nothing else in the harness imports it; the ``serve`` and ``admin`` commands
do, when they run.
"""

from evaluation.errors import SubmissionRejected
from evaluation.server._answers import board_json
from evaluation.server._app import create_app
from evaluation.server._board import REPRODUCTION_STATES, Board, BoardRow
from evaluation.server._competition import BaselineSpec, Competition, Phase, load_competition
from evaluation.server._db import is_current, make_engine, shown_url, upgrade
from evaluation.server._db_files import (
    backup,
    check_integrity,
    describe,
    in_use,
    restore,
    sqlite_path,
)
from evaluation.server._deps import read_body
from evaluation.server._http_protocol import HEADER_TIMEOUT_S, HeaderDeadlineProtocol
from evaluation.server._reproduction import (
    MAX_LOG_TAIL_BYTES,
    VERDICTS,
    ReproductionReport,
    parse_reproduction,
)
from evaluation.server._schema import MAX_BODY_BYTES, Submission, parse_submission
from evaluation.server._scoring import Scores, claimed_differs, recompute
from evaluation.server._security import SECURITY_HEADERS, SecurityHeaders
from evaluation.server._store import Store
from evaluation.server._store_auth import AdminTokenInfo, Caller
from evaluation.server._store_submissions import LimitReached
from evaluation.server._store_teams import TeamInfo
from evaluation.server._store_views import Receipt, SubmissionView
from evaluation.server._tables import (
    AdminTokenRow,
    Base,
    PhaseRevealRow,
    ReproductionRow,
    SubmissionRow,
    TeamRow,
)
from evaluation.server._team_names import check_email, check_team_name
from evaluation.server._tokens import hash_token, matches, new_token

#: The tables' metadata (what the migrations build).
metadata = Base.metadata

__all__ = [
    "AdminTokenInfo",
    "AdminTokenRow",
    "Base",
    "BaselineSpec",
    "Board",
    "BoardRow",
    "Caller",
    "Competition",
    "HEADER_TIMEOUT_S",
    "HeaderDeadlineProtocol",
    "LimitReached",
    "MAX_BODY_BYTES",
    "MAX_LOG_TAIL_BYTES",
    "Phase",
    "PhaseRevealRow",
    "REPRODUCTION_STATES",
    "Receipt",
    "ReproductionReport",
    "ReproductionRow",
    "SECURITY_HEADERS",
    "Scores",
    "SecurityHeaders",
    "Store",
    "Submission",
    "SubmissionRejected",
    "SubmissionRow",
    "SubmissionView",
    "TeamInfo",
    "TeamRow",
    "VERDICTS",
    "backup",
    "board_json",
    "check_email",
    "check_integrity",
    "check_team_name",
    "claimed_differs",
    "create_app",
    "describe",
    "hash_token",
    "in_use",
    "is_current",
    "load_competition",
    "make_engine",
    "matches",
    "metadata",
    "new_token",
    "parse_reproduction",
    "parse_submission",
    "read_body",
    "recompute",
    "restore",
    "shown_url",
    "sqlite_path",
    "upgrade",
]
