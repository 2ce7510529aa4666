"""The declared alternative protocols on the server: the ``[robustness]`` table checked at
load, a reproduction's results under them stored (a failed one with its reason), and the
board's robustness certificate: computed from the stored per-user values with the board's own
paired replicates, shown as JSON, CSV and a page, hidden with the scores, a private protocol
withheld until the reveal, and a failure's reason shown to the organizers and its own team
only."""

from __future__ import annotations

import base64
import json
import zlib
from dataclasses import replace
from datetime import datetime, timezone

import numpy as np
import pytest

pytest.importorskip("sqlalchemy")
pytest.importorskip("fastapi")

import sqlalchemy as sa

from evaluation.challenge import MetricValues, encode_metric_values
from evaluation.errors import ConfigError, SubmissionRejected
from evaluation.reproduce import Job
from evaluation.reproduce import _alternatives as worker_bounds
from evaluation.reproduce._alternatives import read_alternatives
from evaluation.server.api import create_app
from evaluation.server.api._answers import lease_json
from evaluation.server.core import (
    BoardSettings,
    RobustnessProtocol,
    load_competition,
)
from evaluation.server.core._competition_keys import (
    MAX_SAMPLED_CUTOFF,
    MAX_SAMPLED_NEGATIVES,
    SAMPLED_CORRECTIONS,
    SAMPLED_METRICS,
)
from evaluation.server.db import RobustnessResultRow, add_team, create_admin_token
from evaluation.server.page import render_robustness
from evaluation.server.standings import board_robustness
from evaluation.server.store import (
    claim_job,
    mark_final,
    own_submissions,
    record_reproduction,
    submit,
)
from evaluation.standings import kendall_tau_b
from tests.server._api import assert_rejected, serving, team_folds
from tests.server._helpers import (
    Clock,
    document,
    encode,
    open_store,
    sqlite_url,
    trust_values,
    variant,
    with_phases,
    write,
)
from tests.server._robustness import PROTOCOLS, alternative_blob, reproduction_report
from tests.server._user_values import with_user_values

UTC = timezone.utc
#: The official skill (hit rate) of each team; under "cut-2018" the order is reversed.
TEAMS = {"Alpha": 0.5, "Beta": 0.35, "Gamma": 0.2}


# --------------------------------------------------------------------------- the file


def _with_robustness(protocols):
    def change(doc):
        doc["robustness"] = {"protocols": protocols}
    return change


def test_declared_protocols_load(tmp_path, competition):
    doc = document(competition)
    doc["robustness"] = {"protocols": [
        {"name": "seed-7", "kind": "fold_seed", "seed": 7},
        {"name": "cut", "kind": "global_time", "cut": datetime(2018, 1, 1, tzinfo=UTC),
         "private": True},
        {"name": "sampled", "kind": "sampled"},
        {"name": "sampled-bv", "kind": "sampled", "n_negatives": 1000, "correction": "bv",
         "metric": "hit_rate@10", "seed": 42}]}
    loaded = load_competition(write(tmp_path, doc))
    assert loaded.robustness == (
        RobustnessProtocol(name="seed-7", kind="fold_seed", seed=7),
        RobustnessProtocol(name="cut", kind="global_time", cut=datetime(2018, 1, 1, tzinfo=UTC),
                           private=True),
        # the defaults: 100 negatives, the rank correction, NDCG at the run's k, seed 42
        RobustnessProtocol(name="sampled", kind="sampled", seed=42, n_negatives=100,
                           correction="rank", metric="ndcg"),
        RobustnessProtocol(name="sampled-bv", kind="sampled", seed=42, n_negatives=1000,
                           correction="bv", metric="hit_rate@10"))
    assert [p.as_json() for p in loaded.robustness] == [
        {"name": "seed-7", "kind": "fold_seed", "seed": 7},
        {"name": "cut", "kind": "global_time", "cut": "2018-01-01T00:00:00Z"},
        {"name": "sampled", "kind": "sampled", "seed": 42, "n_negatives": 100,
         "correction": "rank", "metric": "ndcg"},
        {"name": "sampled-bv", "kind": "sampled", "seed": 42, "n_negatives": 1000,
         "correction": "bv", "metric": "hit_rate@10"}]
    # the worker reads what the claim carries, under the same bounds
    assert (worker_bounds.MAX_NEGATIVES, worker_bounds.CORRECTIONS, worker_bounds.METRICS,
            worker_bounds.MAX_CUTOFF) == (MAX_SAMPLED_NEGATIVES, SAMPLED_CORRECTIONS,
                                          SAMPLED_METRICS, MAX_SAMPLED_CUTOFF)
    worker = read_alternatives([p.as_json() for p in loaded.robustness])
    assert (worker[3].n_negatives, worker[3].correction, worker[3].cutoff(100)) == \
        (1000, "bv", 10)
    assert worker[2].cutoff(100) == 100
    assert load_competition(write(tmp_path, document(competition))).robustness == ()


CUT = datetime(2018, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("protocols, key, words", [
    ([], "robustness.protocols", "list of 1 to 8 tables"),
    ([{"name": "a", "kind": "leave_one_out"}], "robustness.protocols[0].kind",
     "must be one of 'fold_seed', 'global_time', 'sampled'"),
    ([{"name": "a b", "kind": "fold_seed", "seed": 1}], "robustness.protocols[0].name",
     "letters, digits"),
    ([{"name": "a", "kind": "fold_seed"}], "robustness.protocols[0].seed", "is missing"),
    ([{"name": "a", "kind": "fold_seed", "seed": 42}], "robustness.protocols[0].seed",
     "must differ from dataset.fold_params.seed"),
    ([{"name": "a", "kind": "fold_seed", "seed": -1}], "robustness.protocols[0].seed",
     "integer from 0"),
    ([{"name": "a", "kind": "fold_seed", "seed": 1, "cut": CUT}],
     "robustness.protocols[0].cut", "is not a parameter of kind 'fold_seed'"),
    ([{"name": "a", "kind": "global_time", "cut": "2018-01-01"}],
     "robustness.protocols[0].cut", "TOML offset date-time"),
    ([{"name": "a", "kind": "global_time", "cut": CUT, "private": "yes"}],
     "robustness.protocols[0].private", "true or false"),
    ([{"name": "a", "kind": "fold_seed", "seed": 1}, {"name": "a", "kind": "fold_seed",
                                                       "seed": 2}],
     "robustness.protocols[1].name", "must differ from the other protocols' names"),
    ([{"name": "a", "kind": "fold_seed", "seed": 1, "negatives": 100}],
     "robustness.protocols[0].negatives", "is not a key"),
    ([{"name": "a", "kind": "fold_seed", "seed": 1, "n_negatives": 100}],
     "robustness.protocols[0].n_negatives", "is not a parameter of kind 'fold_seed'"),
    ([{"name": "a", "kind": "global_time", "cut": CUT, "correction": "rank"}],
     "robustness.protocols[0].correction", "is not a parameter of kind 'global_time'"),
    ([{"name": "a", "kind": "sampled", "cut": CUT}], "robustness.protocols[0].cut",
     "is not a parameter of kind 'sampled'"),
    ([{"name": "a", "kind": "sampled", "n_negatives": 0}],
     "robustness.protocols[0].n_negatives", "integer from 1 to 1000"),
    ([{"name": "a", "kind": "sampled", "n_negatives": 1001}],
     "robustness.protocols[0].n_negatives", "integer from 1 to 1000"),
    ([{"name": "a", "kind": "sampled", "n_negatives": True}],
     "robustness.protocols[0].n_negatives", "integer from 1 to 1000"),
    ([{"name": "a", "kind": "sampled", "n_negatives": 100.0}],
     "robustness.protocols[0].n_negatives", "integer from 1 to 1000"),
    ([{"name": "a", "kind": "sampled", "correction": "none"}],
     "robustness.protocols[0].correction", "must be one of 'rank', 'bv'"),
    ([{"name": "a", "kind": "sampled", "metric": "mrr"}], "robustness.protocols[0].metric",
     "must be 'hit_rate' or 'ndcg'"),
    ([{"name": "a", "kind": "sampled", "metric": "ndcg@0"}],
     "robustness.protocols[0].metric", "cutoff @1 to @1000"),
    ([{"name": "a", "kind": "sampled", "metric": "ndcg@ten"}],
     "robustness.protocols[0].metric", "cutoff @1 to @1000"),
    ([{"name": "a", "kind": "sampled", "seed": -3}], "robustness.protocols[0].seed",
     "integer from 0"),
])
def test_each_robustness_rule_names_the_file_key_and_fix(tmp_path, competition, protocols,
                                                         key, words):
    doc = document(competition)
    _with_robustness(protocols)(doc)
    path = write(tmp_path, doc)
    with pytest.raises(ConfigError) as info:
        load_competition(path)
    message = str(info.value)
    assert message.startswith(f"competition file {str(path)!r}: {key} ")
    assert words in message and "Fix: " in message


# --------------------------------------------------------------------------- the store


@pytest.fixture
def store(tmp_path, competition):
    opened = open_store(sqlite_url(tmp_path), replace(
        competition, board=BoardSettings(n_boot=200, seed=1), robustness=PROTOCOLS), Clock())
    opened.standings_wait = 30.0
    yield opened
    opened.engine.dispose()


def _board(store) -> dict[str, str]:
    """Three teams with trusted official values, each reproduced under the alternatives:
    "seed-7" keeps the official order, "cut-2018" reverses it, "secret" fails for Alpha.
    Returns each team's token."""
    made = {}
    for i, (name, skill) in enumerate(TEAMS.items()):
        team, token = add_team(store, name, f"{name.lower()}@example.org")
        doc = with_user_values(variant(f"run-{name}"), team_folds(i + 1, skill))
        sid = submit(store, team.id, encode(doc)).submission_id
        trust_values(store, sid, doc)
        reversed_skill = 0.7 - skill
        alternatives = [
            {"protocol": "seed-7", "status": "scored", "user_values":
             alternative_blob(100 + i, skill), "cost": {"seconds": 10.0 + i,
                                                         "peak_rss_mib": 300.0}},
            {"protocol": "cut-2018", "status": "scored", "user_values":
             alternative_blob(200 + i, reversed_skill), "cost": {"seconds": 3.0}},
            {"protocol": "secret", "status": "failed",
             "reason": f"the run failed with exit status 1 ({name}'s own trace)",
             "cost": {"seconds": 1.0}} if name == "Alpha" else
            {"protocol": "secret", "status": "scored",
             "user_values": alternative_blob(300 + i, skill)}]
        record_reproduction(store, sid, reproduction_report(doc, alternatives))
        made[name] = token
    return made


def test_the_results_are_stored_and_the_certificate_reads_them(store):
    _board(store)
    with store.engine.begin() as conn:
        rows = conn.execute(sa.select(RobustnessResultRow.protocol, RobustnessResultRow.status,
                                      RobustnessResultRow.reason)).all()
    assert len(rows) == 9
    assert [r for r in rows if r.status == "failed"] == [
        ("secret", "failed", "the run failed with exit status 1 (Alpha's own trace)")]

    public = board_robustness(store, "public")
    assert public.state == "shown" and public.declared == ("seed-7", "cut-2018", "secret")
    # the private protocol waits for the reveal; the failures' reasons are not the public's
    assert [p.protocol for p in public.protocols] == ["seed-7", "cut-2018"]
    assert public.withheld == ("secret",) and public.failures == ()
    assert "Withheld until the phase's private scores are revealed: secret" in \
        render_robustness(public)
    seed, cut = public.protocols
    # the alternatives' orders as built: kept, then reversed (τ_b against the official order
    # of the same teams, computed here independently of the certificate)
    official = [t.team for t in public.teams]
    assert official == ["Alpha", "Beta", "Gamma"]
    assert seed.tau == pytest.approx(1.0) and cut.tau == pytest.approx(-1.0)
    assert seed.tau_low <= seed.tau_high and cut.tau_low <= cut.tau_high
    assert float(kendall_tau_b(np.array([3.0, 2.0, 1.0]), np.array([1.0, 2.0, 3.0]))) == -1.0
    assert seed.same_leader and not cut.same_leader
    # the board tells the three apart; the reversed protocol's own board (fewer users) tells
    # at least the farthest pair apart the other way
    assert public.n_told_apart == 3 and public.stable_pair_share == 0.0
    assert seed.pairs_kept == 1.0 and seed.pairs_reversed == 0.0
    assert cut.pairs_kept == 0.0 and cut.pairs_reversed >= 1 / 3
    assert public.reversed_pair_share == cut.pairs_reversed
    assert seed.n_compared == cut.n_compared == 3 and seed.could_not_run == ()
    assert seed.mean_seconds == pytest.approx(11.0) and seed.max_peak_rss_mib == 300.0
    assert cut.mean_seconds == pytest.approx(3.0)
    marks = {t.team: t for t in public.teams}
    assert marks["Alpha"].worst_rank == 3 and marks["Alpha"].worst_rank_protocol == "cut-2018"
    assert marks["Gamma"].worst_rank == marks["Gamma"].rank == 3
    assert "Gamma" in marks["Alpha"].falls_below and marks["Gamma"].falls_below == ()

    admin = board_robustness(store, "public", admin=True)
    assert [p.protocol for p in admin.protocols] == ["seed-7", "cut-2018", "secret"]
    secret = admin.protocols[2]
    assert secret.could_not_run == ("Alpha",) and secret.n_compared == 2
    assert [(f.team, f.protocol) for f in admin.failures] == [("Alpha", "secret")]
    # a team reads its own failure only
    assert board_robustness(store, "public", team="Beta").failures == ()


def test_a_result_under_an_undeclared_protocol_or_with_bad_values_is_refused(store):
    team, _ = add_team(store, "Solo", "solo@example.org")
    doc = with_user_values(variant("run-solo"), team_folds(9, 0.3))
    sid = submit(store, team.id, encode(doc)).submission_id
    for alternatives, words in (
            ([{"protocol": "sampled-100", "status": "scored",
               "user_values": alternative_blob(1, 0.3)}], "does not declare"),
            ([{"protocol": "seed-7", "status": "scored", "user_values": "not a blob"}],
             "alternatives[0].user_values"),
            ([{"protocol": "seed-7", "status": "failed"}], "sends its reason"),
            ([{"protocol": "seed-7", "status": "failed", "reason": "x"},
              {"protocol": "seed-7", "status": "failed", "reason": "y"}], "twice")):
        with pytest.raises(SubmissionRejected) as info:
            record_reproduction(store, sid, reproduction_report(doc, alternatives))
        assert info.value.status == 422 and words in str(info.value)


def test_the_certificate_is_hidden_with_the_scores(tmp_path, competition):
    hidden = open_store(sqlite_url(tmp_path), replace(
        with_phases(competition, public=False), board=BoardSettings(n_boot=200, seed=1),
        robustness=PROTOCOLS), Clock())
    try:
        _board(hidden)
        view = board_robustness(hidden, "public")
        assert view.state == "hidden" and view.protocols == () and view.teams == ()
        assert view.withheld == () and view.failures == ()
        assert board_robustness(hidden, "public", admin=True).state == "shown"
    finally:
        hidden.engine.dispose()


def test_the_api_page_and_csv_and_a_team_reads_its_own_failure_only(tmp_path, competition):
    # "secret" shown to everyone here: its failure's reason is Alpha's and the organizers'
    shown = PROTOCOLS[:2] + (replace(PROTOCOLS[2], private=False),)
    app = create_app(replace(competition, board=BoardSettings(n_boot=200, seed=1),
                             robustness=shown), sqlite_url(tmp_path), clock=Clock())
    route = "/api/v1/leaderboard/robustness?phase=public"
    with serving(app, False) as client:
        store = app.state.store
        tokens = _board(store)
        admin = create_admin_token(store)

        def read(token: str | None = None) -> dict:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            answer = client.get(route, headers=headers)
            assert answer.status_code == 200, answer.text
            return answer.json()

        anyone = read()
        assert anyone["state"] == "shown" and anyone["failures"] == []
        assert [p["protocol"] for p in anyone["protocols"]] == ["seed-7", "cut-2018", "secret"]
        assert anyone["protocols"][2]["could_not_run"] == ["Alpha"]
        assert "Alpha's own trace" not in json.dumps(anyone)
        # another team never reads Alpha's failure; Alpha and the organizers do
        assert "Alpha's own trace" not in json.dumps(read(tokens["Beta"]))
        assert read(tokens["Beta"])["failures"] == []
        own = read(tokens["Alpha"])["failures"]
        assert [(f["team"], f["protocol"]) for f in own] == [("Alpha", "secret")]
        assert read(admin)["failures"][0]["reason"].endswith("(Alpha's own trace)")

        csv = client.get(route + "&format=csv")
        assert csv.headers["content-type"].startswith("text/csv")
        lines = csv.text.splitlines()
        assert lines[0].startswith("phase,line,protocol,kind,tau_b")
        assert lines[0].endswith("missing_from,falls_below")
        assert [line.split(",")[1] for line in lines[1:]] == ["protocol"] * 3 + ["team"] * 3
        board_page = client.get("/?phase=public").text
        assert 'id="robustness" href="/robustness?phase=public"' in board_page
        page = client.get("/robustness?phase=public")
        assert page.status_code == 200 and "Fragility marks" in page.text
        assert "own trace" not in page.text
        assert_rejected(client.get(route + "&format=xml"), 422)
        assert_rejected(client.get("/api/v1/leaderboard/robustness?phase=nope"), 404)


def test_a_reproductions_claim_carries_the_protocols_to_the_worker(store):
    team = add_team(store, "P", "p@example.org")[0].id
    sid = submit(store, team, encode(variant("p-1", 1.0))).submission_id
    mark_final(store, team, sid)
    lease = claim_job(store, b'{"worker": "w"}')
    assert lease is not None and lease.job.submission_id == sid
    answer = lease_json(lease)
    assert answer["robustness"] == [p.as_json() for p in PROTOCOLS]
    # the worker reads them with the job; its alternatives are those
    job = Job.from_claim(json.loads(json.dumps(answer)))
    assert [a.name for a in read_alternatives(list(job.protocols))] == [
        "seed-7", "cut-2018", "secret"]
    # a heartbeat's answer and a competition without protocols carry none
    store.competition = replace(store.competition, robustness=())
    second = submit(store, team, encode(variant("p-2", 1.1))).submission_id
    mark_final(store, team, second)
    assert "robustness" not in lease_json(claim_job(store, b'{"worker": "w"}'))


# --------------------------------------------------------------------------- sampled


SAMPLED = (RobustnessProtocol(name="sampled-100", kind="sampled", seed=42, n_negatives=100,
                              correction="rank", metric="ndcg"),)


def _metric_blob(values, hashes, *, forged: bool = False) -> str:
    """A team's corrected metric per user of the official folds; ``forged``: written by
    hand, past the writer's checks (a hostile report)."""
    if not forged:
        return encode_metric_values(MetricValues("ndcg@100", tuple(values), tuple(hashes)))
    header = json.dumps({"format": "evalrs-metric-values/1", "metric": "ndcg@100", "folds": [
        {"n_users": len(v), "users_sha256": h} for v, h in zip(values, hashes)]}).encode()
    raw = b"EVRSMV01" + len(header).to_bytes(4, "little") + header + b"".join(
        np.asarray(v, dtype="<f8").tobytes() for v in values)
    return base64.b64encode(zlib.compress(raw)).decode()


def test_a_sampled_protocols_values_are_stored_and_certified(tmp_path, competition):
    store = open_store(sqlite_url(tmp_path), replace(
        competition, board=BoardSettings(n_boot=200, seed=1), robustness=SAMPLED), Clock())
    try:
        means, team_ids = {}, {}
        for i, (name, skill) in enumerate(TEAMS.items()):
            team, _ = add_team(store, name, f"{name.lower()}@example.org")
            folds = team_folds(i + 1, skill)
            doc = with_user_values(variant(f"run-{name}"), folds)
            sid = submit(store, team.id, encode(doc)).submission_id
            team_ids[name] = team.id
            trust_values(store, sid, doc)
            hashes = [f.users_sha256 for f in folds]
            rng = np.random.default_rng(500 + i)
            # Gamma's sampled metric beats Beta's: one reversed pair
            level = {"Alpha": 0.6, "Beta": 0.2, "Gamma": 0.4}[name]
            values = [np.clip(rng.normal(level, 0.05, len(f)), 0, 1) for f in folds]
            means[name] = np.mean([v.mean() for v in values])
            hostile = (([v[:-1] for v in values], "declares"),  # not its folds' users
                       ([np.where(np.arange(len(v)) == 3, np.nan, v) for v in values],
                        "not a finite number"),
                       ([v * 1e4 for v in values], "magnitude at most"))
            for bad, words in hostile if i == 0 else ():
                alternative = {"protocol": "sampled-100", "status": "scored",
                               "user_values": _metric_blob(bad, hashes, forged=True)}
                with pytest.raises(SubmissionRejected) as info:
                    record_reproduction(store, sid, reproduction_report(doc, [alternative]))
                assert info.value.status == 422 and words in str(info.value)
            record_reproduction(store, sid, reproduction_report(doc, [
                {"protocol": "sampled-100", "status": "scored",
                 "user_values": _metric_blob(values, hashes),
                 "cost": {"seconds": 4.0, "predict_seconds": 1.5}}]))
        with store.engine.begin() as conn:
            rows = conn.execute(sa.select(RobustnessResultRow.status, RobustnessResultRow.k,
                                          RobustnessResultRow.n_users)).all()
        assert [tuple(r) for r in rows] == [("scored", None, [300] * 4)] * 3

        view = board_robustness(store, "public")
        assert view.state == "shown" and [t.team for t in view.teams] == [
            "Alpha", "Beta", "Gamma"]
        (sampled,) = view.protocols
        assert sampled.kind == "sampled" and sampled.n_compared == 3
        # official order A > B > G, sampled A > G > B: τ_b of one discordant pair in three
        assert sampled.tau == pytest.approx(1 / 3)
        assert float(kendall_tau_b(np.array([3.0, 2.0, 1.0]),
                                   np.array([means["Alpha"], means["Beta"],
                                             means["Gamma"]]))) == pytest.approx(1 / 3)
        assert sampled.same_leader and sampled.mean_seconds == pytest.approx(4.0)
        marks = {t.team: t for t in view.teams}
        assert marks["Beta"].worst_rank == 3 and marks["Gamma"].worst_rank == 2
        # each team's own listing shows its score under the protocol: its fold mean of means
        for name, team_id in team_ids.items():
            [item] = own_submissions(store, team_id)
            (own,) = item.alternatives
            assert own.kind == "sampled" and own.score == pytest.approx(means[name], rel=1e-12)
        # the file edited: the name now declares another kind, whose values these are not
        store.competition = replace(store.competition, robustness=(
            RobustnessProtocol(name="sampled-100", kind="fold_seed", seed=7),))
        (edited,) = board_robustness(store, "public").protocols
        assert edited.kind == "fold_seed" and edited.n_compared == 0
        assert edited.could_not_run == ("Alpha", "Beta", "Gamma")
    finally:
        store.engine.dispose()
