"""The sandboxed worker's start-up: it imports what a model's run needs and no more.

The worker starts once per reproduction (for an organizer, once per submission in a batch), so
what it imports is paid each time: NumPy, pandas and the harness's ``participant`` package
(the model class, its fingerprint, the seeds, the peak memory) on the foundation, never the
runner, the server, the reproduction's organizer side or their libraries (rich, asyncio, ssl).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: The harness modules the worker may import: the package itself, its foundation, and the
#: ``participant`` package (``evaluation._old_modules`` is the finder ``import evaluation``
#: installs).
ALLOWED = ("evaluation", "evaluation._old_modules", "evaluation._util", "evaluation._version",
           "evaluation.errors", "evaluation.participant")
#: Libraries the worker has no use for: the runner's console, the server's and the client's.
NOT_IMPORTED = ("rich", "asyncio", "ssl", "httpx", "fastapi", "sqlalchemy", "joblib")

def _imported_by_the_worker() -> list[str]:
    """The modules a fresh interpreter holds once the worker's module is imported, without
    running it (``-P``, as the sandbox starts it; the worker's ``main`` is not called)."""
    code = ("import json, sys\n"
            "import evaluation.participant._worker\n"
            "print(json.dumps(sorted(sys.modules)))\n")
    out = subprocess.run([sys.executable, "-P", "-c", code], cwd=ROOT, check=True,
                         capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}).stdout
    return json.loads(out)


def test_the_worker_imports_numpy_pandas_and_the_participant_package_only():
    modules = _imported_by_the_worker()
    assert "numpy" in modules and "pandas" in modules
    assert "evaluation.participant._worker" in modules
    harness = [m for m in modules if m == "evaluation" or m.startswith("evaluation.")]
    beyond = [m for m in harness
              if not any(m == a or m.startswith(a + ".") for a in ALLOWED)]
    assert beyond == [], f"the sandboxed worker imports harness modules it does not need: {beyond}"
    unneeded = [m for m in NOT_IMPORTED if m in modules]
    assert unneeded == [], f"the sandboxed worker imports libraries it does not need: {unneeded}"
