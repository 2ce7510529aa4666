"""A team sees its own results under the competition's declared alternative protocols in its
submissions listing (API and ``python -m evaluation submissions``): per reproduced submission
and protocol, the status, the score (as the certificate ranks the team by it) and the cost,
and a failure's reason, which no other team reads; a private protocol withheld until the
reveal, and no score while the phase's scores are hidden. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timezone

import numpy as np
import pytest

pytest.importorskip("sqlalchemy")
pytest.importorskip("fastapi")
pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

from evaluation.challenge import (
    GATED_SCORE,
    LEADERBOARD_TESTS,
    decode_user_values,
    phase2_score,
)
from evaluation.server.api import create_app
from evaluation.server.db import add_team, create_admin_token, reveal_phase
from evaluation.server.store import own_submissions, record_reproduction, submit
from tests.server._api import SUBMIT, Api, serving, team_folds
from tests.server._helpers import Clock, encode, open_store, run_cli, variant, with_phases
from tests.server._robustness import PROTOCOLS, alternative_blob, reproduction_report
from tests.server._user_values import K, with_user_values

UTC = timezone.utc


def _results(i: int, skill: float, failing: str) -> list[dict]:
    """A team's results under the three protocols: ``failing`` failed, with the team's own
    trace as its reason; the others scored."""
    out = []
    for j, protocol in enumerate(("seed-7", "cut-2018", "secret")):
        if protocol == failing:
            out.append({"protocol": protocol, "status": "failed",
                        "reason": f"exit status 1: team {i}'s own trace",
                        "cost": {"seconds": 1.5}})
        else:
            out.append({"protocol": protocol, "status": "scored",
                        "user_values": alternative_blob(100 * (j + 1) + i, skill),
                        "cost": {"seconds": 12.5 + i, "train_seconds": 8.25,
                                 "predict_seconds": 2.0, "peak_rss_mib": 512.0}})
    return out


def _reproduced(store, team_id: int, i: int, skill: float, failing: str) -> tuple[int, list]:
    """A submission of the team with trusted values, reproduced under the protocols."""
    doc = with_user_values(variant(f"run-{i}"), team_folds(i, skill))
    sid = submit(store, team_id, encode(doc)).submission_id
    results = _results(i, skill, failing)
    record_reproduction(store, sid, reproduction_report(doc, results))
    return sid, results


def _score(blob: str, references) -> float:
    """The protocol's score by hand: the phase-2 score of the folds' mean tests."""
    folds = [f.scores.tests() for f in decode_user_values(blob, None, k=K)]
    return phase2_score({t: sum(f[t][0] for f in folds) / len(folds)
                         for t in LEADERBOARD_TESTS}, references)


def test_a_team_reads_its_own_alternative_results(migrated_db_url, competition, capsys,
                                                  monkeypatch, tmp_path):
    app = create_app(replace(competition, robustness=PROTOCOLS), migrated_db_url,
                     clock=Clock())
    with serving(app, True) as client:
        api = Api(client, app.state.store, Clock(), True)
        store = api.store
        references = competition.phase("public").references
        alice, alice_token = add_team(store, "Alice", "alice@example.org")
        bob, bob_token = add_team(store, "Bob", "bob@example.org")
        sid, sent = _reproduced(store, alice.id, 1, 0.5, failing="cut-2018")
        bob_sid, bob_sent = _reproduced(store, bob.id, 2, 0.3, failing="secret")

        [item] = api.get(SUBMIT, alice_token).json()["submissions"]
        assert item["submission_id"] == sid
        # the private protocol waits for the reveal; the declared order
        seed, cut = item["alternatives"]
        expected = _score(sent[0]["user_values"], references)
        assert expected != GATED_SCORE and np.isfinite(expected)
        assert seed == {"protocol": "seed-7", "kind": "fold_seed", "status": "scored",
                        "score": pytest.approx(expected, rel=1e-12, abs=0.0), "reason": None,
                        "seconds": 13.5, "train_seconds": 8.25, "predict_seconds": 2.0,
                        "peak_rss_mib": 512.0}
        assert (cut["status"], cut["score"], cut["seconds"]) == ("failed", None, 1.5)
        assert cut["reason"] == "exit status 1: team 1's own trace"
        [theirs] = api.get(SUBMIT, bob_token).json()["submissions"]
        assert theirs["submission_id"] == bob_sid
        assert [a["status"] for a in theirs["alternatives"]] == ["scored", "scored"]
        assert theirs["alternatives"][0]["score"] == pytest.approx(
            _score(bob_sent[0]["user_values"], references), rel=1e-12, abs=0.0)
        assert theirs["alternatives"][0]["score"] != seed["score"]
        assert "team 1's own trace" not in json.dumps(theirs)
        # the submission's own view: the same for its team; an organizer reads the private
        # protocol's at once; another team reads nothing of it
        view = api.get(f"{SUBMIT}/{sid}", alice_token).json()
        assert view["alternatives"] == item["alternatives"]
        organizer = api.get(f"{SUBMIT}/{bob_sid}", create_admin_token(store)).json()
        assert [a["protocol"] for a in organizer["alternatives"]] == ["seed-7", "cut-2018",
                                                                      "secret"]
        assert organizer["alternatives"][2]["reason"] == "exit status 1: team 2's own trace"
        assert api.get(f"{SUBMIT}/{sid}", bob_token).status_code == 404

        # the command prints them under the submission, the reason with --log
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("UPLOAD_TOKEN", alice_token)
        base = str(client.base_url).rstrip("/")
        code, out, err = run_cli(capsys, "submissions", "--server", base)
        assert code == 0, err
        lines = [line.strip() for line in out.splitlines()]
        assert f"alternative seed-7 (fold_seed): scored, score {expected:.4f}, 13.5 s (train " \
               f"8.2 s, predict 2.0 s), peak 512 MiB" in lines
        assert "alternative cut-2018 (global_time): failed, score -, 1.5 s; reason: exit " \
               "status 1: team 1's own trace" in lines
        assert not any("secret" in line for line in lines)
        code, out, err = run_cli(capsys, "submissions", "--server", base, "--log", str(sid))
        assert code == 0 and "reason: exit status 1: team 1's own trace" in out

        # revealed: the private protocol too, Bob's failure his own
        reveal_phase(store, "public", close_now=True)
        [item] = api.get(SUBMIT, alice_token).json()["submissions"]
        assert [a["protocol"] for a in item["alternatives"]] == ["seed-7", "cut-2018",
                                                                 "secret"]
        assert item["alternatives"][2]["score"] == pytest.approx(
            _score(sent[2]["user_values"], references), rel=1e-12, abs=0.0)
        [theirs] = api.get(SUBMIT, bob_token).json()["submissions"]
        assert theirs["alternatives"][2]["reason"] == "exit status 1: team 2's own trace"


def test_no_alternative_score_while_the_phase_is_hidden(migrated_db_url, competition):
    store = open_store(migrated_db_url, replace(with_phases(competition, public=False),
                                                robustness=PROTOCOLS), Clock())
    try:
        team, _ = add_team(store, "Carol", "carol@example.org")
        sid, _ = _reproduced(store, team.id, 3, 0.4, failing="seed-7")
        [item] = own_submissions(store, team.id)
        assert item.submission_id == sid and item.leaderboard_score is None
        # the statuses, costs and the reason are the team's own; no score before the reveal
        assert [(a.protocol, a.status, a.score) for a in item.alternatives] == [
            ("seed-7", "failed", None), ("cut-2018", "scored", None)]
        assert item.alternatives[1].seconds == 15.5
        assert item.alternatives[0].reason == "exit status 1: team 3's own trace"
        # a competition without protocols lists none
        store.competition = replace(store.competition, robustness=())
        assert own_submissions(store, team.id)[0].alternatives == ()
    finally:
        store.engine.dispose()
