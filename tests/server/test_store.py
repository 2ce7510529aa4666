"""The leaderboard's database and transactions (evaluation.server: _db, _tokens, _store).

Run on SQLite and, when the test suite can start one, on a real PostgreSQL (``postgres_url``).
Scores are checked against the harness's own ``evaluation.challenge.aggregate``; the rules
(idempotency, daily limit, phases, hidden scores) against hand-set clocks and counts.
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")

import numpy as np
import sqlalchemy as sa

from evaluation.challenge import LEADERBOARD_TESTS, aggregate, phase2_score
from evaluation.errors import ConfigError, SubmissionRejected
from evaluation.server.db import (
    Database,
    SubmissionRow,
    TeamRow,
    add_team,
    authenticate,
    create_admin_token,
    hash_token,
    list_teams,
    make_engine,
    matches,
    metadata,
    new_team_token,
    new_token,
    rank,
    revoke_team,
    upgrade,
)
from evaluation.server.store import LimitReached, get_submission, phase_board, pin_baselines, submit
from tests.server._helpers import (  # noqa: F401
    BASELINES,
    EXAMPLE,
    HEAD_REVISION,
    NOON,
    REPO,
    Clock,
    baseline_document,
    computed,
    encode,
    fold_tests,
    open_store,
    sqlite_url,
    variant,
)

# ---------------------------------------------------------------------------- helpers
# (also used by test_server_api.py and test_server_cli.py)


@pytest.fixture(scope="module")
def store(module_migrated_db_url, competition):
    """One store on each backend for the module's tests that read back only what they wrote
    themselves (teams and runs of their own names): opening a store pins the baselines, and
    on PostgreSQL each database of its own is a copy of the template."""
    store = open_store(module_migrated_db_url, competition)
    yield store
    store.engine.dispose()


@pytest.fixture
def own_store(migrated_db_url, competition):
    """A store of the test's own, for the tests that read every team or rank on the board."""
    store = open_store(migrated_db_url, competition)
    yield store
    store.engine.dispose()


@pytest.fixture(scope="module")
def refusing_store(tmp_path_factory, competition):
    """One store (no baselines pinned) for the module's tests of refused teams: each checks
    that nothing was stored, so that they share it (a refusal that stored a team would fail
    that test and the ones after it)."""
    store = open_store(sqlite_url(tmp_path_factory.mktemp("refusals")), competition, pin=False)
    yield store
    store.engine.dispose()


def count_rows(store: Database, *where) -> int:
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
        store = Database(engine)
        upgrade(engine)
        statements.clear()
        add_team(store, "Writers", "w@example.org")
        assert statements[0] == "BEGIN IMMEDIATE"
        statements.clear()
        list_teams(store)
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


NAMES = ["Team Rocket", "東京チーム", "Équipe ñ 🚀", "فریق\u200cما", "<script>alert(1)<script>",
         "x" * 80, "a", "a.b", "Team.", "🚀" * 63]


def test_team_names_of_any_script_are_stored_as_given(own_store):
    tokens = [add_team(own_store, name, "team@example.org")[1] for name in NAMES]
    assert [t.name for t in list_teams(own_store) if not t.is_baseline] == NAMES
    for name, token in zip(NAMES, tokens):
        caller = authenticate(own_store, token)
        assert caller is not None and caller.team == name and not caller.admin


@pytest.mark.parametrize("name, expected", [
    ("", "1 to 80"), ("x" * 81, "81 characters"), ("bad\nname", "U\\+000A"),
    ("tab\tname", "U\\+0009"), (" padded", "starts or ends with a space"),
    ("bidi\u202eeman", "U\\+202E"), ("nbsp\u00a0name", "U\\+00A0"),
    # what the reproduction worker could not use as the team's folder of checkouts
    ("a/b", "holds '/', a path separator"), ("a\\b", "path separator"),
    ("<script>alert(1)</script>", "path separator"), (".", "starts with a dot"),
    ("..", "starts with a dot"), (".hidden", "starts with a dot"),
    ("🚀" * 64, "256 bytes as UTF-8; at most 255"), ("nul\0name", "U\\+0000"),
])
def test_bad_team_names_are_refused(refusing_store, name, expected):
    with pytest.raises(ConfigError, match=expected):
        add_team(refusing_store, name, "team@example.org")
    assert list_teams(refusing_store) == []


@pytest.mark.parametrize("email", ["", "no-at-sign", "two@@example.org", "a b@example.org",
                                   "a@nodot", "x" * 400 + "@example.org"])
def test_bad_emails_are_refused(refusing_store, email):
    with pytest.raises(ConfigError, match="is not an address"):
        add_team(refusing_store, "Team", email)
    assert list_teams(refusing_store) == []


def test_duplicate_names_are_refused_also_by_case_and_compatibility_form(own_store):
    add_team(own_store, "Team Rocket", "a@example.org")
    for same in ("Team Rocket", "team rocket", "ＴＥＡＭ ＲＯＣＫＥＴ"):
        with pytest.raises(ConfigError, match="exists already"):
            add_team(own_store, same, "b@example.org")
    with pytest.raises(ConfigError, match="exists already"):
        add_team(own_store, "Popularity", "b@example.org")  # a pinned baseline's name
    assert [t.name for t in list_teams(own_store) if not t.is_baseline] == ["Team Rocket"]


def test_only_the_token_hash_is_stored_and_revoked_tokens_fail(store):
    team, token = add_team(store, "Hashers", "h@example.org")
    admin = create_admin_token(store)
    with store.engine.connect() as conn:
        dump = json.dumps([list(map(str, r)) for table in ("teams", "admin_tokens")
                           for r in conn.execute(sa.text(f"SELECT * FROM {table}"))])
    assert token not in dump and admin not in dump
    assert hash_token(token) in dump and hash_token(admin) in dump
    assert authenticate(store, admin).admin
    assert authenticate(store, token).team_id == team.id
    for wrong in (None, "", token[:-1], token + "A", new_token(), "Bearer " + token):
        assert authenticate(store, wrong) is None
    revoked = revoke_team(store, "Hashers")
    assert revoked.state == "revoked" and revoked.revoked_at is not None
    assert authenticate(store, token) is None
    assert revoke_team(store, "Hashers").revoked_at == revoked.revoked_at  # stays revoked
    with pytest.raises(ConfigError, match="no team named"):
        revoke_team(store, "Nobody")
    with pytest.raises(ConfigError, match="baseline"):
        revoke_team(store, "Popularity")
    with pytest.raises(ConfigError, match="baseline"):
        new_team_token(store, "Popularity")
    renewed, fresh = new_team_token(store, "Hashers")
    assert renewed.state == "active" and authenticate(store, fresh).team_id == team.id
    assert authenticate(store, token) is None


# ---------------------------------------------------------------------------- baselines


def test_baselines_are_pinned_once_across_restarts(migrated_db_url, competition):
    first = open_store(migrated_db_url, competition)
    pinned = pin_baselines(first)
    # two baselines on each of the two phases
    assert sorted((b, p) for b, p, _ in pinned) == [
        ("Popularity", "final"), ("Popularity", "public"), ("Random", "final"),
        ("Random", "public")]
    first.engine.dispose()
    again = open_store(migrated_db_url, competition)  # a restart pins again
    assert pin_baselines(again) == pinned
    assert count_rows(again) == 4
    teams = list_teams(again)
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
    pin_baselines(store)
    board = phase_board(store, "public")
    popularity = [r for r in board.rows if r.team == "Popularity"]
    assert len(popularity) == 1 and popularity[0].submissions == 1
    expected = aggregate(fold_tests(better), refs)["phase2_score"]
    assert popularity[0].leaderboard_score == pytest.approx(expected, rel=1e-12)
    assert count_rows(store) == 4


def test_a_team_named_like_a_baseline_stops_the_pinning(tmp_path, competition):
    store = open_store(sqlite_url(tmp_path), competition, pin=False)
    add_team(store, "Random", "r@example.org")
    with pytest.raises(ConfigError, match="a team of that name exists"):
        pin_baselines(store)


# ---------------------------------------------------------------------------- submissions


def test_submission_scores_are_recomputed_with_the_phase_references(own_store, competition):
    _, token = add_team(own_store, "Scorers", "s@example.org")
    team_id = authenticate(own_store, token).team_id
    refs = competition.phases[0].references
    doc = variant("Scorers-run-1", 1.2, refs)
    receipt = submit(own_store, team_id, encode(doc), "Scorers-run-1")
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
    assert receipt.rank is None  # a claim has no place until the organizers computed it
    computed(own_store, receipt.submission_id)
    assert rank(own_store, "public", team_id) == 1  # above both baselines' scores, the only team
    view = get_submission(own_store, receipt.submission_id, authenticate(own_store, token))
    assert view.tests == pytest.approx({t: expected["mean"][t] for t in LEADERBOARD_TESTS})
    assert view.num_folds == 4 and view.run_id == "Scorers-run-1"
    assert view.submitted_at == NOON


def test_a_changed_claim_is_stored_with_the_recomputed_score_and_flagged(store, competition):
    _, token = add_team(store, "Claimers", "c@example.org")
    team_id = authenticate(store, token).team_id
    refs = competition.phases[0].references
    doc = variant("Claimers-run", 1.0, refs)
    honest = aggregate(fold_tests(doc), refs)["phase2_score"]
    doc["leaderboard_score"] = doc["results"]["leaderboard_score"] = 0.99
    receipt = submit(store, team_id, encode(doc))
    assert receipt.status == "accepted" and receipt.flagged
    assert receipt.leaderboard_score == pytest.approx(honest, rel=1e-12)
    assert "flagged" in receipt.message
    view = get_submission(store, receipt.submission_id, authenticate(store, token))
    assert view.claimed_score == 0.99 and view.flagged


def test_the_same_run_again_is_a_duplicate_and_another_body_a_conflict(store):
    _, token = add_team(store, "Repeaters", "r@example.org")
    team_id = authenticate(store, token).team_id
    doc = variant("Repeat-run")
    first = submit(store, team_id, encode(doc))
    # the same JSON with other whitespace and key order is the same body
    same = json.dumps(doc, indent=2, sort_keys=True).encode()
    second = submit(store, team_id, same)
    assert (first.status, second.status) == ("accepted", "duplicate")
    assert second.submission_id == first.submission_id and second.http_status == 200
    changed = variant("Repeat-run", 1.1)
    with pytest.raises(SubmissionRejected) as info:
        submit(store, team_id, encode(changed))
    assert info.value.status == 409
    assert "Repeat-run" in info.value.reason and str(first.submission_id) in info.value.reason
    assert count_rows(store, SubmissionRow.team_id == team_id) == 1


def test_an_idempotency_key_must_be_the_run_id(store):
    _, token = add_team(store, "Keys", "k@example.org")
    with pytest.raises(SubmissionRejected) as info:
        submit(store, authenticate(store, token).team_id, encode(variant("Key-run")), "other")
    assert info.value.status == 422 and "Idempotency-Key" in info.value.reason


def test_daily_limit_per_utc_day_and_retry_after(migrated_db_url, competition):
    clock = Clock(datetime(2026, 6, 1, 23, 59, 0, tzinfo=timezone.utc))
    store = open_store(migrated_db_url, competition, clock)
    _, token = add_team(store, "Limited", "l@example.org")
    team_id = authenticate(store, token).team_id
    limit = competition.phases[0].daily_limit
    assert limit == 5
    for i in range(limit):
        assert submit(store, team_id, encode(variant(f"day1-{i}"))).status == "accepted"
    # a repeat of a stored run is not counted, even at the limit
    assert submit(store, team_id, encode(variant("day1-0"))).status == "duplicate"
    clock.now = datetime(2026, 6, 1, 23, 59, 30, 250000, tzinfo=timezone.utc)
    with pytest.raises(LimitReached) as info:
        submit(store, team_id, encode(variant("day1-extra")))
    assert info.value.status == 429
    assert info.value.retry_after == 30  # 29.75 s to midnight, rounded up
    assert "5 of 5" in info.value.reason and "2026-06-02T00:00:00Z" in info.value.reason
    # another team is not limited by this one
    _, other = add_team(store, "Unlimited", "u@example.org")
    assert submit(store, authenticate(store, other).team_id,
                        encode(variant("day1-extra"))).status == "accepted"
    clock.now = datetime(2026, 6, 2, 0, 0, 0, tzinfo=timezone.utc)  # a new UTC day
    assert submit(store, team_id, encode(variant("day1-extra"))).status == "accepted"
    assert count_rows(store, SubmissionRow.team_id == team_id) == limit + 1
    store.engine.dispose()


def test_phases_closed_open_and_hidden(tmp_path, competition):
    clock = Clock(datetime(2025, 12, 31, 23, 59, 59, tzinfo=timezone.utc))
    store = open_store(sqlite_url(tmp_path), competition, clock)
    _, token = add_team(store, "Phasers", "p@example.org")
    team_id = authenticate(store, token).team_id
    with pytest.raises(SubmissionRejected) as info:
        submit(store, team_id, encode(variant("early")))
    assert info.value.status == 403
    reason = info.value.reason
    assert "'public' from 2026-01-01T00:00:00Z until 2028-01-01T00:00:00Z" in reason
    assert "'final' from 2028-01-01T00:00:00Z until 2028-02-01T00:00:00Z" in reason
    clock.now = datetime(2026, 1, 1, tzinfo=timezone.utc)  # opens is included
    assert submit(store, team_id, encode(variant("on-time"))).phase == "public"
    clock.now = datetime(2028, 1, 1, tzinfo=timezone.utc)  # closes is excluded
    final = submit(store, team_id, encode(variant("final-1", 1.2)))
    assert final.phase == "final" and final.status == "accepted"
    # the final phase's scores are hidden from the team
    assert (final.leaderboard_score, final.phase1_score, final.interval, final.rank) == \
        (None, None, None, None)
    assert "hidden" in final.message
    caller = authenticate(store, token)
    assert get_submission(store, final.submission_id, caller).leaderboard_score is None
    admin = authenticate(store, create_admin_token(store))
    assert get_submission(store, final.submission_id, admin).leaderboard_score is not None
    clock.now = datetime(2028, 2, 1, tzinfo=timezone.utc)
    with pytest.raises(SubmissionRejected) as info:
        submit(store, team_id, encode(variant("late")))
    assert info.value.status == 403


def test_a_run_of_another_competition_is_refused(store):
    _, token = add_team(store, "Others", "o@example.org")
    team_id = authenticate(store, token).team_id
    doc = variant("other-hash")
    doc["run_hash"] = doc["results"]["run_hash"] = "0" * 64
    with pytest.raises(SubmissionRejected) as info:
        submit(store, team_id, encode(doc))
    assert info.value.status == 422 and "run hash" in info.value.reason
    assert count_rows(store, SubmissionRow.team_id == team_id) == 0


# ---------------------------------------------------------------------------- the board


def test_board_best_per_team_order_baselines_and_counts(migrated_db_url, competition):
    clock = Clock()
    store = open_store(migrated_db_url, competition, clock)
    refs = competition.phases[0].references
    ids = {}
    for name in ("Alpha", "Beta", "Gamma"):
        _, token = add_team(store, name, f"{name.lower()}@example.org")
        ids[name] = authenticate(store, token).team_id
    submitted = {}
    for minute, (team, run, scale) in enumerate([
            ("Alpha", "a1", 1.1), ("Alpha", "a2", 1.4), ("Alpha", "a3", 0.9),
            ("Beta", "b1", 1.2), ("Gamma", "g1", 1.2)]):
        clock.now = NOON + timedelta(minutes=minute)
        doc = variant(run, scale)
        submitted[run] = (submit(store, ids[team], encode(doc)).submission_id,
                          aggregate(fold_tests(doc), refs)["phase2_score"], clock.now)
    assert all(r.rank is None for r in phase_board(store).rows)  # claims: none ranked
    computed(store)
    board = phase_board(store)  # the current phase
    assert board.phase == "public" and board.phases == ("public", "final") and board.public
    assert board.tests == tuple(LEADERBOARD_TESTS)
    teams = [r for r in board.rows if not r.is_baseline]
    # Alpha's best is a2; Beta and Gamma tie on every score: the earlier (Beta) first
    assert [(r.team, r.rank, r.submission_id) for r in teams] == [
        ("Alpha", 1, submitted["a2"][0]), ("Beta", 2, submitted["b1"][0]),
        ("Gamma", 3, submitted["g1"][0])]
    # the rank a receipt gives (one SQL count) agrees with the board, ties included
    assert [rank(store, "public", ids[r.team]) for r in teams] == [1, 2, 3]
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
        phase_board(store, "nonexistent")
    assert info.value.status == 404
    store.engine.dispose()


def test_hidden_board_shows_no_scores_or_order_except_to_organizers(tmp_path, competition):
    clock = Clock(datetime(2028, 1, 2, tzinfo=timezone.utc))
    store = open_store(sqlite_url(tmp_path), competition, clock)
    for name, scale in (("Zeta", 1.4), ("Eta", 1.0)):
        _, token = add_team(store, name, "z@example.org")
        submit(store, authenticate(store, token).team_id, encode(variant(f"{name}-f", scale)))
    computed(store)
    public_view = phase_board(store)
    assert public_view.phase == "final" and not public_view.public
    assert [r.team for r in public_view.rows] == ["Eta", "Zeta", "Popularity", "Random"]
    assert all(r.leaderboard_score is None and r.rank is None and r.tests is None
               and r.interval is None and r.phase1_score is None for r in public_view.rows)
    admin_view = phase_board(store, admin=True)
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


def test_daily_limit_is_exact_under_concurrency(migrated_db_url, competition):
    store = open_store(migrated_db_url, competition)
    _, token = add_team(store, "Racers", "r@example.org")
    team_id = authenticate(store, token).team_id
    bodies = [encode(variant(f"race-{i}", 1 + i / 100)) for i in range(20)]
    results = _run_threads(20, lambda i: submit(store, team_id, bodies[i]))
    accepted = [r for r in results if not isinstance(r, Exception)]
    refused = [r for r in results if isinstance(r, Exception)]
    assert len(accepted) == 5 and all(r.status == "accepted" for r in accepted)
    assert len(refused) == 15 and all(isinstance(r, LimitReached) for r in refused), refused
    assert count_rows(store, SubmissionRow.team_id == team_id) == 5
    assert len({r.submission_id for r in accepted}) == 5
    store.engine.dispose()


def test_one_run_is_stored_once_under_concurrency(migrated_db_url, competition):
    store = open_store(migrated_db_url, competition)
    _, token = add_team(store, "Twins", "t@example.org")
    team_id = authenticate(store, token).team_id
    body = encode(variant("twin-run"))
    results = _run_threads(20, lambda i: submit(store, team_id, body, "twin-run"))
    assert not [r for r in results if isinstance(r, Exception)], results
    assert sorted(r.status for r in results) == ["accepted"] + ["duplicate"] * 19
    assert len({r.submission_id for r in results}) == 1
    assert count_rows(store, SubmissionRow.team_id == team_id) == 1
    store.engine.dispose()
