"""What the competition and a submission are: parsed, checked and scored, with no database.

It owns the competition file (its phases, board settings and baselines), the schema of an
uploaded submission and of a reproduction report, the requests of the reproduction workers,
the scoring of a submission from its per-user values (and whether its claimed scores differ),
the checks of those per-user values, a predictions upload read strictly, a scoring job's
report turned into a submission's numbers, a final selection's fact sheet checked, and the
board's data model (``Board``, its rows and paired statistics, a team's standing) that the
store fills and the API and the page show.
"""

from __future__ import annotations

from evaluation.server.core._board import (
    REPRODUCTION_STATES,
    Board,
    BoardRow,
    BoardStandings,
    FactSheet,
    FrontMember,
    Opponent,
    RowCosts,
    RowStanding,
    TeamStanding,
    guarantee,
)
from evaluation.server.core._competition import BaselineSpec, Competition, Phase, load_competition
from evaluation.server.core._competition_keys import (
    DEFAULT_REPRODUCE_ATTEMPTS,
    ROBUSTNESS_KINDS,
    BoardSettings,
    RobustnessProtocol,
)
from evaluation.server.core._fact_sheet import MAX_DESCRIPTION, MAX_URL, read_fact_sheet
from evaluation.server.core._predictions import PredictionUpload, read_prediction_upload
from evaluation.server.core._reproduction import (
    MAX_LOG_TAIL_BYTES,
    VERDICTS,
    AlternativeReport,
    ReproductionReport,
    check_reproduction,
    parse_reproduction,
)
from evaluation.server.core._robustness import (
    ROBUSTNESS_STATES,
    AlternativeFailure,
    BoardRobustness,
    ProtocolCertificate,
    TeamFragilityMark,
)
from evaluation.server.core._schema import (
    MAX_BODY_BYTES,
    MAX_DEPTH,
    MAX_REPORT_BYTES,
    TEST_RANGES,
    Submission,
    canonical_json,
    describe_invalid,
    parse_submission,
    read_submission,
    strict_json,
)
from evaluation.server.core._scored import Scored, read_scored
from evaluation.server.core._scoring import (
    EXACT_MAX_FOLDS,
    N_RESAMPLES,
    Scores,
    claimed_differs,
    recompute,
    references_sha256,
)
from evaluation.server.core._user_values import (
    CheckedValues,
    check_agreement,
    check_ranges,
    fold_users,
    read_blob,
    read_costs,
    read_metric_blob,
    read_uploaded,
)

__all__ = [
    "AlternativeFailure",
    "AlternativeReport",
    "BaselineSpec",
    "Board",
    "BoardRobustness",
    "BoardRow",
    "BoardSettings",
    "BoardStandings",
    "CheckedValues",
    "Competition",
    "DEFAULT_REPRODUCE_ATTEMPTS",
    "EXACT_MAX_FOLDS",
    "FactSheet",
    "FrontMember",
    "MAX_BODY_BYTES",
    "MAX_DEPTH",
    "MAX_DESCRIPTION",
    "MAX_LOG_TAIL_BYTES",
    "MAX_REPORT_BYTES",
    "MAX_URL",
    "N_RESAMPLES",
    "Opponent",
    "Phase",
    "PredictionUpload",
    "ProtocolCertificate",
    "REPRODUCTION_STATES",
    "ROBUSTNESS_KINDS",
    "ROBUSTNESS_STATES",
    "ReproductionReport",
    "RobustnessProtocol",
    "RowCosts",
    "RowStanding",
    "Scored",
    "Scores",
    "Submission",
    "TEST_RANGES",
    "TeamFragilityMark",
    "TeamStanding",
    "VERDICTS",
    "canonical_json",
    "check_agreement",
    "check_ranges",
    "check_reproduction",
    "claimed_differs",
    "describe_invalid",
    "fold_users",
    "guarantee",
    "load_competition",
    "parse_reproduction",
    "parse_submission",
    "read_blob",
    "read_costs",
    "read_fact_sheet",
    "read_metric_blob",
    "read_prediction_upload",
    "read_scored",
    "read_submission",
    "read_uploaded",
    "recompute",
    "references_sha256",
    "strict_json",
]
