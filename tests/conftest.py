"""Fixtures every test folder shares: seeded RNG, the tiny synthetic dataset, per-session
caches, a headless Chromium (``driver``, skipped with the reason when Chromium or its driver
is missing). The server's PostgreSQL fixtures are in tests/server/; the real datasets are
found by ``tests._shared_data.shared_dataset``."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation import ChallengeDataset
from tests._browser import driver  # noqa: F401  (a fixture shared by the page tests)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20221121)


@pytest.fixture(scope="module")
def tiny() -> ChallengeDataset:
    """The synthetic dataset at scale "tiny" (4 folds of 150 test users), one per module."""
    return ChallengeDataset(source="synthetic", scale="tiny")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Each test session caches generated/downloaded data in its own temporary directory."""
    cache = tmp_path_factory.getbasetemp() / "evalrs-cache"
    monkeypatch.setenv("EVALRS_CACHE_DIR", str(cache))
    monkeypatch.setenv("RECLIST_META_DATA_FOLDER", str(tmp_path_factory.getbasetemp() / ".reclist"))
