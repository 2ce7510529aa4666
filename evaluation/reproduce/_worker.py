"""The official evaluation of a participant's checkout, run inside its environment.

    python -m evaluation.reproduce._worker CONFIG.json OUT.json

Started by ``python -m evaluation reproduce`` with the checkout as the working folder, in the
checkout's own virtual environment and under its limits. It rebuilds the dataset of the upload
(checking that its fingerprint and fold parameters are the upload's), runs
``submission/MyModel.py``'s ``MyModel`` the way ``submission.py`` does
(``evaluation.runner.run_checkout``), and writes to ``OUT.json``:
``{"fingerprint": ...}`` at once, then ``{"fingerprint": ..., "results": results.json}`` when
the run is over, or ``{"error": "..."}``. With ``stop_on_fingerprint_mismatch`` it stops
before evaluating when the model's code or parameters are not the upload's: the verdict is
known, and the hours of a heavy model are saved.

CONFIG.json holds ``source``, ``data_options`` (keyword arguments of ``ChallengeDataset``
besides the fold parameters), ``fold_params``, ``dataset_fingerprint``, ``seed``, ``k``,
``n_boot``, ``params`` (the model's constructor arguments given with ``--param``),
``reclist`` (``module:Class`` of a custom RecList, or null), ``results_dir`` and optionally
``expected_fingerprint``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from evaluation.contract import FOLD_PARAMS_KEY, fold_arguments

#: Exit status when the dataset or the configuration is not the upload's.
EXIT_CONFIG = 2


def main(argv: list[str]) -> int:
    """Run the evaluation described by ``argv[0]`` and write what it found to ``argv[1]``."""
    config = json.loads(Path(argv[0]).read_text())
    out = Path(argv[1])
    checkout = Path.cwd()
    sys.path.insert(0, str(checkout))

    from evaluation import ChallengeDataset, EvalRSRunner
    from evaluation.reproduce._compare import fingerprint_differences
    from evaluation.runner import import_reclist, model_fingerprint, run_checkout

    dataset = ChallengeDataset(source=config["source"], **config["data_options"],
                               **fold_arguments(config[FOLD_PARAMS_KEY]))
    problem = _dataset_problem(dataset, config)
    if problem:
        _write(out, {"error": problem})
        return EXIT_CONFIG

    runner = EvalRSRunner(dataset, results_dir=config["results_dir"], k=config["k"],
                          n_boot=config["n_boot"], progress=False)
    reclist_cls = import_reclist(config["reclist"]) if config.get("reclist") else None
    found: dict = {}

    def ready(model) -> bool:
        """Record the model's fingerprint before any training, as the runner takes it; go on
        only when it is the upload's (or none is expected)."""
        found["fingerprint"] = model_fingerprint(model, {})
        _write(out, found)
        expected = config.get("expected_fingerprint")
        if expected is not None and fingerprint_differences(expected, found["fingerprint"]):
            print("the model's fingerprint is not the upload's: not evaluated")
            return False
        return True

    result = run_checkout(checkout, runner, config.get("params", {}), ready=ready,
                          seed=config["seed"], limit=0, upload=False, resume=False,
                          reclist_cls=reclist_cls)
    if result is not None:
        _write(out, {**found, "results": result.to_dict()})
    return 0


def _dataset_problem(dataset, config: dict) -> str | None:
    """Why the rebuilt dataset is not the upload's (None when it is)."""
    if dataset.fingerprint != config["dataset_fingerprint"]:
        return (f"the dataset rebuilt from source {config['source']!r} has fingerprint "
                f"{dataset.fingerprint[:12]}..., the upload's is "
                f"{str(config['dataset_fingerprint'])[:12]}...: the data differ")
    if dataset.fold_params != config[FOLD_PARAMS_KEY]:
        return "the folds rebuilt differ from the configuration's fold parameters"
    return None


def _write(path: Path, data: dict) -> None:
    """Write ``data`` as JSON, replacing the file in one step."""
    part = path.with_suffix(".part")
    part.write_text(json.dumps(data))
    os.replace(part, path)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
