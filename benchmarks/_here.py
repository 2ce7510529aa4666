"""A benchmark's child code run in the benchmark's own process, for its smoke run.

A benchmark measures each side in a fresh process (``python -c CODE ARGS``) so that its time
and peak memory are its own. Its smoke run measures nothing: it proves that the script and its
references still run. There the first side still runs in a fresh process (the path of a
measured run) and the others run their same code here, with ``sys.argv`` and the environment
that the fresh process would have had, which spares an interpreter's start and its imports
each. Used by ``bench_folds.py`` and ``bench_load.py``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections.abc import Mapping


def run_here(code: str, *args: str, env: Mapping[str, str] | None = None) -> dict:
    """Run ``code`` as ``python -c code *args`` would, in this process, with ``env`` added to
    the environment meanwhile; the JSON object of the last line it printed."""
    printed = io.StringIO()
    argv, before = sys.argv, {name: os.environ.get(name) for name in env or {}}
    sys.argv = ["-c", *args]
    os.environ.update(env or {})
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(code, "<child>", "exec"), {"__name__": "__main__"})
    finally:
        sys.argv = argv
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return json.loads(printed.getvalue().strip().splitlines()[-1])
