"""Reading finished runs back and comparing them: typed results, paired tests between models
on the same folds and test users, and multiple-testing corrections."""

from evaluation.analysis._compare import Comparison, check_comparable, compare
from evaluation.analysis._multiple import benjamini_hochberg, holm
from evaluation.analysis._paired import (
    ADDITIVE_TESTS,
    bc_interval,
    paired_bootstrap,
    swap_test,
)
from evaluation.analysis._plots import (
    forest_plot,
    plot_score_distribution,
    plot_slices,
    plot_tests,
)
from evaluation.analysis._report import write_report
from evaluation.analysis._results import SCORES, LoadedRun, load_results

__all__ = [
    "ADDITIVE_TESTS",
    "Comparison",
    "LoadedRun",
    "SCORES",
    "bc_interval",
    "benjamini_hochberg",
    "check_comparable",
    "compare",
    "forest_plot",
    "holm",
    "load_results",
    "paired_bootstrap",
    "plot_score_distribution",
    "plot_slices",
    "plot_tests",
    "swap_test",
    "write_report",
]
