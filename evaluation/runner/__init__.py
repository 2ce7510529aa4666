"""Running a model through the challenge: the fold loop, the run directory and its resume, the
run's fingerprint, its typed result and summary, a checkout's model, and the upload to the
leaderboard (through the contract's HTTP client)."""

from evaluation.errors import RunWarning
from evaluation.participant import (
    PeakMemory,
    fold_seed,
    load_model_class,
    model_fingerprint,
    seed_global_generators,
)
from evaluation.runner._checkout import run_checkout
from evaluation.runner._checks import reclist_tests
from evaluation.runner._eligibility import ineligible_because, retarget
from evaluation.runner._fold import (
    FoldJob,
    FoldPredictions,
    PreparedFold,
    compute_fold,
    prepare_fold,
    score_fold,
)
from evaluation.runner._loop import DEFAULT_K, DEFAULT_N_BOOT, EvalRSRunner
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
    PREDICTIONS_FILE,
    Answer,
    UploadSettings,
    load_settings,
    post,
    post_predictions,
    predictions_body,
    submit_run,
)
from evaluation.runner._target import OFFICIAL_COMPETITION
from evaluation.runner._user_values import run_user_values

__all__ = [
    "Answer",
    "CHECKSUMS_FILE",
    "DEFAULT_K",
    "DEFAULT_N_BOOT",
    "EvalRSRunner",
    "FoldJob",
    "FoldPredictions",
    "OFFICIAL_COMPETITION",
    "PREDICTIONS_FILE",
    "PeakMemory",
    "PreparedFold",
    "RunResult",
    "RunWarning",
    "UploadSettings",
    "check_model_params",
    "check_results_dir",
    "collect_params",
    "compute_fold",
    "environment",
    "fold_seed",
    "import_ray",
    "import_reclist",
    "ineligible_because",
    "load_model_class",
    "load_params_file",
    "load_settings",
    "model_fingerprint",
    "parse_param",
    "post",
    "post_predictions",
    "predictions_body",
    "prepare_fold",
    "reclist_tests",
    "retarget",
    "run_checkout",
    "run_user_values",
    "score_fold",
    "seed_global_generators",
    "submit_run",
    "verify_fold",
    "verify_fold_files",
]
