"""Running a model through the challenge: the fold loop, the run directory and its resume, the
run's fingerprint, its typed result and summary, and the upload to the leaderboard."""

from evaluation.errors import RunWarning
from evaluation.runner._fingerprint import model_fingerprint
from evaluation.runner._loop import DEFAULT_K, DEFAULT_N_BOOT, EvalRSRunner, reclist_tests
from evaluation.runner._profile import environment
from evaluation.runner._result import RESULTS_FORMAT, RunResult
from evaluation.runner._store import CHECKSUMS_FILE, check_results_dir, run_hash
from evaluation.runner._submit import (
    Answer,
    UploadSettings,
    check_token,
    check_url,
    clean,
    display_url,
    load_settings,
    post,
)

__all__ = [
    "Answer",
    "CHECKSUMS_FILE",
    "DEFAULT_K",
    "DEFAULT_N_BOOT",
    "EvalRSRunner",
    "RESULTS_FORMAT",
    "RunResult",
    "RunWarning",
    "UploadSettings",
    "check_results_dir",
    "check_token",
    "check_url",
    "clean",
    "display_url",
    "environment",
    "load_settings",
    "model_fingerprint",
    "post",
    "reclist_tests",
    "run_hash",
]
