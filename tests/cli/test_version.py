"""``evalrs --version`` prints the harness's version without importing any command: each
command module imports the harness's data and scoring stacks, a second of CPU for a line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from evaluation import __version__

ROOT = Path(__file__).resolve().parents[2]

#: A fresh interpreter: the version, the exit status, then what the call imported.
PROBE = """
import sys
from evaluation.cli import main
try:
    main(["--version"])
except SystemExit as exc:
    print("exit", exc.code)
print(sorted(m for m in sys.modules
             if m.startswith("evaluation.cli.") or m.split(".")[0] in {"numpy", "pandas"}))
"""


def test_the_version_is_printed_without_importing_a_command():
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [f"evalrs {__version__}", "exit 0", "[]"]
