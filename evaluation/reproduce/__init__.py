"""Reproducing a leaderboard submission from the participant's checkout.

``python -m evaluation reproduce CHECKOUT --submission ID --server URL --admin-token-file FILE``
checks the checkout (no link leading out of it, not too large), builds a read-only environment
for it with uv (its requirements, package specifiers only, and this harness; wheels from the
organizer's index), runs its model in a bubblewrap sandbox under budgets for its whole process
tree, where the model only trains and predicts, scores the predictions here with the harness's
own code, compares the per-fold test values and the model fingerprint with the upload, and
sends the verdict (its log scrubbed of the token and the seed) to the leaderboard.
``reproduce --many submissions.csv`` does it for every line of a batch file, in this process or
as Ray tasks, and reports a table; ``python -m evaluation worker`` does it for the jobs it
claims from the leaderboard's reproduction queue.
"""

from evaluation.reproduce._batch import BatchRow, read_batch
from evaluation.reproduce._budgets import Budgets
from evaluation.reproduce._checkout import vendored_warning
from evaluation.reproduce._client import LeaderboardClient, LostLease, Refused
from evaluation.reproduce._compare import (
    EQUAL_TOLERANCE,
    NOT_REPRODUCED,
    REPRODUCED,
    Comparison,
    Row,
    classify,
    compare,
    compare_folds,
    fingerprint_differences,
)
from evaluation.reproduce._declared import alternative_score, declared_protocols
from evaluation.reproduce._env import env_key, env_python, harness_digest, prepare_env
from evaluation.reproduce._many import (
    ERROR,
    EXECUTORS,
    REPORT_FILE,
    BatchSettings,
    RowResult,
    exit_status,
    reproduce_many,
    run_row,
    write_report,
)
from evaluation.reproduce._reproduce import (
    DEFAULT_MEMORY_MB,
    DEFAULT_PROCESSES,
    DEFAULT_SCRATCH_MB,
    DEFAULT_TIMEOUT_S,
    MAX_LOG_TAIL_BYTES,
    Reproduction,
    alternative_lines,
    check_checkout,
    child_environment,
    read_private_seed,
    remove_env,
    reproduce,
    worker_config,
)
from evaluation.reproduce._requirements import Specifiers, read_requirements
from evaluation.reproduce._sandbox import (
    Bind,
    SandboxReport,
    SandboxUnavailable,
    run_sandboxed,
    sandbox_problem,
)
from evaluation.reproduce._scrub import log_tail, scrub
from evaluation.reproduce._table import (
    batch_table,
    comparison_table,
    print_batch,
    print_comparison,
)
from evaluation.reproduce._worker import (
    DEFAULT_LEASE_S,
    DEFAULT_POLL_S,
    Job,
    Worker,
    WorkerSettings,
    find_checkout,
)

__all__ = [
    "BatchRow",
    "BatchSettings",
    "Bind",
    "Budgets",
    "Comparison",
    "DEFAULT_LEASE_S",
    "DEFAULT_MEMORY_MB",
    "DEFAULT_POLL_S",
    "DEFAULT_PROCESSES",
    "DEFAULT_SCRATCH_MB",
    "DEFAULT_TIMEOUT_S",
    "EQUAL_TOLERANCE",
    "ERROR",
    "EXECUTORS",
    "Job",
    "LeaderboardClient",
    "LostLease",
    "MAX_LOG_TAIL_BYTES",
    "NOT_REPRODUCED",
    "REPORT_FILE",
    "REPRODUCED",
    "Refused",
    "Reproduction",
    "Row",
    "RowResult",
    "SandboxReport",
    "SandboxUnavailable",
    "Specifiers",
    "Worker",
    "WorkerSettings",
    "alternative_lines",
    "alternative_score",
    "batch_table",
    "check_checkout",
    "child_environment",
    "classify",
    "compare",
    "compare_folds",
    "comparison_table",
    "declared_protocols",
    "env_key",
    "env_python",
    "exit_status",
    "find_checkout",
    "fingerprint_differences",
    "harness_digest",
    "log_tail",
    "prepare_env",
    "print_batch",
    "print_comparison",
    "read_batch",
    "read_private_seed",
    "read_requirements",
    "remove_env",
    "reproduce",
    "reproduce_many",
    "run_row",
    "run_sandboxed",
    "sandbox_problem",
    "scrub",
    "vendored_warning",
    "worker_config",
    "write_report",
]
