"""Every number the board vouches for is one the organizers computed.

A submission uploads its run's predictions; a scoring job scores them with the organizers'
data and the harness's own fold scorer, and only then is the row ranked and compared. The
attacks of the old design (scores and per-user values typed by the team) are tested here: a
made-up upload and forged per-user values must not enter the statistics.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
httpx = pytest.importorskip("httpx")

from evaluation.challenge import (  # noqa: E402
    LEADERBOARD_TESTS,
    UserScores,
    decode_user_values,
)
from evaluation.cli import main  # noqa: E402
from evaluation.contract import PREDICTIONS_MEDIA_TYPE, encode_predictions  # noqa: E402
from evaluation.errors import ConfigError, SubmissionRejected  # noqa: E402
from evaluation.reproduce import (  # noqa: E402
    BatchSettings,
    LeaderboardClient,
    Worker,
    WorkerSettings,
    worker_config,
)
from evaluation.reproduce._scoring_job import (  # noqa: E402
    ScoringFailed,
    score_upload,
    scoring_data,
)
from evaluation.server.api import create_app  # noqa: E402
from evaluation.server.core import load_competition  # noqa: E402
from evaluation.server.db import add_team, create_admin_token  # noqa: E402
from evaluation.server.store import (  # noqa: E402
    claim_job,
    finish_job,
    list_jobs,
    phase_board,
    submit,
    user_scores,
)
from evaluation.server.store import payload as stored_payload  # noqa: E402
from evaluation.server.store import predictions as stored_predictions  # noqa: E402
from tests.server._helpers import (  # noqa: E402
    Clock,
    computed,
    encode,
    migrated_sqlite_url,
    open_store,
    sqlite_url,
    standings_competition,
    variant,
)
from tests.server._live_server import http_client, live_server  # noqa: E402
from tests.server._scoring import (  # noqa: E402
    small_run,
    tiny_competition,
)
from tests.server._user_values import synthetic_fold, with_user_values  # noqa: E402

SUBMIT = "/api/v1/submissions"


def _admin(caller_store):
    from evaluation.server.db import Caller

    return Caller(team_id=None, admin=True)


def _score_in_process(store, sid: int) -> dict:
    """Run the submission's scoring job as a worker does, calling the store directly."""
    lease = claim_job(store, json.dumps({"worker": "w", "kinds": ["score"]}).encode())
    assert lease is not None and lease.job.kind == "score"
    assert lease.job.submission_id == sid
    claim = json.loads(stored_payload(store, sid, _admin(store)))
    scored = score_upload(claim, stored_predictions(store, sid, _admin(store)))
    finish_job(store, lease.job.job_id, json.dumps({"lease": lease.lease,
                                                     "scored": scored}).encode())
    return scored


# --------------------------------------------------------------------------- end to end


def test_an_upload_of_predictions_is_scored_by_a_worker_into_the_board(migrated_db_url, tiny_board,
                                                                        tmp_path, capsys):
    competition_file, run = tiny_board
    competition = load_competition(competition_file)
    app = create_app(competition, migrated_db_url)
    store = app.state.store
    team, token = add_team(store, "alpha", "a@example.org")
    admin = create_admin_token(store)
    (tmp_path / "admin.token").write_text(admin)
    with live_server(app) as url, http_client(url, timeout=60) as client:
        reply = client.post(SUBMIT, content=run.predictions, headers={
            "Authorization": f"Bearer {token}", "Content-Type": PREDICTIONS_MEDIA_TYPE,
            "Idempotency-Key": run.claim["run_id"]})
        assert reply.status_code == 201, reply.text
        sid = reply.json()["submission_id"]
        assert reply.json()["rank"] is None  # not computed yet: a claim
        before = client.get("/api/v1/leaderboard").json()["rows"]
        assert [(r["team"], r["rank"], r["computed"]) for r in before] == [
            ("alpha", None, False)]
        status = main(["worker", "--server", url, "--admin-token-file",
                       str(tmp_path / "admin.token"), "--checkouts", str(tmp_path), "--once",
                       "--unsafe-no-sandbox", "--env", str(Path(sys.executable).parents[1]),
                       "--log-dir", str(tmp_path / "logs")])
        out, err = capsys.readouterr()
        assert status == 0, out + err
        board = client.get("/api/v1/leaderboard").json()
    [row] = board["rows"]
    assert row["computed"] is True and row["rank"] == 1 and row["submission_id"] == sid
    # the organizers' numbers equal the participant's local ones (same code, same data)
    local = run.results
    assert row["leaderboard_score"] == pytest.approx(local["aggregate"]["phase2_score"],
                                                     rel=0, abs=1e-12)
    assert row["phase1_score"] == pytest.approx(local["aggregate"]["phase1_score"],
                                                rel=0, abs=1e-12)
    for test in LEADERBOARD_TESTS:
        assert row["tests"][test] == pytest.approx(local["aggregate"]["mean"][test],
                                                   rel=0, abs=1e-12)
    # the interval: the one the participant saw locally (user-level bootstrap, same seed)
    assert row["interval"] == pytest.approx(
        local["confidence_intervals"]["phase2_score"], rel=0, abs=1e-12)
    values = user_scores(store, sid)
    assert values is not None and values.trusted
    for number, fold in enumerate(values.folds):
        mine = UserScores.from_arrays(dict(np.load(run.run_dir / f"fold_{number}_users.npz")))
        np.testing.assert_array_equal(fold.hit, mine.hit)
        np.testing.assert_allclose(fold.rr, mine.rr, rtol=0, atol=1e-12)
    [job] = [j for j in list_jobs(store) if j.kind == "score"]
    assert job.state == "scored"
    store.engine.dispose()


def test_the_scoring_job_recomputes_every_fold_to_the_participants_numbers(tiny_board):
    _, run = tiny_board
    scored = score_upload(run.claim, run.predictions)
    for number, tests in enumerate(scored["fold_tests"]):
        local = run.results["folds"][number]["tests"]
        for test in LEADERBOARD_TESTS:
            assert tests[test] == pytest.approx(local[test], rel=0, abs=1e-12), (number, test)


def test_the_scoring_job_equals_the_participants_numbers_on_the_small_data(tmp_path):
    # the small synthetic data (about 3k test users per fold): the folds, slices and vectors
    # of a dataset larger than the tiny one, scored by the job as the run scored them
    run = small_run(tmp_path / "results")
    scored = score_upload(run.claim, run.predictions)
    assert len(scored["fold_tests"]) == len(run.results["folds"]) == 4
    for number, tests in enumerate(scored["fold_tests"]):
        local = run.results["folds"][number]
        assert local["n_users"] > 1000
        assert set(tests) == set(LEADERBOARD_TESTS)
        for test in LEADERBOARD_TESTS:
            assert tests[test] == pytest.approx(local["tests"][test], rel=0, abs=1e-12), (
                number, test)
    sizes = [f["n_users"] for f in run.results["folds"]]
    for number, fold in enumerate(decode_user_values(scored["user_values"], sizes,
                                                     k=run.results["k"])):
        mine = UserScores.from_arrays(dict(np.load(run.run_dir / f"fold_{number}_users.npz")))
        np.testing.assert_array_equal(fold.scores.hit, mine.hit)
        np.testing.assert_allclose(fold.scores.rr, mine.rr, rtol=0, atol=1e-12)
    # a job scoring the same data again reads the kept data: the same numbers to the bit
    config = worker_config(run.results)
    assert scoring_data(config) is scoring_data(config)
    assert score_upload(run.claim, run.predictions) == scored


def test_the_job_scores_by_the_competitions_repeated_items_rule_from_the_server(
        tiny_board, tmp_path):
    competition_file, run = tiny_board
    competition = load_competition(competition_file)
    assert competition.repeated_items == "first"
    # a server whose competition refuses repeated items (its file changed after the upload):
    # the claim answer carries its rule, and the worker scores by it, not by the stored run's
    app = create_app(competition, migrated_sqlite_url(tmp_path))
    team, _ = add_team(app.state.store, "alpha", "a@example.org")
    submit(app.state.store, team.id, run.predictions, run.claim["run_id"])
    strict = create_app(replace(competition, repeated_items="error"), sqlite_url(tmp_path))
    admin = create_admin_token(strict.state.store)
    received = []

    def scorer(payload, stream, *, source=None, repeated=None):
        received.append(repeated)
        return score_upload(payload, stream, source=source, repeated=repeated)

    batch = BatchSettings(log_dir=tmp_path / "logs", env_cache=tmp_path / "envs")
    with live_server(strict) as url:
        worker = Worker(LeaderboardClient(url, admin),
                        WorkerSettings(checkouts=tmp_path, batch=batch, poll_s=0.05,
                                       lease_s=30.0, name="w", once=True),
                        scorer=scorer, log=lambda line: None)
        assert worker.run() == {"scored": 1}
    assert received == ["error"]
    # the rule decides: a list naming a track twice is refused by "error" whatever the
    # stored run says ("first"), which would score it
    folds = [np.load(run.run_dir / f"fold_{f}_predictions.npz") for f in range(4)]
    twice = [f["items"].copy() for f in folds]
    twice[0][0, 1] = twice[0][0, 0]
    body = encode_predictions(run.claim, k=run.results["k"], run_hash=run.claim["run_hash"],
                              harness_version=run.results["harness_version"],
                              folds=[(f["users"].tobytes(), items.tobytes())
                                     for f, items in zip(folds, twice)])
    assert score_upload(run.claim, body)["fold_tests"]
    with pytest.raises(ScoringFailed, match="more than once"):
        score_upload(run.claim, body, repeated="error")
    for app_ in (app, strict):
        app_.state.store.engine.dispose()


def test_lists_for_other_users_or_unknown_tracks_fail_the_job(tiny_board):
    _, run = tiny_board
    users = [np.load(run.run_dir / f"fold_{f}_predictions.npz") for f in range(4)]
    folds = [(u["users"].tobytes(), u["items"].tobytes()) for u in users]
    k = run.results["k"]
    header = dict(k=k, run_hash=run.claim["run_hash"],
                  harness_version=run.results["harness_version"])
    shifted = [((np.frombuffer(u, "<i4") + 1).astype("<i4").tobytes(), i) for u, i in folds]
    with pytest.raises(ScoringFailed, match="other users"):
        score_upload(run.claim, encode_predictions(run.claim, folds=shifted, **header))
    unknown = [(u, np.full(len(i) // 4, 2**31 - 1, "<i4").tobytes()) for u, i in folds]
    with pytest.raises(ScoringFailed):
        score_upload(run.claim, encode_predictions(run.claim, folds=unknown, **header))


# --------------------------------------------------------------------------- the attacks


def test_a_made_up_upload_is_refused_and_as_a_claim_never_ranked(tmp_path, competition):
    # the attack: invented per-fold values, with per-user arrays that add up to them
    rng = np.random.default_rng(7)
    made_up = with_user_values(variant("made-up", 1.6), [
        synthetic_fold(int(rng.integers(1 << 30)), 60, hit_rate=0.9) for _ in range(4)])
    (tmp_path / "strict").mkdir()
    strict = open_store(sqlite_url(tmp_path / "strict"), replace(competition,
                                                                 accept_claims=False))
    team, _ = add_team(strict, "Cheaters", "c@example.org")
    with pytest.raises(SubmissionRejected) as info:
        submit(strict, team.id, encode(made_up))
    assert info.value.status == 422 and "accept_claims" in info.value.reason
    # where claims are accepted, it is shown apart, never ranked nor compared
    store = open_store(sqlite_url(tmp_path), replace(standings_competition(),
                                                     accept_claims=True))
    honest = []
    for name, scale in (("Honest", 1.0), ("Other", 0.9)):
        t, _ = add_team(store, name, f"{name}@example.org")
        honest.append(submit(store, t.id, encode(with_user_values(
            variant(f"{name}-1", scale), [synthetic_fold(10 + f, 60) for f in range(4)]))
        ).submission_id)
    computed(store, *honest)
    cheater, _ = add_team(store, "Cheaters", "c@example.org")
    receipt = submit(store, cheater.id, encode(made_up))
    assert receipt.rank is None
    board = phase_board(store)
    rows = {r.team: r for r in board.rows}
    assert rows["Cheaters"].rank is None and not rows["Cheaters"].computed
    assert rows["Honest"].rank == 1  # the made-up score is higher, yet not first
    assert rows["Cheaters"].leaderboard_score > rows["Honest"].leaderboard_score
    from evaluation.server.standings import with_standings
    from evaluation.server.standings._reading import StoreValues

    standings = with_standings(store, board, StoreValues(store))
    assert {r.team: r.standing.left_out for r in standings.rows if not r.is_baseline}[
        "Cheaters"] is not None
    assert standings.standings.compared == 2
    store.engine.dispose()
    strict.engine.dispose()


def test_forged_per_user_values_are_refused_or_never_read(tmp_path, competition):
    store = open_store(sqlite_url(tmp_path), replace(standings_competition(),
                                                     accept_claims=True))
    team, _ = add_team(store, "Forgers", "f@example.org")
    folds = [synthetic_fold(30 + f, 60) for f in range(4)]
    # the attack: two users' cosines at +-1e6 (their mean unchanged, the spread enormous)
    forged = [replace(f, scores=replace(f.scores, blw=_spread(f.scores.blw))) for f in folds]
    doc = with_user_values(variant("forged", 1.0), forged)
    with pytest.raises(SubmissionRejected) as info:
        submit(store, team.id, encode(doc))
    assert info.value.status == 422 and "outside the test's range" in info.value.reason
    # in range and adding up, but made up: kept for the record, never read by the board
    sid = submit(store, team.id, encode(with_user_values(variant("in-range", 1.0), folds))
                 ).submission_id
    assert user_scores(store, sid) is None
    store.engine.dispose()


def _spread(values: np.ndarray) -> np.ndarray:
    """``values`` with the first two measured users at +1e6 and -1e6."""
    out = np.array(values, dtype=np.float32)
    first, second = np.flatnonzero(~np.isnan(out))[:2]
    out[first], out[second] = 1e6, -1e6
    return out


def test_claims_are_refused_unless_the_competition_accepts_them(tmp_path):
    path = tiny_competition(tmp_path)
    assert load_competition(path).accept_claims is False
    path.write_text("accept_claims = \"yes\"\n" + path.read_text())
    with pytest.raises(ConfigError, match="accept_claims"):
        load_competition(path)


def test_the_board_says_which_rows_its_guarantee_covers(tmp_path, competition):
    store = open_store(sqlite_url(tmp_path), replace(competition, accept_claims=True),
                       Clock())
    ids = []
    for name, scale in (("Scored", 1.2), ("Claimed", 1.5)):
        t, _ = add_team(store, name, f"{name}@example.org")
        ids.append(submit(store, t.id, encode(variant(f"{name}-1", scale))).submission_id)
    computed(store, ids[0])
    app = create_app(replace(competition, accept_claims=True), migrated_sqlite_url(tmp_path),
                     clock=Clock())
    from fastapi.testclient import TestClient

    with TestClient(app) as client:
        board = client.get("/api/v1/leaderboard").json()
        csv = client.get("/leaderboard.csv").text
        page = client.get("/").text
    rows = {r["team"]: r for r in board["rows"]}
    assert rows["Scored"]["computed"] and rows["Scored"]["rank"] == 1
    assert not rows["Claimed"]["computed"] and rows["Claimed"]["rank"] is None
    assert "computed rows only" in board["guarantee"]
    header, *lines = csv.splitlines()
    assert "computed" in header.split(",")
    claimed = next(line for line in lines if line.startswith("Claimed") or ",Claimed," in line)
    assert ",no," in claimed or claimed.endswith(",no")
    assert "unverified" in page.lower() and "computed rows only" in page
    store.engine.dispose()


def test_a_run_scored_by_another_repeated_items_rule_is_refused(tiny_board, tmp_path):
    # the scoring job reads the rule from the stored run: a run that names another rule than
    # the competition's would be scored by it (more leniently), so the upload is refused
    competition_file, run = tiny_board
    competition = load_competition(competition_file)
    claimed = run.claim["results"].get("competition", {}).get("repeated_items", "first")
    other = "error" if claimed == "first" else "first"
    app = create_app(replace(competition, repeated_items=other), migrated_sqlite_url(tmp_path))
    team, _ = add_team(app.state.store, "alpha", "a@example.org")
    with pytest.raises(SubmissionRejected) as info:
        submit(app.state.store, team.id, run.predictions, run.claim["run_id"])
    assert info.value.status == 422 and "repeated_items" in info.value.reason
    # the same run on a competition of its own rule is taken
    (tmp_path / "same").mkdir()
    same = create_app(competition, migrated_sqlite_url(tmp_path / "same"))
    team, _ = add_team(same.state.store, "alpha", "a@example.org")
    taken = submit(same.state.store, team.id, run.predictions, run.claim["run_id"])
    assert taken.http_status == 201
    app.state.store.engine.dispose()
    same.state.store.engine.dispose()
