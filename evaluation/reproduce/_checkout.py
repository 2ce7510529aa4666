"""The participant's checkout, checked before anything of it runs, and copied for one run.

A checkout may hold links and files of any kind. A symbolic link that leads out of it (to the
admin token, to ``/etc/shadow``, to another team's checkout) would let the organizer's own
process read or quote a file the participant chose; a huge checkout would fill the organizer's
disk with its copies. Both are refused, naming the path, before anything runs. Each run then
gets a private copy (links kept as links, all inside), so that no run can change what another
run, or the next check, sees.

A checkout may also carry its own copy of the official EvalRS 2022/2023 ``evaluation/``
folder. It is recognised and named before anything runs; it cannot shadow the harness there
(see :func:`vendored_warning`), so it is a warning, not a refusal.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from evaluation._util.vendored import vendored_evaluation
from evaluation.errors import ConfigError

#: The largest checkout reproduced, in bytes (its files, as stored).
DEFAULT_MAX_CHECKOUT_BYTES = 2 * 1024**3
#: The most files and folders a checkout may hold.
MAX_CHECKOUT_ENTRIES = 200_000
#: Folders that are not part of the participant's code and are never copied.
_SKIPPED = (".git",)


def inspect_checkout(checkout: str | os.PathLike,
                     max_bytes: int = DEFAULT_MAX_CHECKOUT_BYTES) -> int:
    """The size in bytes of ``checkout``; ``ConfigError`` for a link leading out of it, a
    special file (device, FIFO, socket) or a checkout past ``max_bytes``."""
    root = Path(checkout).resolve()
    total = entries = 0
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = [d for d in dirs if d not in _SKIPPED or Path(folder) != root]
        for name in dirs + files:
            path = Path(folder) / name
            entries += 1
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                _check_link(root, path)
            elif not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
                raise ConfigError(f"CHECKOUT {checkout}: {path.relative_to(root)} is not a "
                                  f"regular file or folder (a device, FIFO or socket); remove "
                                  f"it from the checkout.")
            elif stat.S_ISREG(info.st_mode):
                total += info.st_size
            if total > max_bytes or entries > MAX_CHECKOUT_ENTRIES:
                raise ConfigError(f"CHECKOUT {checkout}: more than {max_bytes} bytes or "
                                  f"{MAX_CHECKOUT_ENTRIES} files (at "
                                  f"{path.relative_to(root)}); a checkout holds code, not "
                                  f"data: remove the large files, or raise "
                                  f"--max-checkout-mb.")
    return total


def vendored_warning(checkout: str | os.PathLike) -> str | None:
    """A warning naming the checkout's copy of the official 2022/2023 ``evaluation/`` folder,
    and what the participant should do with it; None when it has none.

    The reproduction does not run that copy: the worker is started as ``python -P -m
    evaluation.participant``, so the harness's own ``evaluation`` package (bound
    at ``/opt/evalrs/harness`` in the sandbox, the environment's elsewhere) is imported before
    the checkout's folder is appended to ``sys.path``; the participant's ``from
    evaluation.EvalRSRunner import ...`` then reaches the harness's 2022/2023 module paths, as
    under ``submission.py`` with the folder removed.
    """
    found = vendored_evaluation(checkout)
    if found is None:
        return None
    return (f"warning: CHECKOUT {checkout} carries its own copy of the EvalRS 2022/2023 "
            f"evaluation/ folder. The reproduction does not use it: this harness's evaluation "
            f"package is imported first and the checkout comes after it on the path, so the "
            f"model runs on the harness (its 2022/2023 module paths included). For the "
            f"participant, who runs submission.py in that checkout: {found}")


def _check_link(root: Path, link: Path) -> None:
    """Refuse a link whose target (followed to the end) is outside ``root`` or missing."""
    target = Path(os.path.realpath(link))
    if not target.is_relative_to(root) or not target.exists():
        raise ConfigError(f"CHECKOUT {root}: {link.relative_to(root)} is a symbolic link "
                          f"leading outside the checkout (or nowhere); its target is not "
                          f"shown. Replace the link with the file itself.")


def copy_checkout(checkout: Path, destination: Path) -> Path:
    """A private copy of ``checkout`` at ``destination`` (links copied as links)."""
    shutil.copytree(checkout, destination, symlinks=True,
                    ignore=lambda folder, names: [n for n in names if n in _SKIPPED
                                                  and Path(folder) == checkout])
    return destination
