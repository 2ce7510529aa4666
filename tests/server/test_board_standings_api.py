"""The board's paired statistics through the API: uploads with per-user values get a tier, a
rank interval, Pareto membership and costs in the board JSON, the CSV and the page; each team
has a page and a JSON answer with its win probabilities; a hidden phase shows none of it, and
its answers do not depend on the hidden scores."""

from __future__ import annotations

import csv
import io

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("httpx")

from tests.server._api import (  # noqa: F401
    IMG_NAME,
    N_USERS,
    SCRIPT_TEAM,
    Api,
    hidden_answers,
    make_api,
    parse,
    serving,
    team_folds,
    upload,
)


@pytest.fixture
def api(tmp_path):
    app, _ = make_api(tmp_path)
    with serving(app, False) as client:
        yield Api(client, app.state.store, app.state.store.clock, False)


def test_the_board_json_csv_and_page_carry_the_statistics(api):
    upload(api, "Strong", 1, 0.6)
    upload(api, SCRIPT_TEAM, 2, 0.3)
    upload(api, "Also weak", 3, 0.3)
    upload(api, "Old client", 4, 0.3, values=False)
    upload(api, "Own values", 5, 0.9, trusted=False)  # the best values, not the organizers'
    board = api.get("/api/v1/leaderboard").json()
    info = board["standings"]
    assert info["compared"] == 3 and info["n_boot"] == 200 and info["level"] == 0.95
    assert "family-wise" in info["method"]
    assert info["scope"].startswith("only rows whose per-user values the organizers computed")
    assert info["compared_users"].startswith("the competition's 4 folds (300, 300, 300, 300 ")
    rows = {r["team"]: r for r in board["rows"]}
    strong = rows["Strong"]["standing"]
    assert strong["tier"] == 1 and strong["rank_interval"] == [1, 1]
    assert strong["values"] == "trusted" and strong["left_out"] is None
    assert strong["pareto"] is True and strong["first_place_share"] > 0
    assert strong["first_place"] is True
    assert rows["Old client"]["standing"]["left_out"].startswith("not yet computed by the")
    own = rows["Own values"]["standing"]
    assert own["left_out"].startswith("not yet computed by the organizers")
    assert own["tier"] is None and own["rank_interval"] is None and own["pareto"] is None
    assert rows["Popularity"]["standing"]["left_out"].startswith("baseline")
    weak = [rows[SCRIPT_TEAM]["standing"], rows["Also weak"]["standing"]]
    assert {w["tier"] for w in weak} == {2}  # told apart from the leader, not from each other

    lines = list(csv.DictReader(io.StringIO(api.get("/leaderboard.csv").text)))
    by_team = {line["team"]: line for line in lines}
    assert by_team["Strong"]["tier"] == "1" and by_team["Strong"]["rank_best"] == "1"
    assert by_team["Strong"]["user_values"] == "trusted"
    assert by_team["Strong"]["first_place"] == "yes"
    assert by_team["Old client"]["left_out"].startswith("not yet computed by the organizers")
    assert by_team["Own values"]["tier"] == ""

    page = api.get("/").text
    doc = parse(page)
    bands = [tr for tr in doc.find_all("tr") if tr.attrs.get("class") == "tier-band"]
    assert [b.text().split(":")[0] for b in bands] == ["Tier 1", "Tier 2"]
    assert "<script" not in page and "&lt;script&gt;" in page
    assert 'href="/team?phase=public&amp;name=%3Cscript%3E' in page
    # the rows without organizer-computed values are the claims, shown apart, never compared
    claims = next(t for t in doc.find_all("table") if t.attrs.get("id") == "claims-table")
    assert "Old client" in claims.text() and "Own values" in claims.text()
    assert "not ranked, not compared" in claims.text()
    note = next(n for n in doc.find_all("p") if n.attrs.get("id") == "standings-note").text()
    assert "Compared: only rows whose per-user values the organizers computed" in note
    assert "Test users: the competition's 4 folds" in note
    assert doc.find("p", None) is not None and "paired bootstrap" in page


def test_a_teams_page_and_json_show_its_win_probabilities(api):
    upload(api, "Strong", 1, 0.6)
    upload(api, SCRIPT_TEAM, 2, 0.3)
    upload(api, IMG_NAME, 3, 0.3)
    answer = api.get("/api/v1/leaderboard/team", name="Strong").json()
    assert [o["team"] for o in answer["opponents"]] == [SCRIPT_TEAM, IMG_NAME] or \
        [o["team"] for o in answer["opponents"]] == [IMG_NAME, SCRIPT_TEAM]
    assert all(o["told_apart"] == "above" and o["win_probability"] > 0.95
               for o in answer["opponents"])
    weak = api.get("/api/v1/leaderboard/team", name=SCRIPT_TEAM).json()
    strong_vs = next(o for o in weak["opponents"] if o["team"] == "Strong")
    mine = next(o for o in answer["opponents"] if o["team"] == SCRIPT_TEAM)
    assert strong_vs["win_probability"] == pytest.approx(1 - mine["win_probability"])
    assert answer["groups"] == ["accuracy", "fairness", "behavioural"]
    page = api.get("/team", name=SCRIPT_TEAM).text
    assert "<script" not in page and "<img" not in page
    assert "&lt;script&gt;" in page and "Against each other team" in page
    assert api.get("/team", name="Nobody").status_code == 404
    assert api.get("/api/v1/leaderboard/team", name="Nobody").status_code == 404


def test_a_hidden_phase_reveals_none_of_it_and_does_not_depend_on_its_scores(tmp_path):
    first = hidden_answers(tmp_path / "a", (0.6, 0.3, 0.1))
    second = hidden_answers(tmp_path / "b", (0.1, 0.3, 0.6))
    assert first == second
    assert '"standings":null' in first["/api/v1/leaderboard"].replace(" ", "")
    assert "Tier 1" not in first["/"] and 'class="tier-band"' not in first["/"]
    assert 'id="standings-note"' not in first["/"]
    assert "The paired statistics are shown once" in first["/team"]
