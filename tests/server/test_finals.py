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

from evaluation.errors import SubmissionRejected
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
    reveal_phase(live.store, "public")

    # no marks: Alice's two best public runs (strong, middle) count, not the weak one
    row = team_row(live, "Alice")
    assert (row["submission_id"], row["private_score"]) == (ids["strong"], private["strong"])

    # the command marks the weak run: from now on the private ranking takes it
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("UPLOAD_TOKEN", alice)
    base = str(live.client.base_url).rstrip("/")
    monkeypatch.setenv("UPLOAD_URL", base + SUBMIT)
    code, out, err = run_cli(capsys, "final", str(ids["weak"]))
    assert code == 0, err
    assert f"submission {ids['weak']} is marked as final" in out and "(1 of 2)" in out
    row = team_row(live, "Alice")
    assert (row["submission_id"], row["private_score"]) == (ids["weak"], private["weak"])
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
    # the marked ones only: the middle run (no private score), not the unmarked weak one
    row = team_row(live, "Alice")
    assert (row["submission_id"], row["private_score"]) == (ids["middle"], None)
    listing = live.get(SUBMIT, alice).json()["submissions"]
    assert {s["submission_id"]: s["final"] for s in listing} == {
        ids["weak"]: False, ids["middle"]: True, ids["strong"]: False}
    code, out, _ = run_cli(capsys, "submissions")
    finals = {int(line.split()[0]): line.split()[6] for line in out.splitlines()[1:]}
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


def test_final_selections_on_each_backend(db_url, competition):
    """The candidates' SQL (windows over each team's submissions) and the mark's lock of the
    team's row, through the store, on SQLite and PostgreSQL."""
    store = open_store(db_url, competition)
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
        reveal_phase(store, "public")

        def chosen() -> int:
            return next(r.submission_id for r in phase_board(store, "public").rows if r.team == "P")

        assert chosen() == ids[2]  # unmarked: the two best public ones (2, 1)
        assert mark_final(store, team, ids[0]).selections == (ids[0],)
        assert chosen() == ids[0]
        assert mark_final(store, team, ids[1]).selections == (ids[0], ids[1])
        with pytest.raises(SubmissionRejected) as refused:
            mark_final(store, team, ids[2])
        assert refused.value.status == 409
        assert mark_final(store, team, ids[0], final=False).selections == (ids[1],)
        assert chosen() == ids[1]
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
