"""Running a model through the challenge: the fold loop, the run directory and its resume, the
run's fingerprint, its typed result and summary, and the upload to the leaderboard."""

from evaluation._util.deprecation import moved
from evaluation.errors import RunWarning
from evaluation.runner._fingerprint import model_fingerprint
from evaluation.runner._loop import DEFAULT_K, DEFAULT_N_BOOT, EvalRSRunner, reclist_tests
from evaluation.runner._profile import environment
from evaluation.runner._ray import import_ray
from evaluation.runner._result import RunResult
from evaluation.runner._settings import (
    check_model_params,
    collect_params,
    import_reclist,
    load_params_file,
    parse_param,
)
from evaluation.runner._store import (
    CHECKSUMS_FILE,
    check_results_dir,
    verify_fold,
    verify_fold_files,
)
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
from evaluation.runner._target import OFFICIAL_COMPETITION

__all__ = [
    "Answer",
    "CHECKSUMS_FILE",
    "DEFAULT_K",
    "DEFAULT_N_BOOT",
    "EvalRSRunner",
    "OFFICIAL_COMPETITION",
    "RunResult",
    "RunWarning",
    "UploadSettings",
    "check_model_params",
    "check_results_dir",
    "check_token",
    "check_url",
    "clean",
    "collect_params",
    "display_url",
    "environment",
    "import_ray",
    "import_reclist",
    "load_params_file",
    "load_settings",
    "model_fingerprint",
    "parse_param",
    "post",
    "reclist_tests",
    "verify_fold",
    "verify_fold_files",
]

# The results format, the run hash and the competition file are the contract's now (shared with
# the leaderboard server); the old paths keep working for one release.
__getattr__ = moved("evaluation.runner", "evaluation.contract",
                    ("CompetitionTarget", "RESULTS_FORMAT", "load_competition_target",
                     "read_competition_toml", "run_hash"))
