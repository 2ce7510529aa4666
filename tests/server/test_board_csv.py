"""The board as CSV, on a live server on 127.0.0.1: the same rows and numbers as the JSON
board, team names that a spreadsheet would run as formulas kept as text, hidden scores left
empty."""

from __future__ import annotations

import csv
import io

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

from evaluation.server.api import create_app
from tests.server._api import Api, serving
from tests.server._helpers import Clock, encode, example_competition, migrated_sqlite_url, variant

NAMES = ("=HYPERLINK(\"x.example\",\"y\")", "+cmd", "-2+3", "@SUM(A1)", "Plain")


@pytest.fixture
def live(tmp_path):
    clock = Clock()
    app = create_app(example_competition(), migrated_sqlite_url(tmp_path), clock=clock)
    with serving(app, True) as client:
        yield Api(client, app.state.store, clock, True)


def rows_of(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_the_board_downloads_as_csv(live):
    for i, name in enumerate(NAMES):
        reply = live.post(encode(variant(f"run-{i}", 1.0 + i / 10)), live.team(name))
        assert reply.status_code == 201, reply.text
    board = live.get("/api/v1/leaderboard").json()
    download = live.get("/leaderboard.csv")
    assert download.status_code == 200
    assert download.headers["content-type"].startswith("text/csv")
    assert 'filename="leaderboard-public.csv"' in download.headers["content-disposition"]
    assert live.get("/api/v1/leaderboard", format="csv").text == download.text
    lines = rows_of(download.text)
    assert len(lines) == len(board["rows"])
    for line, row in zip(lines, board["rows"]):
        expected = "'" + row["team"] if row["team"][0] in "=+-@" else row["team"]
        assert line["team"] == expected
        assert float(line["score"]) == row["leaderboard_score"]
        assert (float(line["score_low"]), float(line["score_high"])) == tuple(row["interval"])
        assert line["rank"] == ("" if row["rank"] is None else str(row["rank"]))
        assert line["baseline"] == ("yes" if row["is_baseline"] else "no")
        assert line["computed"] == ("yes" if row["computed"] else "no")
        assert row["computed"] == row["is_baseline"]  # the teams' uploads are claims here
        assert float(line["public:HIT_RATE"]) == row["tests"]["HIT_RATE"]
        assert line["private_score"] == ""
    assert {line["team"] for line in lines} >= {"'=HYPERLINK(\"x.example\",\"y\")", "'+cmd",
                                               "'-2+3", "'@SUM(A1)", "Plain"}
    # no cell starts a formula
    for line in csv.reader(io.StringIO(download.text)):
        for cell in line:
            assert not cell.startswith(("=", "+", "@")), cell
            assert not cell.startswith("-") or float(cell) < 0, cell  # only numbers
    assert live.get("/api/v1/leaderboard", format="xml").status_code == 422

    # a hidden phase: no scores in the CSV either, and the teams by name
    live.clock.now = live.clock.now.replace(year=2028, month=1, day=5)
    assert live.post(encode(variant("final-1")), live.team("Finalist")).status_code == 201
    hidden = rows_of(live.get("/leaderboard.csv", phase="final").text)
    assert hidden and all(line["score"] == line["rank"] == line["submission_id"] == ""
                          for line in hidden)
