"""Ways to cut events into train and test: k-core, leave-one-out folds, temporal splits."""

from evaluation.splits._audit import LeakageAudit, audit_leakage
from evaluation.splits._cache import fold_cache_path, read_fold, write_fold
from evaluation.splits._kcore import kcore_filter
from evaluation.splits._loo import (
    DEFAULT_SEED,
    SAMPLERS,
    SPLITS,
    EventIndex,
    Fold,
    FoldParams,
    bootstrap_folds,
    leave_last_one_out,
    leave_last_out,
    make_fold,
)
from evaluation.splits._split import Split, check_events, time_values
from evaluation.splits._temporal import global_cut_fold, global_time_split, temporal_user_split

__all__ = [
    "DEFAULT_SEED",
    "EventIndex",
    "Fold",
    "FoldParams",
    "LeakageAudit",
    "SAMPLERS",
    "SPLITS",
    "Split",
    "audit_leakage",
    "bootstrap_folds",
    "check_events",
    "fold_cache_path",
    "global_cut_fold",
    "global_time_split",
    "kcore_filter",
    "leave_last_one_out",
    "leave_last_out",
    "make_fold",
    "read_fold",
    "temporal_user_split",
    "time_values",
    "write_fold",
]
