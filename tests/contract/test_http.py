"""The leaderboard's HTTP client against real servers on 127.0.0.1: retries and their pauses,
one idempotency key, refused redirects, bounded answers, read timeout and overall deadline, and
a token that is never shown.

Each server is a plain socket in a thread that answers each connection with a scripted action,
so that a test can drop a connection, stay silent, or send an answer one byte at a time.
"""

from __future__ import annotations

import json
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest

from evaluation.contract import HttpClient, Limits, _http
from evaluation.errors import ConfigError, UploadError

Action = Callable[[socket.socket, threading.Event], None]

#: Short pauses: the tests record the pauses instead of sleeping them.
FAST = Limits(connect=2.0, read=2.0, deadline=5.0, max_bytes=64 * 1024)


def answer(status: int, body: bytes | dict | None = None, **headers: str) -> Action:
    """A whole HTTP/1.1 answer, then the connection is closed."""
    data = json.dumps(body).encode() if isinstance(body, dict) else (body or b"")

    def act(conn: socket.socket, stop: threading.Event) -> None:
        head = [f"HTTP/1.1 {status} X", f"Content-Length: {len(data)}", "Connection: close",
                "Content-Type: application/json"]
        head += [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
        conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + data)
    return act


def drop(conn: socket.socket, stop: threading.Event) -> None:
    """Close the connection without answering."""


def silent(conn: socket.socket, stop: threading.Event) -> None:
    """Keep the connection open and say nothing."""
    stop.wait(30)


def drip(head: bytes) -> Action:
    """Send ``head`` and then a body one byte every 50 ms, for 4 s."""
    def act(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(head)
        until = time.monotonic() + 4  # then a client without a deadline fails the test
        while not stop.is_set() and time.monotonic() < until:
            conn.sendall(b"x")
            time.sleep(0.05)
    return act


def drip_headers(conn: socket.socket, stop: threading.Event) -> None:
    """Send a status line, then header bytes one every 50 ms for 4 s, never their end."""
    conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    until = time.monotonic() + 4
    while not stop.is_set() and time.monotonic() < until:
        conn.sendall(b"a")
        time.sleep(0.05)


class Raw:
    """A server on 127.0.0.1 that runs ``actions`` in turn, one per connection (the last one
    repeats), and records each request: method, path, headers and body."""

    def __init__(self, *actions: Action) -> None:
        self.actions = list(actions)
        self.requests: list[dict] = []
        self.stop = threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.base = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            action = self.actions.pop(0) if len(self.actions) > 1 else self.actions[0]
            threading.Thread(target=self._handle, args=(conn, action), daemon=True).start()

    def _handle(self, conn: socket.socket, action: Action) -> None:
        with conn:
            try:
                self.requests.append(_read_request(conn))
                action(conn, self.stop)
            except OSError:
                pass  # the client went away: what these tests want of it

    def __enter__(self) -> Raw:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.sock.close()
        self.thread.join(5)


def _read_request(conn: socket.socket) -> dict:
    conn.settimeout(5)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            raise OSError("closed before the headers' end")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    first, *lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines)
    while len(body) < int(headers.get("Content-Length", 0)):
        body += conn.recv(65536)
    method, path, _ = first.split(" ")
    return {"method": method, "path": path, "headers": headers, "body": body}


def new_token() -> str:
    return "tok_" + secrets.token_hex(16)


def assert_hidden(token: str, *texts: str) -> None:
    """Neither ``token`` nor either half of it is in ``texts``."""
    for piece in (token, token[: len(token) // 2], token[len(token) // 2:]):
        for text in texts:
            assert piece not in text, f"{piece!r} shown in {text!r}"


def client(server: Raw, path: str = "/submit", waits: list | None = None,
           **kwargs) -> HttpClient:
    """A client of ``server`` whose pauses are recorded in ``waits`` instead of slept."""
    kwargs.setdefault("limits", FAST)
    return HttpClient(server.base + path, sleep=(waits.append if waits is not None else None),
                      log=lambda message: None, **kwargs)


# --------------------------------------------------------------------------- retries


def test_gateway_errors_are_retried_with_one_key_and_the_same_body():
    waits: list[float] = []
    with Raw(answer(502), answer(504, {"detail": "busy"}), answer(201, {"rank": 2})) as server:
        reply = client(server, waits=waits).send("POST", body=b'{"a":1}', key="run-1")
    assert reply.status == 201 and reply.attempts == 3 and reply.ok
    assert waits == [0.5, 1.0]  # the default pauses, in order
    assert [r["headers"]["Idempotency-Key"] for r in server.requests] == ["run-1"] * 3
    assert {r["body"] for r in server.requests} == {b'{"a":1}'}


def test_gateway_errors_until_the_last_attempt_are_a_refusal():
    waits: list[float] = []
    with Raw(answer(503, {"detail": "down"})) as server:
        http = client(server, waits=waits)
        reply = http.send("POST", body=b"{}", key="k")
        error = http.refusal(reply, "upload", {503: " Try later."})
    assert len(server.requests) == 4 and waits == [0.5, 1.0, 2.0]
    assert str(error) == ("upload refused after 4 attempts: HTTP 503. Server verdict: "
                          "detail: down. Try later.")


@pytest.mark.parametrize("status", [400, 401, 409, 422, 500])
def test_other_errors_are_final(status):
    waits: list[float] = []
    with Raw(answer(status, {"error": "no"}), answer(200)) as server:
        reply = client(server, waits=waits).send("POST", body=b"{}")
    assert reply.status == status and reply.attempts == 1 and not reply.ok
    assert len(server.requests) == 1 and waits == []


@pytest.mark.parametrize("retry_after, expected", [
    ("5", 5.0),       # longer than the scheduled 0.5 s: honoured
    ("0", 0.5),       # shorter: the scheduled pause stands
    ("3600", 30.0),   # capped at Limits.max_retry_after
    ("soon", 0.5),    # unreadable: ignored
])
def test_retry_after_lengthens_the_pause_up_to_the_cap(retry_after, expected):
    waits: list[float] = []
    limits = Limits(connect=2.0, read=2.0, deadline=60.0)  # the pauses are recorded, not slept
    with Raw(answer(503, Retry_After=retry_after), answer(200)) as server:
        reply = client(server, waits=waits, limits=limits).send("GET")
    assert reply.status == 200 and waits == [expected]


def test_a_pause_past_the_deadline_is_not_taken():
    # the server asks for 30 s, the request has 5: its answer is final
    waits: list[float] = []
    with Raw(answer(503, Retry_After="30"), answer(200)) as server:
        reply = client(server, waits=waits).send("GET")
        assert reply.status == 503 and reply.attempts == 1 and waits == []
        assert len(server.requests) == 1


def test_retry_after_as_a_date():
    when = datetime.now(timezone.utc) + timedelta(seconds=20)
    assert 17.0 <= _http._retry_after(format_datetime(when, usegmt=True)) <= 20.0
    past = datetime.now(timezone.utc) - timedelta(hours=1)
    assert _http._retry_after(format_datetime(past, usegmt=True)) == 0.0
    assert _http._retry_after(None) is None and _http._retry_after("") is None


def test_a_dropped_connection_is_retried():
    waits: list[float] = []
    messages: list[str] = []
    with Raw(drop, drop, answer(200, {"status": "ok"})) as server:
        http = HttpClient(server.base + "/s", limits=FAST, sleep=waits.append,
                          log=messages.append)
        reply = http.send("POST", body=b"{}", key="k", label="upload to here")
    assert reply.attempts == 3 and waits == [0.5, 1.0]
    assert messages[0] == ("upload to here: the connection broke (RemoteDisconnected: Remote "
                           "end closed connection without response); retrying in 0.5 s "
                           "(attempt 2 of 4)")


def test_an_answer_cut_short_is_a_broken_connection():
    def short(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"status\":")

    waits: list[float] = []
    messages: list[str] = []
    with Raw(short, answer(200, {"status": "ok"})) as server:
        http = HttpClient(server.base, limits=FAST, sleep=waits.append, log=messages.append)
        reply = http.send("GET")
    assert reply.attempts == 2 and reply.json() == {"status": "ok"} and waits == [0.5]
    assert "the connection broke (IncompleteRead: IncompleteRead(10 bytes read, 90 more " \
           "expected))" in messages[0]


def test_an_unreachable_server_is_retried_then_reported():
    with Raw(drop) as server:
        url = server.base
    waits: list[float] = []  # the server is gone: every connection is refused
    http = HttpClient(url, limits=Limits(retry_waits=(0.1, 0.2)), sleep=waits.append,
                      log=lambda m: None, url_name="--server")
    with pytest.raises(UploadError) as info:
        http.send("GET", "/x")
    assert waits == [0.1, 0.2]
    assert str(info.value).startswith(f"GET {url}/x failed after 3 attempts: the server is "
                                      f"unreachable (ConnectionRefusedError: ")
    assert str(info.value).endswith("Check --server and that the leaderboard is running.")


# --------------------------------------------------------------------------- bounds


def test_a_silent_server_hits_the_read_timeout_and_is_not_retried():
    limits = Limits(connect=2.0, read=0.3, deadline=10.0)
    with Raw(silent) as server:
        start = time.monotonic()
        with pytest.raises(UploadError, match=r"no answer within 0\.3 s \(read timeout\)"):
            client(server, limits=limits, waits=[]).send("POST", body=b"{}")
        assert time.monotonic() - start < 3
        assert len(server.requests) == 1  # the server may be acting on it: not sent again


@pytest.mark.parametrize("how", ["body", "headers"])
def test_a_server_that_drips_bytes_hits_the_deadline(how):
    # every byte comes within the read timeout, so only the deadline can stop the client
    limits = Limits(connect=2.0, read=1.0, deadline=0.6)
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n"
    with Raw(drip(head) if how == "body" else drip_headers) as server:
        start = time.monotonic()
        with pytest.raises(UploadError, match=r"no whole answer within 0\.6 s"):
            client(server, limits=limits, waits=[]).send("GET")
        took = time.monotonic() - start
        assert 0.5 < took < 2.5, took
        assert len(server.requests) == 1


def test_one_deadline_bounds_the_request_and_its_retries():
    # a 201 whose body comes a byte at a time and then breaks off, on every attempt: each
    # attempt is within the read timeout, and only the request's one deadline ends the wait
    def drip_then_break(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 201 Created\r\nContent-Length: 100\r\n\r\n")
        for byte in b'{"sta':
            if stop.wait(0.1):
                return
            conn.sendall(bytes([byte]))

    limits = Limits(connect=2.0, read=1.0, deadline=1.2, retry_waits=(0.05, 0.05, 0.05))
    messages: list[str] = []
    with Raw(*[drip_then_break] * 4) as server:
        http = HttpClient(server.base, limits=limits, log=messages.append)
        start = time.monotonic()
        with pytest.raises(UploadError, match=r"within (1\.2 s|the deadline of 1\.2 s)"):
            http.send("POST", body=b"{}", key="k")
        took = time.monotonic() - start
    assert took < 1.2 + 0.5, took  # four attempts of 0.5 s each would take 2 s and more
    assert 1 <= len(server.requests) < 4 and len(messages) == len(server.requests) - 1


def test_the_default_deadline_is_a_minute_at_most():
    assert 0 < Limits().deadline <= 60


def test_a_deadline_does_not_cut_a_prompt_answer():
    limits = Limits(connect=2.0, read=1.0, deadline=0.5)
    with Raw(answer(200, {"status": "ok"})) as server:
        http = client(server, limits=limits)
        replies = [http.send("GET") for _ in range(3)]
        time.sleep(0.7)  # past the deadlines: their watchdogs must not have fired on anything
        assert [r.json() for r in replies] == [{"status": "ok"}] * 3


def test_an_answer_is_read_up_to_the_bound():
    big = json.dumps({"detail": "y" * 2_000_000}).encode()
    limits = Limits(connect=2.0, read=2.0, deadline=5.0, max_bytes=1000)
    with Raw(answer(200, big), answer(400, big)) as server:
        http = client(server, limits=limits)
        reply = http.send("GET")
        assert reply.cut and len(reply.body) == 1000 and reply.body == big[:1000]
        assert reply.json() is None  # a cut answer is not read as JSON
        with pytest.raises(UploadError, match="the answer is larger than 1000 bytes"):
            http.document(reply, "GET x")
        refused = http.refusal(http.send("GET"), "GET x", {})
    assert len(str(refused)) < 500  # what the server said is shown cut, not 2 MB of it


def test_a_redirect_is_refused_and_not_followed():
    token = new_token()
    with Raw(answer(307, {"detail": "moved"}, Location=f"https://evil.example/{token}?q=1"),
             answer(200)) as server:
        http = client(server, token=token)
        with pytest.raises(UploadError) as info:
            http.send("POST", body=b"{}", label="upload to here")
    message = str(info.value)
    assert len(server.requests) == 1  # nothing sent again, here or there
    assert message.startswith("upload to here refused: HTTP 307 redirect to "
                              "https://evil.example/<token>?...")
    assert "set UPLOAD_URL to the endpoint itself" in message and "detail: moved" in message
    assert_hidden(token, message)


# --------------------------------------------------------------------------- what is sent and shown


def test_headers_of_a_request():
    token = new_token()
    with Raw(answer(200)) as server:
        client(server, token=token).send("POST", "/more", b"{}", key="run-9")
        client(server).send("GET")
    post, get = server.requests
    assert post["method"] == "POST" and post["path"] == "/submit/more"
    assert post["headers"]["Authorization"] == f"Bearer {token}"
    assert post["headers"]["Content-Type"] == "application/json"
    assert post["headers"]["Idempotency-Key"] == "run-9"
    assert post["headers"]["Accept"] == "application/json"
    assert get["method"] == "GET" and get["body"] == b""
    assert not {"Authorization", "Content-Type", "Idempotency-Key"} & set(get["headers"])


def test_a_non_ascii_address_is_sent_percent_encoded():
    with Raw(answer(200)) as server:
        HttpClient(server.base + "/soumission-é?équipe=ü", limits=FAST).send("GET")
        with pytest.raises(ConfigError, match=re.escape("Idempotency-Key 'a\\r\\nX: 1' must")):
            HttpClient(server.base, limits=FAST).send("POST", body=b"{}", key="a\r\nX: 1")
    assert [r["path"] for r in server.requests] == ["/soumission-%C3%A9?%C3%A9quipe=%C3%BC"]


def test_the_token_is_never_shown():
    token = 'tok_"' + secrets.token_hex(16)  # JSON escapes the quote: \" on the wire
    echo = {"detail": f"bad token {token}", "rank": token}
    with Raw(answer(401, echo), answer(401, f"raw {token}".encode())) as server:
        http = client(server, token=token)
        texts = [repr(http), http.show(f"x {token} y")]
        texts.append(str(http.refusal(http.send("GET"), "GET", {})))
        reply = http.send("GET")
        texts.append(str(http.refusal(reply, "GET", {})))
        assert token.encode() not in reply.body  # replaced as soon as it was read
    assert "detail: bad token <token>" in texts[2] and "rank: <token>" in texts[2]
    assert "raw <token>" in texts[3]
    assert_hidden(token, *texts)
    assert repr(http) == f"HttpClient('{server.base}/submit', token=<not shown>)"


def test_the_url_and_token_are_checked_before_any_request():
    with Raw(answer(200)) as server:
        with pytest.raises(ConfigError, match="must start with https://"):
            HttpClient("ftp://127.0.0.1/x")
        bad = "tok " + secrets.token_hex(8)
        with pytest.raises(ConfigError, match="has a space or tab at position 4") as info:
            HttpClient(server.base, bad, token_name="the admin token")
        assert "the admin token" in str(info.value)
        assert_hidden(bad.split()[1], str(info.value))
        assert server.requests == []


def test_a_json_document_is_required_where_asked_for():
    with Raw(answer(200, b"[1, 2]"), answer(200, b"<html>\x1b[2J</html>")) as server:
        http = client(server)
        assert http.send("GET").json() == [1, 2]
        with pytest.raises(UploadError, match=r"not a JSON object: <html>\\x1b\[2J</html>"):
            http.document(http.send("GET"), "GET x")


# --------------------------------------------------------------------------- proxies


@pytest.fixture
def no_proxy_settings(monkeypatch):
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


def test_an_http_request_goes_through_the_environments_proxy(no_proxy_settings):
    with Raw(answer(200, {"status": "via proxy"})) as proxy:
        no_proxy_settings.setenv("HTTP_PROXY", proxy.base.replace("http://", "http://u:p%40@"))
        reply = HttpClient("http://leaderboard.invalid/submit?x=1", limits=FAST).send("GET")
    assert reply.json() == {"status": "via proxy"}
    (request,) = proxy.requests
    assert request["path"] == "http://leaderboard.invalid/submit?x=1"
    assert request["headers"]["Host"] == "leaderboard.invalid"
    assert request["headers"]["Proxy-Authorization"] == "Basic dTpwQA=="  # u:p@


def test_an_https_request_tunnels_through_the_proxy(no_proxy_settings):
    token = new_token()
    with Raw(answer(407)) as proxy:
        no_proxy_settings.setenv("HTTPS_PROXY", proxy.base.replace("http://", "http://u:p@"))
        http = HttpClient("https://leaderboard.invalid/submit", token,
                          limits=Limits(retry_waits=()))
        with pytest.raises(UploadError) as info:
            http.send("POST", body=b"{}")
    (request,) = proxy.requests
    assert request["method"] == "CONNECT" and request["path"] == "leaderboard.invalid:443"
    assert "Authorization" not in request["headers"]  # the token only goes inside the tunnel
    assert request["headers"]["Proxy-Authorization"] == "Basic dTpw"
    assert "failed: the server is unreachable (OSError: Tunnel connection failed: 407" \
        in str(info.value)
    assert_hidden(token, str(info.value))


def test_no_proxy_is_followed(no_proxy_settings):
    with Raw(drop) as gone:
        dead = gone.base
    no_proxy_settings.setenv("HTTP_PROXY", dead)
    no_proxy_settings.setenv("NO_PROXY", "127.0.0.1")
    with Raw(answer(200)) as server:
        assert client(server).send("GET").status == 200
    assert server.requests[0]["path"] == "/submit"
