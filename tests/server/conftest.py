"""The leaderboard service's fixtures beyond those of tests/conftest.py (the competition, the
databases): a live server of the competition, and a real run of a competition on the tiny data."""

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


@pytest.fixture(scope="session")
def tiny_board(tmp_path_factory):
    """The tiny competition's file and the template model's run for it, made once a session
    (the rescore and scoring job tests only read them): ``(Path, TinyRun)``."""
    from tests.server._scoring import tiny_competition, tiny_run

    folder = tmp_path_factory.mktemp("tiny-board")
    competition_file = tiny_competition(folder)
    return competition_file, tiny_run(competition_file, folder / "results")
