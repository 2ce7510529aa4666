"""The records that scoring makes, in the database: submissions and what they bring.

It owns an upload checked, scored and stored once within the daily limit (its receipt, a
submission's view and stored body, a team's own submissions and their results under the
declared alternative protocols), each submission's per-user values
and costs (uploaded or trusted, decoded once per process), the baselines pinned on every board,
the test users a board compares, the organizers' reproductions and the private scores they
bring, the workers' queue (jobs, leases, the reproductions' verdicts, the scoring jobs'
numbers, the queue as a team and the organizers see it: places, estimated starts, workers,
stuck jobs), the teams' final selections (and their fact sheets), the carry of an earlier
phase's submissions into a phase that opens, the rescores of a phase after a harness fix, the
rows of a phase's board in the official order, and the last statistics computed of each board
(shown at once after a restart). Each function takes the ``Database`` it works on.
"""

from __future__ import annotations

from evaluation.server.store._baselines import pin_baselines
from evaluation.server.store._board import phase_board
from evaluation.server.store._carry import (
    Carry,
    carried,
    carry_due,
    carry_opened,
    carry_phase,
)
from evaluation.server.store._finals import FinalMark, mark_final, queue_selections
from evaluation.server.store._job_requests import MAX_FINISH_BYTES
from evaluation.server.store._jobs import (
    JOB_KINDS,
    JOB_STATES,
    JobView,
    Lease,
    job_counts,
    list_jobs,
    retry_job,
)
from evaluation.server.store._leases import claim_job, finish_job, heartbeat_job
from evaluation.server.store._limits import LimitReached
from evaluation.server.store._own_alternatives import OwnAlternative
from evaluation.server.store._queue import (
    Estimate,
    QueueOverview,
    QueuePlace,
    StuckJob,
    TeamQueue,
    WorkerView,
    queue_overview,
    team_queue,
)
from evaluation.server.store._reproductions import record_reproduction
from evaluation.server.store._rescores import (
    RescoreLine,
    RescoreTable,
    apply_rescore,
    cancel_rescore,
    drop_old,
    pending_values,
    rescore_table,
    start_rescore,
)
from evaluation.server.store._robustness import (
    FAILED_ALTERNATIVE,
    SCORED_ALTERNATIVE,
    AlternativeResult,
    alternative_metric_values,
    alternative_results,
    alternative_values,
)
from evaluation.server.store._snapshots import Snapshot, load_snapshot, save_snapshot
from evaluation.server.store._submissions import CLAIMS_REFUSED, check_before_body, submit
from evaluation.server.store._user_values import (
    DECODED_CACHE_BYTES,
    SCORED,
    UPLOAD,
    ComparedUsers,
    FoldCost,
    UserValues,
    compared_users,
    phase_user_values,
    user_scores,
)
from evaluation.server.store._views import (
    OwnSubmission,
    Receipt,
    SubmissionView,
    get_submission,
    own_submissions,
    payload,
    predictions,
)

__all__ = [
    "AlternativeResult",
    "CLAIMS_REFUSED",
    "Carry",
    "ComparedUsers",
    "DECODED_CACHE_BYTES",
    "Estimate",
    "FAILED_ALTERNATIVE",
    "FinalMark",
    "FoldCost",
    "JOB_KINDS",
    "JOB_STATES",
    "JobView",
    "Lease",
    "LimitReached",
    "MAX_FINISH_BYTES",
    "OwnAlternative",
    "OwnSubmission",
    "QueueOverview",
    "QueuePlace",
    "Receipt",
    "RescoreLine",
    "RescoreTable",
    "SCORED",
    "SCORED_ALTERNATIVE",
    "Snapshot",
    "StuckJob",
    "SubmissionView",
    "TeamQueue",
    "UPLOAD",
    "UserValues",
    "WorkerView",
    "alternative_metric_values",
    "alternative_results",
    "alternative_values",
    "apply_rescore",
    "cancel_rescore",
    "carried",
    "carry_due",
    "carry_opened",
    "carry_phase",
    "check_before_body",
    "claim_job",
    "compared_users",
    "drop_old",
    "finish_job",
    "get_submission",
    "heartbeat_job",
    "job_counts",
    "list_jobs",
    "load_snapshot",
    "mark_final",
    "own_submissions",
    "payload",
    "pending_values",
    "phase_board",
    "phase_user_values",
    "pin_baselines",
    "predictions",
    "queue_overview",
    "queue_selections",
    "record_reproduction",
    "rescore_table",
    "retry_job",
    "save_snapshot",
    "start_rescore",
    "submit",
    "team_queue",
    "user_scores",
]
