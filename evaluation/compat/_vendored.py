"""A 2022/2023 copy of the official ``evaluation/`` folder where this harness is expected.

Participants' repositories carry the official ``evaluation/`` folder of their year. Copied
into (or found before) this harness, it shadows the harness and fails deep inside reclist,
as if the harness were broken. :func:`vendored_evaluation` recognises such a folder by its
files and says what it is and what to do. It imports nothing of the harness, so that it can
run when the harness itself cannot be imported.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Text found only in the official 2022/2023 files, by file name.
_MARKERS = {
    "EvalRSRunner.py": ("def _generate_folds", "LFM_DATASET_PATH", "secret.json"),
    "EvalRSRecList.py": ("class EvalRSDataset", "from reclist.abstractions import"),
    "EvalRSReclist.py": ("class EvalRSSimpleModel", "class EvalRSReclist"),
    "utils.py": ("def upload_submission", "import boto3", "evarl-2022-public-dataset"),
    "eval.py": ("from EvalRSReclist import",),
}


def _official_files(folder: Path) -> list[str]:
    """The files of ``folder`` whose text marks them as the official 2022/2023 ones."""
    found = []
    for name, markers in _MARKERS.items():
        path = folder / name
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if any(m in text for m in markers):
            found.append(name)
    return found


def _edition(files: list[str]) -> str:
    return "2023" if "EvalRSReclist.py" in files or "eval.py" in files else "2022"


def vendored_evaluation(root: str | os.PathLike) -> str | None:
    """A message naming the official 2022/2023 ``evaluation/`` files under ``root``, or None.

    Parameters
    ----------
    root : str or PathLike
        A checkout: the folder holding ``submission.py`` (or the participant's repository).

    Returns
    -------
    str or None
        What was found and what to do; None when ``root/evaluation`` is this harness's (or
        absent).
    """
    folder = Path(root) / "evaluation"
    files = _official_files(folder)
    if not files:
        return None
    edition = _edition(files)
    ours = (folder / "_version.py").exists() and (folder / "runner").is_dir()
    listed = ", ".join(f"evaluation/{f}" for f in files)
    custom = [f for f in ("EvalRSRecList.py", "EvalRSReclist.py") if f in files]
    keep = (f" If you added custom tests to {', '.join(f'evaluation/{f}' for f in custom)}, "
            f"move that class to a file of your own (e.g. myreclist.py, subclassing "
            f"evaluation.EvalRSRecList) and pass --reclist myreclist:MyRecList."
            if custom else "")
    if ours:
        return (f"{folder}: the official EvalRS {edition} file(s) {listed} replaced this "
                f"harness's own (your repository's copy of the {edition} evaluation/ folder "
                f"was copied over it). Fix: restore the harness's files (`git checkout -- "
                f"evaluation/` in the harness checkout) and copy only your submission/ "
                f"folder; your {edition} imports (from evaluation.EvalRSRunner import ...) keep "
                f"working with the harness's files.{keep}")
    return (f"{folder} is the official EvalRS {edition} evaluation/ folder ({listed}), not "
            f"this harness: it shadows the harness, and its code needs the {edition} "
            f"libraries (reclist 0.x, boto3, pandas 1). Fix: delete or rename that folder "
            f"(your code's imports, from evaluation.EvalRSRunner import ..., keep working "
            f"with the harness installed), or copy your submission/ folder into the "
            f"harness's checkout and run its submission.py.{keep}")
