"""Ways to cut events into train and test: k-core, leave-one-out folds, temporal splits."""

from evaluation.splits._audit import LeakageAudit, audit_leakage
from evaluation.splits._kcore import kcore_filter
from evaluation.splits._loo import (
    Fold,
    FoldParams,
    bootstrap_folds,
    leave_last_one_out,
    leave_last_out,
)
from evaluation.splits._split import Split
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
]
