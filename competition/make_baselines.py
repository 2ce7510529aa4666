"""Regenerate the baseline runs that the example competition (``competition.toml``) pins on its
board.

    python competition/make_baselines.py

Each baseline is run through the harness exactly as a participant's model is by
``python submission.py --competition competition.toml`` (the default synthetic dataset, its 4
folds, default settings), and the run's ``submission.json`` is copied to
``competition/baselines/<name>.json``. Run it again
whenever the run hash changes: a new harness version (``evaluation.__version__`` is part of the
hash), or other data or folds in ``competition.toml``; the server refuses to start with
baselines whose run hash is not the competition's.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the harness of this checkout, wherever this runs from

from evaluation import ChallengeDataset, EvalRSRunner  # noqa: E402
from evaluation.baselines import PopularityModel, RandomModel  # noqa: E402
from evaluation.errors import PredictionWarning  # noqa: E402
from evaluation.runner import UploadSettings  # noqa: E402

#: file name (under baselines/) -> the model; competition.toml names these files.
BASELINES = {"popularity": PopularityModel, "random": RandomModel}


def main() -> int:
    """Run every baseline and save its submission; returns the exit status."""
    out = HERE / "baselines"
    out.mkdir(exist_ok=True)
    # RandomModel recommends tracks the users already have, on purpose: no need to say so
    warnings.simplefilter("ignore", PredictionWarning)
    os.chdir(HERE.parent)
    dataset = ChallengeDataset()
    with tempfile.TemporaryDirectory(prefix="evalrs-baselines-") as tmp:
        # No upload URL: the runner saves submission.json and uploads nothing.
        runner = EvalRSRunner(dataset, results_dir=tmp, upload=UploadSettings(),
                              # relative: the saved run names the competition file by this
                              # path, the same on every organizer's checkout (run from its root)
                              competition=Path("competition.toml"),
                              progress=False, verbose=False, reports=False)
        for name, model_class in BASELINES.items():
            result = runner.evaluate(model_class(), upload=True, resume=False)
            if not result.eligible_for_upload:
                print(f"{name}: the run is not eligible ({result.not_eligible_because})",
                      file=sys.stderr)
                return 1
            target = out / f"{name}.json"
            shutil.copyfile(result.submission["path"], target)
            print(f"{name}: leaderboard score {result.leaderboard_score:.6f}, run hash "
                  f"{result.run_hash[:16]}... -> {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
