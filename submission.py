"""Evaluate ``submission/MyModel.py`` on the EvalRS folds, save the results, optionally upload.

    python submission.py                       # the embedded synthetic dataset, 4 folds
    python submission.py --source lfm --upload # the real challenge data, then submit
    python submission.py --scale tiny --limit 50 --folds 2   # a quick local check

Settings for the leaderboard (EMAIL, PARTICIPANT_ID, UPLOAD_URL, UPLOAD_TOKEN) come from
``upload.env`` next to this file (see ``upload.env.example``) or from the environment.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source", default="synthetic",
                   help="dataset: synthetic (default), lfm, a directory in the EvalRS schema, "
                        "or movielens:PATH")
    p.add_argument("--scale", default="small", choices=["tiny", "small", "full"],
                   help="size of the synthetic dataset (default: small)")
    p.add_argument("--folds", type=int, default=4,
                   help="number of folds (default 4; other counts are not eligible for upload)")
    p.add_argument("--seed", type=int, default=None,
                   help="fold seed (default: the fixed challenge seed 42)")
    p.add_argument("--limit", type=int, default=0,
                   help="score only the first N test users per fold (0: all; N > 0 is not "
                        "eligible for upload)")
    p.add_argument("--upload", action="store_true",
                   help="submit the results (saved locally when no UPLOAD_URL is configured)")
    p.add_argument("--results-dir", default=str(HERE / "results"),
                   help="where run directories go (default: ./results)")
    p.add_argument("--fresh", action="store_true",
                   help="recompute every fold instead of resuming an interrupted run")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from dotenv import load_dotenv

    load_dotenv(HERE / "upload.env", override=False)
    sys.path.insert(0, str(HERE))
    from evaluation import ChallengeDataset, EvalRSRunner
    from evaluation.errors import EvalRSError
    from submission.MyModel import MyModel

    try:
        options = {"scale": args.scale} if args.source == "synthetic" else {}
        dataset = ChallengeDataset(source=args.source, seed=args.seed, num_folds=args.folds,
                                   **options)
        runner = EvalRSRunner(
            dataset,
            results_dir=args.results_dir,
            progress=not args.no_progress,
            email=os.environ.get("EMAIL") or None,
            participant_id=os.environ.get("PARTICIPANT_ID") or None,
            upload_url=os.environ.get("UPLOAD_URL") or None,
            upload_token=os.environ.get("UPLOAD_TOKEN") or None,
        )
        model = MyModel(items=dataset.df_tracks, top_k=runner.k)
        runner.evaluate(model, seed=args.seed, limit=args.limit, upload=args.upload,
                        resume=not args.fresh)
    except EvalRSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
