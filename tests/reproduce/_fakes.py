"""Test helpers for ``evaluation.reproduce``: a leaderboard that follows the organizer endpoints'
contract (on 127.0.0.1, in a thread) and checkouts made from this repository's template."""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from benchmarks._checkout import template_checkout

REPO = Path(__file__).resolve().parents[2]


class FakeLeaderboard:
    """Submissions by id, an admin token, and the reproduction reports received."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.payloads: dict[int, dict] = {}
        self.reports: dict[int, list[dict]] = {}
        self.requests: list[tuple[str, str, str]] = []  # method, path, authorization


def _handler(board: FakeLeaderboard):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet
            pass

        def _answer(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _route(self, method: str):
            auth = self.headers.get("Authorization", "")
            board.requests.append((method, self.path, auth))
            m = re.fullmatch(r"/api/v1/submissions/(\d+)(/payload|/reproduction)?", self.path)
            ok = hmac.compare_digest(auth.encode(), f"Bearer {board.token}".encode())
            if not ok and not (m and m.group(2)):
                return self._answer(401, {"status": "rejected", "reason": "unauthorized"})
            if not m or int(m.group(1)) not in board.payloads or not ok:
                return self._answer(404, {"status": "rejected", "reason": "not found"})
            sid, what = int(m.group(1)), m.group(2)
            if method == "GET" and what is None:
                return self._answer(200, {"submission_id": sid,
                                          "payload_url": f"/api/v1/submissions/{sid}/payload"})
            if method == "GET" and what == "/payload":
                return self._answer(200, board.payloads[sid])
            if method == "POST" and what == "/reproduction":
                n = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(n))
                board.reports.setdefault(sid, []).append(body)
                return self._answer(200, {"status": "recorded", "submission_id": sid,
                                          "verdict": body["verdict"]})
            return self._answer(405, {"status": "rejected", "reason": "method not allowed"})

        def do_GET(self) -> None:
            self._route("GET")

        def do_POST(self) -> None:
            self._route("POST")

    return Handler


@contextlib.contextmanager
def fake_leaderboard(token: str) -> Iterator[tuple[str, FakeLeaderboard]]:
    """Serve a ``FakeLeaderboard`` on 127.0.0.1 (a free port); yield its URL and state."""
    board = FakeLeaderboard(token)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(board))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", board
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def make_checkout(root: Path, model_source: str | None = None, *,
                  link_harness: bool = False) -> Path:
    """A participant's checkout in ``root`` (the template's, ``benchmarks/_checkout.py``), with
    ``submission/MyModel.py`` replaced by ``model_source`` when given.

    ``link_harness`` adds a link to this repository's ``evaluation`` package, so that the
    test's own interpreter, run in the checkout, imports the harness: a stand-in for a built
    environment in the tests that do not need one.
    """
    template_checkout(root)
    if model_source is not None:
        (root / "submission" / "MyModel.py").write_text(model_source)
    if link_harness:
        os.symlink(REPO / "evaluation", root / "evaluation")
    return root


def template_model_with(extra_init: str) -> str:
    """The template MyModel's source with ``extra_init`` run at the start of ``__init__``."""
    source = (REPO / "submission" / "MyModel.py").read_text()
    head, sep, rest = source.partition("def __init__(")
    assert sep, "the template has no __init__"
    signature, colon, body = rest.partition(":\n")
    indent = re.match(r"\s*", body).group(0)
    lines = "".join(f"{indent}{line}\n" for line in extra_init.strip().splitlines())
    return head + sep + signature + colon + lines + body


def template_model_and(methods: str) -> str:
    """The template MyModel's source with ``methods`` (indented as methods of a class) added
    to the class, the last thing in its file."""
    source = (REPO / "submission" / "MyModel.py").read_text()
    assert source.rstrip().splitlines()[-1].startswith("    "), "the class is not last"
    return source.rstrip("\n") + "\n" + methods


def template_upload() -> dict:
    """The template model's tiny run, evaluated here, as the leaderboard stores the upload."""
    import tempfile

    from evaluation import ChallengeDataset, EvalRSRunner
    from submission.MyModel import MyModel

    with tempfile.TemporaryDirectory() as results_dir:
        dataset = ChallengeDataset(scale="tiny")
        runner = EvalRSRunner(dataset, results_dir=results_dir, progress=False, verbose=False)
        result = runner.evaluate(MyModel(items=dataset.df_tracks, top_k=runner.k))
        return {"email": "a@b.org", "participant_id": "team", "run_id": result.run_id,
                "results": json.loads(json.dumps(result.to_dict()))}
