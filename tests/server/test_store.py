"""The leaderboard's database and transactions (evaluation.server: _db, _tokens, _store).

Run on SQLite and, when the test suite can start one, on a real PostgreSQL (``postgres_url``).
Scores are checked against the harness's own ``evaluation.challenge.aggregate``; the rules
(idempotency, daily limit, phases, hidden scores) against hand-set clocks and counts.
"""

from __future__ import annotations

import copy
import itertools
import json
import threading
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")

import numpy as np
import sqlalchemy as sa

from evaluation.challenge import LEADERBOARD_TESTS, aggregate, phase2_score
from evaluation.errors import ConfigError, SubmissionRejected
from evaluation.server import (
    LimitReached,
    Store,
    SubmissionRow,
    TeamRow,
    hash_token,
    load_competition,
    make_engine,
    matches,
    metadata,
    new_token,
    upgrade,
)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "competition.toml"
#: The newest migration: what a fresh or upgraded database says it is at.
HEAD_REVISION = "0007"
BASELINES = REPO / "competition" / "baselines"
#: Inside the example's public phase (2026-01-01 to 2028-01-01), at noon UTC.
NOON = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)


# ---------------------------------------------------------------------------- helpers
# (also used by test_server_api.py and test_server_cli.py)


class Clock:
    """A clock the test moves: ``clock()`` is the time, ``clock.now`` sets it."""

    def __init__(self, now: datetime = NOON) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def baseline_document(name: str = "popularity") -> dict:
    """A baseline file of the example competition: a valid submission for any team."""
    return json.loads((BASELINES / f"{name}.json").read_text())


def fold_tests(document: dict) -> list[dict]:
    folds = sorted(document["results"]["folds"], key=lambda f: f["fold"])
    return [{t: f["tests"][t] for t in LEADERBOARD_TESTS} for f in folds]


def variant(run_id: str, scale: float = 1.0, references=None, base: dict | None = None) -> dict:
    """Another valid run: the baseline with ``run_id`` and every fold's HIT_RATE times
    ``scale``; its claimed scores are the harness's (``aggregate``) when ``references`` are
    given, else removed (a claim of None claims nothing)."""
    doc = copy.deepcopy(base or baseline_document())
    doc["run_id"] = doc["results"]["run_id"] = run_id
    for fold in doc["results"]["folds"]:
        fold["tests"]["HIT_RATE"] = min(1.0, fold["tests"]["HIT_RATE"] * scale)
    results = doc["results"]
    if references is None:
        doc["leaderboard_score"] = None
        for key in ("leaderboard_score", "phase1_score", "phase2_score"):
            results[key] = None
        for key in ("phase1_score", "phase2_score"):
            results["aggregate"].pop(key, None)
    else:
        agg = aggregate(fold_tests(doc), references)
        doc["leaderboard_score"] = results["leaderboard_score"] = agg["phase2_score"]
        results["phase2_score"] = results["aggregate"]["phase2_score"] = agg["phase2_score"]
        results["phase1_score"] = results["aggregate"]["phase1_score"] = agg["phase1_score"]
    return doc


def encode(document: dict) -> bytes:
    return json.dumps(document).encode("utf-8")


def sqlite_url(folder: Path) -> str:
    return f"sqlite:///{folder / 'leaderboard.db'}"


@pytest.fixture(scope="module")
def competition():
    return load_competition(EXAMPLE)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    """An empty database: an SQLite file, or a database of its own on a real PostgreSQL."""
    if request.param == "sqlite":
        return sqlite_url(tmp_path)
    return request.getfixturevalue("postgres_database")


def open_store(url: str, competition, clock=None, pin: bool = True) -> Store:
    engine = make_engine(url)
    upgrade(engine)
    store = Store(engine, competition, clock or Clock())
    if pin:
        store.pin_baselines()
    return store


@pytest.fixture
def store(db_url, competition):
    store = open_store(db_url, competition)
    yield store
    store.engine.dispose()


def count_rows(store: Store, *where) -> int:
    with store.engine.connect() as conn:
        query = sa.select(sa.func.count()).select_from(SubmissionRow)
        return conn.execute(query.where(*where) if where else query).scalar_one()


# ---------------------------------------------------------------------------- tokens


def test_tokens_are_256_bit_random_and_only_their_hash_matches():
    tokens = {new_token() for _ in range(50)}
    assert len(tokens) == 50
    assert all(len(t) == 43 and t.isascii() for t in tokens)  # 32 bytes, base64url
    token = new_token()
    digest = hash_token(token)
    assert len(digest) == 64 and int(digest, 16) >= 0
    import hashlib
    assert digest == hashlib.sha256(token.encode()).hexdigest()
    assert matches(token, digest)
    assert not matches(token + "x", digest)
    assert not matches(token, hash_token(new_token()))
    assert not matches(token, "not a hash \u00e9")


# ---------------------------------------------------------------------------- schema, engine


def test_migrated_schema_equals_the_orm_metadata(db_url):
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    engine = make_engine(db_url)
    try:
        upgrade(engine)
        upgrade(engine)  # a second run changes nothing
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), metadata)
            version = conn.execute(sa.text("SELECT version_num FROM alembic_version")).all()
            tables = set(sa.inspect(conn).get_table_names())
        assert diff == []
        assert version == [(HEAD_REVISION,)]
        assert {"teams", "submissions", "admin_tokens", "reproductions", "phase_reveals"} <= tables
    finally:
        engine.dispose()


def test_sqlite_engine_settings_and_immediate_transactions(tmp_path):
    engine = make_engine(sqlite_url(tmp_path))
    statements = []
    sa.event.listen(engine, "before_cursor_execute",
                    lambda conn, cursor, statement, *rest: statements.append(statement))
    try:
        with engine.connect() as conn:
            pragmas = {p: conn.exec_driver_sql(f"PRAGMA {p}").scalar()
                       for p in ("journal_mode", "synchronous", "foreign_keys", "busy_timeout")}
        assert pragmas == {"journal_mode": "wal", "synchronous": 2, "foreign_keys": 1,
                           "busy_timeout": 10000}
        statements.clear()
        store = Store(engine)
        upgrade(engine)
        statements.clear()
        store.add_team("Writers", "w@example.org")
        assert statements[0] == "BEGIN IMMEDIATE"
        statements.clear()
        store.list_teams()
        assert statements[0] == "BEGIN"
    finally:
        engine.dispose()


@pytest.mark.parametrize("url, expected", [
    ("not a url", "cannot be parsed"),
    ("sqlite://", "in-memory"),
    ("sqlite:///:memory:", "in-memory"),
    ("nosuchdb://user:pw@host/db", "driver is not available"),
])
def test_make_engine_refuses_bad_urls(url, expected):
    with pytest.raises(ConfigError, match=expected):
        make_engine(url)


def test_unreachable_database_is_a_config_error_without_the_password(tmp_path):
    with pytest.raises(ConfigError) as info:
        upgrade(f"sqlite:///{tmp_path / 'no' / 'such' / 'folder' / 'lb.db'}")
    assert "cannot open the database" in str(info.value)
    pytest.importorskip("psycopg")
    url = "postgresql+psycopg://someone:S3cretPassw0rd@127.0.0.1:1/leaderboard"
    with pytest.raises(ConfigError) as info:
        upgrade(url)
    message = str(info.value)
    assert "S3cretPassw0rd" not in message
    assert "someone:***@127.0.0.1:1/leaderboard" in message


def test_times_come_back_as_aware_utc(store):
    with store._write() as session, session.begin():
        team = TeamRow(name="Clocks", email=None, token_hash=None, is_baseline=False,
                       created_at=datetime(2026, 6, 1, 14, 0,
                                           tzinfo=timezone(timedelta(hours=2))))
        session.add(team)
    with store._read() as session:
        created = session.scalars(sa.select(TeamRow.created_at)
                                  .where(TeamRow.name == "Clocks")).one()
    assert created == datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
    assert created.utcoffset() == timedelta(0)


# ---------------------------------------------------------------------------- teams and tokens


NAMES = ["Team Rocket", "東京チーム", "Équipe ñ 🚀", "فریق\u200cما", "<script>alert(1)</script>",
         "x" * 80, "a"]


def test_team_names_of_any_script_are_stored_as_given(store):
    tokens = [store.add_team(name, "team@example.org")[1] for name in NAMES]
    assert [t.name for t in store.list_teams() if not t.is_baseline] == NAMES
    for name, token in zip(NAMES, tokens):
        caller = store.authenticate(token)
        assert caller is not None and caller.team == name and not caller.admin


@pytest.mark.parametrize("name, expected", [
    ("", "1 to 80"), ("x" * 81, "81 characters"), ("bad\nname", "U\\+000A"),
    ("tab\tname", "U\\+0009"), (" padded", "starts or ends with a space"),
    ("bidi\u202eeman", "U\\+202E"), ("nbsp\u00a0name", "U\\+00A0"),
])
def test_bad_team_names_are_refused(tmp_path, competition, name, expected):
    store = open_store(sqlite_url(tmp_path), competition, pin=False)
    with pytest.raises(ConfigError, match=expected):
        store.add_team(name, "team@example.org")
    assert store.list_teams() == []


@pytest.mark.parametrize("email", ["", "no-at-sign", "two@@example.org", "a b@example.org",
                                   "a@nodot", "x" * 400 + "@example.org"])
def test_bad_emails_are_refused(tmp_path, competition, email):
    store = open_store(sqlite_url(tmp_path), competition, pin=False)
    with pytest.raises(ConfigError, match="is not an address"):
        store.add_team("Team", email)


def test_duplicate_names_are_refused_also_by_case_and_compatibility_form(store):
    store.add_team("Team Rocket", "a@example.org")
    for same in ("Team Rocket", "team rocket", "ＴＥＡＭ ＲＯＣＫＥＴ"):
        with pytest.raises(ConfigError, match="exists already"):
            store.add_team(same, "b@example.org")
    with pytest.raises(ConfigError, match="exists already"):
        store.add_team("Popularity", "b@example.org")  # a pinned baseline's name
    assert [t.name for t in store.list_teams() if not t.is_baseline] == ["Team Rocket"]


def test_only_the_token_hash_is_stored_and_revoked_tokens_fail(store):
    team, token = store.add_team("Hashers", "h@example.org")
    admin = store.create_admin_token()
    with store.engine.connect() as conn:
        dump = json.dumps([list(map(str, r)) for table in ("teams", "admin_tokens")
                           for r in conn.execute(sa.text(f"SELECT * FROM {table}"))])
    assert token not in dump and admin not in dump
    assert hash_token(token) in dump and hash_token(admin) in dump
    assert store.authenticate(admin).admin
    assert store.authenticate(token).team_id == team.id
    for wrong in (None, "", token[:-1], token + "A", new_token(), "Bearer " + token):
        assert store.authenticate(wrong) is None
    revoked = store.revoke_team("Hashers")
    assert revoked.state == "revoked" and revoked.revoked_at is not None
    assert store.authenticate(token) is None
    assert store.revoke_team("Hashers").revoked_at == revoked.revoked_at  # stays revoked
    with pytest.raises(ConfigError, match="no team named"):
        store.revoke_team("Nobody")
    with pytest.raises(ConfigError, match="baseline"):
        store.revoke_team("Popularity")
    with pytest.raises(ConfigError, match="baseline"):
        store.new_team_token("Popularity")
    renewed, fresh = store.new_team_token("Hashers")
    assert renewed.state == "active" and store.authenticate(fresh).team_id == team.id
    assert store.authenticate(token) is None


# ---------------------------------------------------------------------------- baselines


def test_baselines_are_pinned_once_across_restarts(db_url, competition):
    first = open_store(db_url, competition)
    pinned = first.pin_baselines()
    # two baselines on each of the two phases
    assert sorted((b, p) for b, p, _ in pinned) == [
        ("Popularity", "final"), ("Popularity", "public"), ("Random", "final"),
        ("Random", "public")]
    first.engine.dispose()
    again = open_store(db_url, competition)  # a restart pins again
    assert again.pin_baselines() == pinned
    assert count_rows(again) == 4
    teams = again.list_teams()
    assert [(t.name, t.state, t.submissions) for t in teams] == [
        ("Popularity", "baseline", 2), ("Random", "baseline", 2)]
    again.engine.dispose()


def test_a_changed_baseline_file_replaces_the_pinned_run(tmp_path, competition):
    store = open_store(sqlite_url(tmp_path), competition)
    refs = competition.phases[0].references
    better = variant("PopularityModel-retrained", 1.3, refs)
    path = tmp_path / "popularity.json"
    path.write_text(json.dumps(better))
    changed = replace(competition, baselines=(replace(competition.baselines[0], file=path),
                                              competition.baselines[1]))
    store.competition = changed
    store.pin_baselines()
    board = store.board("public")
    popularity = [r for r in board.rows if r.team == "Popularity"]
    assert len(popularity) == 1 and popularity[0].submissions == 1
    expected = aggregate(fold_tests(better), refs)["phase2_score"]
    assert popularity[0].leaderboard_score == pytest.approx(expected, rel=1e-12)
    assert count_rows(store) == 4


def test_a_team_named_like_a_baseline_stops_the_pinning(tmp_path, competition):
    store = open_store(sqlite_url(tmp_path), competition, pin=False)
    store.add_team("Random", "r@example.org")
    with pytest.raises(ConfigError, match="a team of that name exists"):
        store.pin_baselines()


# ---------------------------------------------------------------------------- submissions


def test_submission_scores_are_recomputed_with_the_phase_references(store, competition):
    _, token = store.add_team("Scorers", "s@example.org")
    team_id = store.authenticate(token).team_id
    refs = competition.phases[0].references
    doc = variant("Scorers-run-1", 1.2, refs)
    receipt = store.submit(team_id, encode(doc), "Scorers-run-1")
    expected = aggregate(fold_tests(doc), refs)
    assert receipt.status == "accepted" and receipt.http_status == 201
    assert receipt.phase == "public" and not receipt.flagged
    assert receipt.leaderboard_score == pytest.approx(expected["phase2_score"], rel=1e-12)
    assert receipt.phase1_score == pytest.approx(expected["phase1_score"], rel=1e-12)
    # the interval: every one of the 4**4 resamples of the folds, scored (brute force)
    folds = fold_tests(doc)
    resampled = [phase2_score({t: np.mean([folds[i][t] for i in sample])
                               for t in LEADERBOARD_TESTS}, refs)
                 for sample in itertools.product(range(4), repeat=4)]
    assert receipt.interval == pytest.approx(tuple(np.percentile(resampled, [2.5, 97.5])),
                                             rel=1e-12)
    assert receipt.rank == 1  # above both baselines' scores, the only team
    view = store.get_submission(receipt.submission_id, store.authenticate(token))
    assert view.tests == pytest.approx({t: expected["mean"][t] for t in LEADERBOARD_TESTS})
    assert view.num_folds == 4 and view.run_id == "Scorers-run-1"
    assert view.submitted_at == NOON


def test_a_changed_claim_is_stored_with_the_recomputed_score_and_flagged(store, competition):
    _, token = store.add_team("Claimers", "c@example.org")
    team_id = store.authenticate(token).team_id
    refs = competition.phases[0].references
    doc = variant("Claimers-run", 1.0, refs)
    honest = aggregate(fold_tests(doc), refs)["phase2_score"]
    doc["leaderboard_score"] = doc["results"]["leaderboard_score"] = 0.99
    receipt = store.submit(team_id, encode(doc))
    assert receipt.status == "accepted" and receipt.flagged
    assert receipt.leaderboard_score == pytest.approx(honest, rel=1e-12)
    assert "flagged" in receipt.message
    view = store.get_submission(receipt.submission_id, store.authenticate(token))
    assert view.claimed_score == 0.99 and view.flagged


def test_the_same_run_again_is_a_duplicate_and_another_body_a_conflict(store):
    _, token = store.add_team("Repeaters", "r@example.org")
    team_id = store.authenticate(token).team_id
    doc = variant("Repeat-run")
    first = store.submit(team_id, encode(doc))
    # the same JSON with other whitespace and key order is the same body
    same = json.dumps(doc, indent=2, sort_keys=True).encode()
    second = store.submit(team_id, same)
    assert (first.status, second.status) == ("accepted", "duplicate")
    assert second.submission_id == first.submission_id and second.http_status == 200
    changed = variant("Repeat-run", 1.1)
    with pytest.raises(SubmissionRejected) as info:
        store.submit(team_id, encode(changed))
    assert info.value.status == 409
    assert "Repeat-run" in info.value.reason and str(first.submission_id) in info.value.reason
    assert count_rows(store, SubmissionRow.team_id == team_id) == 1


def test_an_idempotency_key_must_be_the_run_id(store):
    _, token = store.add_team("Keys", "k@example.org")
    with pytest.raises(SubmissionRejected) as info:
        store.submit(store.authenticate(token).team_id, encode(variant("Key-run")), "other")
    assert info.value.status == 422 and "Idempotency-Key" in info.value.reason


def test_daily_limit_per_utc_day_and_retry_after(db_url, competition):
    clock = Clock(datetime(2026, 6, 1, 23, 59, 0, tzinfo=timezone.utc))
    store = open_store(db_url, competition, clock)
    _, token = store.add_team("Limited", "l@example.org")
    team_id = store.authenticate(token).team_id
    limit = competition.phases[0].daily_limit
    assert limit == 5
    for i in range(limit):
        assert store.submit(team_id, encode(variant(f"day1-{i}"))).status == "accepted"
    # a repeat of a stored run is not counted, even at the limit
    assert store.submit(team_id, encode(variant("day1-0"))).status == "duplicate"
    clock.now = datetime(2026, 6, 1, 23, 59, 30, 250000, tzinfo=timezone.utc)
    with pytest.raises(LimitReached) as info:
        store.submit(team_id, encode(variant("day1-extra")))
    assert info.value.status == 429
    assert info.value.retry_after == 30  # 29.75 s to midnight, rounded up
    assert "5 of 5" in info.value.reason and "2026-06-02T00:00:00Z" in info.value.reason
    # another team is not limited by this one
    _, other = store.add_team("Unlimited", "u@example.org")
    assert store.submit(store.authenticate(other).team_id,
                        encode(variant("day1-extra"))).status == "accepted"
    clock.now = datetime(2026, 6, 2, 0, 0, 0, tzinfo=timezone.utc)  # a new UTC day
    assert store.submit(team_id, encode(variant("day1-extra"))).status == "accepted"
    assert count_rows(store, SubmissionRow.team_id == team_id) == limit + 1
    store.engine.dispose()


def test_phases_closed_open_and_hidden(tmp_path, competition):
    clock = Clock(datetime(2025, 12, 31, 23, 59, 59, tzinfo=timezone.utc))
    store = open_store(sqlite_url(tmp_path), competition, clock)
    _, token = store.add_team("Phasers", "p@example.org")
    team_id = store.authenticate(token).team_id
    with pytest.raises(SubmissionRejected) as info:
        store.submit(team_id, encode(variant("early")))
    assert info.value.status == 403
    reason = info.value.reason
    assert "'public' from 2026-01-01T00:00:00Z until 2028-01-01T00:00:00Z" in reason
    assert "'final' from 2028-01-01T00:00:00Z until 2028-02-01T00:00:00Z" in reason
    clock.now = datetime(2026, 1, 1, tzinfo=timezone.utc)  # opens is included
    assert store.submit(team_id, encode(variant("on-time"))).phase == "public"
    clock.now = datetime(2028, 1, 1, tzinfo=timezone.utc)  # closes is excluded
    final = store.submit(team_id, encode(variant("final-1", 1.2)))
    assert final.phase == "final" and final.status == "accepted"
    # the final phase's scores are hidden from the team
    assert (final.leaderboard_score, final.phase1_score, final.interval, final.rank) == \
        (None, None, None, None)
    assert "hidden" in final.message
    caller = store.authenticate(token)
    assert store.get_submission(final.submission_id, caller).leaderboard_score is None
    admin = store.authenticate(store.create_admin_token())
    assert store.get_submission(final.submission_id, admin).leaderboard_score is not None
    clock.now = datetime(2028, 2, 1, tzinfo=timezone.utc)
    with pytest.raises(SubmissionRejected) as info:
        store.submit(team_id, encode(variant("late")))
    assert info.value.status == 403


def test_a_run_of_another_competition_is_refused(store):
    _, token = store.add_team("Others", "o@example.org")
    team_id = store.authenticate(token).team_id
    doc = variant("other-hash")
    doc["run_hash"] = doc["results"]["run_hash"] = "0" * 64
    with pytest.raises(SubmissionRejected) as info:
        store.submit(team_id, encode(doc))
    assert info.value.status == 422 and "run hash" in info.value.reason
    assert count_rows(store, SubmissionRow.team_id == team_id) == 0


# ---------------------------------------------------------------------------- the board


def test_board_best_per_team_order_baselines_and_counts(db_url, competition):
    clock = Clock()
    store = open_store(db_url, competition, clock)
    refs = competition.phases[0].references
    ids = {}
    for name in ("Alpha", "Beta", "Gamma"):
        _, token = store.add_team(name, f"{name.lower()}@example.org")
        ids[name] = store.authenticate(token).team_id
    submitted = {}
    for minute, (team, run, scale) in enumerate([
            ("Alpha", "a1", 1.1), ("Alpha", "a2", 1.4), ("Alpha", "a3", 0.9),
            ("Beta", "b1", 1.2), ("Gamma", "g1", 1.2)]):
        clock.now = NOON + timedelta(minutes=minute)
        doc = variant(run, scale)
        submitted[run] = (store.submit(ids[team], encode(doc)).submission_id,
                          aggregate(fold_tests(doc), refs)["phase2_score"], clock.now)
    board = store.board()  # the current phase
    assert board.phase == "public" and board.phases == ("public", "final") and board.public
    assert board.tests == tuple(LEADERBOARD_TESTS)
    teams = [r for r in board.rows if not r.is_baseline]
    # Alpha's best is a2; Beta and Gamma tie on every score: the earlier (Beta) first
    assert [(r.team, r.rank, r.submission_id) for r in teams] == [
        ("Alpha", 1, submitted["a2"][0]), ("Beta", 2, submitted["b1"][0]),
        ("Gamma", 3, submitted["g1"][0])]
    # the rank a receipt gives (one SQL count) agrees with the board, ties included
    assert [store._rank("public", ids[r.team]) for r in teams] == [1, 2, 3]
    alpha = teams[0]
    assert alpha.leaderboard_score == pytest.approx(submitted["a2"][1], rel=1e-12)
    assert alpha.submissions == 3
    assert alpha.best_submitted == submitted["a2"][2]
    assert alpha.last_submitted == submitted["a3"][2]
    baselines = [r for r in board.rows if r.is_baseline]
    assert sorted(r.team for r in baselines) == ["Popularity", "Random"]
    assert all(r.rank is None for r in baselines)
    scores = [r.leaderboard_score for r in board.rows]
    assert scores == sorted(scores, reverse=True)
    with pytest.raises(SubmissionRejected) as info:
        store.board("nonexistent")
    assert info.value.status == 404
    store.engine.dispose()


def test_hidden_board_shows_no_scores_or_order_except_to_organizers(tmp_path, competition):
    clock = Clock(datetime(2028, 1, 2, tzinfo=timezone.utc))
    store = open_store(sqlite_url(tmp_path), competition, clock)
    for name, scale in (("Zeta", 1.4), ("Eta", 1.0)):
        _, token = store.add_team(name, "z@example.org")
        store.submit(store.authenticate(token).team_id, encode(variant(f"{name}-f", scale)))
    public_view = store.board()
    assert public_view.phase == "final" and not public_view.public
    assert [r.team for r in public_view.rows] == ["Eta", "Zeta", "Popularity", "Random"]
    assert all(r.leaderboard_score is None and r.rank is None and r.tests is None
               and r.interval is None and r.phase1_score is None for r in public_view.rows)
    admin_view = store.board(admin=True)
    teams = [(r.team, r.rank) for r in admin_view.rows if not r.is_baseline]
    assert teams == [("Zeta", 1), ("Eta", 2)]
    assert all(r.leaderboard_score is not None for r in admin_view.rows)


# ---------------------------------------------------------------------------- concurrency


def _run_threads(n: int, work) -> list:
    """Run ``work(i)`` in ``n`` threads started together; returns what each returned/raised."""
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def target(i: int) -> None:
        barrier.wait(timeout=30)
        try:
            results[i] = work(i)
        except Exception as exc:  # collected and checked by the test
            results[i] = exc

    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a thread did not finish within 60 s"
    return results


def test_daily_limit_is_exact_under_concurrency(db_url, competition):
    store = open_store(db_url, competition)
    _, token = store.add_team("Racers", "r@example.org")
    team_id = store.authenticate(token).team_id
    bodies = [encode(variant(f"race-{i}", 1 + i / 100)) for i in range(20)]
    results = _run_threads(20, lambda i: store.submit(team_id, bodies[i]))
    accepted = [r for r in results if not isinstance(r, Exception)]
    refused = [r for r in results if isinstance(r, Exception)]
    assert len(accepted) == 5 and all(r.status == "accepted" for r in accepted)
    assert len(refused) == 15 and all(isinstance(r, LimitReached) for r in refused), refused
    assert count_rows(store, SubmissionRow.team_id == team_id) == 5
    assert len({r.submission_id for r in accepted}) == 5
    store.engine.dispose()


def test_one_run_is_stored_once_under_concurrency(db_url, competition):
    store = open_store(db_url, competition)
    _, token = store.add_team("Twins", "t@example.org")
    team_id = store.authenticate(token).team_id
    body = encode(variant("twin-run"))
    results = _run_threads(20, lambda i: store.submit(team_id, body, "twin-run"))
    assert not [r for r in results if isinstance(r, Exception)], results
    assert sorted(r.status for r in results) == ["accepted"] + ["duplicate"] * 19
    assert len({r.submission_id for r in results}) == 1
    assert count_rows(store, SubmissionRow.team_id == team_id) == 1
    store.engine.dispose()
