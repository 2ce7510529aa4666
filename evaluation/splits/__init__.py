"""Ways to cut events into train and test: k-core, leave-one-out folds, temporal splits."""

from evaluation.splits._audit import LeakageAudit, audit_leakage
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
from evaluation.splits._temporal import global_time_split, temporal_user_split

__all__ = [
    # k-core and leave-one-out folds
    "Fold",
    "FoldParams",
    "bootstrap_folds",
    "kcore_filter",
    "leave_last_one_out",
    "leave_last_out",
    # temporal splits, the Split they return, the leakage audit
    "LeakageAudit",
    "Split",
    "audit_leakage",
    "global_time_split",
    "temporal_user_split",
    # the pieces ChallengeDataset and the CLI build folds and check events with
    "DEFAULT_SEED",
    "SAMPLERS",
    "SPLITS",
    "EventIndex",
    "check_events",
    "make_fold",
    "time_values",
]
