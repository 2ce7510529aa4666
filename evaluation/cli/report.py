"""``python -m evaluation report``: the HTML report and figures of one or more finished runs."""

from __future__ import annotations

from evaluation.cli._commands import command


def register(subparsers) -> None:
    """Add the ``report`` command to ``subparsers``."""
    p = subparsers.add_parser(
        "report",
        help="write an HTML report (and PNG figures) of finished runs",
        description="Write report.html, one self-contained file with the figures embedded, and "
                    "the same figures as PNG: the nine tests per fold and overall with their "
                    "intervals, the miss rate per slice group, the leaderboard score's "
                    "bootstrap distribution; with several runs also their comparison with the "
                    "baseline (forest plot and table, corrected for multiple testing).",
    )
    p.add_argument("runs", nargs="+", metavar="RUN_DIR",
                   help="a run directory (results/<run id>) or its results.json")
    p.add_argument("--baseline", metavar="RUN_DIR", default=None,
                   help="with several runs, the run the others are compared to (default: the "
                        "first RUN_DIR; added to the runs when it is not one of them)")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="output directory (default: RUN_DIR/report of the first run)")
    p.add_argument("--n-boot", type=int, default=None, metavar="N",
                   help="bootstrap replicates of the figures (and of the comparison) "
                        "(default: each run's own)")
    p.add_argument("--seed", type=int, default=None, metavar="S",
                   help="seed of that bootstrap (default: each run's own)")
    p.set_defaults(func=command("_report_run", "run"))
