"""``python -m evaluation references``: compute the phase-2 references of a dataset."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from evaluation import baselines
from evaluation._util.atomic import write_json
from evaluation.challenge import (
    build_references,
    dataset_not_applicable,
    references_name,
)
from evaluation.contract import FINGERPRINT_KEY, FOLD_PARAMS_KEY, SOURCE_KEY
from evaluation.dataset import ChallengeDataset
from evaluation.errors import PredictionWarning
from evaluation.runner import EvalRSRunner

#: The reference models, in the order they run; the first is the baseline.
REFERENCE_MODELS = ("CBOWModel", "PopularityModel", "RandomModel")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "references",
        help="run the reference models and write a phase-2 references file",
        description="Run the reference models (CBOW = baseline, Popularity, Random) on the "
                    "dataset's folds and write the phase-2 references: baseline and best value "
                    "of each test, the HIT_RATE gate and the group weights.",
    )
    p.add_argument("source", metavar="SOURCE",
                   help='dataset source: "synthetic", a directory, or "movielens:PATH" (the '
                        'published 2022 values ship for "lfm")')
    p.add_argument("--scale", default="small", help="synthetic scale: tiny|small|full")
    p.add_argument("--seed", type=int, default=None, help="fold seed (default: 42)")
    p.add_argument("--num-folds", type=int, default=4, help="number of folds (default 4)")
    p.add_argument("--out", default=None, metavar="FILE",
                   help="where to write the file (default: ./NAME.json; pass it to "
                        "submission.py --references FILE). The shipped files in the package "
                        "are never written unless --out names one")
    p.add_argument("--results-dir", default="results",
                   help="run directories of the reference runs (default: ./results)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Compute the references of ``args.source`` and write them; return the exit status."""
    options = {"scale": args.scale} if args.source == "synthetic" else {}
    dataset = ChallengeDataset(source=args.source, seed=args.seed, num_folds=args.num_folds,
                               **options)
    name = references_name(args.source, args.scale if args.source == "synthetic" else None)
    name = name or Path(str(args.source).split(":")[-1]).name or "references"
    refs = compute_references(dataset, name=name, results_dir=args.results_dir)
    # Never into the installed package by default: the shipped files are tracked, and a
    # site-packages install may not be writable.
    out = Path(args.out) if args.out else Path(f"{name}.json")
    write_json(out, refs.to_dict())
    print(f"references written to {out}", file=sys.stderr)
    return 0


def compute_references(dataset, *, name: str = "", results_dir="results", progress=True):
    """Run the reference models on ``dataset`` and build its phase-2 references.

    Parameters
    ----------
    dataset : ChallengeDataset
        The dataset whose folds the reference models run on.
    name : str
        Name recorded in the references.
    results_dir : str or path
        Where the reference runs keep their run directories.
    progress : bool
        Show the runner's progress.

    Returns
    -------
    References
        Baseline and best value of each applicable test, the HIT_RATE gate and the group
        weights; the tests not applicable to the dataset are left out, with the reasons
        recorded under ``not_applicable``.

    Raises
    ------
    ConfigError
        When an accuracy test (HIT_RATE, MRR) is not applicable to the dataset.
    """
    runner = EvalRSRunner(dataset, results_dir=results_dir, references=None, n_boot=0,
                          reports=False, verbose=False, progress=progress)
    not_applicable = dataset_not_applicable(dataset)
    for test, reason in not_applicable.items():
        print(f"{test}: not applicable, left out of the references ({reason})",
              file=sys.stderr)
    means = {}
    for model_name in REFERENCE_MODELS:
        cls = getattr(baselines, model_name)
        model = cls(dataset.df_tracks) if model_name == "RandomModel" else cls()
        print(f"reference model {model_name} ...", file=sys.stderr)
        with warnings.catch_warnings():
            # RandomModel recommends heard tracks on purpose; the reminder is noise here
            warnings.simplefilter("ignore", PredictionWarning)
            result = runner.evaluate(model)
        means[model_name] = result.aggregate["mean"]
    return build_references(
        means, baseline=REFERENCE_MODELS[0], name=name, not_applicable=not_applicable,
        dataset={SOURCE_KEY: getattr(dataset.tables, "source", None),
                 FINGERPRINT_KEY: dataset.fingerprint, FOLD_PARAMS_KEY: dataset.fold_params})
