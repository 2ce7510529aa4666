"""``python -m evaluation score``: score a predictions file for one fold, without the model."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from evaluation._util.arrays import sorted_unique
from evaluation._util.atomic import write_json
from evaluation._util.jsonable import to_jsonable
from evaluation.challenge import read_predictions, score
from evaluation.contract import FOLD_PARAMS_KEY
from evaluation.dataset import ChallengeDataset
from evaluation.errors import show_values


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
    """Score the predictions file of ``args`` and write the report; return the exit status."""
    options = {"source": args.source}
    if args.source == "synthetic":
        options["scale"] = args.scale
    if args.seed is not None:
        options["seed"] = args.seed
    if args.num_folds is not None:
        options["num_folds"] = args.num_folds
    if args.limit is not None and args.limit < 0:
        print(f"error: --limit must be >= 0 (0 scores every test user), got {args.limit}",
              file=sys.stderr)
        return 2
    dataset = ChallengeDataset(**options)
    predictions = read_predictions(args.predictions)
    cut_off = None
    if args.limit:
        predictions, cut_off = _drop_cut_off(dataset, args.fold, predictions, args.limit)
    report = score(dataset, args.fold, predictions, k=args.k, limit=args.limit)
    if cut_off is not None:
        # The users past the limit are test users left out on purpose, not strangers.
        report["limit"] = {"scored_users": report["num_users"],
                           "cut_off_users": int(len(cut_off)),
                           "cut_off_user_ids": show_values(cut_off)}
        if len(cut_off):
            print(f"--limit {args.limit}: scored the first {report['num_users']} test users "
                  f"(by user id); {len(cut_off)} test users cut off: {show_values(cut_off)}",
                  file=sys.stderr)
    report = {
        "source": args.source,
        "dataset_fingerprint": dataset.fingerprint,
        FOLD_PARAMS_KEY: to_jsonable(getattr(dataset, "fold_params", None)),
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


def _drop_cut_off(dataset, fold: int, predictions, limit: int):
    """Predictions without the rows of the test users that ``limit`` cuts off, and their ids.

    ``get_test_set(fold, limit)`` keeps the first ``limit`` test users by user id; a file
    predicted for the whole fold also holds rows for the others, which are dropped here
    rather than reported as rows for users that are not test users.
    """
    users = dataset.get_test_set(fold)["user_id"].to_numpy()
    cut_off = sorted_unique(users[limit:])
    if "user_id" in predictions.columns:
        ids = predictions["user_id"].to_numpy()
    else:
        ids = predictions.index.to_numpy()
    try:
        drop = np.isin(ids, cut_off)
    except TypeError:  # ids of another type: leave them to the prediction checks
        return predictions, cut_off
    return predictions[~drop], cut_off
