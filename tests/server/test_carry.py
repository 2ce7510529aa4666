"""Phases that carry over: when a phase opens, the submissions of the earlier phase its
competition file names (``carry_from``) enter it, by its ``carry`` rule ("finals", "best" or
"all"), without a new upload: scored again by a scoring job on the kept predictions (the same
public folds: one ``[dataset]`` for all phases), queued for reproduction, marked as carried on
the board, its JSON and CSV and in the team's submissions, once however often the phase is
opened. Bad competition files are refused at load, naming the file, key, rule, value and fix.
"""

from __future__ import annotations

import csv
import io
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
httpx = pytest.importorskip("httpx")

import sqlalchemy as sa  # noqa: E402

from evaluation import ChallengeDataset  # noqa: E402
from evaluation.contract import PREDICTIONS_MEDIA_TYPE  # noqa: E402
from evaluation.errors import ConfigError, SubmissionRejected  # noqa: E402
from evaluation.reproduce._scoring_job import score_upload  # noqa: E402
from evaluation.server.api import create_app  # noqa: E402
from evaluation.server.core import load_competition  # noqa: E402
from evaluation.server.db import (  # noqa: E402
    MIGRATIONS_DIR,
    SubmissionRow,
    add_team,
    create_admin_token,
    make_engine,
    reveal_phase,
    upgrade,
)
from evaluation.server.store import (  # noqa: E402
    carry_phase,
    check_before_body,
    list_jobs,
    mark_final,
    own_submissions,
    phase_board,
    start_rescore,
    submit,
)
from tests._competition_files import write_competition  # noqa: E402
from tests.server._helpers import (  # noqa: E402
    Clock,
    document,
    encode,
    open_store,
    run_cli,
    sqlite_url,
    variant,
    write,
)
from tests.server._live_server import http_client, live_server  # noqa: E402
from tests.server._scoring import TinyRun, tiny_run  # noqa: E402

SUBMIT = "/api/v1/submissions"
UTC = timezone.utc
#: The tiny competition's phases: "one" closes at noon, "two" opens then and carries.
NOON = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
PHASES = f"""
[[phases]]
name = "one"
opens = 2020-01-01T00:00:00Z
closes = {NOON.isoformat().replace("+00:00", "Z")}
references = "synthetic-tiny"
daily_limit = 5
public = true

[[phases]]
name = "two"
opens = {NOON.isoformat().replace("+00:00", "Z")}
closes = 2100-01-01T00:00:00Z
references = "synthetic-tiny"
daily_limit = 1
public = true
carry_from = "one"
carry = "best"
"""


# --------------------------------------------------------------------------- the file


def _refusal(tmp_path: Path, example, **carry) -> str:
    doc = document(example)
    doc["phases"][1].update(carry)
    with pytest.raises(ConfigError) as refused:
        load_competition(write(tmp_path, doc))
    return str(refused.value)


@pytest.mark.parametrize("carry, key, words", [
    ({"carry_from": "nowhere", "carry": "best"}, "phases[1].carry_from",
     ["names no phase of this file", "'warmup', 'main'", '"nowhere"', "Fix:"]),
    ({"carry_from": "main", "carry": "best"}, "phases[1].carry_from",
     ["names the phase itself", '"main"', "Fix:"]),
    ({"carry_from": "warmup", "carry": "everything"}, "phases[1].carry",
     ["must be one of 'finals', 'best', 'all'", '"everything"', "Fix:"]),
    ({"carry_from": "warmup"}, "phases[1].carry", ["is missing", "Fix: add carry ="]),
    ({"carry": "all"}, "phases[1].carry", ["needs carry_from", '"all"', "Fix:"]),
    ({"carry_from": 3, "carry": "all"}, "phases[1].carry_from",
     ["must be the name of an earlier phase", "got 3", "Fix:"]),
])
def test_a_bad_carry_is_refused_at_load(tmp_path, competition, carry, key, words):
    message = _refusal(tmp_path, competition, **carry)
    assert "competition.toml" in message and f"{key} " in message, message
    for word in words:
        assert word in message, message


def test_a_cycle_of_carries_and_a_carry_from_a_later_phase_are_refused(tmp_path, competition):
    doc = document(competition)
    doc["phases"][0].update(carry_from="main", carry="all")
    doc["phases"][1].update(carry_from="warmup", carry="all")
    with pytest.raises(ConfigError, match=r"phases\[0\]\.carry_from makes a cycle of carries "
                                          r"\(warmup -> main -> warmup\).*Fix:"):
        load_competition(write(tmp_path, doc))
    doc = document(competition)
    doc["phases"][0].update(carry_from="main", carry="all")
    with pytest.raises(ConfigError, match=r"phases\[0\]\.carry_from must name a phase that "
                                          r"closes before this one opens.*Fix:"):
        load_competition(write(tmp_path, doc))
    doc = document(competition)
    doc["phases"][1].update(carry_from="warmup", carry="finals")
    loaded = load_competition(write(tmp_path, doc))
    assert [(p.carry_from, p.carry) for p in loaded.phases] == [(None, None),
                                                                ("warmup", "finals")]


# --------------------------------------------------------------------------- the rules


def _example(competition, rule: str, reproduce: str = "final"):
    """The example competition whose phase "final" carries from "public" by ``rule``."""
    public, final = competition.phases
    return replace(competition, phases=(public, replace(
        final, carry_from="public", carry=rule, reproduce=reproduce)))


@pytest.mark.parametrize("rule", ["finals", "best", "all"])
def test_each_rule_carries_its_submissions_once_on_each_backend(migrated_db_url, competition,
                                                                rule):
    """A marks one of three; B marks none (its two best count as its finals); the baselines
    stay pinned, never carried. Opening twice carries nothing twice."""
    clock = Clock()
    store = open_store(migrated_db_url, _example(competition, rule), clock)
    try:
        teams = {n: add_team(store, n, f"{n}@example.org")[0].id for n in ("A", "B")}
        ids = {(n, i): submit(store, teams[n], encode(variant(f"{n}-{i}", scale))).submission_id
               for n in teams for i, scale in enumerate((1.0, 1.2, 1.1))}
        mark_final(store, teams["A"], ids["A", 0])
        # the phase carried from is open: nothing is carried yet
        with pytest.raises(SubmissionRejected, match="takes submissions until") as early:
            carry_phase(store, "final")
        assert early.value.status == 409
        clock.now = datetime(2028, 1, 1, tzinfo=UTC)
        carry = carry_phase(store, "final")
        expected = {"finals": [("A", 0), ("B", 1), ("B", 2)], "best": [("A", 1), ("B", 1)],
                    "all": sorted(ids)}[rule]
        with store.reading() as session:
            rows = session.execute(sa.select(
                SubmissionRow.id, SubmissionRow.carried_from, SubmissionRow.carried_phase,
                SubmissionRow.run_id, SubmissionRow.computed)
                .where(SubmissionRow.phase == "final", SubmissionRow.carried_from.is_not(None))
                .order_by(SubmissionRow.carried_from)).all()
        assert [r.carried_from for r in rows] == sorted(ids[k] for k in expected)
        assert {r.carried_phase for r in rows} == {"public"}
        assert [r.id for r in rows] == sorted(carry.submission_ids)
        assert carry.new and carry.carried == len(expected) and not any(r.computed for r in rows)
        # claims (no predictions): no scoring job; reproductions as the rule says
        jobs = [j for j in list_jobs(store, "final")]
        assert all(j.kind == "reproduce" and j.origin == "carry" for j in jobs)
        assert len(jobs) == (0 if rule == "all" else len(expected))
        # the board: each team's row names the phase it came from; baselines as always
        board = phase_board(store, "final", admin=True)
        assert {r.team: r.carried_from for r in board.rows} == {
            "A": "public", "B": "public", "Popularity": None, "Random": None}
        # a second carry, and the server's own at its opening, carry nothing again
        again = carry_phase(store, "final")
        assert not again.new and again.carried == carry.carried and "already" in again.message
        with store.reading() as session:
            count = session.scalar(sa.select(sa.func.count()).select_from(SubmissionRow)
                                   .where(SubmissionRow.phase == "final"))
        assert count == len(expected) + 2  # the two pinned baselines
    finally:
        store.engine.dispose()


def test_two_carries_at_once_carry_once_on_each_backend(migrated_db_url, competition):
    """Two processes (two engines) opening the phase at the same moment: one carries, the
    other answers that it was carried."""
    clock = Clock()
    example = _example(competition, "all")
    first = open_store(migrated_db_url, example, clock)
    second = open_store(migrated_db_url, example, clock, pin=False)
    try:
        team = add_team(first, "A", "a@example.org")[0].id
        for i in range(3):
            submit(first, team, encode(variant(f"A-{i}", 1.0 + i / 10)))
        clock.now = datetime(2028, 1, 1, tzinfo=UTC)
        start = threading.Barrier(2)

        def carry(store):
            start.wait()
            return carry_phase(store, "final")

        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(carry, (first, second)))
        assert sorted(a.new for a in answers) == [False, True]
        assert {a.carried for a in answers} == {3}
        with first.reading() as session:
            assert session.scalar(sa.select(sa.func.count()).select_from(SubmissionRow).where(
                SubmissionRow.carried_from.is_not(None))) == 3
    finally:
        first.engine.dispose()
        second.engine.dispose()


def test_a_run_in_the_new_phase_already_and_a_run_of_other_folds_are_not_carried(
        tmp_path, competition):
    clock = Clock()
    store = open_store(sqlite_url(tmp_path), _example(competition, "all", "every"), clock)
    team = add_team(store, "A", "a@example.org")[0].id
    kept = submit(store, team, encode(variant("A-kept", 1.0))).submission_id
    again = submit(store, team, encode(variant("A-again", 1.1))).submission_id
    other = submit(store, team, encode(variant("A-other", 1.2))).submission_id
    # the file changed its folds since this one was stored: its lists are of other folds
    with store.engine.begin() as conn:
        stored = json.loads(conn.execute(sa.select(SubmissionRow.payload).where(
            SubmissionRow.id == other)).scalar_one())
        stored["results"]["dataset"]["fold_params"]["seed"] = 7
        conn.execute(sa.update(SubmissionRow).where(SubmissionRow.id == other).values(
            payload=json.dumps(stored)))
    clock.now = datetime(2028, 1, 1, tzinfo=UTC)
    submit(store, team, encode(variant("A-again", 1.1)), phase_name="final")
    carry = carry_phase(store, "final")
    skipped = dict(carry.skipped)
    assert carry.carried == 1 and set(skipped) == {again, other}
    assert "is in phase 'final' already" in skipped[again]
    assert "other folds" in skipped[other] and "never scored on folds" in skipped[other]
    [carried] = [s for s in own_submissions(store, team, "final") if s.carried_from]
    assert carried.run_id == "A-kept" and carried.carried_from == "public"
    # the phase reproduces every upload: "all" queues each carried one too
    assert [(j.submission_id, j.origin) for j in list_jobs(store, "final")
            if j.kind == "reproduce" and j.origin == "carry"] == [
        (carried.submission_id, "carry")]
    assert kept not in skipped
    # a phase without carry_from has none to make
    with pytest.raises(SubmissionRejected, match="carries no submissions") as refused:
        carry_phase(store, "public")
    assert refused.value.status == 409
    store.engine.dispose()


def test_a_revealed_phase_takes_no_carry(tmp_path, competition):
    clock = Clock()
    store = open_store(sqlite_url(tmp_path), _example(competition, "best"), clock)
    team = add_team(store, "A", "a@example.org")[0].id
    submit(store, team, encode(variant("A-0", 1.0)))
    clock.now = datetime(2028, 1, 1, tzinfo=UTC)
    reveal_phase(store, "final", close_now=True)
    with pytest.raises(SubmissionRejected, match="was revealed: its board is final") as refused:
        carry_phase(store, "final")
    assert refused.value.status == 409
    store.engine.dispose()


def test_the_server_carries_at_its_start_once_the_phase_has_opened(tmp_path, competition):
    clock = Clock()
    example = _example(competition, "best")
    store = open_store(sqlite_url(tmp_path), example, clock)
    team = add_team(store, "A", "a@example.org")[0].id
    submit(store, team, encode(variant("A-0", 1.0)))
    store.engine.dispose()
    clock.now = datetime(2028, 1, 1, 6, tzinfo=UTC)
    app = create_app(example, sqlite_url(tmp_path), clock=clock)
    try:
        [row] = [s for s in own_submissions(app.state.store, team, "final")]
        assert row.carried_from == "public" and row.run_id == "A-0"
    finally:
        app.state.store.engine.dispose()


# --------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def tiny_two_phases(tmp_path_factory) -> tuple[Path, TinyRun]:
    """A competition on the tiny data whose phase "two" carries each team's best of "one",
    and the template model's run for it (made once)."""
    folder = tmp_path_factory.mktemp("tiny-carry")
    path = write_competition(folder / "competition.toml", ChallengeDataset(scale="tiny"))
    path.write_text(path.read_text() + PHASES)
    return path, tiny_run(path, folder / "results")


def test_a_carried_submission_is_scored_again_on_its_kept_predictions(
        migrated_db_url, tiny_two_phases, tmp_path, capsys, monkeypatch):
    competition_file, run = tiny_two_phases
    competition = load_competition(competition_file)
    clock = Clock(NOON - timedelta(hours=1))
    app = create_app(competition, migrated_db_url, clock=clock)
    store = app.state.store
    team, token = add_team(store, "alpha", "a@example.org")
    _, other = add_team(store, "beta", "b@example.org")
    admin = create_admin_token(store)
    team_auth, admin_auth = {"Authorization": f"Bearer {token}"}, {
        "Authorization": f"Bearer {admin}"}
    try:
        with live_server(app) as url, http_client(url, timeout=60) as client:
            reply = client.post(SUBMIT, content=run.predictions, headers={
                **team_auth, "Content-Type": PREDICTIONS_MEDIA_TYPE,
                "Idempotency-Key": run.claim["run_id"]})
            assert reply.status_code == 201, reply.text
            source = reply.json()["submission_id"]
            _score(client, admin_auth, source)
            before = _row(client, "one")
            assert before["computed"] and before["carried_from"] is None

            # "two" opens: its first request carries "one"'s best, without an upload
            clock.now = NOON + timedelta(minutes=30)
            row = _row(client, "two")
            carried = row["submission_id"]
            assert carried != source and row["carried_from"] == "one"
            assert row["computed"] is False and row["rank"] is None  # a claim until scored
            # the scoring job reads the kept predictions of the upload it came from
            kept = client.get(f"{SUBMIT}/{carried}/predictions", headers=admin_auth)
            assert kept.status_code == 200 and kept.content == run.predictions
            assert client.get(f"{SUBMIT}/{carried}/predictions",
                              headers=team_auth).status_code == 404
            jobs = {(j.kind, j.origin) for j in list_jobs(store, "two")}
            assert jobs == {("score", "carry"), ("reproduce", "carry")}
            _score(client, admin_auth, carried)
            row = _row(client, "two")
            # the same lists, folds and references: the organizers' numbers again
            assert row["computed"] and row["rank"] == 1 and row["carried_from"] == "one"
            for key in ("leaderboard_score", "phase1_score", "interval", "tests"):
                assert row[key] == before[key], key

            # marked as carried in the CSV, on the page, in the team's submissions
            lines = list(csv.DictReader(io.StringIO(client.get(
                "/leaderboard.csv", params={"phase": "two"}).text)))
            assert [(r["team"], r["carried_from"]) for r in lines
                    if r["baseline"] == "no"] == [("alpha", "one")]
            page = client.get("/", params={"phase": "two"}).text
            assert "carried from <bdi>one</bdi>" in page
            listing = client.get(SUBMIT, headers=team_auth).json()["submissions"]
            assert {(s["phase"], s["carried_from"]) for s in listing} == {
                ("one", None), ("two", "one")}
            view = client.get(f"{SUBMIT}/{carried}", headers=team_auth).json()
            assert (view["carried_from"], view["carried_phase"]) == (source, "one")
            assert client.get(f"{SUBMIT}/{carried}",
                              headers={"Authorization": f"Bearer {other}"}).status_code == 404
            monkeypatch.chdir(tmp_path)
            monkeypatch.setenv("UPLOAD_TOKEN", token)
            code, out, err = run_cli(capsys, "submissions", "--server", url)
            assert code == 0, err
            assert "(carried from one)" in out

            # the carried one does not count against the new phase's daily limit (1)
            assert check_before_body(store, team.id, None, "two").name == "two"

            # opening again carries nothing again: API (organizers only) and CLI
            assert client.post("/api/v1/phases/two/carry",
                               headers=team_auth).status_code == 404
            assert client.post("/api/v1/phases/two/carry").status_code == 401
            again = client.post("/api/v1/phases/two/carry", headers=admin_auth)
            assert again.status_code == 200, again.text
            assert again.json()["status"] == "carried before"
            assert again.json()["carried"] == 1 and again.json()["submission_ids"] == []
            missing = client.post("/api/v1/phases/nope/carry", headers=admin_auth)
            assert missing.status_code == 404
            none = client.post("/api/v1/phases/one/carry", headers=admin_auth)
            assert none.status_code == 409 and "carries no submissions" in none.json()["reason"]
        code, out, err = run_cli(capsys, "admin", "--db", migrated_db_url, "phase", "carry", "two",
                                 "--competition", str(competition_file))
        assert code == 0, err
        assert "carried 1 submission(s) of phase 'one' (best) already" in out
        code, out, err = run_cli(capsys, "admin", "--db", migrated_db_url, "phase", "carry", "one",
                                 "--competition", str(competition_file))
        assert code == 2 and "carries no submissions" in err
        code, out, err = run_cli(capsys, "admin", "--db", migrated_db_url, "phase", "list",
                                 "--competition", str(competition_file))
        assert code == 0 and "carried: 1 submission(s) of 'one' (best) on 2030-01-01" in out
        with store.reading() as session:
            assert session.scalar(sa.select(sa.func.count()).select_from(SubmissionRow)
                                  .where(SubmissionRow.phase == "two")) == 1
        # a rescore after a harness fix scores the carried submission again too (on the kept
        # predictions of the upload it came from): none of the phase's rows keeps old numbers
        table = start_rescore(store, "two")
        assert [line.submission_id for line in table.lines] == [carried]
        assert {(j.kind, j.submission_id) for j in list_jobs(store, "two")
                if j.kind == "rescore"} == {("rescore", carried)}
    finally:
        store.engine.dispose()


def _row(client: httpx.Client, phase_name: str) -> dict:
    [row] = [r for r in client.get("/api/v1/leaderboard", params={"phase": phase_name})
             .json()["rows"] if not r["is_baseline"]]
    return row


def _score(client: httpx.Client, admin_auth: dict, submission_id: int) -> None:
    """Run the submission's scoring job as a worker does: claim, read the stored claim and
    predictions through the API, score them, finish."""
    lease = client.post("/api/v1/jobs/claim", headers=admin_auth,
                       content=json.dumps({"worker": "w", "kinds": ["score"]})).json()
    assert lease["status"] == "claimed" and lease["job"]["submission_id"] == submission_id
    claim = client.get(f"{SUBMIT}/{submission_id}/payload", headers=admin_auth).json()
    stream = client.get(f"{SUBMIT}/{submission_id}/predictions", headers=admin_auth).content
    finished = client.post(f"/api/v1/jobs/{lease['job']['job_id']}/finish", headers=admin_auth,
                           content=json.dumps({"lease": lease["lease"],
                                               "scored": score_upload(claim, stream)}))
    assert finished.status_code == 200 and finished.json()["status"] == "scored", finished.text


# --------------------------------------------------------------------------- the schema


def test_migration_0011_goes_down_and_up(tmp_path, competition):
    from alembic import command
    from alembic.config import Config

    engine = make_engine(sqlite_url(tmp_path))
    try:
        upgrade(engine)
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS_DIR))
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0009")
        columns = {c["name"] for c in sa.inspect(engine).get_columns("submissions")}
        assert "carried_from" not in columns and "fact_description" not in columns
        assert "phase_carries" not in sa.inspect(engine).get_table_names()
        upgrade(engine)
        columns = {c["name"] for c in sa.inspect(engine).get_columns("submissions")}
        assert {"carried_from", "carried_phase", "fact_description", "fact_code_url",
                "fact_commit", "fact_sheet_at"} <= columns
        assert "phase_carries" in sa.inspect(engine).get_table_names()
    finally:
        engine.dispose()

