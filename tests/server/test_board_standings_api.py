"""The board's paired statistics through the API: uploads with per-user values get a tier, a
rank interval, Pareto membership and costs in the board JSON, the CSV and the page; each team
has a page and a JSON answer with its win probabilities; a hidden phase shows none of it, and
its answers do not depend on the hidden scores."""

from __future__ import annotations

import csv
import io
from dataclasses import replace

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("httpx")

from evaluation.server import BoardSettings, create_app, load_competition
from tests.server._user_values import synthetic_fold, with_user_values
from tests.server.test_api import Api, serving
from tests.server.test_page import IMG_NAME, SCRIPT_NAME, parse
from tests.server.test_store import EXAMPLE, Clock, encode, sqlite_url, variant

N_USERS = 300


def team_folds(seed: int, hit_rate: float) -> list:
    """Four folds of one team on the board's users: the users' slice groups are the board's,
    the team's hits its own."""
    out = []
    for f in range(4):
        users = synthetic_fold(1000 + f, N_USERS)  # the users: their groups
        own = synthetic_fold(seed * 10 + f, N_USERS, hit_rate=hit_rate)
        out.append(replace(own, scores=replace(own.scores, slices=users.scores.slices)))
    return out


def upload(api: Api, name: str, seed: int, hit_rate: float, *, values: bool = True) -> int:
    doc = variant(f"run-{seed}")
    if values:
        doc = with_user_values(doc, team_folds(seed, hit_rate))
    reply = api.post(encode(doc), api.team(name))
    assert reply.status_code == 201, reply.text
    return reply.json()["submission_id"]


def make_api(tmp_path, clock=None, standings_wait: float = 30.0):
    """The app on a fresh database; its board requests wait for their statistics (computed in
    the background) up to ``standings_wait`` seconds: the tiny boards here are read at once."""
    competition = replace(load_competition(EXAMPLE), board=BoardSettings(n_boot=200, seed=1))
    app = create_app(competition, sqlite_url(tmp_path), clock=clock or Clock(),
                     standings_wait=standings_wait)
    return app, competition


@pytest.fixture
def api(tmp_path):
    app, _ = make_api(tmp_path)
    with serving(app, False) as client:
        yield Api(client, app.state.store, app.state.store.clock, False)


def test_the_board_json_csv_and_page_carry_the_statistics(api):
    upload(api, "Strong", 1, 0.6)
    upload(api, SCRIPT_NAME, 2, 0.3)
    upload(api, "Also weak", 3, 0.3)
    upload(api, "Old client", 4, 0.3, values=False)
    board = api.get("/api/v1/leaderboard").json()
    info = board["standings"]
    assert info["compared"] == 3 and info["n_boot"] == 200 and info["level"] == 0.95
    assert "family-wise" in info["method"]
    rows = {r["team"]: r for r in board["rows"]}
    strong = rows["Strong"]["standing"]
    assert strong["tier"] == 1 and strong["rank_interval"] == [1, 1]
    assert strong["values"] == "self-reported" and strong["left_out"] is None
    assert strong["pareto"] is True and strong["first_place_share"] > 0
    assert strong["first_place"] is True
    assert rows["Old client"]["standing"]["left_out"].startswith("no per-user values")
    assert rows["Popularity"]["standing"]["left_out"].startswith("baseline")
    weak = [rows[SCRIPT_NAME]["standing"], rows["Also weak"]["standing"]]
    assert {w["tier"] for w in weak} == {2}  # told apart from the leader, not from each other

    lines = list(csv.DictReader(io.StringIO(api.get("/leaderboard.csv").text)))
    by_team = {line["team"]: line for line in lines}
    assert by_team["Strong"]["tier"] == "1" and by_team["Strong"]["rank_best"] == "1"
    assert by_team["Strong"]["user_values"] == "self-reported"
    assert by_team["Strong"]["first_place"] == "yes"
    assert by_team["Old client"]["left_out"].startswith("no per-user values")

    page = api.get("/").text
    doc = parse(page)
    bands = [tr for tr in doc.find_all("tr") if tr.attrs.get("class") == "tier-band"]
    assert [b.text().split(":")[0] for b in bands] == ["Tier 1", "Tier 2"]
    assert "<script" not in page and "&lt;script&gt;" in page
    assert 'href="/team?phase=public&amp;name=%3Cscript%3E' in page
    assert "not compared: no per-user values" in page
    assert doc.find("p", None) is not None and "paired bootstrap" in page


def test_a_teams_page_and_json_show_its_win_probabilities(api):
    upload(api, "Strong", 1, 0.6)
    upload(api, SCRIPT_NAME, 2, 0.3)
    upload(api, IMG_NAME, 3, 0.3)
    answer = api.get("/api/v1/leaderboard/team", name="Strong").json()
    assert [o["team"] for o in answer["opponents"]] == [SCRIPT_NAME, IMG_NAME] or \
        [o["team"] for o in answer["opponents"]] == [IMG_NAME, SCRIPT_NAME]
    assert all(o["told_apart"] == "above" and o["win_probability"] > 0.95
               for o in answer["opponents"])
    weak = api.get("/api/v1/leaderboard/team", name=SCRIPT_NAME).json()
    strong_vs = next(o for o in weak["opponents"] if o["team"] == "Strong")
    mine = next(o for o in answer["opponents"] if o["team"] == SCRIPT_NAME)
    assert strong_vs["win_probability"] == pytest.approx(1 - mine["win_probability"])
    assert answer["groups"] == ["accuracy", "fairness", "behavioural"]
    page = api.get("/team", name=SCRIPT_NAME).text
    assert "<script" not in page and "<img" not in page
    assert "&lt;script&gt;" in page and "Against each other team" in page
    assert api.get("/team", name="Nobody").status_code == 404
    assert api.get("/api/v1/leaderboard/team", name="Nobody").status_code == 404


def _hidden_answers(tmp_path, hit_rates) -> dict[str, str]:
    """Every answer about the hidden final phase, with the teams' uploads scoring by
    ``hit_rates``."""
    clock = Clock()
    clock.now = clock.now.replace(year=2028, month=1, day=5)
    tmp_path.mkdir()
    app, _ = make_api(tmp_path, clock)
    with serving(app, False) as client:
        api = Api(client, app.state.store, clock, False)
        for i, rate in enumerate(hit_rates):
            upload(api, f"Team {i}", i + 1, rate)
        paths = [("/api/v1/leaderboard", {"phase": "final"}),
                 ("/leaderboard.csv", {"phase": "final"}), ("/", {"phase": "final"}),
                 ("/api/v1/leaderboard/team", {"phase": "final", "name": "Team 0"}),
                 ("/team", {"phase": "final", "name": "Team 0"})]
        return {path: api.get(path, **params).text for path, params in paths}


def test_a_hidden_phase_reveals_none_of_it_and_does_not_depend_on_its_scores(tmp_path):
    first = _hidden_answers(tmp_path / "a", (0.6, 0.3, 0.1))
    second = _hidden_answers(tmp_path / "b", (0.1, 0.3, 0.6))
    assert first == second
    assert '"standings":null' in first["/api/v1/leaderboard"].replace(" ", "")
    assert "Tier 1" not in first["/"] and 'class="tier-band"' not in first["/"]
    assert 'id="standings-note"' not in first["/"]
    assert "The paired statistics are shown once" in first["/team"]
