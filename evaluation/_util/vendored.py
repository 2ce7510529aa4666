"""A 2022/2023 copy of the official ``evaluation/`` folder where this harness is expected.

Participants' repositories carry the official ``evaluation/`` folder of their year. Copied
into (or found before) this harness, it shadows the harness and fails deep inside reclist,
as if the harness were broken. :func:`vendored_evaluation` recognises such a folder by its
files and says what it is and what to do. It imports nothing of the harness, so that it can
run when the harness itself cannot be imported.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from evaluation._util.syntax_trees import SYNTAX_TREES

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


#: The tests of the official 2022/2023 RecList (by ``rec_test`` name).
_OFFICIAL_TESTS = frozenset({
    "stats", "HIT_RATE", "MRR", "MRED_COUNTRY", "MRED_USER_ACTIVITY", "MRED_TRACK_POPULARITY",
    "MRED_ARTIST_POPULARITY", "MRED_GENDER", "BEING_LESS_WRONG", "LATENT_DIVERSITY"})


def _test_name(decorator: ast.expr) -> str | None:
    """The test name of a ``@rec_test(...)`` decorator, or None for another decorator."""
    if not isinstance(decorator, ast.Call) or getattr(decorator.func, "id", None) != "rec_test":
        return None
    args = [*decorator.args, *(k.value for k in decorator.keywords if k.arg == "test_type")]
    first = args[0] if args else None
    return str(first.value) if isinstance(first, ast.Constant) else "?"


def custom_tests(path: str | os.PathLike) -> dict[str, list[str]]:
    """The tests a participant added to an official ``EvalRSRecList.py``: class -> tests.

    Parameters
    ----------
    path : str or PathLike
        The file.

    Returns
    -------
    dict
        ``{class name: [test names]}`` for the ``@rec_test`` methods that are not the
        official ones; empty when there are none (or the file does not parse).
    """
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        # CPython 3.11 can fail when two threads build syntax trees at once (reproduce
        # --many checks checkouts in threads while others read arrays)
        with SYNTAX_TREES:
            tree = ast.parse(text)
    except (OSError, SyntaxError, ValueError):
        return {}
    found: dict[str, list[str]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        names = [_test_name(d) for f in node.body if isinstance(f, ast.FunctionDef)
                 for d in f.decorator_list]
        added = [n for n in names if n is not None and n not in _OFFICIAL_TESTS]
        if added:
            found[node.name] = added
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
    keep = _custom_tests_hint(folder, files)
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


def _custom_tests_hint(folder: Path, files: list[str]) -> str:
    """What to do with the custom tests found in the copy's RecList file (or a general hint)."""
    tests = {f: custom_tests(folder / f) for f in ("EvalRSRecList.py", "EvalRSReclist.py")
             if f in files}
    found = {f: t for f, t in tests.items() if t}
    if not found:
        return (" If you added custom tests to that folder's RecList, move the class to a file "
                "of your own (e.g. myreclist.py, subclassing evaluation.EvalRSRecList) and "
                "pass --reclist myreclist:MyRecList." if tests else "")
    listed = "; ".join(f"evaluation/{f}: " + ", ".join(f"{c} ({', '.join(t)})"
                                                      for c, t in classes.items())
                       for f, classes in found.items())
    return (f" It holds custom tests: {listed}. Move them to a file of your own, e.g. "
            f"myreclist.py with `from evaluation.EvalRSRecList import EvalRSRecList` and "
            f"`class MyRecList(EvalRSRecList):` holding those methods, and pass --reclist "
            f"myreclist:MyRecList (or evaluate(..., custom_RecList=MyRecList)).")
