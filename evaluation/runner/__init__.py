"""Running a model through the challenge: the fold loop, the run directory and its resume, the
run's fingerprint, its typed result and summary, and the upload to the leaderboard."""

from evaluation.errors import RunWarning
from evaluation.runner._fingerprint import model_fingerprint
from evaluation.runner._legacy import LegacyChallengeDataset, LegacyEvalRSRunner
from evaluation.runner._loop import DEFAULT_K, DEFAULT_N_BOOT, EvalRSRunner, reclist_tests
from evaluation.runner._profile import environment
from evaluation.runner._ray import import_ray
from evaluation.runner._result import RESULTS_FORMAT, RunResult
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
    run_hash,
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
from evaluation.runner._target import (
    OFFICIAL_COMPETITION,
    CompetitionTarget,
    load_competition_target,
    read_competition_toml,
)

__all__ = [
    "Answer",
    "CHECKSUMS_FILE",
    "CompetitionTarget",
    "DEFAULT_K",
    "DEFAULT_N_BOOT",
    "EvalRSRunner",
    "LegacyChallengeDataset",
    "LegacyEvalRSRunner",
    "OFFICIAL_COMPETITION",
    "RESULTS_FORMAT",
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
    "load_competition_target",
    "load_params_file",
    "load_settings",
    "model_fingerprint",
    "parse_param",
    "post",
    "read_competition_toml",
    "reclist_tests",
    "run_hash",
    "verify_fold",
    "verify_fold_files",
]
