"""Reproducing a leaderboard submission from the participant's checkout.

``python -m evaluation reproduce CHECKOUT --submission ID --server URL --admin-token-file FILE``
builds an isolated environment for the checkout (its requirements and this harness), runs the
official evaluation there under a wall-clock and a memory limit, compares the per-fold test
values and the model fingerprint with the upload, and sends the verdict to the leaderboard.
"""

from evaluation.reproduce._client import LeaderboardClient
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
from evaluation.reproduce._env import env_key, env_python, harness_digest, prepare_env
from evaluation.reproduce._limits import Outcome, log_tail, run_limited
from evaluation.reproduce._reproduce import (
    DEFAULT_MEMORY_MB,
    DEFAULT_TIMEOUT_S,
    MAX_LOG_TAIL_BYTES,
    Reproduction,
    check_checkout,
    child_environment,
    read_private_seed,
    remove_env,
    reproduce,
    worker_config,
)
from evaluation.reproduce._table import comparison_table, print_comparison

__all__ = [
    "Comparison",
    "DEFAULT_MEMORY_MB",
    "DEFAULT_TIMEOUT_S",
    "EQUAL_TOLERANCE",
    "LeaderboardClient",
    "MAX_LOG_TAIL_BYTES",
    "NOT_REPRODUCED",
    "Outcome",
    "REPRODUCED",
    "Reproduction",
    "Row",
    "check_checkout",
    "child_environment",
    "classify",
    "compare",
    "compare_folds",
    "comparison_table",
    "env_key",
    "env_python",
    "fingerprint_differences",
    "harness_digest",
    "log_tail",
    "prepare_env",
    "print_comparison",
    "read_private_seed",
    "remove_env",
    "reproduce",
    "run_limited",
    "worker_config",
]
