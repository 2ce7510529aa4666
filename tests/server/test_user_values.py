"""Per-user values on the leaderboard: an upload's are checked against its folds and stored,
read back through ``Store.user_scores``; a reproduction's replace them as trusted.

Run on SQLite and, when the test suite can start one, on a real PostgreSQL.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")

import sqlalchemy as sa

from evaluation.errors import SubmissionRejected
from evaluation.server import Store, SubmissionRow, UserValues, UserValuesRow, load_competition
from tests.server._user_values import synthetic_fold, with_user_values
from tests.server.test_store import EXAMPLE, encode, open_store, sqlite_url, variant

N_USERS = 400


@pytest.fixture(scope="module")
def competition():
    return load_competition(EXAMPLE)


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path, competition):
    """A store on an SQLite file or on a database of its own on a real PostgreSQL."""
    url = sqlite_url(tmp_path) if request.param == "sqlite" \
        else request.getfixturevalue("postgres_database")
    opened = open_store(url, competition)
    yield opened
    opened.engine.dispose()


def honest(run_id: str, seed: int) -> tuple[dict, list]:
    folds = [synthetic_fold(seed * 10 + f, N_USERS) for f in range(4)]
    return with_user_values(variant(run_id), folds), folds


def assert_same(values: UserValues, folds: list) -> None:
    assert len(values.folds) == len(folds)
    for got, sent in zip(values.folds, folds):
        np.testing.assert_array_equal(got.hit, sent.scores.hit)
        np.testing.assert_array_equal(got.rr, sent.scores.rr)  # 1/rank, to the bit
        np.testing.assert_array_equal(got.blw, np.asarray(sent.scores.blw, np.float32))
        np.testing.assert_array_equal(got.ld, np.asarray(sent.scores.ld, np.float32))
        for test, codes in sent.scores.slices.items():
            np.testing.assert_array_equal(got.slices[test], codes)
    assert values.user_hashes == [f.users_sha256 for f in folds]


def test_an_honest_upload_is_stored_and_read_back(store: Store):
    store.add_team("Alpha", "a@example.org")
    team = store.list_teams()[-1].id
    document, folds = honest("Alpha-1", 1)
    sid = store.submit(team, encode(document)).submission_id
    values = store.user_scores(sid)
    assert values is not None and not values.trusted
    assert_same(values, folds)
    assert values.labels[0]["MRED_COUNTRY"] == ("a", "b", "c", "d")
    assert store.user_scores(sid, private=True) is None
    assert store.phase_user_values("public", [sid, 999999]).keys() == {sid}
    # the stored body leaves the blob to user_values (stored once, compressed)
    with store.engine.connect() as conn:
        payload = conn.execute(sa.select(SubmissionRow.payload)
                               .where(SubmissionRow.id == sid)).scalar_one()
    assert "user_values" not in payload


def test_values_that_do_not_add_up_are_refused(store: Store):
    store.add_team("Alpha", "a@example.org")
    team = store.list_teams()[-1].id
    document, folds = honest("Alpha-1", 2)
    # one user's rank changes (a hit moves from rank 1 to rank 2): MRR no longer adds up
    s = folds[2].scores
    user = int(np.flatnonzero(s.rr == 1.0)[0])
    rr = s.rr.copy()
    rr[user] = 0.5
    from evaluation.challenge import FoldUsers, UserScores, encode_user_values
    changed = FoldUsers(UserScores(hit=s.hit, rr=rr, slices=s.slices, blw=s.blw, ld=s.ld),
                        folds[2].users_sha256, folds[2].labels)
    blob = encode_user_values([folds[0], folds[1], changed, folds[3]], 100)
    document["user_values"] = blob
    with pytest.raises(SubmissionRejected) as refused:
        store.submit(team, encode(document))
    assert refused.value.status == 422
    reason = refused.value.reason
    assert "fold 2" in reason and "MRR" in reason and "unedited" in reason
    uploaded = document["results"]["folds"][2]["tests"]["MRR"]
    assert repr(uploaded) in reason
    with store.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(UserValuesRow)).scalar() == 0
