"""Fixtures of the reproduction's tests: the upload a leaderboard stores for the template's
tiny run (evaluated once per module)."""

from __future__ import annotations

import pytest

from tests.reproduce._fakes import template_upload


@pytest.fixture(scope="module")
def upload() -> dict:
    """The template model's tiny run, evaluated here, as the leaderboard stores the upload."""
    return template_upload()
