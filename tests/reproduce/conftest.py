"""Fixtures of the reproduction's tests: the upload a leaderboard stores for the template's
tiny run (evaluated once per session, handed to each test as a copy of its own)."""

from __future__ import annotations

import copy

import pytest

from tests.reproduce._fakes import template_upload


@pytest.fixture(scope="session")
def _template_run() -> dict:
    """The template model's tiny run, evaluated once: every module reproduces the same one."""
    return template_upload()


@pytest.fixture
def upload(_template_run) -> dict:
    """The template model's tiny run, evaluated here, as the leaderboard stores the upload
    (a copy: a test may tamper with it without touching the next test's)."""
    return copy.deepcopy(_template_run)
