"""A team lists its own submissions: through the API (its token) and
``python -m evaluation submissions``, on a live server on 127.0.0.1.

The listing holds the team's submissions only, newest first, with the run's name and the
upload's description, and the scores the visibility rule shows: those of a public phase, none
of a hidden one before its reveal.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

from evaluation.server.core import recompute
from evaluation.server.db import create_admin_token
from tests.server._api import SUBMIT
from tests.server._helpers import encode, fold_tests, run_cli, variant


def labelled(run_id: str, scale: float, name: str | None, description: str | None) -> dict:
    document = variant(run_id, scale)
    if name is not None:
        document["name"] = document["results"]["name"] = name
    if description is not None:
        document["description"] = description
    return document


def test_a_team_lists_its_own_submissions(live, competition, capsys, monkeypatch, tmp_path):
    alice, bob = live.team("Alice"), live.team("Bob")
    first = labelled("a-1", 1.0, "baseline-ish", None)
    second = labelled("a-2", 1.1, "tuned", "more neighbours")
    ids = []
    for document in (first, second):
        reply = live.post(encode(document), alice)
        assert reply.status_code == 201, reply.text
        ids.append(reply.json()["submission_id"])
        live.clock.now += timedelta(minutes=5)
    assert live.post(encode(labelled("b-1", 1.2, "bob's", None)), bob).status_code == 201
    # the hidden phase: no scores in the listing
    live.clock.now = live.clock.now.replace(year=2028, month=1, day=5)
    hidden = live.post(encode(labelled("a-3", 1.3, "final try", None)), alice)
    assert hidden.status_code == 201, hidden.text
    ids.append(hidden.json()["submission_id"])

    listing = live.get(SUBMIT, alice).json()["submissions"]
    assert [s["submission_id"] for s in listing] == ids[::-1]  # newest first, Alice's only
    assert [(s["name"], s["description"], s["phase"]) for s in listing] == [
        ("final try", None, "final"), ("tuned", "more neighbours", "public"),
        ("baseline-ish", None, "public")]
    references = competition.phase("public").references
    for item, document in zip(listing[1:], (second, first)):
        expected = recompute(fold_tests(document), references)
        assert item["leaderboard_score"] == expected.leaderboard_score
        assert tuple(item["interval"]) == expected.interval
        assert item["reproduction"] == "pending" and item["private_leaderboard_score"] is None
    assert listing[0]["leaderboard_score"] is None and listing[0]["interval"] is None
    assert listing[0]["phase1_score"] is None
    # one phase's only; an unknown phase is 404, naming it
    public = live.get(SUBMIT, alice, phase="public").json()["submissions"]
    assert [s["submission_id"] for s in public] == ids[1::-1]
    unknown = live.get(SUBMIT, alice, phase="nope")
    assert unknown.status_code == 404 and "nope" in unknown.json()["reason"]

    assert live.get(SUBMIT).status_code == 401
    organizer = create_admin_token(live.store)
    refused = live.get(SUBMIT, organizer)
    assert refused.status_code == 403 and "token" in refused.json()["reason"]

    # the command: the same listing, without the token in what it prints
    monkeypatch.chdir(tmp_path)  # no upload.env here
    monkeypatch.setenv("UPLOAD_TOKEN", alice)
    monkeypatch.delenv("UPLOAD_URL", raising=False)
    base = str(live.client.base_url).rstrip("/")
    code, out, err = run_cli(capsys, "submissions", "--server", base)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["id", "submitted", "(UTC)"]
    assert [int(line.split()[0]) for line in lines[1:]] == ids[::-1]
    shown = f"{listing[1]['leaderboard_score']:.4f}"
    assert shown in lines[2] and "tuned / more neighbours" in lines[2]
    assert "hidden" in lines[1] and "final try" in lines[1]
    assert alice not in out + err
    code, out, err = run_cli(capsys, "submissions", "--server", base, "--phase", "final")
    assert code == 0, err
    assert [int(line.split()[0]) for line in out.splitlines()[1:]] == [ids[2]]

    # a refused token: exit status 3 and the server's reason, not the token
    monkeypatch.setenv("UPLOAD_TOKEN", "not-a-token-of-this-server")
    code, out, err = run_cli(capsys, "submissions", "--server", base)
    assert code == 3 and "HTTP 401" in err and "not-a-token-of-this-server" not in out + err


def test_submit_sends_a_description_the_listing_shows(live, capsys, monkeypatch, tmp_path):
    alice = live.team("Alice")
    path = tmp_path / "submission.json"
    document = labelled("a-1", 1.0, "knn", None)
    document["results"]["eligible_for_upload"] = True
    path.write_text(json.dumps(document))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("UPLOAD_TOKEN", alice)
    base = str(live.client.base_url).rstrip("/")
    monkeypatch.setenv("UPLOAD_URL", base + SUBMIT)
    code, _, err = run_cli(capsys, "submit", str(path), "--description", "line\nbreak")
    assert code == 2 and "--description" in err and "printable" in err
    assert live.get(SUBMIT, alice).json()["submissions"] == []
    code, out, err = run_cli(capsys, "submit", str(path), "--description", "k=50, cosine")
    assert code == 0, err
    [item] = live.get(SUBMIT, alice).json()["submissions"]
    assert (item["name"], item["description"]) == ("knn", "k=50, cosine")
    # UPLOAD_URL gives the server when --server is not given
    code, out, err = run_cli(capsys, "submissions")
    assert code == 0 and "knn / k=50, cosine" in out
