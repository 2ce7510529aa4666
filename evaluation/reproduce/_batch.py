"""The list of submissions ``reproduce --many`` reproduces: a CSV file, checked as a whole.

The file has a header line and one line per submission::

    submission,checkout,private
    17,teams/alpha,
    23,/srv/checkouts/beta,yes

``submission`` is the leaderboard's id (a positive integer, each at most once), ``checkout``
the participant's repository (relative to the CSV's folder, or absolute; it must hold
``submission/MyModel.py``), and the optional ``private`` column says whether that submission
is also evaluated on the private folds (true/false/1/0/yes/no; empty: what ``--private`` says).
Every line is checked before anything runs: a batch of dozens of reproductions should not stop
at its twentieth line for a typo.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path

from evaluation.errors import ConfigError
from evaluation.reproduce._reproduce import MODEL_FILE

#: The columns a batch file must have, and the optional one.
REQUIRED_COLUMNS = ("submission", "checkout")
PRIVATE_COLUMN = "private"
#: The words the ``private`` column accepts.
_TRUE = ("true", "1", "yes")
_FALSE = ("false", "0", "no")


@dataclass(frozen=True)
class BatchRow:
    """One line of a batch file.

    Attributes
    ----------
    submission : int
        The submission's id on the leaderboard.
    checkout : Path
        The participant's repository (absolute).
    private : bool or None
        Whether its private folds are evaluated; None when the line leaves it to ``--private``.
    line : int
        The line of the file (1 is the header), for messages.
    protocols : tuple of dict
        The competition's alternative protocols to run the model under too (a worker's
        claim gives them; a batch file names none).
    """

    submission: int
    checkout: Path
    private: bool | None
    line: int
    protocols: tuple[dict, ...] = ()


def read_batch(path: str | os.PathLike) -> list[BatchRow]:
    """The rows of the batch file ``path``, every line checked.

    Raises
    ------
    ConfigError
        Naming the file, the line, the column, the value and the fix, for the first problem
        found: no such file, no header or no rows, a missing column, an id that is not a
        positive integer or repeats an earlier line's, a checkout folder that does not exist or
        has no ``submission/MyModel.py``, a ``private`` value that is not a yes or a no.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a BOM from a spreadsheet is not a column
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--many {path}: cannot be read ({type(exc).__name__}: {exc}); give "
                          f"a CSV file with the header 'submission,checkout[,private]'.") from None
    reader = csv.reader(text.splitlines())
    header = [name.strip().lower() for name in next(reader, [])]
    if not any(header):
        raise ConfigError(f"--many {path}: the file is empty; write the header "
                          f"'submission,checkout[,private]' and one line per submission.")
    for column in REQUIRED_COLUMNS:
        if column not in header:
            raise ConfigError(f"--many {path}, line 1: no '{column}' column (the header is "
                              f"{','.join(header)!r}); the header must be "
                              f"'submission,checkout[,private]'.")
    base, rows = path.resolve().parent, []
    seen: dict[int, int] = {}
    for number, cells in enumerate(reader, start=2):
        if not any(cell.strip() for cell in cells):
            continue  # a blank line, e.g. at the end
        values = {name: (cells[i].strip() if i < len(cells) else "")
                  for i, name in enumerate(header)}
        where = f"--many {path}, line {number}"
        row = BatchRow(submission=_submission(values["submission"], where, seen),
                       checkout=_checkout(values["checkout"], base, where),
                       private=_private(values.get(PRIVATE_COLUMN, ""), where), line=number)
        seen[row.submission] = number
        rows.append(row)
    if not rows:
        raise ConfigError(f"--many {path}: the header is there but no submission follows; add "
                          f"one line per submission, e.g. '17,teams/alpha'.")
    return rows


def _submission(value: str, where: str, seen: dict[int, int]) -> int:
    """The id in the ``submission`` cell; it must be new."""
    if not value.isascii() or not value.isdigit() or int(value) < 1:
        raise ConfigError(f"{where}, column submission: {value!r} is not a submission id; give "
                          f"the positive integer the leaderboard shows.")
    submission = int(value)
    if submission in seen:
        raise ConfigError(f"{where}, column submission: {submission} is already on line "
                          f"{seen[submission]}; list each submission once.")
    return submission


def _checkout(value: str, base: Path, where: str) -> Path:
    """The absolute folder of the ``checkout`` cell (relative to the CSV's folder)."""
    if not value:
        raise ConfigError(f"{where}, column checkout: empty; give the folder of the "
                          f"participant's repository (relative to the CSV's folder or "
                          f"absolute).")
    folder = (base / Path(value).expanduser()).resolve()
    if not folder.is_dir():
        raise ConfigError(f"{where}, column checkout: {value!r} is not a folder ({folder} does "
                          f"not exist); give the participant's repository, relative to the "
                          f"CSV's folder {base} or absolute.")
    if not (folder / MODEL_FILE).is_file():
        raise ConfigError(f"{where}, column checkout: {value!r} has no {MODEL_FILE}; give the "
                          f"folder of the participant's repository (the one with "
                          f"submission.py).")
    return folder


def _private(value: str, where: str) -> bool | None:
    """The ``private`` cell: True, False, or None when empty."""
    word = value.lower()
    if not word:
        return None
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise ConfigError(f"{where}, column private: {value!r} is neither a yes nor a no; write "
                      f"one of {'/'.join(_TRUE + _FALSE)}, or leave it empty to follow "
                      f"--private.")
