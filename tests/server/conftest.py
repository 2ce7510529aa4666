"""The leaderboard service's fixtures beyond those of tests/conftest.py (the competition, the
databases): a live server of the competition."""

from __future__ import annotations

import pytest


@pytest.fixture
def live(tmp_path, competition):
    """A server of the test module's ``competition`` on 127.0.0.1, on an SQLite file, with a
    clock the test moves."""
    from evaluation.server.api import create_app
    from tests.server._api import Api, serving
    from tests.server._helpers import Clock, migrated_sqlite_url

    clock = Clock()
    app = create_app(competition, migrated_sqlite_url(tmp_path), clock=clock)
    with serving(app, True) as client:
        yield Api(client, app.state.store, clock, True)
