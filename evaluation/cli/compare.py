"""``python -m evaluation compare``: paired comparisons of finished runs with a baseline."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from evaluation import analysis
from evaluation._util.atomic import atomic_path, write_json, write_text
from evaluation.errors import ConfigError

#: What ``--out`` receives.
CSV_NAME, JSON_NAME, FOREST_NAME = "comparison.csv", "comparison.json", "forest.png"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "compare",
        help="compare finished runs with a baseline: paired tests, corrected p-values",
        description="Compare runs of the same folds and test users with a baseline run: for "
                    "each model, test and score, the difference to the baseline with a paired "
                    "bootstrap interval, bootstrap and permutation p-values, and Holm and "
                    "Benjamini-Hochberg adjusted p-values over the whole model x test table.",
    )
    p.add_argument("runs", nargs="+", metavar="RUN",
                   help="run directories (results/<run id>/) or their results.json")
    p.add_argument("--baseline", default=None, metavar="RUN",
                   help="the baseline run (default: the first RUN); added when not a RUN")
    p.add_argument("--out", default=None, metavar="DIR",
                   help=f"write {CSV_NAME}, {JSON_NAME} (and {FOREST_NAME} with matplotlib) "
                        f"into DIR")
    p.add_argument("--n-boot", type=int, default=None,
                   help="bootstrap replicates (1000, or more where the family of tests is "
                        "large: at least 2 m / alpha - 1 for m tests, so that Holm's "
                        "correction can reach alpha)")
    p.add_argument("--permutations", type=int, default=None,
                   help="random swaps of the permutation test when it is not exact (1000, "
                        "or at least m / alpha - 1)")
    p.add_argument("--seed", type=int, default=0, help="seed of the resampling (0)")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="significance level after Holm's correction; the intervals cover "
                        "1 - alpha (0.05)")
    p.add_argument("--min-difference", type=float, default=0.0, metavar="D",
                   help="the minimum practical difference of the tiers: score differences "
                        "smaller than D are ties however significant (0)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Compare the runs, print the table and write the files; return the exit status."""
    if not 0 < args.alpha < 1:
        raise ConfigError(f"--alpha must lie in (0, 1); got {args.alpha}. Pass e.g. 0.05.")
    runs = list(args.runs)
    baseline = 0 if args.baseline is None else args.baseline
    result = analysis.compare(runs, baseline=baseline, n_boot=args.n_boot, seed=args.seed,
                              level=1 - args.alpha, permutations=args.permutations,
                              alpha=args.alpha, min_difference=args.min_difference)
    # the terminal's width (80 columns when output is not a terminal, or $COLUMNS): the run
    # column wraps, the numbers do not
    console = Console(highlight=False)
    console.print(result)
    if args.out is not None:
        for path in write_outputs(result, args.out):
            print(f"written: {path}", file=sys.stderr)
    return 0


def write_outputs(result, out) -> list[Path]:
    """Write the comparison's CSV and JSON (and its forest plot) into ``out``, atomically.

    Returns
    -------
    list of Path
        The files written.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {str(out)!r} is an existing file; pass a directory (it is "
                          f"created if missing).")
    out.mkdir(parents=True, exist_ok=True)
    write_text(out / CSV_NAME, result.to_frame().to_csv(index=False))
    write_json(out / JSON_NAME, result.to_dict())
    written = [out / CSV_NAME, out / JSON_NAME]
    forest_plot = getattr(analysis, "forest_plot", None)
    if forest_plot is not None and _has_matplotlib():
        fig = forest_plot(result)
        with atomic_path(out / FOREST_NAME) as tmp:
            fig.savefig(tmp, format="png", dpi=100)
        written.append(out / FOREST_NAME)
    return written


def _has_matplotlib() -> bool:
    """Whether matplotlib can be imported (the forest plot needs it)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True
