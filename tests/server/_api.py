"""What the server's API and page tests share: an app served in process or on a port, the
answers' checks, the per-user values board's app, the page's parser and hostile names."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from html.parser import HTMLParser

import httpx
from fastapi.testclient import TestClient

from evaluation.server.api import create_app
from evaluation.server.core import BoardSettings
from evaluation.server.db import STANDINGS_MIN_INTERVAL_S, add_team
from tests.server._helpers import (
    Clock,
    encode,
    example_competition,
    fold_tests,
    migrated_sqlite_url,
    trust_values,
    variant,
    without_baseline_values,
)
from tests.server._live_server import http_client, live_server
from tests.server._user_values import synthetic_fold, with_user_values

SUBMIT = "/api/v1/submissions"


@dataclass
class Api:
    """A client of the app (in process or live), its store and its clock."""

    client: httpx.Client
    store: object
    clock: Clock
    live: bool

    def team(self, name: str) -> str:
        """Add a team; returns its token."""
        return add_team(self.store, name, "team@example.org")[1]

    def post(self, body, token: str | None = None, **headers):
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return self.client.post(SUBMIT, content=body, headers=headers)

    def get(self, path: str, token: str | None = None, *, fresh: bool = False, **params):
        """``fresh``: a board made after every write before it (``Cache-Control: no-cache``),
        as a request right after a write of another process or an ``admin`` command needs."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        if fresh:
            headers["Cache-Control"] = "no-cache"
        return self.client.get(path, headers=headers, params=params)


@contextlib.contextmanager
def serving(app, live: bool):
    """An httpx client of ``app``: in process (TestClient) or through a live uvicorn."""
    if live:
        with live_server(app) as url, http_client(url, timeout=30) as client:
            yield client
    else:
        with TestClient(app, raise_server_exceptions=False) as client:
            yield client


def assert_rejected(response, status: int) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["status"] == "rejected" and isinstance(body["reason"], str) and body["reason"]
    assert "Traceback" not in response.text
    return body


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


def upload(api: Api, name: str, seed: int, hit_rate: float, *, values: bool = True,
           trusted: bool = True) -> int:
    """Upload a run of team ``name`` (with per-user values unless ``values`` is False), made
    trusted by the organizers' reproduction unless ``trusted`` is False (``trust_values``)."""
    doc = variant(f"run-{seed}")
    if values:
        doc = with_user_values(doc, team_folds(seed, hit_rate))
    reply = api.post(encode(doc), api.team(name))
    assert reply.status_code == 201, reply.text
    sid = reply.json()["submission_id"]
    if values and trusted:
        trust_values(api.store, sid, doc)
    return sid


def make_api(tmp_path, clock=None, standings_wait: float = 30.0,
             standings_interval: float = STANDINGS_MIN_INTERVAL_S):
    """The app on a fresh database; its board requests wait for their statistics (computed in
    the background) up to ``standings_wait`` seconds: the tiny boards here are read at once.
    A board's computations start at most once per ``standings_interval`` seconds (the
    server's default) for the requests that do not wait."""
    competition = replace(without_baseline_values(example_competition()),
                          board=BoardSettings(n_boot=200, seed=1))
    app = create_app(competition, migrated_sqlite_url(tmp_path), clock=clock or Clock(),
                     standings_wait=standings_wait, standings_interval=standings_interval)
    return app, competition


def hidden_answers(tmp_path, hit_rates) -> dict[str, str]:
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


SCRIPT_NAME = "<script>alert(1)</script>"

#: A hostile name a team can have: the team-name rule refuses a "/" (no folder name).
SCRIPT_TEAM = "<script>alert(1)<script>"


IMG_NAME = '"><img src=x onerror=alert(1)>'


class Node:
    """An element: its tag, attributes and children (elements or text)."""

    def __init__(self, tag: str, attrs: dict[str, str | None], parent: Node | None):
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def clean(self) -> str:
        """The text with whitespace runs collapsed."""
        return " ".join(self.text().split())

    def iter(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.iter()

    def find_all(self, tag: str, cls: str | None = None) -> list[Node]:
        return [
            n for n in self.iter()
            if n.tag == tag and (cls is None or cls in (n.attrs.get("class") or "").split())
        ]

    def find(self, tag: str, cls: str | None = None) -> Node:
        found = self.find_all(tag, cls)
        assert found, f"no <{tag} class={cls!r}> in the page"
        return found[0]

    def by_id(self, ident: str) -> Node | None:
        return next((n for n in self.iter() if n.attrs.get("id") == ident), None)


class TreeBuilder(HTMLParser):
    VOID = {"meta", "link", "br", "img", "input", "hr", "wbr", "source", "area", "base", "col"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {}, None)
        self.current = self.root

    def handle_starttag(self, tag, attrs):
        node = Node(tag, dict(attrs), self.current)
        self.current.children.append(node)
        if tag not in self.VOID:
            self.current = node

    def handle_startendtag(self, tag, attrs):
        self.current.children.append(Node(tag, dict(attrs), self.current))

    def handle_endtag(self, tag):
        node = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        assert node is not None and node.parent is not None, f"stray </{tag}>"
        self.current = node.parent

    def handle_data(self, data):
        self.current.children.append(data)


def parse(html: str) -> Node:
    builder = TreeBuilder()
    builder.feed(html)
    builder.close()
    assert builder.current is builder.root, f"unclosed <{builder.current.tag}>"
    return builder.root


def report(document: dict, verdict: str = "reproduced", **fields) -> dict:
    """A reproduction report of ``document``: every fold's tests reproduced exactly."""
    table = [{"test": t, "fold": i, "uploaded": v, "reproduced": v, "difference": 0.0,
              "within": True}
             for i, tests in enumerate(fold_tests(document)) for t, v in tests.items()]
    return {"verdict": verdict, "private": False, "table": table,
            "log_tail": "fold 3 done\nall folds done\n", "fingerprint_matches": True,
            "harness_version": "0.1.0", **fields}


def post_report(api: Api, submission_id: int, body, token: str | None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return api.client.post(f"{SUBMIT}/{submission_id}/reproduction", content=content,
                           headers=headers)
