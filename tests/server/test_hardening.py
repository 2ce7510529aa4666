"""The leaderboard service against hostile or unlucky conditions, through a live uvicorn on
127.0.0.1: ids out of range, a hidden board, a held write lock, a read-only or full disk,
security headers and the order of the checks of an upload."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

from evaluation.server.api import create_app  # noqa: E402
from evaluation.server.db import add_team, authenticate, create_admin_token, list_teams  # noqa: E402
from evaluation.server.store import get_submission, submit  # noqa: E402
from tests.server._forked_serve import fork_serve  # noqa: E402
from tests.server._helpers import (  # noqa: E402
    NOON,
    Clock,
    claims_competition_file,
    encode,
    migrated_sqlite_url,
    variant,
    with_phases,
)
from tests.server._live_server import http_client, live_server  # noqa: E402

SUBMIT = "/api/v1/submissions"


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


# ---------------------------------------------------------------------------- ids


@pytest.fixture(scope="module")
def ids_client(module_migrated_db_url, competition):
    """A live server of the module's database (SQLite, PostgreSQL) with one team, shared by the
    tests of ids: they only read (or are refused). Yields (client, organizer token, team's)."""
    app = create_app(competition, module_migrated_db_url, clock=Clock(NOON))
    store = app.state.store
    admin = create_admin_token(store)
    _, team = add_team(store, "Ids", "ids@example.org")
    try:
        with live_server(app) as base, http_client(base, timeout=30) as client:
            yield client, admin, team
    finally:
        store.engine.dispose()


@pytest.mark.parametrize("sid", ["9223372036854775808", "2147483648", "0", "-1",
                                 "99999999999999999999999"])
def test_ids_out_of_range_are_refused_on_every_route(ids_client, sid):
    client, admin, team = ids_client
    answers = [
        client.get(f"{SUBMIT}/{sid}", headers=bearer(team)),
        client.get(f"{SUBMIT}/{sid}", headers=bearer(admin)),
        client.get(f"{SUBMIT}/{sid}/payload", headers=bearer(admin)),
        client.post(f"{SUBMIT}/{sid}/reproduction", headers=bearer(admin),
                    content=b'{"verdict": "reproduced"}'),
    ]
    # the largest id that exists on both databases is answered as a missing submission
    largest = client.get(f"{SUBMIT}/2147483647", headers=bearer(admin))
    for answer in answers:
        assert answer.status_code in (404, 422), (answer.request.url, answer.text)
        assert answer.json()["status"] == "rejected"
        assert "Traceback" not in answer.text
    assert largest.status_code == 404, largest.text


# ---------------------------------------------------------------------------- hidden board


def _values(document) -> list:
    """Every scalar in a JSON document, recursively."""
    if isinstance(document, dict):
        return [v for value in document.values() for v in _values(value)]
    if isinstance(document, list):
        return [v for value in document for v in _values(value)]
    return [document]


def test_a_hidden_board_neither_identifies_nor_orders_submissions_by_score(tmp_path,
                                                                            competition):
    final = next(p for p in competition.phases if not p.public)
    clock = Clock(final.opens + (final.closes - final.opens) / 2)
    app = create_app(competition, migrated_sqlite_url(tmp_path), clock=clock)
    store = app.state.store
    # alphabetical order is the reverse of the order by score
    _, alpha = add_team(store, "Alpha", "a@example.org")
    _, zed = add_team(store, "Zed", "z@example.org")
    uploads = [(alpha, "A-low", 0.5), (alpha, "A-high", 0.9), (alpha, "A-mid", 0.7),
               (zed, "Z-high", 1.5)]
    ids, times = [], []
    step = (final.closes - final.opens) / 100
    clock.now = clock.now + step  # after the baselines were pinned
    with live_server(app) as base, http_client(base, timeout=30) as client:
        for token, run_id, scale in uploads:
            answer = client.post(SUBMIT, content=encode(variant(run_id, scale)),
                                 headers=bearer(token))
            assert answer.status_code == 201, answer.text
            assert answer.json()["leaderboard_score"] is None
            ids.append(answer.json()["submission_id"])
            admin = authenticate(store, create_admin_token(store))
            times.append(get_submission(store, ids[-1], admin).submitted_at)
            clock.now = clock.now + step
        board = client.get("/api/v1/leaderboard", params={"phase": final.name})
        admin = client.get("/api/v1/leaderboard", params={"phase": final.name},
                           headers=bearer(create_admin_token(store)))
    assert board.status_code == 200, board.text
    rows = [r for r in board.json()["rows"] if not r["is_baseline"]]
    assert [r["team"] for r in rows] == ["Alpha", "Zed"]
    for row in board.json()["rows"]:
        assert row["submission_id"] is None and row["best_submitted"] is None
        assert row["rank"] is None and row["leaderboard_score"] is None
        assert row["flagged"] is False and row["reproduction"] == "hidden"
    shown = {str(v) for v in _values(board.json())} | set(board.headers.values())
    # Alpha's best (A-high) and its first are neither its last nor anything else shown
    for hidden in (0, 1):
        stamp = times[hidden].strftime("%Y-%m-%dT%H:%M:%S")
        assert not any(stamp in value for value in shown), stamp
        assert str(ids[hidden]) not in shown
    assert "etag" not in {h.lower() for h in board.headers}
    # the organizers see which one is best (the control: the ids are there to be found)
    admin_rows = {r["team"]: r for r in admin.json()["rows"] if not r["is_baseline"]}
    assert admin_rows["Alpha"]["submission_id"] == ids[1]
    assert [r["team"] for r in admin.json()["rows"] if not r["is_baseline"]] == ["Zed", "Alpha"]


# ---------------------------------------------------------------------------- held locks

WAIT = 2.0  # the app's write_wait in these tests (the default is WRITE_WAIT_S)
HOLDER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("ROLLBACK")
"""


def _timed(send) -> tuple[object, float]:
    started = time.monotonic()
    answer = send()
    return answer, time.monotonic() - started


def _uploads_meanwhile(base: str, bodies: list[bytes], token: str) -> tuple[list, list]:
    """Send ``bodies`` all at once; while they wait, time the reads. Returns (the uploads'
    (answer, seconds), the reads' (answer, seconds))."""
    uploads: list = [None] * len(bodies)

    def send(i: int) -> None:
        with http_client(base, timeout=60) as client:
            uploads[i] = _timed(lambda: client.post(SUBMIT, content=bodies[i],
                                                    headers=bearer(token)))

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    time.sleep(WAIT / 4)  # the uploads are waiting now
    with http_client(base, timeout=60) as client:
        reads = [_timed(lambda path=path: client.get(path))
                 for path in ("/healthz", "/", "/api/v1/leaderboard", "/healthz")]
    for t in threads:
        t.join(timeout=60)
    return uploads, reads


def _assert_bounded(uploads: list, reads: list) -> None:
    for answer, seconds in uploads:
        assert answer.status_code == 503, answer.text
        assert answer.headers["Retry-After"] == "2"
        assert answer.json()["status"] == "unavailable"
        # the lock waits end at WAIT; what remains is the upload's own work (parsing and
        # scoring, slower on a busy machine), far below both the holder's 30 s and the
        # client's 60 s read timeout
        assert seconds < WAIT + 8.0, seconds
    for answer, seconds in reads:
        assert answer.status_code == 200, answer.text
        # behind the held lock a read would wait for its holder (30 s) or SQLite's busy
        # timeout (10 s); on a busy machine a read among 48 uploads may still take a second
        assert seconds < 4.0, (answer.request.url, seconds)


def test_a_held_sqlite_write_lock_bounds_every_write_and_never_stalls_reads(tmp_path,
                                                                            competition):
    url = migrated_sqlite_url(tmp_path)
    app = create_app(competition, url, clock=Clock(NOON), write_wait=WAIT)
    _, token = add_team(app.state.store, "Waiters", "w@example.org")
    path = url.removeprefix("sqlite:///")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, path, "30"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        with live_server(app) as base:
            # more waiting uploads than the thread pool has threads (40)
            bodies = [encode(variant(f"Wait-{i}", 1.0 + i / 100)) for i in range(48)]
            uploads, reads = _uploads_meanwhile(base, bodies, token)
            _assert_bounded(uploads, reads)
            holder.kill()
            holder.wait(timeout=10)
            with http_client(base, timeout=30) as client:
                after = client.post(SUBMIT, content=bodies[0], headers=bearer(token))
            assert after.status_code == 201, after.text
    finally:
        holder.kill()
        holder.wait(timeout=10)


def test_a_held_postgresql_team_row_bounds_that_teams_writes_only(postgres_migrated_database,
                                                                  competition):
    import sqlalchemy as sa
    app = create_app(competition, postgres_migrated_database, clock=Clock(NOON), write_wait=WAIT)
    store = app.state.store
    held, token = add_team(store, "Held", "h@example.org")
    _, other = add_team(store, "Free", "f@example.org")
    engine = sa.create_engine(postgres_migrated_database)
    try:
        with engine.connect() as conn, conn.begin():
            conn.execute(sa.text("SELECT id FROM teams WHERE id = :id FOR UPDATE"),
                         {"id": held.id})
            with live_server(app) as base:
                bodies = [encode(variant(f"Held-{i}", 1.0 + i / 100)) for i in range(12)]
                uploads, reads = _uploads_meanwhile(base, bodies, token)
                _assert_bounded(uploads, reads)
                with http_client(base, timeout=30) as client:
                    free, seconds = _timed(lambda: client.post(
                        SUBMIT, content=encode(variant("Free-1")), headers=bearer(other)))
                assert free.status_code == 201 and seconds < 4.0, (free.text, seconds)
    finally:
        engine.dispose()


# ---------------------------------------------------------------------------- read-only, full

class Prepared(NamedTuple):
    """One leaderboard database (the example competition's, with one team), made once for the
    tests of a read-only or full disk, which each copy it into a tmpfs of their own."""

    closed: Path  # folder of its files as a server leaves them when it stops
    crashed: Path  # ... and as a killed server leaves them: the write-ahead log and its index
    token: str  # the team's


@pytest.fixture(scope="module")
def prepared(tmp_path_factory, competition) -> Prepared:
    folder = tmp_path_factory.mktemp("prepared")
    work, crashed, closed = folder / "work", folder / "crashed", folder / "closed"
    for made in (work, crashed, closed):
        made.mkdir()
    app = create_app(competition, f"sqlite:///{work / 'lb.db'}")
    try:
        token = add_team(app.state.store, "Disk", "d@example.org")[1]
        # the files as they are now, connections still open, are what a SIGKILL leaves: SQLite
        # keeps nothing of them in the process that is not written to them yet
        assert (work / "lb.db-wal").exists()
        for file in work.iterdir():
            shutil.copy2(file, crashed / file.name)
    finally:
        app.state.store.engine.dispose()
    for file in work.iterdir():
        shutil.copy2(file, closed / file.name)
    return Prepared(closed, crashed, token)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: The tmpfs's size: the database (~200 KiB) and the 16 MiB free that a ready server needs.
TMPFS_SIZE = "20m"


@contextlib.contextmanager
def serve_on_tmpfs(tmp_path, image: Path, then: str, size: str = TMPFS_SIZE):
    """``serve`` on an SQLite database in a tmpfs of ``size`` mounted in a private mount
    namespace; the database's files are copied from the folder ``image`` (see ``Prepared``), and
    ``then`` (shell) runs after that and before the server starts.
    Yields (base URL, the server's stderr so far as a callable, the server's process id: in the
    namespace, for ``nsenter``)."""
    if shutil.which("mount") is None or shutil.which("nsenter") is None or os.geteuid() != 0:
        pytest.skip("needs root, mount(8) and nsenter(1) for a private tmpfs")
    mnt, log = tmp_path / "mnt", tmp_path / "serve.log"
    mnt.mkdir(parents=True)
    port = _free_port()
    url = f"sqlite:///{mnt}/lb.db"
    setup = (f"mount -t tmpfs -o size={size} tmpfs {mnt}; "
             f"cp -a {shlex.quote(str(image))}/. {mnt}/; {then}")
    log.write_text("")
    # `serve` forked from this process (its imports done already), see fork_serve
    proc = fork_serve(setup, ["--competition", str(claims_competition_file(tmp_path)),
                              "--db", url, "--port", str(port)], log)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        with http_client(base, timeout=2) as poll:
            while True:
                try:
                    poll.get("/healthz")
                    break
                except httpx.HTTPError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        pytest.fail(f"serve did not start: {log.read_text()}")
                    time.sleep(0.1)
        yield base, log.read_text, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        finally:
            proc.kill()
            proc.wait(timeout=30)


def _assert_not_ready(base: str, token: str, said: str, stderr, at_start: bool = True) -> str:
    with http_client(base, timeout=30) as client:
        ready = client.get("/readyz")
        upload = client.post(SUBMIT, content=encode(variant("Disk-1", 1.1)),
                             headers=bearer(token))
        board = client.get("/api/v1/leaderboard")
    assert ready.status_code == 503, ready.text
    assert ready.json()["status"] == "not ready"
    assert any(said in p for p in ready.json()["problems"]), ready.json()
    if at_start:
        assert said in stderr(), stderr()
    assert upload.status_code == 503 and "Retry-After" in upload.headers, upload.text
    assert board.status_code == 200, board.text  # the board is still read
    return upload.json()["reason"]


def test_a_read_only_database_says_so_at_start_and_in_readyz(tmp_path, prepared):
    # left as by a crash, the database can be opened on a read-only file system
    with serve_on_tmpfs(tmp_path, prepared.crashed,
                        f"mount -o remount,ro {tmp_path / 'mnt'}") as (base, stderr, _):
        reason = _assert_not_ready(base, prepared.token, "read-only file system", stderr)
    assert "read-only" in reason


def test_a_start_on_a_read_only_file_system_is_refused_with_the_reason(tmp_path, prepared):
    mnt = tmp_path / "mnt"
    with pytest.raises(pytest.fail.Exception) as failed:
        with serve_on_tmpfs(tmp_path, prepared.closed, f"mount -o remount,ro {mnt}"):
            pass
    said = str(failed.value)
    assert "read-only file system" in said and "remount" in said, said
    assert "Traceback" not in said


def test_a_disk_that_fills_up_says_so_in_readyz_and_at_the_next_start(tmp_path, prepared):
    def fill(folder):
        return ["dd", "if=/dev/zero", f"of={folder / 'mnt' / 'fill'}", "bs=64k"]

    with serve_on_tmpfs(tmp_path, prepared.closed, "true") as (base, stderr, pid):
        subprocess.run(["nsenter", "-t", str(pid), "-m", *fill(tmp_path)],
                       capture_output=True)
        reason = _assert_not_ready(base, prepared.token, "KiB free", stderr, at_start=False)
    assert "disk is full" in reason
    # a start on the full disk is refused, with the reason
    with pytest.raises(pytest.fail.Exception) as failed:
        again = tmp_path / "again"
        with serve_on_tmpfs(again, prepared.closed,
                            " ".join(fill(again)) + " 2>/dev/null || true"):
            pass
    said = str(failed.value)
    assert "0 KiB free" in said and "free some space" in said and "Traceback" not in said


def test_a_writable_database_is_ready(tmp_path, competition):
    app = create_app(competition, migrated_sqlite_url(tmp_path), clock=Clock(NOON))
    with live_server(app) as base, http_client(base, timeout=30) as client:
        ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json() == {"status": "ready", "problems": []}


# ---------------------------------------------------------------------------- headers, bodies

SECURITY = {"content-security-policy", "x-content-type-options", "referrer-policy"}


def _raw(port: int, data: bytes, wait: float = 10.0,
         until_answer: bool = False) -> tuple[bytes, float]:
    """Send ``data`` on a new connection; returns (what came back until the server closed or
    ``wait`` passed, or with ``until_answer`` until one whole answer came, seconds until the
    first bytes or the close)."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(data)
        s.settimeout(wait)
        got = b""
        first = None
        try:
            while chunk := s.recv(65536):
                first = first or time.monotonic() - started
                got += chunk
                if until_answer and _whole_answer(got):
                    break
        except TimeoutError:
            pass
        except ConnectionResetError:
            pass
    return got, (first if first is not None else time.monotonic() - started)


def _whole_answer(got: bytes) -> bool:
    """Whether ``got`` holds an HTTP answer's head and all the body its Content-Length says."""
    head, blank, body = got.partition(b"\r\n\r\n")
    length = re.search(rb"(?im)^content-length:[ \t]*(\d+)", head)
    return bool(blank) and length is not None and len(body) >= int(length.group(1))


@contextlib.contextmanager
def served(app, **config):
    """``app`` on 127.0.0.1 with ``serve``'s connection limits (and ``config``); yields the
    port."""
    import uvicorn

    from evaluation.cli._serve_app import connection_limits

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                           **{**connection_limits(), **config}))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(20)


def test_every_answer_has_the_security_headers_and_docs_load_no_script(tmp_path,
                                                                       competition):
    app = create_app(competition, migrated_sqlite_url(tmp_path), clock=Clock(NOON))
    with live_server(app) as base, http_client(base, timeout=30) as client:
        answers = [client.get(p) for p in ("/", "/docs", "/healthz", "/api/v1/leaderboard",
                                           "/openapi.json", "/nope")]
        answers.append(client.post(SUBMIT, content=b"{}"))
        redoc = client.get("/redoc")
    for answer in answers:
        assert SECURITY <= set(answer.headers), (answer.request.url, answer.headers)
        csp = answer.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in csp and "script-src" not in csp
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["referrer-policy"] == "no-referrer"
    docs = answers[1]
    assert docs.status_code == 200 and "/api/v1/submissions" in docs.text
    assert "<script" not in docs.text.lower() and "cdn" not in docs.text.lower()
    assert redoc.status_code == 404  # FastAPI's page that loads a CDN script is off


def test_content_length_with_transfer_encoding_is_refused(tmp_path, competition):
    app = create_app(competition, migrated_sqlite_url(tmp_path), clock=Clock(NOON))
    _, token = add_team(app.state.store, "Smuggler", "s@example.org")
    body = encode(variant("Smuggle-1"))
    chunked = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
    with served(app) as port:
        got, _ = _raw(port, (f"POST {SUBMIT} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                             f"{token}\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n"
                             f"\r\n").encode() + chunked, wait=5)
        plain, _ = _raw(port, (f"POST {SUBMIT} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                               f"{token}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n"
                               f"\r\n").encode() + chunked, wait=10)
    assert got.startswith(b"HTTP/1.1 400"), got[:300]
    assert b"Content-Length and Transfer-Encoding" in got
    assert plain.startswith(b"HTTP/1.1 201"), plain[:300]  # chunked alone is fine
    # only the plain upload was stored
    assert [t.submissions for t in list_teams(app.state.store) if t.name == "Smuggler"] == [1]


def test_the_token_and_the_daily_limit_are_checked_before_the_body_is_read(tmp_path,
                                                                           competition):
    # a small limit: the test stores that many uploads first (each one scored)
    competition = with_phases(competition, daily_limit=2)
    public = competition.phases[0]
    app = create_app(competition, migrated_sqlite_url(tmp_path), clock=Clock(NOON))
    store = app.state.store
    _, token = add_team(store, "Busy Team", "b@example.org")
    for i in range(public.daily_limit):
        submit(store, authenticate(store, token).team_id, encode(variant(f"Used-{i}")), None)
    head = (f"POST {SUBMIT} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: 900000\r\n")
    with served(app) as port:
        # the headers only: an answer that comes now was given without the body (the upload
        # client always sends the run id as Idempotency-Key); the connection stays open for
        # the body, so the answer is read on its own
        limited, limited_s = _raw(port, (head + f"Authorization: Bearer {token}\r\n"
                                         f"Idempotency-Key: New-1\r\n\r\n").encode(), wait=5,
                                  until_answer=True)
        anonymous, anonymous_s = _raw(port, (head + "\r\n").encode(), wait=5,
                                      until_answer=True)
        # a repeat of a stored run is still answered (duplicate), its body read
        body = encode(variant("Used-0"))
        repeat, _ = _raw(port, (f"POST {SUBMIT} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                                f"{token}\r\nIdempotency-Key: Used-0\r\nContent-Length: "
                                f"{len(body)}\r\nConnection: close\r\n\r\n").encode() + body)
    assert limited.startswith(b"HTTP/1.1 429") and b"daily limit reached" in limited, limited
    assert b"retry-after" in limited.lower()
    assert anonymous.startswith(b"HTTP/1.1 401"), anonymous
    assert limited_s < 3 and anonymous_s < 3
    assert repeat.startswith(b"HTTP/1.1 200") and b'"duplicate"' in repeat, repeat[:400]


def test_idle_slow_and_dripping_connections_are_cut_off(tmp_path, competition):
    app = create_app(competition, migrated_sqlite_url(tmp_path), clock=Clock(NOON),
                     body_timeout=1.5)
    _, token = add_team(app.state.store, "Slow", "s@example.org")
    from evaluation.server.api import HeaderDeadlineProtocol

    class Quick(HeaderDeadlineProtocol):
        header_timeout = 1.5

    sends = {"idle": b"", "partial": b"GET / HTTP/1.1\r\nHost: x\r\n",
             "dripped": (f"POST {SUBMIT} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}"
                         f"\r\nContent-Length: 5000\r\n\r\n{{").encode(),
             "kept": b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"}
    with served(app, http=Quick, timeout_keep_alive=1) as port:
        # the four connections at once, each on its own: each one's own deadline cuts it off
        # (timed from its own start), and the test waits for the longest, not for their sum
        with ThreadPoolExecutor(len(sends)) as pool:
            futures = {name: pool.submit(_raw, port, data, 10) for name, data in sends.items()}
            got = {name: future.result() for name, future in futures.items()}
    (idle, idle_s), (partial, partial_s) = got["idle"], got["partial"]
    (dripped, dripped_s), (kept, kept_s) = got["dripped"], got["kept"]
    assert idle == b"" and 1.0 < idle_s < 4, idle_s
    assert partial == b"" and 1.0 < partial_s < 4, partial_s
    assert dripped.startswith(b"HTTP/1.1 408") and 1.0 < dripped_s < 4, (dripped, dripped_s)
    # a keep-alive connection after an answer is closed when idle
    assert kept.startswith(b"HTTP/1.1 200") and kept_s < 4
