"""Evaluate ``submission/MyModel.py`` on the EvalRS folds, save the results, optionally upload.

    python submission.py                       # the embedded synthetic dataset, 4 folds
    python submission.py --source lfm --upload # the real challenge data, then submit
    python submission.py --scale tiny --limit 50 --num-folds 2   # a quick local check
    python submission.py --param min_plays=5                     # MyModel(..., min_plays=5)
    python submission.py --name popular --param min_plays=5      # a named run, told apart
    python submission.py --competition competition.toml --upload # another leaderboard's data
    python submission.py --quiet                # print only the leaderboard score line

Settings for the leaderboard (EMAIL, PARTICIPANT_ID, UPLOAD_URL, UPLOAD_TOKEN) come from
``upload.env`` next to this file (see ``upload.env.example``) or from the environment; the file
is read only with ``--upload``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

try:
    from evaluation import ChallengeDataset, EvalRSRunner
    from evaluation.cli import (
        EXIT_BAD_INPUT,
        EXIT_NOT_ELIGIBLE,
        EXIT_STATUS_HELP,
        EXIT_UPLOAD_FAILED,
        guarded,
        official_copy_problem,
    )
    from evaluation.contract import load_competition_target
    from evaluation.runner import (
        UploadSettings,
        check_model_params,
        collect_params,
        import_reclist,
        load_model_class,
        load_settings,
        run_checkout,
    )
except ImportError as exc:
    # A copy of the official 2022/2023 evaluation/ folder (from a participant's repository)
    # over or instead of the harness: say so, instead of a traceback from deep inside it.
    import importlib.util

    _detector = Path(__file__).resolve().parent / "evaluation" / "_util" / "vendored.py"
    _spec = importlib.util.spec_from_file_location("_evalrs_vendored", _detector)
    if not _detector.exists() or _spec is None or _spec.loader is None:
        raise
    _module = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
    _hint = _module.vendored_evaluation(Path(__file__).resolve().parent)
    if _hint is None:
        raise
    raise SystemExit(f"error: {_hint}") from exc

HERE = Path(__file__).resolve().parent


def build_parser() -> argparse.ArgumentParser:
    """Return the parser of submission.py's options."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=EXIT_STATUS_HELP,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source", default=None,
                   help="dataset: synthetic (default; with --competition: the competition's), "
                        "lfm, a directory in the EvalRS schema, or movielens:PATH")
    p.add_argument("--scale", default=None, choices=["tiny", "small", "full"],
                   help="size of the synthetic dataset (default: small)")
    p.add_argument("--num-folds", type=int, default=None, metavar="N",
                   help="number of folds (default 4, or the competition's; other counts are "
                        "not eligible for upload)")
    p.add_argument("--seed", type=int, default=None,
                   help="fold seed (default: the fixed challenge seed 42, or the "
                        "competition's)")
    p.add_argument("--limit", type=int, default=0,
                   help="score only the first N test users per fold (0: all; N > 0 is not "
                        "eligible for upload)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="a parameter of MyModel (repeatable): MyModel(NAME=VALUE, ...); VALUE "
                        "is TOML (64, 0.05, true, [64, 32], \"text\") or a bare word")
    p.add_argument("--name", default=None, metavar="TEXT",
                   help="the run's name, shown beside it in compare, the report and on the "
                        "board (e.g. als-64-factors); the run id starts with it")
    p.add_argument("--params-file", default=None, metavar="FILE",
                   help="MyModel's parameters from a TOML or JSON (*.json) file; --param wins")
    p.add_argument("--reclist", default=None, metavar="MODULE:CLASS",
                   help="a subclass of EvalRSRecList with your extra tests, imported from this "
                        "folder (e.g. myreclist:MyRecList)")
    p.add_argument("--references", default="auto", metavar="FILE",
                   help="the phase-2 references: a JSON file or a shipped name (default: the "
                        "shipped ones of the dataset, if any)")
    p.add_argument("--competition", default=None, metavar="FILE",
                   help="the competition TOML file of the leaderboard you submit to: its data "
                        "and folds are used and eligibility is relative to it (default: the "
                        "official board, which takes runs on --source lfm only)")
    p.add_argument("--upload", action="store_true",
                   help="submit the results (saved locally when no UPLOAD_URL is configured)")
    p.add_argument("--env-file", default=None, metavar="PATH",
                   help="upload settings, read only with --upload (default: upload.env next "
                        "to this file, if present; environment variables win)")
    # like any command's output folder: in the folder the command is started from
    p.add_argument("--results-dir", default=None,
                   help="where run directories go (default: results/ in the current folder)")
    p.add_argument("--fresh", action="store_true",
                   help="recompute every fold instead of resuming an interrupted run")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--verbose", action="store_true",
                       help="also print the seconds per stage of each fold and, with --reports, "
                            "reclist's own table per fold")
    shown.add_argument("--quiet", action="store_true",
                       help="print only the leaderboard score line (and errors); no progress "
                            "bars")
    p.add_argument("--reports", action="store_true",
                   help="also write reclist's report folder and charts per fold (slower)")
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Return the parsed options (``--num-folds`` defaults to 4 without ``--competition``)."""
    args = build_parser().parse_args(argv)
    if args.num_folds is None and args.competition is None:
        args.num_folds = 4
    if args.results_dir is None:  # in full, so that the paths printed work from anywhere
        args.results_dir = str(Path.cwd() / "results")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the evaluation (and the upload); the exit status is in ``--help``."""
    args = parse_args(argv)
    copied = official_copy_problem(HERE)
    if copied is not None:  # an official file over one of the harness's: theirs would be used
        print(f"error: {copied}", file=sys.stderr)
        return EXIT_BAD_INPUT
    sys.path.insert(0, str(HERE))
    return guarded(lambda: _evaluate(args),
                   interrupted="interrupted: the finished folds are kept; run the same command "
                               "again to resume")


def _evaluate(args: argparse.Namespace) -> int:
    """Run the model through the folds (and upload); returns the exit status."""
    # Loaded first, under guarded(): an error in the participant's module is then reported
    # as the model's, with its traceback starting in their code.
    model_class = load_model_class(HERE)

    # Only an upload needs upload.env: without --upload a broken file does not stop a run.
    settings = UploadSettings()
    if args.upload:
        settings = load_settings(args.env_file or HERE / "upload.env",
                                 required=args.env_file is not None)
    params = collect_params(args.param, args.params_file)
    check_model_params(model_class, params, reserved=("items", "top_k"))
    reclist_cls = import_reclist(args.reclist) if args.reclist else None
    competition = load_competition_target(args.competition) if args.competition else None
    dataset = ChallengeDataset(**_dataset_options(args, competition))
    runner = EvalRSRunner(dataset, results_dir=args.results_dir,
                          progress=not (args.no_progress or args.quiet), reports=args.reports,
                          verbose=True if args.verbose else None, quiet=args.quiet,
                          upload=settings, references=args.references, competition=competition)
    # what was asked for, recorded in results.json ("settings") and part of the run's key
    run_settings = {"params": params, "reclist": args.reclist, "references": args.references,
                    "competition": args.competition}
    results = run_checkout(HERE, runner, params, seed=args.seed, limit=args.limit,
                           upload=args.upload, resume=not args.fresh, reclist_cls=reclist_cls,
                           settings=run_settings, name=args.name)
    if results is None:  # only a `ready` check stops a run before it starts, and none is given
        raise RuntimeError("the run stopped before its first fold without a reason")
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


def _dataset_options(args: argparse.Namespace, competition) -> dict:
    """``ChallengeDataset`` arguments: the competition's data and folds (when given), then the
    options given on the command line."""
    options = competition.dataset_options() if competition is not None else {}
    source = args.source or options.get("source", "synthetic")
    if source != options.get("source"):
        # another source than the competition's: its data options do not apply
        options = {k: v for k, v in options.items() if k not in ("scale", "data_seed")}
    options["source"] = source
    given = {"seed": args.seed, "num_folds": args.num_folds,
             "scale": args.scale if source == "synthetic" else None}
    options.update({k: v for k, v in given.items() if v is not None})
    if source == "synthetic":
        options.setdefault("scale", "small")
    return options


if __name__ == "__main__":
    sys.exit(main())
