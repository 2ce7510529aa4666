"""Final selections, on a live server on 127.0.0.1: a team marks up to the phase's
``final_selections`` of its submissions (API and ``python -m evaluation final``), and the
revealed (private) ranking uses the marked ones, or a team's best public ones when it marked
none, never whatever else the organizers re-ran.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

import sqlalchemy as sa

from evaluation.errors import ConfigError, SubmissionRejected
from evaluation.server.core import recompute
from evaluation.server.db import (
    MIGRATIONS_DIR,
    add_team,
    create_admin_token,
    make_engine,
    reveal_phase,
    upgrade,
)
from evaluation.server.store import mark_final, phase_board, record_reproduction, submit
from tests.server._api import SUBMIT, Api
from tests.server._helpers import (
    encode,
    open_store,
    private_folds,
    private_report,
    run_cli,
    sqlite_url,
    variant,
)


def private_score(document: dict, hit: float, mrr: float, competition) -> float:
    folds = private_folds(document, hit, mrr)
    return recompute(folds, competition.phase("public").references).leaderboard_score


def team_row(api: Api, team: str) -> dict:
    board = api.get("/api/v1/leaderboard", phase="public").json()
    return next(r for r in board["rows"] if r["team"] == team)


def test_the_private_ranking_uses_the_final_selections(live, competition, capsys,
                                                        monkeypatch, tmp_path):
    alice, bob = live.team("Alice"), live.team("Bob")
    admin = create_admin_token(live.store)
    # Alice: a weak run (best private score), a middle one (no private score), a strong one
    runs = {"weak": (1.0, (2.0, 3.0)), "middle": (1.1, None), "strong": (1.3, (1.0, 0.8))}
    ids, private = {}, {}
    for label, (scale, hidden_scales) in runs.items():
        document = variant(f"a-{label}", scale)
        reply = live.post(encode(document), alice)
        assert reply.status_code == 201, reply.text
        ids[label] = reply.json()["submission_id"]
        live.clock.now += timedelta(minutes=1)
        if hidden_scales is not None:
            recorded = live.client.post(
                f"{SUBMIT}/{ids[label]}/reproduction",
                content=json.dumps(private_report(private_folds(document, *hidden_scales))),
                headers={"Authorization": f"Bearer {admin}"})
            assert recorded.status_code == 200, recorded.text
            private[label] = private_score(document, *hidden_scales, competition)
    assert private["weak"] > private["strong"]
    bob_id = live.post(encode(variant("b-1", 1.2)), bob).json()["submission_id"]

    # the command marks the weak run (its private score is not shown: no reveal yet)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("UPLOAD_TOKEN", alice)
    base = str(live.client.base_url).rstrip("/")
    monkeypatch.setenv("UPLOAD_URL", base + SUBMIT)
    code, out, err = run_cli(capsys, "final", str(ids["weak"]))
    assert code == 0, err
    assert f"submission {ids['weak']} is marked as final" in out and "(1 of 2)" in out
    # marking it again changes nothing
    again = live.client.put(f"{SUBMIT}/{ids['weak']}/final",
                            headers={"Authorization": f"Bearer {alice}"}).json()
    assert again["changed"] is False and again["selections"] == [ids["weak"]]

    # the phase allows two: the third is refused with the ones marked, until one is unmarked
    assert run_cli(capsys, "final", str(ids["middle"]), "--server", base)[0] == 0
    code, out, err = run_cli(capsys, "final", str(ids["strong"]), "--server", base)
    assert code == 3 and "HTTP 409" in err and "2 of 2" in err and alice not in out + err
    refused = live.client.put(f"{SUBMIT}/{ids['strong']}/final",
                              headers={"Authorization": f"Bearer {alice}"})
    assert refused.status_code == 409
    code, out, err = run_cli(capsys, "final", str(ids["weak"]), "--unmark")
    assert code == 0 and "is not final" in out, err
    listing = live.get(SUBMIT, alice).json()["submissions"]
    assert {s["submission_id"]: s["final"] for s in listing} == {
        ids["weak"]: False, ids["middle"]: True, ids["strong"]: False}
    code, out, _ = run_cli(capsys, "submissions")
    # one line per submission (a queue or failure line under them starts otherwise)
    finals = {int(line.split()[0]): line.split()[6] for line in out.splitlines()[1:]
              if line.split()[0].isdigit()}
    assert finals == {ids["weak"]: "-", ids["middle"]: "yes", ids["strong"]: "-"}

    # another team's submission, an organizer, no token, a closed phase
    assert live.client.put(f"{SUBMIT}/{bob_id}/final",
                           headers={"Authorization": f"Bearer {alice}"}).status_code == 404
    assert live.client.put(f"{SUBMIT}/{bob_id}/final",
                           headers={"Authorization": f"Bearer {admin}"}).status_code == 403
    assert live.client.put(f"{SUBMIT}/{bob_id}/final").status_code == 401
    live.clock.now = live.clock.now.replace(year=2028, month=1, day=5)
    closed = live.client.delete(f"{SUBMIT}/{ids['middle']}/final",
                                headers={"Authorization": f"Bearer {alice}"})
    assert closed.status_code == 403 and "frozen" in closed.json()["reason"]

    # the reveal: the marked ones only count, the middle run (no private score), not the
    # unmarked weak one with the best private score
    reveal_phase(live.store, "public")
    row = team_row(live, "Alice")
    assert (row["submission_id"], row["private_score"]) == (ids["middle"], None)
    assert team_row(live, "Bob")["submission_id"] == bob_id  # no marks: its best public one


def test_a_reveal_freezes_the_final_selections(live, competition, capsys, monkeypatch,
                                               tmp_path):
    """Seeing its private scores, a team may not move its selection to its best private
    submission: once the phase is revealed, marks and unmarks are refused (409, naming the
    reveal), and so are new uploads to the phase."""
    alice = live.team("Alice")
    admin = create_admin_token(live.store)
    ids, private = {}, {}
    for label, scale, hidden_scales in (("public-best", 1.3, (1.0, 0.8)),
                                        ("private-best", 1.0, (2.0, 3.0))):
        document = variant(f"a-{label}", scale)
        ids[label] = live.post(encode(document), alice).json()["submission_id"]
        private[label] = private_score(document, *hidden_scales, competition)
        live.clock.now += timedelta(minutes=1)
        recorded = live.client.post(
            f"{SUBMIT}/{ids[label]}/reproduction",
            content=json.dumps(private_report(private_folds(document, *hidden_scales))),
            headers={"Authorization": f"Bearer {admin}"})
        assert recorded.status_code == 200, recorded.text
    marked = live.client.put(f"{SUBMIT}/{ids['public-best']}/final", headers=bearer(alice))
    assert marked.status_code == 200
    # the phase is open: a reveal is refused with the reason and the fix
    with pytest.raises(ConfigError, match="takes submissions until 2028-01-01 00:00 UTC.*"
                                          "--close-now"):
        reveal_phase(live.store, "public")
    assert team_row(live, "Alice")["private_score"] is None
    reveal_phase(live.store, "public", close_now=True)
    before = team_row(live, "Alice")
    assert (before["submission_id"], before["private_score"]) == (ids["public-best"],
                                                                  private["public-best"])
    assert private["private-best"] > private["public-best"]  # what a switch would gain

    for method, sid in (("PUT", ids["private-best"]), ("DELETE", ids["public-best"])):
        refused = live.client.request(method, f"{SUBMIT}/{sid}/final", headers=bearer(alice))
        assert refused.status_code == 409, refused.text
        assert "phase 'public' was revealed on" in refused.json()["reason"]
        assert "frozen" in refused.json()["reason"]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("UPLOAD_TOKEN", alice)
    monkeypatch.setenv("UPLOAD_URL", str(live.client.base_url).rstrip("/") + SUBMIT)
    code, out, err = run_cli(capsys, "final", str(ids["private-best"]))
    assert code == 3 and "HTTP 409" in err and "revealed" in err
    assert team_row(live, "Alice") == before  # the selection stands
    listing = live.get(SUBMIT, alice).json()["submissions"]
    assert {s["submission_id"]: s["final"] for s in listing} == {
        ids["public-best"]: True, ids["private-best"]: False}

    # a new upload to the revealed phase is refused; a repeat of a stored one is answered
    new = live.post(encode(variant("a-after", 1.5)), alice)
    assert new.status_code == 403 and "was revealed on" in new.json()["reason"]
    repeat = live.post(encode(variant("a-public-best", 1.3)), alice,
                       **{"Idempotency-Key": "a-public-best"})
    assert repeat.status_code == 200 and repeat.json()["status"] == "duplicate"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_final_selections_on_each_backend(migrated_db_url, competition):
    """The candidates' SQL (windows over each team's submissions) and the mark's lock of the
    team's row, through the store, on SQLite and PostgreSQL."""
    store = open_store(migrated_db_url, competition)
    try:
        team = add_team(store, "P", "team@example.org")[0].id
        ids = {}
        for i, scale in enumerate((1.0, 1.1, 1.3)):
            document = variant(f"P-{i}", scale)
            ids[i] = submit(store, team, encode(document)).submission_id
            if i != 1:  # the weakest and the strongest are reproduced; 0 scores best privately
                hit, mrr = (2.0, 3.0) if i == 0 else (1.0, 0.8)
                record_reproduction(store, ids[i], json.dumps(private_report(
                    private_folds(document, hit, mrr))).encode())
        other = add_team(store, "Q", "q@example.org")[0].id  # marks none
        for i, scale in enumerate((1.0, 1.1, 1.3)):
            document = variant(f"Q-{i}", scale)
            ids["Q", i] = submit(store, other, encode(document)).submission_id
            if i != 1:
                hit, mrr = (2.0, 3.0) if i == 0 else (1.0, 0.8)
                record_reproduction(store, ids["Q", i], json.dumps(private_report(
                    private_folds(document, hit, mrr))).encode())

        def chosen(name: str) -> int:
            return next(r.submission_id for r in phase_board(store, "public").rows
                        if r.team == name)

        assert mark_final(store, team, ids[0]).selections == (ids[0],)
        assert mark_final(store, team, ids[1]).selections == (ids[0], ids[1])
        with pytest.raises(SubmissionRejected) as refused:
            mark_final(store, team, ids[2])
        assert refused.value.status == 409
        assert mark_final(store, team, ids[1], final=False).selections == (ids[0],)
        reveal_phase(store, "public", close_now=True)
        # P: its marked run (the weakest public one, the best private one); Q, unmarked: its
        # two best public ones (2, 1), of which 2 has a private score
        assert chosen("P") == ids[0]
        assert chosen("Q") == ids["Q", 2]
        # frozen: Q cannot switch to its best private run (0), nor P unmark its own
        for team_id, sid, final in ((other, ids["Q", 0], True), (team, ids[0], False)):
            with pytest.raises(SubmissionRejected, match="was revealed on") as refused:
                mark_final(store, team_id, sid, final)
            assert refused.value.status == 409
        assert (chosen("P"), chosen("Q")) == (ids[0], ids["Q", 2])
        with pytest.raises(SubmissionRejected, match="was revealed on") as refused:
            submit(store, other, encode(variant("Q-after", 2.0)))
        assert refused.value.status == 403
    finally:
        store.engine.dispose()


def test_migration_0004_goes_down_and_up(tmp_path):
    from alembic import command
    from alembic.config import Config

    engine = make_engine(sqlite_url(tmp_path))
    try:
        upgrade(engine)
        config = Config()
        migrations = MIGRATIONS_DIR
        config.set_main_option("script_location", str(migrations))
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0003")
        columns = {c["name"] for c in sa.inspect(engine).get_columns("submissions")}
        assert "final_at" not in columns and "private_tests" in columns
        assert "phase_publications" not in sa.inspect(engine).get_table_names()
        upgrade(engine)
        columns = {c["name"] for c in sa.inspect(engine).get_columns("submissions")}
        assert "final_at" in columns
        assert "phase_publications" in sa.inspect(engine).get_table_names()
    finally:
        engine.dispose()
