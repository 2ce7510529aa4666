"""Running a model through the challenge: the fold loop, the run directory and its resume, the
run's fingerprint, the summary and the upload."""

from evaluation.runner._loop import (
    CHECKSUMS_FILE,
    DEFAULT_N_BOOT,
    EvalRSRunner,
    RunWarning,
    run_hash,
)

__all__ = ["CHECKSUMS_FILE", "DEFAULT_N_BOOT", "EvalRSRunner", "RunWarning", "run_hash"]
