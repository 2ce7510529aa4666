"""Many uploads at once to a live leaderboard server: distinct payloads and a threaded sender.

Used by ``bench_server.py`` and by the server's load and crash tests (which import it the same
way as ``_postgres.py``). The payloads are variations of one real submission (a baseline's
``submission.json``): a new run id, written in both places the server compares
(``run_id`` and ``results.run_id``), and HIT_RATE of every fold scaled down a little, so each
payload is a different, valid submission with the same run hash.
"""

from __future__ import annotations

import copy
import json
import shutil
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser, as a package (the server extra)
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
#: The API's upload endpoint.
SUBMISSIONS = "/api/v1/submissions"


@dataclass(frozen=True)
class Upload:
    """One request to send: the team's token and the body, serialised once beforehand."""

    team: str
    token: str
    run_id: str
    body: bytes


@dataclass(frozen=True)
class Outcome:
    """What one upload got: the HTTP status and answer, or the transport error."""

    upload: Upload
    status: int | None
    answer: dict | None
    retry_after: str | None
    seconds: float
    error: str | None = None

    @property
    def acknowledged(self) -> bool:
        """The server said it holds the submission (201 new, 200 the same one again)."""
        return self.status in (200, 201)


def competition_copy(folder: Path, daily_limit: int, *, open_at: datetime | None = None,
                     board: dict | None = None) -> Path:
    """The example competition (``competition.toml`` and its baselines) copied into ``folder``,
    taking claims (``accept_claims``: the benchmarks upload made-up runs).

    Parameters
    ----------
    folder : Path
        Where the copy goes (its baselines under ``folder/competition/baselines``).
    daily_limit : int
        Every phase's daily limit in the copy.
    open_at : datetime, optional
        For a server on the real clock: the copy keeps only the first phase, open from a day
        before ``open_at`` to a year after it, so that it takes submissions whatever the date.
    board : dict, optional
        Settings of the copy's ``[board]`` table (e.g. ``{"n_boot": 50}``), over the example's.

    Returns
    -------
    Path
        The copy's ``competition.toml``.
    """
    doc = tomllib.loads((REPO / "competition.toml").read_text())
    # the benchmarks upload made-up runs: claims, which this copy takes (shown unverified)
    doc["accept_claims"] = True
    for phase in doc["phases"]:
        phase["daily_limit"] = daily_limit
    if open_at is not None:
        first = doc["phases"][0]
        start = open_at.replace(microsecond=0) - timedelta(days=1)
        first["opens"], first["closes"] = start, start + timedelta(days=366)
        doc["phases"] = [first]
    if board:
        doc["board"] = {**doc.get("board", {}), **board}
    baselines = folder / "competition" / "baselines"
    shutil.copytree(REPO / "competition" / "baselines", baselines)
    # the pinned baselines without their per-user values: those are of the real folds' users,
    # and the first organizer-computed values fix the users a board compares, so the made-up
    # runs' synthetic users would all be left out
    for file in baselines.glob("*.json"):
        document = json.loads(file.read_text(encoding="utf-8"))
        document.pop("user_values", None)
        file.write_text(json.dumps(document), encoding="utf-8")
    path = folder / "competition.toml"
    path.write_text(_toml(doc))
    return path


def _toml(doc: dict, prefix: str = "") -> str:
    """``doc`` as TOML: what ``tomllib`` reads back as ``doc`` (strings, numbers, booleans,
    aware datetimes, lists of those, tables and arrays of tables)."""

    def value(v) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v)
        if isinstance(v, str):
            return json.dumps(v)  # a JSON string is a TOML basic string
        if isinstance(v, datetime):
            return v.isoformat()
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        raise TypeError(f"no TOML for {v!r}")

    def is_tables(v) -> bool:
        return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)

    lines = [f"{json.dumps(k)} = {value(v)}" for k, v in doc.items()
             if not isinstance(v, dict) and not is_tables(v)]
    for k, v in doc.items():
        name = f"{prefix}{json.dumps(k)}"
        if isinstance(v, dict):
            lines += ["", f"[{name}]", _toml(v, name + ".").rstrip("\n")]
        elif is_tables(v):
            for table in v:
                lines += ["", f"[[{name}]]", _toml(table, name + ".").rstrip("\n")]
    return "\n".join(lines).strip("\n") + "\n"


def base_submission() -> dict:
    """The example competition's Popularity baseline: a valid ``submission.json``."""
    return json.loads((REPO / "competition" / "baselines" / "popularity.json").read_text())


def variant(base: dict, run_id: str, shrink: float) -> dict:
    """``base`` with a new run id and each fold's HIT_RATE multiplied by ``1 - shrink``.

    Parameters
    ----------
    base : dict
        A valid submission (``submission.json``).
    run_id : str
        The new run id (letters, digits, ``_ . -``).
    shrink : float
        In [0, 1): how much lower every fold's HIT_RATE is (it stays in [0, 1]).
    """
    payload = copy.deepcopy(base)
    # no per-user values: changed hit rates no longer add up from the base's, and a claim's
    # values are never compared (the board fixes its users from the organizers' values)
    payload.pop("user_values", None)
    payload["run_id"] = payload["results"]["run_id"] = run_id
    for fold in payload["results"]["folds"]:
        tests = fold["tests"]
        if tests.get("HIT_RATE") is not None:
            tests["HIT_RATE"] = tests["HIT_RATE"] * (1.0 - shrink)
    return payload


def encode(payload: dict) -> bytes:
    """The body as the client sends it (strict JSON, sorted keys)."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def team_uploads(base: dict, teams: dict[str, str], per_team: int, *, prefix: str = "Load",
                 group: int = 5) -> list[Upload]:
    """``per_team`` distinct uploads for each team, in an order that makes teams collide.

    Teams go in groups of ``group``; within a group their uploads alternate, so several
    uploads of one team are in flight at once (the daily limit is decided under contention),
    while the groups follow one another.

    Parameters
    ----------
    base : dict
        A valid submission to vary.
    teams : dict
        Team name -> token.
    per_team : int
        Uploads per team.
    prefix : str
        Start of every run id: ``<prefix>-<team index>-<i>``.
    group : int
        Teams whose uploads alternate.
    """
    names = list(teams)
    own = {
        name: [Upload(name, teams[name], f"{prefix}-{t}-{i}",
                      encode(variant(base, f"{prefix}-{t}-{i}", i * 1e-3)))
               for i in range(per_team)]
        for t, name in enumerate(names)
    }
    order = []
    for start in range(0, len(names), group):
        members = names[start:start + group]
        for i in range(per_team):
            order.extend(own[name][i] for name in members)
    return order


def send_all(base_url: str, uploads: Sequence[Upload], *, threads: int = 32,
             time_limit: float = 60.0, stop: threading.Event | None = None,
             on_outcome: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Send ``uploads`` through ``threads`` keep-alive clients; return what each got.

    Every thread has its own ``httpx.Client`` (one kept-alive connection) and takes the next
    upload from the shared list. Sending stops at the end of the list, after ``time_limit``
    seconds, or when ``stop`` is set; the uploads not sent by then have no outcome.

    Parameters
    ----------
    base_url : str
        ``http://127.0.0.1:PORT``.
    uploads : sequence of Upload
    threads : int
        Concurrent clients.
    time_limit : float
        Seconds after which no new upload is started (each request also times out after it).
    stop : threading.Event, optional
        Set by the caller to stop sending early (e.g. once the server is killed).
    on_outcome : callable, optional
        Called (from the sending thread) with each outcome as soon as it is known.

    Returns
    -------
    list of Outcome
        In the order the answers came.
    """
    import httpx

    deadline = time.monotonic() + time_limit
    # one TLS context for the threads' clients: httpx loads the certificate store anew for each
    # client it makes otherwise (~30 ms of CPU each), and the server speaks plain HTTP
    tls = ssl.create_default_context()
    lock = threading.Lock()
    next_index = [0]
    outcomes: list[Outcome] = []
    stop = stop or threading.Event()

    def take() -> Upload | None:
        with lock:
            if next_index[0] >= len(uploads) or stop.is_set() or time.monotonic() > deadline:
                return None
            next_index[0] += 1
            return uploads[next_index[0] - 1]

    def worker() -> None:
        with httpx.Client(base_url=base_url, timeout=time_limit, verify=tls) as client:
            while (upload := take()) is not None:
                outcome = _send(client, upload)
                with lock:
                    outcomes.append(outcome)
                if on_outcome is not None:
                    on_outcome(outcome)

    pool = [threading.Thread(target=worker, daemon=True) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(max(0.0, deadline - time.monotonic()) + time_limit)
    return list(outcomes)


def _send(client, upload: Upload) -> Outcome:
    import httpx

    headers = {"Authorization": f"Bearer {upload.token}", "Content-Type": "application/json",
               "Idempotency-Key": upload.run_id}
    start = time.perf_counter()
    try:
        response = client.post(SUBMISSIONS, content=upload.body, headers=headers)
    except httpx.HTTPError as exc:
        return Outcome(upload, None, None, None, time.perf_counter() - start,
                       error=f"{type(exc).__name__}: {exc}")
    seconds = time.perf_counter() - start
    try:
        answer = response.json()
    except ValueError:
        answer = {"unparsed": response.text[:500]}
    return Outcome(upload, response.status_code, answer, response.headers.get("retry-after"),
                   seconds)
