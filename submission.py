"""Evaluate ``submission/MyModel.py`` on the EvalRS folds, save the results, optionally upload.

    python submission.py                       # the embedded synthetic dataset, 4 folds
    python submission.py --source lfm --upload # the real challenge data, then submit
    python submission.py --scale tiny --limit 50 --num-folds 2   # a quick local check

Settings for the leaderboard (EMAIL, PARTICIPANT_ID, UPLOAD_URL, UPLOAD_TOKEN) come from
``upload.env`` next to this file (see ``upload.env.example``) or from the environment; the file
is read only with ``--upload``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evaluation import ChallengeDataset, EvalRSRunner
from evaluation.cli import EXIT_NOT_ELIGIBLE, EXIT_STATUS_HELP, EXIT_UPLOAD_FAILED, guarded
from evaluation.runner import UploadSettings, load_settings

HERE = Path(__file__).resolve().parent


def build_parser() -> argparse.ArgumentParser:
    """Return the parser of submission.py's options."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=EXIT_STATUS_HELP,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source", default="synthetic",
                   help="dataset: synthetic (default), lfm, a directory in the EvalRS schema, "
                        "or movielens:PATH")
    p.add_argument("--scale", default="small", choices=["tiny", "small", "full"],
                   help="size of the synthetic dataset (default: small)")
    p.add_argument("--num-folds", type=int, default=None, metavar="N",
                   help="number of folds (default 4; other counts are not eligible for upload)")
    # the name before --num-folds (which the other commands use); warns, not in --help
    p.add_argument("--folds", type=int, default=None, dest="old_folds", help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, default=None,
                   help="fold seed (default: the fixed challenge seed 42)")
    p.add_argument("--limit", type=int, default=0,
                   help="score only the first N test users per fold (0: all; N > 0 is not "
                        "eligible for upload)")
    p.add_argument("--upload", action="store_true",
                   help="submit the results (saved locally when no UPLOAD_URL is configured)")
    p.add_argument("--env-file", default=None, metavar="PATH",
                   help="upload settings, read only with --upload (default: upload.env next "
                        "to this file, if present; environment variables win)")
    p.add_argument("--results-dir", default=str(HERE / "results"),
                   help="where run directories go (default: ./results)")
    p.add_argument("--fresh", action="store_true",
                   help="recompute every fold instead of resuming an interrupted run")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Return the parsed options; the deprecated ``--folds`` becomes ``--num-folds``, with a
    warning on stderr."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.old_folds is not None:
        if args.num_folds is not None:
            parser.error("--folds is the old name of --num-folds: give --num-folds only")
        print("warning: --folds is deprecated, use --num-folds (--folds will be removed in the "
              "next release)", file=sys.stderr)
        args.num_folds = args.old_folds
    if args.num_folds is None:
        args.num_folds = 4
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the evaluation (and the upload); the exit status is in ``--help``."""
    args = parse_args(argv)
    sys.path.insert(0, str(HERE))
    return guarded(lambda: _evaluate(args),
                   interrupted="interrupted: the finished folds are kept; run the same command "
                               "again to resume")


def _evaluate(args: argparse.Namespace) -> int:
    """Run the model through the folds (and upload); returns the exit status."""
    # Imported here, under guarded(): an error in the participant's module is then reported
    # as the model's, with its traceback starting in their code.
    from submission.MyModel import MyModel

    # Only an upload needs upload.env: without --upload a broken file does not stop a run.
    settings = UploadSettings()
    if args.upload:
        settings = load_settings(args.env_file or HERE / "upload.env",
                                 required=args.env_file is not None)
    options = {"scale": args.scale} if args.source == "synthetic" else {}
    dataset = ChallengeDataset(source=args.source, seed=args.seed, num_folds=args.num_folds,
                               **options)
    runner = EvalRSRunner(dataset, results_dir=args.results_dir, progress=not args.no_progress,
                          upload=settings)
    model = MyModel(items=dataset.df_tracks, top_k=runner.k)
    results = runner.evaluate(model, seed=args.seed, limit=args.limit, upload=args.upload,
                              resume=not args.fresh)
    submission = results.submission or {}
    path = submission.get("path")
    if submission.get("outcome") == "not_eligible":
        print(f"error: not uploaded: the run is not eligible for upload (see above); the "
              f"submission is saved at {path}", file=sys.stderr)
        return EXIT_NOT_ELIGIBLE
    if submission.get("outcome") == "failed":
        print(f"error: the upload failed (see above); the submission is saved at {path}; send "
              f"it again with: python -m evaluation submit {path}", file=sys.stderr)
        return EXIT_UPLOAD_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())
