"""Fixtures every test folder shares: seeded RNG, the real datasets in ../shared/data (skipped
when absent), per-session caches, a headless Chromium (``driver``, skipped with the reason when
Chromium or its driver is missing). The server's PostgreSQL fixtures are in tests/server/."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tests._browser import _chromium, driver  # noqa: F401  (fixtures of the page tests)

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("EVALRS_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20221121)


def shared_dataset(name: str) -> Path:
    """Path of a real dataset under ../shared/data, or skip the test with the reason."""
    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip(f"real dataset {name!r} not found at {path} (CI provides ../shared/data)")
    return path


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Each test session caches generated/downloaded data in its own temporary directory."""
    cache = tmp_path_factory.getbasetemp() / "evalrs-cache"
    monkeypatch.setenv("EVALRS_CACHE_DIR", str(cache))
    monkeypatch.setenv("RECLIST_META_DATA_FOLDER", str(tmp_path_factory.getbasetemp() / ".reclist"))


