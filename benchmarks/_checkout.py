"""A participant's checkout as the template makes it: ``submission.py`` and ``submission/`` of
this repository, copied into a folder of its own.

The organizer's benchmark of ``reproduce`` (``benchmarks/bench_env.py``) builds environments
for it; the tests of ``evaluation.reproduce`` start from it (``tests/reproduce/_fakes.py``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def template_checkout(root: Path) -> Path:
    """``root`` (created if needed) holding a copy of the template's submission files."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "submission.py", root / "submission.py")
    shutil.copytree(REPO / "submission", root / "submission",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return root
