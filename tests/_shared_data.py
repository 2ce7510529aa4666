"""The real datasets in ../shared/data (``EVALRS_SHARED_DATA`` names another folder): a test
that reads one asks for it by name and is skipped, with the reason, where it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("EVALRS_SHARED_DATA", REPO.parent / "shared" / "data"))


def shared_dataset(name: str) -> Path:
    """Path of a real dataset under ../shared/data, or skip the test with the reason."""
    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip(f"real dataset {name!r} not found at {path} (CI provides ../shared/data)")
    return path
