"""The board page: its HTML (parsed, not grepped), its SVG chart, and the page in a real browser.

The unit tests render boards built by hand and check the parsed document against numbers worked
out here. The browser tests load the page from a live server on 127.0.0.1 in Debian's headless
Chromium: first the rendered HTML from a tiny ``http.server``, then the service itself (uvicorn,
the example ``competition.toml``, a temporary SQLite database, submissions posted through the
API). Set ``EVALRS_BOARD_SCREENSHOT=/path.png`` to keep a screenshot of the live board.
"""

from __future__ import annotations

import os
import shutil
import threading
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from fnmatch import fnmatch
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytest.importorskip("jinja2", reason="the board page needs the server extra (jinja2)")

from evaluation.challenge import LEADERBOARD_TESTS
from evaluation.server.core import Board, BoardRow
from evaluation.server.db import add_team
from evaluation.server.page import render_board
from tests.server._api import (  # noqa: F401
    IMG_NAME,
    SCRIPT_NAME,
    SCRIPT_TEAM,
    Node,
    TreeBuilder,
    parse,
)
from tests.server._helpers import computed, without_baseline_values
from tests.server._live_server import http_client, live_server

REPO = Path(__file__).resolve().parents[2]
WHEN = datetime(2025, 3, 1, 12, 30, 45, tzinfo=timezone.utc)


# --- a small DOM built with the standard library's HTML parser ---------------------------------


# --- boards built by hand ----------------------------------------------------------------------


def values_of(base: float) -> dict[str, float]:
    """Nine test values, each distinct: base + 0.01 * position."""
    return {name: round(base + 0.01 * i, 6) for i, name in enumerate(LEADERBOARD_TESTS)}


def row(team: str, rank: int | None, score: float | None, interval=None, *, baseline=False,
        reproduction="pending", flagged=False, submissions=1, last=WHEN, tests=None) -> BoardRow:
    return BoardRow(
        team=team, is_baseline=baseline, submission_id=len(team), rank=rank,
        leaderboard_score=score, interval=interval,
        phase1_score=None if score is None else score / 2,
        tests=tests if tests is not None or score is None else values_of(0.1),
        submissions=submissions, best_submitted=last, last_submitted=last,
        reproduction=reproduction, flagged=flagged,
    )


def board(*rows: BoardRow, public=True, phase="phase-1", phases=("phase-1", "phase-2")) -> Board:
    return Board(competition="EvalRS test", phase=phase, phases=phases, public=public,
                 rows=rows, generated_at=WHEN, tests=LEADERBOARD_TESTS)


def body_rows(doc: Node) -> list[Node]:
    return doc.find("table").find("tbody").find_all("tr")


def cells(tr: Node) -> list[Node]:
    return [c for c in tr.children if isinstance(c, Node) and c.tag in ("td", "th")]


def marks(doc: Node) -> list[Node]:
    return doc.find("svg").find_all("g", "mark")


def ticks(doc: Node) -> list[tuple[float, float]]:
    """(x, value) of every axis tick label."""
    labels = doc.find("svg").find_all("text", "tick")
    return [(float(t.attrs["x"]), float(t.text())) for t in labels]


def value_at(doc: Node, x: float) -> float:
    """The score at an x position, read off the axis's first and last ticks."""
    (x0, v0), (x1, v1) = ticks(doc)[0], ticks(doc)[-1]
    return v0 + (x - x0) * (v1 - v0) / (x1 - x0)


def dot_x(mark: Node) -> float:
    dot = mark.find_all("circle") or mark.find_all("polygon", "dot")
    assert dot, "mark without a dot"
    if dot[0].tag == "circle":
        return float(dot[0].attrs["cx"])
    return float(dot[0].attrs["points"].split()[0].split(",")[0])


def standard_board() -> Board:
    return board(
        row("Alpha", 1, 0.812345, (0.70, 0.90), reproduction="reproduced", submissions=4,
            tests=values_of(0.2)),
        row("Beta", 2, 0.5, (0.31, 0.62), flagged=True, submissions=2),
        row("CBOW", None, 0.0, (-0.1, 0.1), baseline=True, reproduction="reproduced"),
        row("Gamma", 3, -0.25, (-0.5, 0.05), reproduction="not reproduced",
            last=WHEN + timedelta(hours=1, minutes=2)),
    )


# --- unit tests: the table ---------------------------------------------------------------------


def test_rows_in_board_order_with_ranks_scores_and_intervals():
    doc = parse(render_board(standard_board()))
    rows = body_rows(doc)
    assert [cells(r)[1].find("bdi").text() for r in rows] == ["Alpha", "Beta", "CBOW", "Gamma"]
    assert [cells(r)[0].clean() for r in rows] == ["1", "2", "baseline", "3"]
    assert rows[2].find("span", "baseline-mark").text() == "baseline"
    assert rows[2].attrs["class"] == "baseline" and rows[0].attrs["class"] == "team"
    score = cells(rows[0])[2]
    assert score.children[0].strip() == "0.8123"  # 0.812345 to 4 decimals
    assert score.find("span", "interval").text() == "[0.7000, 0.9000]"
    assert cells(rows[1])[2].find("span", "interval").text() == "[0.3100, 0.6200]"
    assert cells(rows[3])[2].clean() == "-0.2500 [-0.5000, 0.0500]"
    assert cells(rows[2])[2].clean() == "0.0000 [-0.1000, 0.1000]"


def test_nine_test_columns_in_order_with_four_decimals():
    doc = parse(render_board(standard_board()))
    headers = doc.find("table").find("thead").find_all("th", "test")
    assert [h.attrs["title"] for h in headers] == list(LEADERBOARD_TESTS)
    assert headers[0].text() == "hit rate" and headers[2].text() == "MRED country"
    first = [c.text() for c in cells(body_rows(doc)[0]) if "test" in c.attrs["class"].split()]
    # values_of(0.2): 0.2, 0.21, ..., 0.28
    assert first == ["0.2000", "0.2100", "0.2200", "0.2300", "0.2400", "0.2500", "0.2600",
                     "0.2700", "0.2800"]


def test_submission_count_and_utc_time_to_the_minute():
    doc = parse(render_board(standard_board()))
    rows = body_rows(doc)
    assert [r.find("td", "submissions").text() for r in rows] == ["4", "2", "1", "1"]
    times = [r.find("time") for r in rows]
    assert times[0].text() == "2025-03-01T12:30Z"
    assert times[0].attrs["datetime"] == "2025-03-01T12:30:45Z"
    assert times[3].text() == "2025-03-01T13:32Z"


def test_times_are_shown_in_utc_whatever_their_zone():
    paris = timezone(timedelta(hours=2))
    naive = datetime(2025, 3, 1, 9, 5)  # SQLite hands back naive UTC datetimes
    doc = parse(render_board(board(
        row("A", 1, 0.5, last=datetime(2025, 3, 1, 14, 30, tzinfo=paris)),
        row("B", 2, 0.4, last=naive),
    )))
    shown = [t.text() for t in doc.find_all("time")][1:]  # the first is the board's own time
    assert shown == ["2025-03-01T12:30Z", "2025-03-01T09:05Z"]


def test_badges_read_without_colour_and_flag_only_where_flagged():
    doc = parse(render_board(standard_board()))
    badges = [r.find("span", "badge") for r in body_rows(doc)]
    assert [b.attrs["class"].split()[1] for b in badges] == [
        "badge-reproduced", "badge-pending", "badge-reproduced", "badge-failed"]
    texts = [b.text() for b in badges]
    assert texts[0].endswith("reproduced") and texts[1].endswith("pending")
    assert texts[3].endswith("not reproduced") and not texts[0].endswith("not reproduced")
    flags = [bool(r.find_all("span", "flag")) for r in body_rows(doc)]
    assert flags == [False, True, False, False]
    assert "flagged" in body_rows(doc)[1].find("span", "flag").text()


def test_hidden_scores_show_the_notice_and_no_numbers():
    # As the store hands them out: no scores, no ranks (the order alone would tell them).
    doc = parse(render_board(board(
        row("Alpha", None, None, submissions=3), row("Beta", None, None), public=False)))
    assert "Scores hidden until the phase ends" in doc.by_id("hidden-notice").text()
    assert "hidden until the phase ends" in doc.find("caption").text()
    assert not doc.find_all("svg")
    assert [r.find("td", "rank").text() for r in body_rows(doc)] == ["\u2014", "\u2014"]
    for tr in body_rows(doc):
        assert tr.find("td", "score").clean() == "hidden"
        assert {c.text() for c in tr.find_all("td", "test")} == {"\u2014"}
    assert body_rows(doc)[0].find("td", "submissions").text() == "3"


def test_private_phase_with_scores_shows_them_without_the_notice():
    doc = parse(render_board(board(row("Alpha", 1, 0.5, (0.4, 0.6)), public=False)))
    assert doc.by_id("hidden-notice") is None
    assert "scores not public" in doc.find("p", "meta").clean()
    assert body_rows(doc)[0].find("td", "score").clean() == "0.5000 [0.4000, 0.6000]"
    assert len(marks(doc)) == 1


def test_empty_board_shows_the_empty_state_instead_of_chart_and_table():
    doc = parse(render_board(board()))
    assert doc.by_id("empty-state").text() == "No submissions yet in this phase."
    assert not doc.find_all("svg") and not doc.find_all("table")


def test_phase_links_are_escaped_urls_and_the_current_phase_is_marked():
    doc = parse(render_board(board(row("A", 1, 0.5), phase="warm up",
                                   phases=("warm up", "final & private", "x<y"))))
    nav = doc.find("nav")
    assert nav.find("strong").attrs["aria-current"] == "page"
    assert nav.find("strong").text() == "warm up"
    links = {a.text(): a.attrs["href"] for a in nav.find_all("a")}
    assert links == {"final & private": "/?phase=final%20%26%20private", "x<y": "/?phase=x%3Cy"}


def test_negative_zero_prints_as_zero():
    doc = parse(render_board(board(row("A", 1, -0.00001, (-0.00002, 0.00003)))))
    assert body_rows(doc)[0].find("td", "score").clean() == "0.0000 [0.0000, 0.0000]"


def test_accessibility_caption_scopes_and_chart_label():
    doc = parse(render_board(standard_board()))
    table = doc.find("table")
    assert "best submission" in table.find("caption").text()
    head = table.find("thead").find_all("th")
    assert len(head) == 3 + len(LEADERBOARD_TESTS) + 3
    assert {h.attrs.get("scope") for h in head} == {"col"}
    assert [c.attrs.get("scope") for c in table.find("tbody").find_all("th")] == ["row"] * 4
    svg = doc.find("svg")
    assert svg.attrs["role"] == "img"
    assert "3 team(s) and 1 baseline(s)" in svg.attrs["aria-label"]


def test_the_page_has_no_script_at_all():
    html = render_board(standard_board())
    doc = parse(html)
    assert not doc.find_all("script")
    assert not [n for n in doc.iter() if any(k.startswith("on") for k in n.attrs)]


# --- unit tests: escaping ----------------------------------------------------------------------


def test_hostile_team_names_appear_only_as_text():
    doc = parse(render_board(board(
        row(SCRIPT_NAME, 1, 0.5, (0.4, 0.6)), row(IMG_NAME, 2, 0.3, (0.2, 0.4)),
        phase="<b>p</b>", phases=("<b>p</b>", "<i>q</i>"))))
    assert not doc.find_all("script") and not doc.find_all("img")
    assert not doc.find_all("b") and not doc.find_all("i")
    assert not [n for n in doc.iter() if "onerror" in n.attrs]
    teams = [tr.find("th", "team") for tr in body_rows(doc)]
    assert [t.find("bdi").text() for t in teams] == [SCRIPT_NAME, IMG_NAME]
    assert [t.attrs["title"] for t in teams] == [SCRIPT_NAME, IMG_NAME]
    # In the SVG too: the hover titles hold the full names, the labels their (cut) start.
    svg_marks = marks(doc)
    assert svg_marks[0].find("title").text().startswith(SCRIPT_NAME + " (rank 1)")
    assert svg_marks[1].find("title").text().startswith(IMG_NAME + " (rank 2)")
    assert svg_marks[0].find("text", "label").text() == "1. <script>alert(1)</scri\u2026"
    assert svg_marks[1].find("text", "label").text() == '2. "><img src=x onerror=a\u2026'
    assert doc.find("nav").find("a").text() == "<i>q</i>"


# --- unit tests: the chart ---------------------------------------------------------------------


def test_chart_follows_the_table_and_the_axis_reads_the_scores_back():
    doc = parse(render_board(standard_board()))
    svg_marks = marks(doc)
    names = [m.find("title").text().split(" (")[0] for m in svg_marks]
    assert names == ["Alpha", "Beta", "CBOW", "Gamma"]
    ys = [float(m.find("text", "label").attrs["y"]) for m in svg_marks]
    assert ys == sorted(ys) and len(set(ys)) == 4
    assert [("baseline" in m.attrs["class"].split()) for m in svg_marks] == [
        False, False, True, False]
    assert svg_marks[2].find_all("polygon", "dot") and not svg_marks[2].find_all("circle")
    for mark, score in zip(svg_marks, [0.812345, 0.5, 0.0, -0.25]):
        assert value_at(doc, dot_x(mark)) == pytest.approx(score, abs=1e-3)
    # The whiskers: Gamma's interval is [-0.5, 0.05].
    whisker = svg_marks[3].find_all("line")[0]
    assert value_at(doc, float(whisker.attrs["x1"])) == pytest.approx(-0.5, abs=1e-3)
    assert value_at(doc, float(whisker.attrs["x2"])) == pytest.approx(0.05, abs=1e-3)
    # Evenly spaced round ticks spanning every score and interval end.
    values = [v for _, v in ticks(doc)]
    steps = {round(b - a, 9) for a, b in zip(values, values[1:])}
    assert len(steps) == 1 and steps.pop() in (0.1, 0.2, 0.5, 1.0)
    assert values[0] <= -0.5 and values[-1] >= 0.9
    legend = doc.find("svg").find("g", "legend").clean()
    assert "baseline" in legend and "95 % interval" in legend and "gated" not in legend
    assert "Alpha (rank 1): score 0.8123, 95 % interval [0.7000, 0.9000]" == (
        svg_marks[0].find("title").text())


def test_a_revealed_board_keeps_the_baselines_and_names_the_test_columns_public():
    from dataclasses import replace

    beta = replace(row("Beta", 1, 0.2, (0.1, 0.3)), private_score=0.9,
                   private_interval=(0.85, 0.95))
    base = row("Popularity", None, 0.5, (0.45, 0.55), baseline=True)
    revealed = parse(render_board(replace(board(beta, base), revealed=True)))
    svg_marks = marks(revealed)
    assert [m.find("title").text().split(" (rank")[0].split(":")[0] for m in svg_marks] == [
        "Beta", "Popularity (public score) (baseline)"]
    assert value_at(revealed, dot_x(svg_marks[1])) == pytest.approx(0.5, abs=1e-3)
    headers = [th.text() for th in revealed.find_all("th", "test")]
    assert len(headers) == len(LEADERBOARD_TESTS)
    assert all(h.endswith("(public)") for h in headers)
    link = revealed.by_id("csv")
    assert link is not None and link.attrs["href"] == "/leaderboard.csv?phase=phase-1"
    # before the reveal: no scope on the headers, the baseline by its own name
    plain = parse(render_board(board(beta, base)))
    assert not any("(public)" in th.text() for th in plain.find_all("th", "test"))
    assert [m.find("title").text().split(" (rank")[0].split(":")[0]
            for m in marks(plain)] == ["Beta", "Popularity (baseline)"]


def test_a_revealed_board_charts_the_private_scores_in_the_ranked_order():
    from dataclasses import replace

    # ranked by private score: Beta first although its public score is lower
    beta = replace(row("Beta", 1, 0.2, (0.1, 0.3)), private_score=0.9,
                   private_interval=(0.85, 0.95))
    alpha = replace(row("Alpha", 2, 0.8, (0.7, 0.9)), private_score=0.4,
                    private_interval=(0.3, 0.5))
    revealed = replace(board(beta, alpha), revealed=True)
    doc = parse(render_board(revealed))
    svg_marks = marks(doc)
    assert [m.find("title").text().split(" (")[0] for m in svg_marks] == ["Beta", "Alpha"]
    for mark, score in zip(svg_marks, [0.9, 0.4]):
        assert value_at(doc, dot_x(mark)) == pytest.approx(score, abs=1e-3)
    whisker = svg_marks[0].find_all("line")[0]
    assert value_at(doc, float(whisker.attrs["x1"])) == pytest.approx(0.85, abs=1e-3)
    assert "Private leaderboard scores" in doc.find("svg").attrs["aria-label"]
    # the same rows unrevealed chart the public scores
    public = parse(render_board(board(beta, alpha)))
    assert value_at(public, dot_x(marks(public)[0])) == pytest.approx(0.2, abs=1e-3)


def test_gated_score_is_a_mark_and_does_not_stretch_the_axis():
    doc = parse(render_board(board(
        row("Good", 1, 0.6, (0.5, 0.7)),
        row("Wide", 2, 0.2, (-100.0, 0.3)),  # some bootstrap resamples were gated
        row("Gated", 3, -100.0, (-100.0, -100.0)),
    )))
    values = [v for _, v in ticks(doc)]
    assert values[0] > -1 and values[-1] < 1.5
    assert "gated (score -100.0000" in doc.find("svg").find("g", "legend").clean()
    gated = marks(doc)[2]
    assert "gated" in gated.attrs["class"].split()
    assert "gated" in gated.find("text", "gated").text()
    assert not gated.find_all("circle")
    assert "gated, score -100.0000" in gated.find("title").text()
    # The interval reaching the gate is clipped at the axis's left end, with an arrow.
    wide = marks(doc)[1]
    x1 = float(wide.find_all("line")[0].attrs["x1"])
    assert x1 == pytest.approx(ticks(doc)[0][0])
    assert wide.find_all("polygon")
    row_cell = body_rows(doc)[2].find("td", "score")
    assert row_cell.find("span", "gated-mark").text() == "gated"


def test_everything_gated_still_draws_an_axis():
    doc = parse(render_board(board(row("G1", 1, -100.0), row("G2", 2, -100.0))))
    assert [v for _, v in ticks(doc)][:2] == [0.0, 0.2]
    assert len(doc.find("svg").find_all("text", "gated")) == 2


@pytest.mark.parametrize("scores", [(0.4,), (0.4, 0.4, 0.4), (0.0, 0.0), (-3.0, -3.0)])
def test_one_row_or_equal_scores_sit_inside_a_non_empty_axis(scores):
    rows = [row(f"T{i}", i + 1, s) for i, s in enumerate(scores)]
    doc = parse(render_board(board(*rows)))
    values = [v for _, v in ticks(doc)]
    assert len(values) >= 2 and values[0] < scores[0] < values[-1]
    for mark in marks(doc):
        assert value_at(doc, dot_x(mark)) == pytest.approx(scores[0], abs=1e-6)


def test_negative_scores_and_a_zero_line():
    doc = parse(render_board(board(row("A", 1, 0.3), row("B", 2, -0.7, (-0.9, -0.4)))))
    zero = doc.find("svg").find("line", "zero")
    assert value_at(doc, float(zero.attrs["x1"])) == pytest.approx(0.0, abs=1e-4)
    assert value_at(doc, dot_x(marks(doc)[1])) == pytest.approx(-0.7, abs=1e-3)


def test_rows_without_a_score_are_left_out_of_the_chart():
    doc = parse(render_board(board(row("Shown", 1, 0.5), row("Unscored", 2, None))))
    assert [m.find("title").text().split(" (")[0] for m in marks(doc)] == ["Shown"]
    assert len(body_rows(doc)) == 2


def cells_of(text: str) -> int:
    return sum(0 if unicodedata.combining(c) else
               2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def test_long_and_unicode_names_are_cut_in_the_chart_and_whole_in_the_table():
    long = "A team with a very long name that never seems to end at all"
    cjk = "チーム・サクラ・とても長い名前のチームです"  # 21 wide characters, 42 cells
    accented = "Ze\u0301phyr e\u0301quipe"  # combining accents take no cell
    rtl = "evil\u202eemaN"  # a bidi override must not reorder the chart's labels
    doc = parse(render_board(board(row(long, 1, 0.9), row(cjk, 2, 0.8), row(accented, 3, 0.7),
                                   row(rtl, 4, 0.6))))
    labels = [m.find("text", "label").text() for m in marks(doc)]
    # 26 cells per label: "1. " takes 3, the name 22, the ellipsis 1.
    assert labels[0] == "1. " + long[:22].rstrip() + "\u2026"
    # 22 cells hold 11 wide characters.
    assert labels[1] == "2. " + cjk[:11] + "\u2026"
    assert labels[2] == "3. " + accented
    assert labels[3] == "4. evilemaN"
    assert all(cells_of(label) <= 26 for label in labels)
    titles = [m.find("title").text() for m in marks(doc)]
    assert [t.split(" (rank")[0] for t in titles] == [long, cjk, accented, rtl]
    teams = [tr.find("th", "team") for tr in body_rows(doc)]
    assert [t.attrs["title"] for t in teams] == [long, cjk, accented, rtl]
    assert [t.find("bdi").text() for t in teams] == [long, cjk, accented, rtl]


def test_templates_ship_with_the_package():
    """Every template file matches a package-data pattern of pyproject.toml."""
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11")
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["evaluation.server.page"]
    folder = REPO / "evaluation" / "server" / "page"
    files = [p.relative_to(folder).as_posix() for p in (folder / "templates").iterdir()]
    assert "templates/board.html" in files
    assert all(any(fnmatch(f, pat) for pat in patterns) for f in files), (files, patterns)


# --- in a real browser -------------------------------------------------------------------------


@contextmanager
def static_server(html: str) -> Iterator[str]:
    """Serve one HTML page on 127.0.0.1 (a free port) for every path; yields its base URL."""
    body = html.encode("utf-8")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def load(driver, url: str):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url)
    WebDriverWait(driver, 10).until(
        lambda d: d.find_elements(By.ID, "board") or d.find_elements(By.ID, "empty-state"))


def browser_rows(driver) -> list[list[str]]:
    from selenium.webdriver.common.by import By

    return [[c.text for c in tr.find_elements(By.CSS_SELECTOR, "td, th")]
            for tr in driver.find_elements(By.CSS_SELECTOR, "#board tbody tr")]


def assert_no_alert_and_no_script(driver):
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert  # noqa: B018 - raises when no alert is open
    assert driver.find_elements(By.TAG_NAME, "script") == []
    assert driver.find_elements(By.CSS_SELECTOR, "img") == []


def assert_chart_laid_out(driver, teams: list[str]):
    """The chart's rows follow the table's, top to bottom, and no label runs into the plot."""
    boxes = driver.execute_script("""
        const svg = document.querySelector('#chart svg');
        const left = svg.querySelector('.axis line').x1.baseVal.value;
        return [...svg.querySelectorAll('g.mark')].map(g => {
            const label = g.querySelector('text.label').getBBox();
            return {title: g.querySelector('title').textContent, y: label.y,
                    right: label.x + label.width, left: left};
        });""")
    assert [b["title"].split(" (")[0] for b in boxes] == teams
    assert [b["y"] for b in boxes] == sorted(b["y"] for b in boxes)
    assert all(b["right"] < b["left"] for b in boxes), boxes


#: The words of the table's column headers that the browser broke across lines (a word with a
#: soft hyphen, "Sub&shy;missions", may break there, with its hyphen shown).
BROKEN_HEADER_WORDS = """
    const broken = [];
    for (const th of document.querySelectorAll('#board thead th')) {
        const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            for (const word of node.data.matchAll(/\\S+/g)) {
                if (word[0].includes('\\u00ad')) continue;
                const range = document.createRange();
                range.setStart(node, word.index);
                range.setEnd(node, word.index + word[0].length);
                if (range.getClientRects().length > 1) broken.push(word[0]);
            }
        }
    }
    return broken;"""


def screenshot(driver, path: Path) -> None:
    """A screenshot of the whole page (the window grown to the page's height)."""
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1400, min(max(1000, height + 140), 4000))
    assert driver.save_screenshot(str(path)) and path.stat().st_size > 10_000


def test_rendered_page_in_headless_chromium(driver, tmp_path):
    page = render_board(board(
        row("Alpha", 1, 0.812345, (0.70, 0.90), reproduction="reproduced", submissions=4),
        row(SCRIPT_NAME, 2, 0.5, (0.31, 0.62), flagged=True),
        row("CBOW", None, 0.0, (-0.1, 0.1), baseline=True),
        row(IMG_NAME, 3, -0.25, (-0.5, 0.05), reproduction="not reproduced"),
        row("Gated", 4, -100.0, (-100.0, -100.0)),
    ))
    with static_server(page) as url:
        load(driver, url + "/")
        assert_no_alert_and_no_script(driver)
        rows = browser_rows(driver)
        assert [r[1].removesuffix(" \u2691 flagged") for r in rows] == [
            "Alpha", SCRIPT_NAME, "CBOW", IMG_NAME, "Gated"]
        assert [r[0] for r in rows] == ["1", "2", "baseline", "3", "4"]
        assert rows[0][2] == "0.8123\n[0.7000, 0.9000]"
        assert "flagged" in rows[1][1]
        assert rows[0][-1].endswith("reproduced") and rows[3][-1].endswith("not reproduced")
        assert_chart_laid_out(driver, ["Alpha", SCRIPT_NAME, "CBOW", IMG_NAME, "Gated"])
        # The table fits a 1400-pixel window: no sideways scrolling.
        assert driver.execute_script(
            "const w = document.querySelector('.table-wrap');"
            "return w.scrollWidth <= w.clientWidth")
        screenshot(driver, tmp_path / "board.png")


@pytest.mark.parametrize("revealed", [False, True])
def test_the_board_fits_a_1280_pixel_window(driver, revealed):
    """At 1280 px nothing scrolls sideways: not the page, not the table (its caption and its
    last column, the reproduction, included), with long names, gated and flagged rows, and the
    extra private-score column of a revealed board; and no column header breaks inside a
    word."""
    from dataclasses import replace

    rows = (row("Alpha", 1, 0.812345, (0.70, 0.90), reproduction="reproduced", submissions=4),
            row(SCRIPT_NAME, 2, 0.5, (0.31, 0.62), flagged=True),
            row("CBOW", None, 0.0, (-0.1, 0.1), baseline=True),
            row(IMG_NAME, 3, -0.25, (-0.5, 0.05), reproduction="not reproduced"),
            row("Gated", 4, -100.0, (-100.0, -100.0)))
    driver.set_window_size(1280, 1000)
    with static_server(render_board(replace(board(*rows), revealed=revealed))) as url:
        load(driver, url + "/")
        sizes = driver.execute_script(
            "const w = document.querySelector('.table-wrap'),"
            " c = document.querySelector('#board caption'),"
            " last = document.querySelector('#board thead th:last-child'),"
            " d = document.documentElement;"
            "return {wrap: [w.scrollWidth, w.clientWidth], caption: [c.scrollWidth,"
            " c.clientWidth], page: [d.scrollWidth, d.clientWidth],"
            " right: last.getBoundingClientRect().right, text: last.textContent.trim()}")
        broken = driver.execute_script(BROKEN_HEADER_WORDS)
    # a header breaks between its words only ("MRED track populari|ty" was one)
    assert broken == []
    assert sizes["text"] == "Reproduction"
    for name in ("wrap", "caption", "page"):
        scroll, client = sizes[name]
        assert scroll <= client, (name, sizes)
    assert sizes["right"] <= sizes["page"][1], sizes


# --- the service's own page in a real browser --------------------------------------------------

#: Inside the example competition's "public" phase.
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)


def baseline_payload(name: str, **changes) -> tuple[dict, bytes]:
    """A shipped baseline file (a valid submission of any team), with fields changed."""
    import json

    document = json.loads((REPO / "competition" / "baselines" / f"{name}.json").read_text())
    # without per-user values: this board shows its rows, not the statistics they would start
    document.pop("user_values", None)
    if "run_id" in changes:
        document["results"]["run_id"] = changes["run_id"]
    document.update(changes)
    return document, json.dumps(document).encode()


def test_service_board_in_headless_chromium(driver, tmp_path):
    pytest.importorskip("fastapi", reason="the service needs the server extra (fastapi)")
    pytest.importorskip("httpx", reason="posting submissions needs httpx")
    pytest.importorskip("uvicorn", reason="the live service needs the server extra (uvicorn)")
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from evaluation.server.api import create_app
    from evaluation.server.core import load_competition

    competition = replace(without_baseline_values(load_competition(REPO / "competition.toml")),
                          accept_claims=True)
    app = create_app(competition, f"sqlite:///{tmp_path / 'board.db'}", clock=lambda: NOW)
    store = app.state.store
    honest, honest_token = add_team(store, "Équipe Ω 東京", "omega@example.org")
    hostile, hostile_token = add_team(store, SCRIPT_TEAM, "x@example.org")
    popularity, first = baseline_payload("popularity")
    _, second = baseline_payload("popularity", run_id="popularity-again")
    # A claimed score that differs from the recomputed one: stored, and flagged.
    _, claimed = baseline_payload("random", leaderboard_score=0.99)
    with live_server(app) as url, http_client(url, timeout=30) as client:
        for token, body in ((honest_token, first), (honest_token, second),
                            (hostile_token, claimed)):
            answer = client.post("/api/v1/submissions", content=body, headers={
                "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
            assert answer.status_code == 201, answer.text
        computed(store)  # as the scoring jobs would
        api = client.get("/api/v1/leaderboard").json()
        load(driver, url + "/")
        assert_no_alert_and_no_script(driver)
        rows = browser_rows(driver)
        names = [r[1].removesuffix(" \u2691 flagged") for r in rows]
        assert names == [r["team"] for r in api["rows"]]
        assert sorted(names) == sorted(["Popularity", "Random", honest.name, SCRIPT_TEAM])
        by_name = dict(zip(names, rows))
        # The runner's own score for this file (leaderboard_score), to 4 decimals.
        team, pinned = by_name[honest.name], by_name["Popularity"]
        assert team[2].split("\n")[0] == f"{popularity['leaderboard_score']:.4f}" == "-0.3910"
        assert team[2] == pinned[2] and "[" in team[2]
        means = popularity["results"]["aggregate"]["mean"]
        assert team[3:12] == [f"{means[name]:.4f}" for name in LEADERBOARD_TESTS]
        assert [team[0], by_name[SCRIPT_TEAM][0]] == ["1", "2"]
        assert [pinned[0], by_name["Random"][0]] == ["baseline", "baseline"]
        assert by_name[SCRIPT_TEAM][2].startswith("-100.0000\ngated")
        assert "flagged" in by_name[SCRIPT_TEAM][1] and "flagged" not in team[1]
        assert [team[12], by_name[SCRIPT_TEAM][12]] == ["2", "1"]
        assert team[13].replace("\n", "") == "2026-06-01T12:00Z"
        assert team[14].endswith("pending")
        scores = [float(r[2].split("\n")[0]) for r in rows]
        assert scores == sorted(scores, reverse=True)
        assert_chart_laid_out(driver, names)
        screenshot(driver, tmp_path / "board.png")
        if os.environ.get("EVALRS_BOARD_SCREENSHOT"):
            shutil.copyfile(tmp_path / "board.png", os.environ["EVALRS_BOARD_SCREENSHOT"])
        # The other phase, through its link: not public, so its (pinned) rows show no scores.
        driver.find_element(By.LINK_TEXT, "final").click()
        WebDriverWait(driver, 10).until(lambda d: d.current_url.endswith("/?phase=final"))
        load(driver, driver.current_url)
        assert "Scores hidden" in driver.find_element(By.ID, "hidden-notice").text
        assert [r[1:3] for r in browser_rows(driver)] == [["Popularity", "hidden"],
                                                          ["Random", "hidden"]]
        assert driver.find_elements(By.CSS_SELECTOR, "#chart") == []


# --- the board's statistics: tier bands, rank intervals, costs ---------------------------------


def standings_board(revealed: bool = False) -> Board:
    """The 1280-pixel test's rows with statistics: two tiers, rank intervals, costs, a row
    left out and a baseline."""
    from dataclasses import replace

    from evaluation.server.core import BoardStandings, RowCosts, RowStanding

    costs = RowCosts(train_seconds=1234.5, predict_seconds=98.7, peak_rss_mib=12345.0,
                     train_seconds_per_fold=(1234.5,), predict_seconds_per_fold=(98.7,),
                     peak_rss_mib_per_fold=(12345.0,), trusted=False)
    standing = {
        "Alpha": RowStanding(values="trusted", tier=1, rank_interval=(1, 2), pareto=True,
                             first_place_share=0.7, borda_rank=1,
                             costs=replace(costs, trusted=True)),
        SCRIPT_NAME: RowStanding(values="self-reported", tier=1, rank_interval=(1, 3),
                                 pareto=True, first_place_share=0.3, borda_rank=2,
                                 costs=costs),
        "CBOW": RowStanding(values="missing", left_out="baseline: pinned on the board, "
                                                      "not ranked"),
        IMG_NAME: RowStanding(values="self-reported", tier=2, rank_interval=(2, 3),
                              pareto=False, first_place_share=0.0, borda_rank=3, costs=costs),
        "Gated": RowStanding(values="missing", left_out="no per-user values (uploaded by a "
                                                        "client that does not send them)"),
    }
    rows = (row("Alpha", 1, 0.812345, (0.70, 0.90), reproduction="reproduced", submissions=4),
            row(SCRIPT_NAME, 2, 0.5, (0.31, 0.62), flagged=True),
            row("CBOW", None, 0.0, (-0.1, 0.1), baseline=True),
            row(IMG_NAME, 3, -0.25, (-0.5, 0.05), reproduction="not reproduced"),
            row("Gated", 4, -100.0, (-100.0, -100.0)))
    rows = tuple(replace(r, standing=standing[r.team]) for r in rows)
    info = BoardStandings(score="leaderboard_score", level=0.95, min_difference=0.005,
                          n_boot=1000, seed=0, method="max-t", compared=3,
                          groups=("accuracy", "fairness", "behavioural"))
    return replace(board(*rows), standings=info, revealed=revealed)


def test_tiers_are_bands_and_ranks_intervals_under_the_rank():
    page = render_board(standings_board())
    doc = parse(page)
    trs = [tr for tr in doc.find_all("tr") if tr.attrs.get("class") in ("tier-band", "team",
                                                                         "baseline")]
    kinds = [tr.attrs["class"] for tr in trs]
    assert kinds == ["tier-band", "team", "team", "baseline", "tier-band", "team", "team"]
    assert trs[0].text().startswith("Tier 1: cannot be told apart from the leader")
    assert trs[4].text().startswith("Tier 2:")
    assert [c.find("span", "ranks").text() for c in (cells(trs[1])[0], cells(trs[2])[0])] == \
        ["1\u20132", "1\u20133"]
    assert "not compared: no per-user values" in trs[6].text()
    assert "differences below 0.005 count as ties" in page.lower()
    assert "<span>20.6 min</span><span>1.6 min</span><span>12,345 MiB</span>" in page
    assert "self-reported" in page
    # every link to a team page is the escaped, URL-encoded name
    assert 'href="/team?phase=phase-1&amp;name=%3Cscript%3Ealert%281%29%3C%2Fscript%3E"' in page
    assert "<script>" not in page and "<img" not in page


@pytest.mark.parametrize("revealed", [False, True])
def test_the_board_with_statistics_fits_a_1280_pixel_window(driver, revealed):
    """With tier bands, rank intervals, the cost column and a row left out, nothing scrolls
    sideways at 1280 px."""
    driver.set_window_size(1280, 1000)
    with static_server(render_board(standings_board(revealed))) as url:
        load(driver, url + "/")
        assert_no_alert_and_no_script(driver)
        sizes = driver.execute_script(
            "const w = document.querySelector('.table-wrap'),"
            " d = document.documentElement,"
            " last = document.querySelector('#board thead th:last-child');"
            "return {wrap: [w.scrollWidth, w.clientWidth], page: [d.scrollWidth, d.clientWidth],"
            " right: last.getBoundingClientRect().right,"
            " bands: document.querySelectorAll('tr.tier-band').length,"
            " costs: [...document.querySelectorAll('td.cost')].map(c => c.innerText)}")
    for name in ("wrap", "page"):
        scroll, client = sizes[name]
        assert scroll <= client, (name, sizes)
    assert sizes["right"] <= sizes["page"][1], sizes
    assert sizes["bands"] == 2
    assert sizes["costs"][0].split("\n")[:3] == ["20.6 min", "1.6 min", "12,345 MiB"]
