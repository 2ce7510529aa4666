"""Fresh interpreters that start as in an environment where the harness is installed: the
start-up ``.pth`` file of the repository (the one the build installs) is processed by
``site``, through a ``sitecustomize`` that adds its folder as a site directory. Child
processes inherit the environment, so spawn-started workers start the same way."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PTH = "evalrs_harness_old_modules.pth"
#: Folder of the participant-style modules the fresh interpreters import.
PARTICIPANTS = Path(__file__).resolve().parent / "participants"


def startup_env(folder: Path, *, hook: bool = True) -> dict[str, str]:
    """The environment of a fresh interpreter that finds this tree and the participants'
    modules; with ``hook``, ``site`` processes the repository's ``.pth`` file at start-up.
    Without it, the environment's packages are on the path as plain folders: run it with
    ``site=False`` so that no ``.pth`` file of the environment (an installed harness's hook
    among them) is processed."""
    paths = [str(REPO), str(PARTICIPANTS)]
    if not hook:
        paths.append(sysconfig.get_paths()["purelib"])
    if hook:
        site_dir = folder / "site"
        site_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / PTH, site_dir / PTH)
        custom = folder / "custom"
        custom.mkdir(parents=True, exist_ok=True)
        (custom / "sitecustomize.py").write_text(
            f"import site\nsite.addsitedir({str(site_dir)!r})\n", encoding="utf-8")
        paths.insert(0, str(custom))
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONSTARTUP"}}
    return env | {"PYTHONPATH": os.pathsep.join(paths), "PYTHONWARNINGS": "ignore"}


def fresh_python(code: str, env: dict[str, str], cwd: Path, timeout: float = 120, *,
                 site: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a new interpreter of this environment (``site=False``: ``-S``, no
    site directories and so no ``.pth`` file processed)."""
    flags = [] if site else ["-S"]
    return subprocess.run([sys.executable, *flags, "-c", code], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)
