"""Fact sheets: where a phase's competition file says ``fact_sheet = "required"`` (or
``"optional"``), a final selection carries a short description of the method and a link to
its code (URL and commit). Bad ones (too long, control characters, HTML, a URL that is not
http(s), a commit that is no SHA) are refused with the field, the rule and the fix, and change
nothing. Before the reveal only the team itself and the organizers see them; after it the
board, its CSV and its page show them, escaped.
"""

from __future__ import annotations

import csv
import io
from dataclasses import replace
from datetime import datetime, timezone

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("httpx")

from evaluation.errors import ConfigError, SubmissionRejected
from evaluation.server.api import create_app
from evaluation.server.core import (
    MAX_DESCRIPTION,
    FactSheet,
    load_competition,
    read_fact_sheet,
)
from evaluation.server.db import add_team, create_admin_token, reveal_phase
from evaluation.server.store import mark_final, own_submissions, submit
from tests.server._api import SUBMIT, Api, serving
from tests.server._helpers import (
    Clock,
    document,
    encode,
    migrated_sqlite_url,
    open_store,
    run_cli,
    sqlite_url,
    variant,
    write,
)

UTC = timezone.utc
#: A description with what a page must escape: "<" before a space, "&", quotes, a line break.
DESCRIPTION = 'Matrix factorisation ("ALS") where a < b & c\nthen re-ranked by popularity'
GOOD = {"description": DESCRIPTION, "code_url": "https://example.org/team/model",
        "commit": "ABCDEF1234567"}


def sheet(**changes) -> dict:
    return {"fact_sheet": {**GOOD, **changes}}


# --------------------------------------------------------------------------- the rules


def test_a_good_fact_sheet_is_kept_as_plain_text():
    found = read_fact_sheet(dict(GOOD, description="  " + DESCRIPTION + "\n"))
    assert found == FactSheet(description=DESCRIPTION, code_url=GOOD["code_url"],
                              commit="abcdef1234567")
    windows = read_fact_sheet(dict(GOOD, description=DESCRIPTION.replace("\n", "\r\n")))
    assert windows.description == DESCRIPTION


@pytest.mark.parametrize("changes, words", [
    ({"description": "x" * (MAX_DESCRIPTION + 1)}, ["2000 characters", "got 2001"]),
    ({"description": "short"}, ["10 to 2000 characters", "got 5"]),
    ({"description": "a method\x07 with a bell"}, ["control characters", "U+0007"]),
    ({"description": "a method\rwith a carriage return"}, ["U+000D"]),
    ({"description": "a method \u202eevil"}, ["U+202E"]),
    ({"description": "see <script>alert(1)</script>"}, ["must not contain HTML", "'<script>"]),
    ({"description": "a <b>bold</b> claim here"}, ["must not contain HTML"]),
    ({"description": 42}, ["must be text"]),
    ({"code_url": "javascript:alert(1)"}, ["code_url must be an http or https link"]),
    ({"code_url": "ftp://example.org/x"}, ["http or https"]),
    ({"code_url": "https://user:secret@example.org/x"}, ["user name or password"]),
    ({"code_url": "https:///nohost"}, ["must name a host"]),
    ({"code_url": "https://example.org/a b"}, ["no spaces or control characters"]),
    ({"code_url": "https://example.org/" + "a" * 500}, ["at most 500 characters"]),
    ({"commit": "abc12"}, ["hexadecimal SHA of 7 to 40 digits"]),
    ({"commit": "g" * 40}, ["hexadecimal SHA"]),
    ({"commit": "a" * 41}, ["hexadecimal SHA"]),
    ({"commit": None}, ["commit is missing"]),
    ({"extra": "x"}, ["'extra' is not one of its fields"]),
])
def test_a_bad_fact_sheet_is_refused_naming_the_field_and_the_fix(changes, words):
    with pytest.raises(SubmissionRejected) as refused:
        read_fact_sheet({**GOOD, **changes})
    assert refused.value.status == 422
    for word in words:
        assert word in refused.value.reason, refused.value.reason


def test_a_bad_fact_sheet_rule_is_refused_at_load(tmp_path, competition):
    doc = document(competition)
    doc["phases"][0]["fact_sheet"] = "mandatory"
    with pytest.raises(ConfigError, match=r"phases\[0\]\.fact_sheet must be one of 'off', "
                                          r"'optional', 'required'.*\"mandatory\".*Fix:"):
        load_competition(write(tmp_path, doc))
    doc["phases"][0]["fact_sheet"] = "required"
    assert load_competition(write(tmp_path, doc)).phases[0].fact_sheet == "required"
    assert load_competition(write(tmp_path, document(competition))).phases[0].fact_sheet \
        == "off"


# --------------------------------------------------------------------------- on each backend


def test_a_required_fact_sheet_on_each_backend(migrated_db_url, competition):
    public, final = competition.phases
    store = open_store(migrated_db_url, replace(competition, phases=(
        replace(public, fact_sheet="required"), final)))
    try:
        team = add_team(store, "P", "p@example.org")[0].id
        sid = submit(store, team, encode(variant("P-0", 1.0))).submission_id
        with pytest.raises(SubmissionRejected, match="requires a fact sheet") as refused:
            mark_final(store, team, sid)
        assert refused.value.status == 422
        assert not own_submissions(store, team)[0].final  # nothing changed
        first = read_fact_sheet(GOOD)
        mark = mark_final(store, team, sid, fact_sheet=first)
        assert mark.changed and mark.fact_sheet == first
        # marked again with another: the new one replaces it, the mark stays
        second = read_fact_sheet(dict(GOOD, commit="0" * 40))
        again = mark_final(store, team, sid, fact_sheet=second)
        assert not again.changed and again.fact_sheet == second
        assert own_submissions(store, team)[0].fact_sheet == second
        # unmarking takes none; the stored one stays with the submission
        with pytest.raises(SubmissionRejected, match="an unmark takes no fact sheet"):
            mark_final(store, team, sid, final=False, fact_sheet=first)
        assert mark_final(store, team, sid, final=False).fact_sheet == second
    finally:
        store.engine.dispose()


def test_an_optional_fact_sheet_may_be_left_out(tmp_path, competition):
    public, final = competition.phases
    store = open_store(sqlite_url(tmp_path), replace(competition, phases=(
        replace(public, fact_sheet="optional"), final)))
    team = add_team(store, "P", "p@example.org")[0].id
    ids = [submit(store, team, encode(variant(f"P-{i}", 1.0))).submission_id for i in range(2)]
    assert mark_final(store, team, ids[0]).fact_sheet is None
    assert mark_final(store, team, ids[1], fact_sheet=read_fact_sheet(GOOD)).fact_sheet \
        == read_fact_sheet(GOOD)
    store.engine.dispose()


def test_a_phase_without_fact_sheets_refuses_one(tmp_path, competition):
    store = open_store(sqlite_url(tmp_path), competition)
    team = add_team(store, "P", "p@example.org")[0].id
    sid = submit(store, team, encode(variant("P-0", 1.0))).submission_id
    with pytest.raises(SubmissionRejected, match='takes no fact sheets .fact_sheet = "off"'):
        mark_final(store, team, sid, fact_sheet=read_fact_sheet(GOOD))
    assert not own_submissions(store, team)[0].final
    store.engine.dispose()


# --------------------------------------------------------------------------- live


def test_fact_sheets_are_shown_after_the_reveal_only(tmp_path, competition, capsys,
                                                     monkeypatch):
    public, final = competition.phases
    clock = Clock()
    app = create_app(replace(competition, phases=(replace(public, fact_sheet="required"),
                                                  final)), migrated_sqlite_url(tmp_path),
                     clock=clock)
    with serving(app, True) as client:
        api = Api(client, app.state.store, clock, True)
        alice, bob = api.team("Alice"), api.team("Bob")
        admin = create_admin_token(api.store)
        auth = {"Authorization": f"Bearer {alice}"}
        ids = [api.post(encode(variant(f"a-{i}", 1.0 + i / 10)), alice).json()["submission_id"]
               for i in range(2)]
        bob_id = api.post(encode(variant("b-0", 1.05)), bob).json()["submission_id"]

        # refused, each with its reason, and nothing changes
        refusals = [(None, "requires a fact sheet"),
                    (sheet(description="bell\x07 in the text here"), "U+0007"),
                    (sheet(description="<img src=x onerror=alert(1)>"), "HTML"),
                    (sheet(description="y" * 2001), "2000 characters"),
                    (sheet(code_url="javascript:alert(1)"), "http or https"),
                    (sheet(commit="xyz"), "hexadecimal SHA"),
                    ({"fact_sheet": GOOD, "other": 1}, "the body of a mark")]
        for body, words in refusals:
            reply = client.put(f"{SUBMIT}/{ids[1]}/final", headers=auth, json=body)
            assert reply.status_code == 422 and words in reply.json()["reason"], reply.text
        listing = api.get(SUBMIT, alice).json()["submissions"]
        assert not any(s["final"] or s["fact_sheet"] for s in listing)

        marked = client.put(f"{SUBMIT}/{ids[1]}/final", headers=auth, json=sheet())
        assert marked.status_code == 200, marked.text
        assert marked.json()["fact_sheet"] == dict(GOOD, commit=GOOD["commit"].lower())
        # the command: the description from a file, and all three parts or none
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("UPLOAD_TOKEN", alice)
        base = str(client.base_url).rstrip("/")
        (tmp_path / "method.txt").write_text("Popularity within genre, recency weighted.\n",
                                             encoding="utf-8")
        code, out, err = run_cli(capsys, "final", str(ids[0]), "--server", base,
                                 "--description-file", str(tmp_path / "method.txt"),
                                 "--code-url", "http://example.org/pop", "--commit", "1234567")
        assert code == 0 and "fact sheet is recorded" in out, err
        code, _, err = run_cli(capsys, "final", str(ids[0]), "--server", base,
                               "--code-url", "https://example.org/x")
        assert code == 2 and "--description" in err and "--commit" in err
        code, _, err = run_cli(capsys, "final", str(bob_id), "--server", base,
                               "--description", "a method in words", "--code-url",
                               "https://example.org/x", "--commit", "1234567")
        assert code == 3 and "HTTP 404" in err  # Bob's: not Alice's submission
        code, _, err = run_cli(capsys, "final", str(ids[0]), "--server", base,
                               "--description", "tab\there in the text", "--code-url",
                               "https://example.org/x", "--commit", "1234567")
        assert code == 3 and "HTTP 422" in err and "U+0009" in err

        # before the reveal: the team itself and the organizers only
        own = {s["submission_id"]: s["fact_sheet"] for s in
               api.get(SUBMIT, alice).json()["submissions"]}
        assert own[ids[1]]["description"] == DESCRIPTION
        assert own[ids[0]]["code_url"] == "http://example.org/pop"
        assert api.get(f"{SUBMIT}/{ids[1]}", bob).status_code == 404
        assert api.get(f"{SUBMIT}/{ids[1]}", alice).json()["fact_sheet"]["commit"] \
            == "abcdef1234567"
        hidden = [api.get("/api/v1/leaderboard", None, phase="public").text,
                  api.get("/leaderboard.csv", None, phase="public").text,
                  api.get("/", None, phase="public").text,
                  api.get("/api/v1/leaderboard", bob, phase="public").text]
        for text in hidden:
            assert "Matrix factorisation" not in text and "example.org/team" not in text
        organizers = api.get("/api/v1/leaderboard", admin, phase="public").json()
        assert _alice(organizers)["fact_sheet"]["description"] == DESCRIPTION

        # after the reveal: on the board, its CSV and its page, escaped
        clock.now = datetime(2028, 1, 2, tzinfo=UTC)
        reveal_phase(api.store, "public", close_now=True)
        board = api.get("/api/v1/leaderboard", None, phase="public").json()
        row = _alice(board)
        assert row["submission_id"] == ids[1]  # her best public one among her selections
        assert row["fact_sheet"] == dict(GOOD, commit="abcdef1234567")
        assert next(r for r in board["rows"] if r["team"] == "Bob")["fact_sheet"] is None
        lines = {r["team"]: r for r in csv.DictReader(io.StringIO(
            api.get("/leaderboard.csv", None, phase="public").text))}
        assert (lines["Alice"]["fact_description"], lines["Alice"]["fact_code_url"],
                lines["Alice"]["fact_commit"]) == (DESCRIPTION, GOOD["code_url"],
                                                   "abcdef1234567")
        assert lines["Bob"]["fact_description"] == ""
        page = api.get("/", None, phase="public").text
        assert '<section id="fact-sheets">' in page
        assert ("<p>Matrix factorisation (&#34;ALS&#34;) where a &lt; b &amp; c</p>"
                "<p>then re-ranked by popularity</p>") in page
        assert ('<a href="https://example.org/team/model" rel="nofollow noopener noreferrer">'
                in page) and "<code>abcdef1234567</code>" in page
        assert "a < b" not in page


def _alice(board: dict) -> dict:
    return next(r for r in board["rows"] if r["team"] == "Alice")
