"""Private scores: recorded by a reproduction on the private folds, hidden until the reveal.

Before ``admin phase reveal``, no answer of the API (boards, submission views, payloads,
upload receipts, reproduction answers) and no page holds a private score: every answer is
searched for the private values' digits. After it, the phase's board ranks by the private
score (then the public one, then the earliest), shows both, and puts the teams without a
private score after the others. Private scores are checked against the harness's own
``evaluation.challenge.aggregate``.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import re

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")
pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

import sqlalchemy as sa

from evaluation.challenge import aggregate
from evaluation.errors import ConfigError, SubmissionRejected
from evaluation.server.api import create_app
from evaluation.server.core import recompute
from evaluation.server.db import (
    MIGRATIONS_DIR,
    add_team,
    create_admin_token,
    list_teams,
    make_engine,
    publications,
    reveal_phase,
    reveals,
    upgrade,
)
from evaluation.server.store import phase_board, record_reproduction, submit
from tests.server._api import SUBMIT, Api, serving
from tests.server._helpers import (
    EXAMPLE,
    Clock,
    computed,
    encode,
    fold_tests,
    migrated_sqlite_url,
    open_store,
    private_folds,
    private_report,
    run_cli,
    sqlite_url,
    variant,
)


def digits(value: float) -> set[str]:
    """How a number can show: its JSON form, four decimals, and its first 8 significant digits.
    """
    significant = f"{abs(value):.12f}".replace(".", "").lstrip("0")[:8]
    return {json.dumps(value), f"{value:.4f}", significant}


@pytest.fixture
def setting(tmp_path, competition):
    """Four teams in the public phase; three reproduced on the private folds."""
    clock = Clock()
    db = migrated_sqlite_url(tmp_path)
    app = create_app(competition, db, clock=clock)
    with serving(app, False) as client:
        api = Api(client, app.state.store, clock, False)
        yield api, db


def test_private_scores_stay_hidden_until_the_reveal_then_rank(setting, competition, capsys):
    api, db = setting
    references = competition.phase("public").references
    admin = create_admin_token(api.store)
    answers: list[str] = []  # every answer before the reveal

    def keep(response):
        assert response.status_code < 400, response.text
        answers.append(response.text)
        return response.json() if "json" in response.headers["content-type"] else response

    # public order: Carol (1.3), Dave (1.2), Bob (1.1), Alice (1.0)
    teams = {name: api.team(name) for name in ("Alice", "Bob", "Carol", "Dave")}
    documents = {name: variant(f"{name}-1", scale) for name, scale in
                 (("Alice", 1.0), ("Bob", 1.1), ("Carol", 1.3), ("Dave", 1.2))}
    ids = {name: keep(api.post(encode(doc), teams[name]))["submission_id"]
           for name, doc in documents.items()}
    computed(api.store)  # as the scoring jobs would
    # private: Alice best; Bob and Dave tied (Dave ahead by the public score); Carol none
    private = {"Alice": private_folds(documents["Alice"], 2.0, 3.0),
               "Bob": private_folds(documents["Bob"], 1.0, 0.8)}
    private["Dave"] = copy.deepcopy(private["Bob"])
    expected = {name: aggregate(folds, references) for name, folds in private.items()}
    scores = {name: recompute(folds, references) for name, folds in private.items()}
    for name in private:
        assert scores[name].leaderboard_score == pytest.approx(
            expected[name]["phase2_score"], rel=1e-12)
        assert scores[name].phase1_score == pytest.approx(expected[name]["phase1_score"],
                                                          rel=1e-12)
    assert expected["Alice"]["phase2_score"] > expected["Bob"]["phase2_score"]

    for name, folds in private.items():
        recorded = keep(api.client.post(
            f"{SUBMIT}/{ids[name]}/reproduction", content=json.dumps(private_report(folds)),
            headers={"Authorization": f"Bearer {admin}"}))
        assert recorded == {"status": "recorded", "submission_id": ids[name],
                            "verdict": "reproduced"}

    # every answer and page, before the reveal, for every kind of caller
    repeat = keep(api.post(encode(documents["Alice"]), teams["Alice"]))
    assert repeat["status"] == "duplicate"
    keep(api.post(encode(variant("Alice-2", 0.9)), teams["Alice"]))
    computed(api.store)
    for token in (None, teams["Bob"], admin):
        for phase in ("public", "final"):
            keep(api.get("/api/v1/leaderboard", token, phase=phase))
    for name, sid in ids.items():
        keep(api.get(f"{SUBMIT}/{sid}", teams[name]))
        view = keep(api.get(f"{SUBMIT}/{sid}", admin))
        assert view["private_leaderboard_score"] is None
        keep(api.get(view["payload_url"], admin))
    for phase in ("public", "final"):
        keep(api.get("/", phase=phase))
    keep(api.get("/openapi.json"))
    code, out, _ = run_cli(capsys, "admin", "--db", db, "phase", "list", "--competition",
                           str(EXAMPLE))
    # a public phase is not "hidden": its public scores are shown
    assert code == 0 and re.search(r"^public\s+-\s+public$", out, re.M)
    assert re.search(r"^hidden\s+-\s+final$", out, re.M)
    answers.append(out)

    secrets = set()
    for s in scores.values():
        for value in (s.leaderboard_score, s.phase1_score, *s.interval):
            secrets |= digits(value)
    text = "\n".join(answers)
    leaked = sorted(secret for secret in secrets if secret in text)
    assert leaked == []

    # the reveal
    code, out, _ = run_cli(capsys, "admin", "--db", db, "phase", "reveal", "public")
    # the command runs on the system clock
    assert code == 0 and re.search(r"'public' revealed at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", out)
    code, out, _ = run_cli(capsys, "admin", "--db", db, "phase", "reveal", "public")
    assert code == 0 and "revealed already" in out
    code, _, err = run_cli(capsys, "admin", "--db", db, "phase", "reveal", "nope")
    assert code == 2 and "no phase named 'nope'" in err and "'public'" in err
    code, out, _ = run_cli(capsys, "admin", "--db", db, "phase", "list")
    assert re.search(r"^revealed\s+\d{4}-\d\d-\d\d \d\d:\d\d\s+public$", out, re.M)
    # without the competition file, whether a phase is public is not known
    assert re.search(r"^unrevealed\s+-\s+final$", out, re.M)
    # the revealed phase's final selections are frozen; whether the other one has closed is
    # not known without the competition file
    assert re.search(r"^revealed\s+.*public\n.*\n\s+final selections: frozen \(revealed "
                     r"\d{4}-\d\d-\d\d \d\d:\d\d UTC\)$", out, re.M)
    assert re.search(r"^unrevealed\s+-\s+final\n.*\n\s+final selections: frozen once "
                     r"revealed or closed \(give --competition", out, re.M)

    # read after every write before it: the reveal was an admin command's (another process)
    board = api.get("/api/v1/leaderboard", fresh=True).json()
    assert board["revealed"] is True
    teams_rows = [r for r in board["rows"] if not r["is_baseline"]]
    assert [(r["team"], r["rank"]) for r in teams_rows] == [
        ("Alice", 1), ("Dave", 2), ("Bob", 3), ("Carol", 4)]
    for row in teams_rows:
        if row["team"] in scores:
            s = scores[row["team"]]
            assert row["private_score"] == s.leaderboard_score
            assert row["private_phase1_score"] == s.phase1_score
            assert tuple(row["private_interval"]) == s.interval
            assert s.interval[0] <= s.leaderboard_score <= s.interval[1]
        else:
            assert row["private_score"] is None and row["private_interval"] is None
        assert row["leaderboard_score"] is not None  # both scores shown
    # Alice's row is the submission with the private score, not her other one
    assert teams_rows[0]["submission_id"] == ids["Alice"]
    page = api.get("/", fresh=True).text
    assert "Private score" in page
    for s in scores.values():
        assert f"{s.leaderboard_score:.4f}" in page
    own = api.get(f"{SUBMIT}/{ids['Bob']}", teams["Bob"]).json()
    assert own["private_leaderboard_score"] == scores["Bob"].leaderboard_score
    # the search above finds what is there: the secrets show now
    assert all(any(d in json.dumps(board) for d in digits(s.leaderboard_score))
               for s in scores.values())


@pytest.fixture
def live_setting(tmp_path, competition):
    """The app on a live server on 127.0.0.1, its clock in the hidden phase ("final")."""
    clock = Clock()
    clock.now = clock.now.replace(year=2028, month=1, day=5)
    db = migrated_sqlite_url(tmp_path)
    app = create_app(competition, db, clock=clock)
    with serving(app, True) as client:
        yield Api(client, app.state.store, clock, True), db


def test_a_hidden_phase_shows_its_scores_once_revealed(live_setting, competition, capsys):
    """The visibility rule: a phase that is not public hides its scores (from everyone but the
    organizers, who see the public ones) until the reveal, then shows public and private
    scores to everyone, baselines included; the page and ``admin phase list`` state it, and
    ``reveal`` needs --yes for a phase that has not closed or has no private score."""
    api, db = live_setting
    admin, token = create_admin_token(api.store), api.team("Finalist")
    document = variant("Final-1", 1.2)
    answer = api.post(encode(document), token).json()
    sid = answer["submission_id"]
    computed(api.store, sid)
    assert answer["leaderboard_score"] is None and "until the organizers reveal" in answer[
        "message"]
    # nothing to reveal yet: refused without --yes, and nothing changes
    code, _, err = run_cli(capsys, "admin", "--db", db, "phase", "reveal", "final")
    assert code == 1 and "no submission of phase 'final' has a private score" in err
    assert "add --yes" in err and reveals(api.store) == {}

    folds = private_folds(document, 1.5, 1.5)
    reply = api.client.post(f"{SUBMIT}/{sid}/reproduction",
                            content=json.dumps(private_report(folds)),
                            headers={"Authorization": f"Bearer {admin}"})
    assert reply.status_code == 200, reply.text
    private = recompute(folds, competition.phase("final").references).leaderboard_score
    public = recompute(fold_tests(document), competition.phase("final").references)

    before = api.get("/api/v1/leaderboard").json()
    assert before["revealed"] is False and before["rows"]
    assert all(r["leaderboard_score"] is None and r["private_score"] is None
               for r in before["rows"])
    # a hidden row says nothing of the team's submissions, not even that they were computed
    assert [r["computed"] for r in before["rows"]] == [None] * len(before["rows"])
    table = list(csv.DictReader(io.StringIO(api.get("/leaderboard.csv").text)))
    assert table and {line["computed"] for line in table} == {"hidden"}
    assert api.get(f"{SUBMIT}/{sid}", token).json()["leaderboard_score"] is None
    shown = api.get("/api/v1/leaderboard", admin).json()
    finalist = next(r for r in shown["rows"] if r["team"] == "Finalist")
    assert finalist["computed"] is True  # the organizers' view: what is true of the row
    assert finalist["leaderboard_score"] == public.leaderboard_score
    assert finalist["private_score"] is None
    page = api.get("/").text
    assert 'id="hidden-notice"' in page and "all scores hidden" in page
    code, out, _ = run_cli(capsys, "admin", "--db", db, "phase", "list", "--competition",
                           str(EXAMPLE))
    assert code == 0 and re.search(
        r"^hidden\s+-\s+final\n\s+scores: all scores hidden", out, re.M)
    # the final phase closes on 2028-02-01, after the system clock the command runs on
    assert re.search(r"^hidden\s+-\s+final\n.*\n\s+final selections: open: teams may change "
                     r"them until 2028-02-01 \d\d:\d\d UTC$", out, re.M)
    assert re.search(r"^public\s+-\s+public\n\s+scores: public scores shown to everyone; "
                     r"private scores hidden until the reveal$", out, re.M)

    # the phase closes on 2028-02-01, after the system clock the command runs on
    # a reveal would show the teams their private scores while they can still change their
    # final selections: refused with the reason and the fix, even with --yes
    for confirmed in ((), ("--yes",)):
        code, _, err = run_cli(capsys, "admin", "--db", db, "phase", "reveal", "final",
                               "--competition", str(EXAMPLE), *confirmed)
        assert code == 1 and "phase 'final' takes submissions until 2028-02-01 00:00 UTC" \
            in err and "change its final selections" in err and "--close-now" in err
        assert "'final' not revealed" in err
    assert reveals(api.store) == {}
    code, out, err = run_cli(capsys, "admin", "--db", db, "phase", "reveal", "final",
                             "--competition", str(EXAMPLE), "--close-now")
    assert code == 0 and "'final' revealed at" in out and "final selections are frozen" in out

    after = api.get("/api/v1/leaderboard", fresh=True).json()
    assert after["revealed"] is True
    finalist = next(r for r in after["rows"] if r["team"] == "Finalist")
    assert finalist["private_score"] == private and finalist["rank"] == 1
    assert finalist["leaderboard_score"] == public.leaderboard_score
    assert finalist["submission_id"] == sid
    assert all(r["leaderboard_score"] is not None for r in after["rows"] if r["is_baseline"])
    own = api.get(f"{SUBMIT}/{sid}", token).json()
    assert own["private_leaderboard_score"] == private
    assert own["leaderboard_score"] == public.leaderboard_score
    page = api.get("/", fresh=True).text
    assert 'id="hidden-notice"' not in page and f"{private:.4f}" in page
    assert "public and private scores shown to everyone" in page
    code, out, _ = run_cli(capsys, "admin", "--db", db, "phase", "list", "--competition",
                           str(EXAMPLE))
    assert re.search(r"^revealed\s+\S+ \S+\s+final\n\s+scores: public and private scores "
                     r"shown to everyone$", out, re.M)


def test_publish_shows_the_public_scores_of_a_hidden_phase_only(live_setting, competition,
                                                                 capsys):
    """``admin phase publish`` shows a hidden phase's public scores to everyone, its private
    scores stay hidden until the reveal; it needs --yes for an open or a public phase."""
    api, db = live_setting
    admin, token = create_admin_token(api.store), api.team("Finalist")
    document = variant("Final-1", 1.2)
    sid = api.post(encode(document), token).json()["submission_id"]
    computed(api.store, sid)
    folds = private_folds(document, 1.5, 1.5)
    assert api.client.post(f"{SUBMIT}/{sid}/reproduction",
                           content=json.dumps(private_report(folds)),
                           headers={"Authorization": f"Bearer {admin}"}).status_code == 200
    private = recompute(folds, competition.phase("final").references).leaderboard_score
    public = recompute(fold_tests(document), competition.phase("final").references)
    cli = ("admin", "--db", db, "phase", "publish")

    code, _, err = run_cli(capsys, *cli, "public", "--competition", str(EXAMPLE))
    assert code == 1 and "is public already" in err and publications(api.store) == {}
    code, _, err = run_cli(capsys, *cli, "final", "--competition", str(EXAMPLE))
    assert code == 1 and "phase 'final' has not closed" in err and "add --yes" in err
    assert all(r["leaderboard_score"] is None
               for r in api.get("/api/v1/leaderboard").json()["rows"])
    code, out, err = run_cli(capsys, *cli, "final", "--competition", str(EXAMPLE), "--yes")
    assert code == 0 and "'final' published at" in out
    assert "published already" in run_cli(capsys, *cli, "final")[1]

    board = api.get("/api/v1/leaderboard", fresh=True).json()
    assert board["published"] is True and board["revealed"] is False
    finalist = next(r for r in board["rows"] if r["team"] == "Finalist")
    assert finalist["leaderboard_score"] == public.leaderboard_score and finalist["rank"] == 1
    assert all(r["private_score"] is None for r in board["rows"])
    assert not any(d in json.dumps(board) for d in digits(private))
    own = api.get(f"{SUBMIT}/{sid}", token).json()
    assert own["leaderboard_score"] == public.leaderboard_score
    assert own["private_leaderboard_score"] is None
    page = api.get("/", fresh=True).text
    assert 'id="hidden-notice"' not in page and "shown to everyone (published)" in page
    code, out, _ = run_cli(capsys, "admin", "--db", db, "phase", "list", "--competition",
                           str(EXAMPLE))
    assert re.search(r"^published\s+-\s+final\n\s+scores: public scores shown to everyone "
                     r"\(published\)", out, re.M)


def test_revealed_order_on_each_backend(migrated_db_url, competition):
    """The revealed board's order comes from SQL (a window over each team's submissions):
    checked on SQLite and PostgreSQL, through the store."""
    store = open_store(migrated_db_url, competition)
    try:
        references = competition.phase("public").references
        ids = {}
        for name, runs in (("P", (1.0, 1.3)), ("Q", (1.2,)), ("R", (1.1,))):
            team_id = add_team(store, name, "team@example.org")[0].id
            for i, scale in enumerate(runs):
                document = variant(f"{name}-{i}", scale)
                ids[name, i] = (submit(store, team_id, encode(document)).submission_id,
                                document)
        computed(store)
        # P's weaker run gets the best private score; R none: P, Q, R after the reveal
        for key, (hit, mrr) in ((("P", 0), (2.0, 3.0)), (("Q", 0), (1.0, 0.8))):
            sid, document = ids[key]
            folds = private_folds(document, hit, mrr)
            record_reproduction(store, sid, json.dumps(private_report(folds)).encode())
        before = [r.team for r in phase_board(store, "public").rows if not r.is_baseline]
        assert before == ["P", "Q", "R"]  # by public score: P's 1.3 run, Q 1.2, R 1.1
        assert phase_board(store, "public").rows[0].submission_id == ids["P", 1][0]
        with pytest.raises(ConfigError, match="takes submissions until"):
            reveal_phase(store, "public")  # open until 2028
        assert reveals(store) == {}
        assert reveal_phase(store, "public", close_now=True)[1] is True
        assert reveal_phase(store, "public")[1] is False
        assert set(reveals(store)) == {"public"}
        rows = [r for r in phase_board(store, "public").rows if not r.is_baseline]
        assert [(r.team, r.rank, r.submission_id) for r in rows] == [
            ("P", 1, ids["P", 0][0]), ("Q", 2, ids["Q", 0][0]), ("R", 3, ids["R", 0][0])]
        # a receipt after the reveal (a repeat: the phase takes no new upload) gives the
        # revealed board's place
        team_r = next(t.id for t in list_teams(store) if t.name == "R")
        receipt = submit(store, team_r, encode(variant("R-0", 1.1)), "R-0")
        assert receipt.status == "duplicate"
        assert receipt.rank == 3 and receipt.leaderboard_score is not None
        with pytest.raises(SubmissionRejected, match="was revealed on") as refused:
            submit(store, team_r, encode(variant("R-2", 1.4)))
        assert refused.value.status == 403
        private_p = private_folds(ids["P", 0][1], 2.0, 3.0)
        assert rows[0].private_score == pytest.approx(
            aggregate(private_p, references)["phase2_score"], rel=1e-12)
        assert rows[2].private_score is None and rows[2].leaderboard_score is not None
        with pytest.raises(ConfigError, match="no phase named 'nope'"):
            reveal_phase(store, "nope")
    finally:
        store.engine.dispose()


def test_migration_0003_goes_down_and_up(tmp_path):
    from alembic import command
    from alembic.config import Config

    url = sqlite_url(tmp_path)
    engine = make_engine(url)
    try:
        upgrade(engine)
        config = Config()
        # the scripts shipped in the package (what ``upgrade`` runs)
        migrations = MIGRATIONS_DIR
        config.set_main_option("script_location", str(migrations))
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0002")
        tables = set(sa.inspect(engine).get_table_names())
        columns = {c["name"] for c in sa.inspect(engine).get_columns("submissions")}
        assert not {"reproductions", "phase_reveals"} & tables
        assert not any(c.startswith("private_") for c in columns)
        upgrade(engine)
        assert {"reproductions", "phase_reveals"} <= set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()
