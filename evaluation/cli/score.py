"""``python -m evaluation score``: score a predictions file for one fold, without the model."""

from __future__ import annotations

import argparse
import sys


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "score",
        help="score saved predictions of one fold",
        description="Score a predictions file (parquet or CSV in the predict() format: indexed "
                    "by user_id, columns 0..k-1) against one fold of a dataset, and write the "
                    "test results as JSON.",
    )
    p.add_argument("source", metavar="SOURCE",
                   help='dataset source: "synthetic", "lfm", a directory, or "movielens:PATH"')
    p.add_argument("--fold", type=int, required=True, help="fold to score (0-based)")
    p.add_argument("--predictions", required=True, metavar="FILE",
                   help="predictions file (.parquet or .csv)")
    p.add_argument("--out", required=True, metavar="FILE", help="where to write the JSON report")
    p.add_argument("--scale", default="small", help="synthetic scale: tiny|small|full")
    p.add_argument("--seed", type=int, default=None, help="fold seed (default: the fixed default)")
    p.add_argument("--num-folds", type=int, default=None, help="number of folds of the dataset")
    p.add_argument("--k", type=int, default=100, help="length of the ranked lists (default 100)")
    p.add_argument("--limit", type=int, default=None, help="score only the first N test users")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from evaluation import ChallengeDataset
    from evaluation._atomic import write_json
    from evaluation.reclist import to_jsonable
    from evaluation.scoring import score

    options = {"source": args.source}
    if args.source == "synthetic":
        options["scale"] = args.scale
    if args.seed is not None:
        options["seed"] = args.seed
    if args.num_folds is not None:
        options["num_folds"] = args.num_folds
    dataset = ChallengeDataset(**options)
    report = score(dataset, args.fold, args.predictions, k=args.k, limit=args.limit)
    report = {
        "source": args.source,
        "dataset_fingerprint": dataset.fingerprint,
        "fold_params": to_jsonable(getattr(dataset, "fold_params", None)),
        "predictions": str(args.predictions),
        **report,
    }
    write_json(args.out, report)
    width = max(len(name) for name in report["tests"])
    for name, value in report["tests"].items():
        shown = f"{value:.6f}" if isinstance(value, float) else value
        print(f"{name:<{width}}  {shown}")
    print(f"report written to {args.out}", file=sys.stderr)
    return 0
