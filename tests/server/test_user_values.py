"""Per-user values on the leaderboard: an upload's are checked against its folds and stored,
read back through ``Database.user_scores``; a reproduction's replace them as trusted.

Run on SQLite and, when the test suite can start one, on a real PostgreSQL.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")

import sqlalchemy as sa

from evaluation.challenge import (
    LEADERBOARD_TESTS,
    FoldUsers,
    UserScores,
    decode_user_values,
    encode_user_values,
    users_sha256,
)
from evaluation.errors import SubmissionRejected
from evaluation.server.core import load_competition
from evaluation.server.db import (
    MIGRATIONS_DIR,
    Database,
    SubmissionRow,
    UserValuesRow,
    add_team,
    create_admin_token,
    list_teams,
)
from evaluation.server.store import (
    UserValues,
    phase_user_values,
    record_reproduction,
    submit,
    user_scores,
)
from tests.server._api import assert_rejected
from tests.server._helpers import EXAMPLE, computed, encode, open_store, sqlite_url, variant
from tests.server._user_values import synthetic_fold, with_user_values

N_USERS = 400


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path, competition):
    """A store on an SQLite file or on a database of its own on a real PostgreSQL."""
    url = sqlite_url(tmp_path) if request.param == "sqlite" \
        else request.getfixturevalue("postgres_migrated_database")
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


def test_an_honest_upload_is_stored_and_read_back(store: Database):
    add_team(store, "Alpha", "a@example.org")
    team = list_teams(store)[-1].id
    document, folds = honest("Alpha-1", 1)
    sid = submit(store, team, encode(document)).submission_id
    assert user_scores(store, sid) is None  # a claim's values are kept, never read
    computed(store, sid)  # as if a scoring job had computed the same values
    values = user_scores(store, sid)
    assert values is not None and values.trusted
    assert_same(values, folds)
    assert values.labels[0]["MRED_COUNTRY"] == ("a", "b", "c", "d")
    assert user_scores(store, sid, private=True) is None
    assert phase_user_values(store, "public", [sid, 999999]).keys() == {sid}
    # the stored body leaves the blob to user_values (stored once, compressed)
    with store.engine.connect() as conn:
        payload = conn.execute(sa.select(SubmissionRow.payload)
                               .where(SubmissionRow.id == sid)).scalar_one()
    assert "user_values" not in payload


def test_the_board_decodes_each_blob_once(store: Database, monkeypatch):
    from evaluation.server.store import _user_values as _store_user_values

    _store_user_values._CACHE.clear()  # blobs are keyed by content: another test's are equal
    decoded = []
    real = _store_user_values.decode_user_values
    monkeypatch.setattr(_store_user_values, "decode_user_values",
                        lambda *a, **k: decoded.append(1) or real(*a, **k))
    ids, sent = [], {}
    for seed, name in enumerate(("Alpha", "Beta", "Gamma"), start=10):
        token_team = add_team(store, name, "t@example.org")[0].id
        document, folds = honest(f"{name}-1", seed)
        sid = submit(store, token_team, encode(document)).submission_id
        computed(store, sid)
        ids.append(sid)
        sent[sid] = folds
    first = phase_user_values(store, "public", ids)
    assert sorted(first) == ids and len(decoded) == 3
    again = phase_user_values(store, "public", ids)
    assert len(decoded) == 3  # from memory
    for sid in ids:
        assert_same(again[sid], sent[sid])
        assert not again[sid].folds[0].rr.flags.writeable  # shared: read-only
    assert phase_user_values(store, "another phase", ids) == {}


def test_a_reproduction_replaces_them_on_both_backends(store: Database):
    from tests.server._api import report

    add_team(store, "Alpha", "a@example.org")
    team = list_teams(store)[-1].id
    document, folds = honest("Alpha-1", 4)
    sid = submit(store, team, encode(document)).submission_id
    costs = [{"train_seconds": 2.0, "predict_seconds": 0.5, "peak_rss_mib": 512.0}] * 4
    body = report(document, user_values=document["user_values"], costs=costs)
    record_reproduction(store, sid, json.dumps(body).encode())
    values = user_scores(store, sid)
    assert values.trusted and values.costs_trusted
    assert [c.peak_rss_mib for c in values.costs] == [512.0] * 4
    assert_same(values, folds)
    # a reproduction on other test users is refused: it would not pair with the upload
    other = [FoldUsers(f.scores, users_sha256(np.arange(N_USERS) + 7), f.labels)
             for f in folds]
    moved = report(document, user_values=encode_user_values(other, 100))
    with pytest.raises(SubmissionRejected, match="not the upload's"):
        record_reproduction(store, sid, json.dumps(moved).encode())


def test_values_that_do_not_add_up_are_refused(store: Database):
    add_team(store, "Alpha", "a@example.org")
    team = list_teams(store)[-1].id
    document, folds = honest("Alpha-1", 2)
    # one user's rank changes (a hit moves from rank 1 to rank 2): MRR no longer adds up
    s = folds[2].scores
    user = int(np.flatnonzero(s.rr == 1.0)[0])
    rr = s.rr.copy()
    rr[user] = 0.5
    changed = FoldUsers(UserScores(hit=s.hit, rr=rr, slices=s.slices, blw=s.blw, ld=s.ld),
                        folds[2].users_sha256, folds[2].labels)
    blob = encode_user_values([folds[0], folds[1], changed, folds[3]], 100)
    document["user_values"] = blob
    with pytest.raises(SubmissionRejected) as refused:
        submit(store, team, encode(document))
    assert refused.value.status == 422
    reason = refused.value.reason
    assert "fold 2" in reason and "MRR" in reason and "unedited" in reason
    uploaded = document["results"]["folds"][2]["tests"]["MRR"]
    assert repr(uploaded) in reason
    with store.engine.connect() as conn:
        stored = sa.select(sa.func.count()).select_from(UserValuesRow).where(
            UserValuesRow.source == "upload")
        assert conn.execute(stored).scalar() == 0


# ---------------------------------------------------------------------------- a real run, live


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    """A run of the example competition (synthetic data at scale "small"), as uploaded."""
    from evaluation import ChallengeDataset, EvalRSRunner
    from evaluation.baselines import PopularityModel
    from evaluation.contract import submission_payload
    from evaluation.runner import run_user_values

    results_dir = tmp_path_factory.mktemp("real")
    runner = EvalRSRunner(ChallengeDataset(scale="small"), results_dir=results_dir,
                          progress=False, verbose=False, reports=False, n_boot=0,
                          competition=str(EXAMPLE))
    result = runner.evaluate(PopularityModel(), model_name="pop")
    assert result.eligible_for_upload, result.not_eligible_because
    results = json.loads(json.dumps(result.to_dict()))
    run_dir = Path(str(result.path)).parent
    payload = submission_payload(results, email="a@example.org", participant_id="alpha")
    payload["user_values"], _ = run_user_values(results, run_dir)
    return payload, run_dir


def edited_blob(payload: dict, edit) -> str:
    """The payload's blob with ``edit(fold number, FoldUsers) -> FoldUsers`` applied."""
    results = payload["results"]
    folds = decode_user_values(payload["user_values"], [f["n_users"] for f in results["folds"]],
                               k=results["k"])
    return encode_user_values([edit(i, f) for i, f in enumerate(folds)], results["k"])


def test_a_real_runs_upload_is_checked_stored_and_read_back(live, real_run):
    payload, run_dir = real_run
    sid = live.post(encode(payload), live.team("Alpha")).json()["submission_id"]
    assert user_scores(live.store, sid) is None  # a claim's values: kept, never read
    computed(live.store, sid)  # the stored blob, as a scoring job's
    values = user_scores(live.store, sid)
    assert values is not None and values.trusted
    for number, got in enumerate(values.folds):
        with np.load(run_dir / f"fold_{number}_users.npz") as npz:
            np.testing.assert_array_equal(got.rr, npz["rr"])
            np.testing.assert_array_equal(got.blw, npz["blw"].astype(np.float32))
            np.testing.assert_array_equal(got.slices["MRED_GENDER"], npz["slice:MRED_GENDER"])
    folds = payload["results"]["folds"]
    assert values.user_hashes == [f["test_users_sha256"] for f in folds]
    assert [c.train_seconds for c in values.costs] == [f["runtime"]["train"]["seconds"]
                                                       for f in folds]
    assert [c.peak_rss_mib for c in values.costs] == [
        max(s["peak_rss_mib"] for s in f["runtime"].values()) for f in folds]


def test_one_changed_rank_is_refused_through_a_live_server(live, real_run):
    payload, _ = real_run

    def move_a_hit(number: int, fold: FoldUsers) -> FoldUsers:
        if number != 1:
            return fold
        s = fold.scores
        rr = s.rr.copy()
        user = int(np.flatnonzero(rr > 0)[0])
        rr[user] = 1.0 / (round(1.0 / rr[user]) + 1)  # one place lower
        return FoldUsers(UserScores(hit=s.hit, rr=rr, slices=s.slices, blw=s.blw, ld=s.ld),
                         fold.users_sha256, fold.labels)

    changed = {**payload, "user_values": edited_blob(payload, move_a_hit)}
    reason = assert_rejected(live.post(encode(changed), live.team("Beta")), 422)["reason"]
    mrr = payload["results"]["folds"][1]["tests"]["MRR"]
    assert "fold 1" in reason and "MRR" in reason and repr(mrr) in reason
    assert "recomputed from the per-user values" in reason and "unedited" in reason


def _other_users(number: int, fold: FoldUsers) -> FoldUsers:
    """Fold 2's values said to be of other test users."""
    if number != 2:
        return fold
    return FoldUsers(fold.scores, users_sha256(np.arange(len(fold)) + 10**6), fold.labels)


def test_other_test_users_are_refused_once_a_trusted_run_set_them(live, real_run):
    from tests.server._api import post_report, report

    payload, _ = real_run
    moved = {**payload, "user_values": edited_blob(payload, _other_users)}
    # an upload sets no users for others: before a trusted run, both are accepted (a team that
    # uploaded first with forged users cannot have every honest upload refused)
    gamma = live.team("Gamma")
    assert live.post(encode(moved), gamma).status_code == 201
    sid = live.post(encode(payload), live.team("Alpha")).json()["submission_id"]
    # the organizers' reproduction of Alpha's run sets the phase's users
    answer = post_report(live, sid, report(payload, user_values=payload["user_values"]),
                         create_admin_token(live.store))
    assert answer.status_code == 200, answer.text
    again = {**moved, "run_id": "moved-again",
             "results": {**moved["results"], "run_id": "moved-again"}}
    reason = assert_rejected(live.post(encode(again), gamma), 422)["reason"]
    assert "fold 2" in reason and "test users" in reason and "same run hash" in reason


def test_an_older_client_without_values_is_accepted_without_them(live, real_run):
    payload, _ = real_run
    old = {k: v for k, v in payload.items() if k != "user_values"}
    sid = live.post(encode(old), live.team("Delta")).json()["submission_id"]
    assert user_scores(live.store, sid) is None
    assert phase_user_values(live.store, "public", [sid]) == {}


def test_a_reproduction_replaces_the_values_with_trusted_ones(live, real_run):
    from tests.server._api import post_report, report

    payload, _ = real_run
    token, admin = live.team("Alpha"), create_admin_token(live.store)
    sid = live.post(encode(payload), token).json()["submission_id"]
    costs = [{"train_seconds": 1.5, "predict_seconds": 0.25, "peak_rss_mib": 300.0}] * 4
    # values that do not add up to the report's own table are refused
    wrong = edited_blob(payload, lambda n, f: f if n else FoldUsers(
        UserScores(hit=f.scores.hit, rr=f.scores.rr, slices=f.scores.slices,
                   blw=f.scores.blw, ld=np.asarray(f.scores.ld) + 0.01), f.users_sha256,
        f.labels))
    refused = post_report(live, sid, report(payload, user_values=wrong, costs=costs), admin)
    assert "LATENT_DIVERSITY" in assert_rejected(refused, 422)["reason"]
    assert user_scores(live.store, sid) is None  # the upload's values are never read

    body = report(payload, user_values=payload["user_values"], costs=costs, private=True,
                  private_fold_tests=[{t: f["tests"][t] for t in LEADERBOARD_TESTS}
                                      for f in payload["results"]["folds"]],
                  private_user_values=payload["user_values"])
    answer = post_report(live, sid, body, admin)
    assert answer.status_code == 200, answer.text
    values = user_scores(live.store, sid)
    assert values.trusted and values.costs_trusted
    assert [c.train_seconds for c in values.costs] == [1.5] * 4
    private = user_scores(live.store, sid, private=True)
    assert private is not None and private.trusted
    np.testing.assert_array_equal(private.folds[0].rr, values.folds[0].rr)
    with live.store.engine.connect() as conn:
        rows = conn.execute(sa.select(UserValuesRow.source, UserValuesRow.trusted,
                                      UserValuesRow.private)
                            .where(UserValuesRow.submission_id == sid)
                            .order_by(UserValuesRow.id)).all()
    # the upload's values stay for the record
    assert [tuple(r) for r in rows] == [("upload", False, False), ("reproduction", True, False),
                                        ("reproduction", True, True)]


def test_migration_0006_goes_down_and_up(tmp_path):
    from alembic import command
    from alembic.config import Config

    from evaluation.server.db import make_engine, upgrade

    engine = make_engine(sqlite_url(tmp_path))
    try:
        upgrade(engine)
        assert "user_values" in sa.inspect(engine).get_table_names()
        config = Config()
        config.set_main_option("script_location",
                               str(MIGRATIONS_DIR))
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0004")
        assert "user_values" not in sa.inspect(engine).get_table_names()
        upgrade(engine)
        indexes = {i["name"] for i in sa.inspect(engine).get_indexes("user_values")}
        assert indexes == {"ix_user_values_submission_id_recorded_at",
                           "ix_user_values_phase_run_hash"}
    finally:
        engine.dispose()


def test_a_baseline_with_values_anchors_the_phases_test_users(tmp_path, real_run):
    payload, _ = real_run
    baseline = tmp_path / "pop.json"
    baseline.write_text(json.dumps(payload))
    text = EXAMPLE.read_text()
    head = text[:text.index("[[baselines]]")]
    board = tmp_path / "competition.toml"
    board.write_text("accept_claims = true\n" + head
                     + f'[[baselines]]\nname = "Popularity"\nfile = "{baseline}"\n')
    store = open_store(sqlite_url(tmp_path), load_competition(board))
    try:
        pinned = phase_user_values(store, "public", [1, 2, 3])
        (values,) = pinned.values()
        assert values.trusted and values.costs_trusted
        assert values.user_hashes == [f["test_users_sha256"] for f in payload["results"]["folds"]]
        # the first upload of the phase is held to the baseline's test users
        add_team(store, "Alpha", "a@example.org")
        team = list_teams(store)[-1].id
        document, _ = honest("Alpha-1", 3)  # synthetic users: other hashes, same run hash
        with pytest.raises(SubmissionRejected, match="test users"):
            submit(store, team, encode(document))
    finally:
        store.engine.dispose()
