"""The leaderboard service: receives, checks, scores and ranks challenge submissions.

Optional: it needs the server extra (``pip install .[server]``: FastAPI, uvicorn, SQLAlchemy,
Alembic, Jinja2). Nothing else in the harness imports it; the ``serve`` and ``admin`` commands
do, when they run.

Its names are imported when first used (``evaluation.server.Store`` imports the store, not
the web framework nor the scoring): an ``admin`` command on teams and tokens then starts in
well under a second.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evaluation.errors import SubmissionRejected
    from evaluation.server._answers import board_json
    from evaluation.server._app import create_app
    from evaluation.server._board import REPRODUCTION_STATES, Board, BoardRow
    from evaluation.server._competition import (
        BaselineSpec,
        Competition,
        Phase,
        load_competition,
    )
    from evaluation.server._competition_keys import BoardSettings
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
    from evaluation.server._schema import (
        MAX_BODY_BYTES,
        MAX_REPORT_BYTES,
        Submission,
        parse_submission,
    )
    from evaluation.server._scoring import Scores, claimed_differs, recompute
    from evaluation.server._security import SECURITY_HEADERS, SecurityHeaders
    from evaluation.server._store import Store
    from evaluation.server._store_auth import AdminTokenInfo, Caller
    from evaluation.server._store_jobs import JOB_STATES, JobView, Lease
    from evaluation.server._store_reveals import scores_shown, visibility
    from evaluation.server._store_submissions import LimitReached
    from evaluation.server._store_teams import TeamInfo
    from evaluation.server._store_user_values import FoldCost, UserValues
    from evaluation.server._store_views import Receipt, SubmissionView
    from evaluation.server._tables import (
        AdminTokenRow,
        Base,
        PhaseRevealRow,
        ReproductionJobRow,
        ReproductionRow,
        SubmissionRow,
        TeamRow,
        UserValuesRow,
    )
    from evaluation.server._team_names import check_email, check_team_name
    from evaluation.server._tokens import hash_token, matches, new_token

    #: The tables' metadata (what the migrations build).
    metadata = Base.metadata

# name -> (module, name in it): imported on first use
_LAZY: dict[str, tuple[str, str]] = {
    "AdminTokenInfo": ("evaluation.server._store_auth", "AdminTokenInfo"),
    "AdminTokenRow": ("evaluation.server._tables", "AdminTokenRow"),
    "Base": ("evaluation.server._tables", "Base"),
    "BaselineSpec": ("evaluation.server._competition", "BaselineSpec"),
    "Board": ("evaluation.server._board", "Board"),
    "BoardRow": ("evaluation.server._board", "BoardRow"),
    "BoardSettings": ("evaluation.server._competition_keys", "BoardSettings"),
    "FoldCost": ("evaluation.server._store_user_values", "FoldCost"),
    "Caller": ("evaluation.server._store_auth", "Caller"),
    "Competition": ("evaluation.server._competition", "Competition"),
    "HEADER_TIMEOUT_S": ("evaluation.server._http_protocol", "HEADER_TIMEOUT_S"),
    "HeaderDeadlineProtocol": ("evaluation.server._http_protocol", "HeaderDeadlineProtocol"),
    "JOB_STATES": ("evaluation.server._store_jobs", "JOB_STATES"),
    "JobView": ("evaluation.server._store_jobs", "JobView"),
    "Lease": ("evaluation.server._store_jobs", "Lease"),
    "LimitReached": ("evaluation.server._store_submissions", "LimitReached"),
    "MAX_BODY_BYTES": ("evaluation.server._schema", "MAX_BODY_BYTES"),
    "MAX_LOG_TAIL_BYTES": ("evaluation.server._reproduction", "MAX_LOG_TAIL_BYTES"),
    "MAX_REPORT_BYTES": ("evaluation.server._schema", "MAX_REPORT_BYTES"),
    "Phase": ("evaluation.server._competition", "Phase"),
    "PhaseRevealRow": ("evaluation.server._tables", "PhaseRevealRow"),
    "REPRODUCTION_STATES": ("evaluation.server._board", "REPRODUCTION_STATES"),
    "Receipt": ("evaluation.server._store_views", "Receipt"),
    "ReproductionJobRow": ("evaluation.server._tables", "ReproductionJobRow"),
    "ReproductionReport": ("evaluation.server._reproduction", "ReproductionReport"),
    "ReproductionRow": ("evaluation.server._tables", "ReproductionRow"),
    "SECURITY_HEADERS": ("evaluation.server._security", "SECURITY_HEADERS"),
    "Scores": ("evaluation.server._scoring", "Scores"),
    "SecurityHeaders": ("evaluation.server._security", "SecurityHeaders"),
    "Store": ("evaluation.server._store", "Store"),
    "Submission": ("evaluation.server._schema", "Submission"),
    "SubmissionRejected": ("evaluation.errors", "SubmissionRejected"),
    "SubmissionRow": ("evaluation.server._tables", "SubmissionRow"),
    "SubmissionView": ("evaluation.server._store_views", "SubmissionView"),
    "TeamInfo": ("evaluation.server._store_teams", "TeamInfo"),
    "TeamRow": ("evaluation.server._tables", "TeamRow"),
    "UserValues": ("evaluation.server._store_user_values", "UserValues"),
    "UserValuesRow": ("evaluation.server._tables", "UserValuesRow"),
    "VERDICTS": ("evaluation.server._reproduction", "VERDICTS"),
    "backup": ("evaluation.server._db_files", "backup"),
    "board_json": ("evaluation.server._answers", "board_json"),
    "check_email": ("evaluation.server._team_names", "check_email"),
    "check_integrity": ("evaluation.server._db_files", "check_integrity"),
    "check_team_name": ("evaluation.server._team_names", "check_team_name"),
    "claimed_differs": ("evaluation.server._scoring", "claimed_differs"),
    "create_app": ("evaluation.server._app", "create_app"),
    "describe": ("evaluation.server._db_files", "describe"),
    "hash_token": ("evaluation.server._tokens", "hash_token"),
    "in_use": ("evaluation.server._db_files", "in_use"),
    "is_current": ("evaluation.server._db", "is_current"),
    "load_competition": ("evaluation.server._competition", "load_competition"),
    "make_engine": ("evaluation.server._db", "make_engine"),
    "matches": ("evaluation.server._tokens", "matches"),
    "new_token": ("evaluation.server._tokens", "new_token"),
    "parse_reproduction": ("evaluation.server._reproduction", "parse_reproduction"),
    "parse_submission": ("evaluation.server._schema", "parse_submission"),
    "read_body": ("evaluation.server._deps", "read_body"),
    "recompute": ("evaluation.server._scoring", "recompute"),
    "restore": ("evaluation.server._db_files", "restore"),
    "scores_shown": ("evaluation.server._store_reveals", "scores_shown"),
    "shown_url": ("evaluation.server._db", "shown_url"),
    "sqlite_path": ("evaluation.server._db_files", "sqlite_path"),
    "upgrade": ("evaluation.server._db", "upgrade"),
    "visibility": ("evaluation.server._store_reveals", "visibility"),
}


def __getattr__(name: str) -> Any:
    if name == "metadata":  # the tables' metadata (what the migrations build)
        return __getattr__("Base").metadata
    try:
        module, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    # importlib: this package's own modules, by the table above (PEP 562), so that
    # importing the server package stays light
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "AdminTokenInfo",
    "AdminTokenRow",
    "Base",
    "BaselineSpec",
    "Board",
    "BoardRow",
    "BoardSettings",
    "Caller",
    "Competition",
    "FoldCost",
    "HEADER_TIMEOUT_S",
    "HeaderDeadlineProtocol",
    "JOB_STATES",
    "JobView",
    "Lease",
    "LimitReached",
    "MAX_BODY_BYTES",
    "MAX_LOG_TAIL_BYTES",
    "MAX_REPORT_BYTES",
    "Phase",
    "PhaseRevealRow",
    "REPRODUCTION_STATES",
    "Receipt",
    "ReproductionJobRow",
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
    "UserValues",
    "UserValuesRow",
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
    "scores_shown",
    "shown_url",
    "sqlite_path",
    "upgrade",
    "visibility",
]
