"""Uploads: exit statuses, retries, redirects, verdicts, upload.env, and a token that never leaks.

Every HTTP test talks to a server on 127.0.0.1 in a thread. One eligible run of submission.py
(tiny synthetic data) is computed once per module; each test copies its results directory, so
that submission.py resumes it (finished folds are reused) and only aggregates and uploads.
"""

from __future__ import annotations

import http.server
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from evaluation.cli import (
    EXIT_BAD_INPUT,
    EXIT_EXCEPTION,
    EXIT_INTERRUPTED,
    EXIT_NOT_ELIGIBLE,
    EXIT_UPLOAD_FAILED,
    guarded,
)
from evaluation.cli import main as cli_main
from evaluation.contract import (
    PREDICTIONS_MEDIA_TYPE,
    Limits,
    _http,
    check_url,
    clean,
    display_url,
    read_predictions,
)
from evaluation.errors import ConfigError, DataError, UploadError
from evaluation.runner import PREDICTIONS_FILE
from evaluation.runner import _submit as _upload
from tests._script_runner import run_script as run_forked

REPO = Path(__file__).resolve().parents[2]
SETTINGS = ("EMAIL", "PARTICIPANT_ID", "UPLOAD_URL", "UPLOAD_TOKEN")


def new_token() -> str:
    """A distinctive token: found in an output only if it leaked."""
    return "tok_" + secrets.token_hex(16)


# ---------------------------------------------------------------------------- a local server


class Server:
    """A leaderboard stand-in. ``plan[path]``: what to do for each request in turn.

    An action is ``(status, json_body_or_None, headers)``, ``"close"`` (drop the connection
    without an answer) or ``"slow"`` (answer 200 only after the test ends). The last action of
    a path repeats. Every request is recorded: method, path, headers, body.
    """

    def __init__(self, plan: dict[str, list]) -> None:
        self.plan = {path: list(actions) for path, actions in plan.items()}
        self.requests: list[dict] = []
        self.release = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                server.requests.append({"method": self.command, "path": self.path,
                                        "headers": dict(self.headers), "body": body})
                actions = server.plan.get(self.path, [(404, {"detail": "no such path"}, {})])
                action = actions.pop(0) if len(actions) > 1 else actions[0]
                if action == "close":
                    self.close_connection = True
                    return
                if action == "slow":
                    server.release.wait(10)
                    action = (200, {"status": "late"}, {})
                status, payload, headers = action
                data = b"" if payload is None else (
                    payload if isinstance(payload, bytes) else json.dumps(payload).encode())
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stops reading at its bound on an answer's size

            do_POST = do_GET = _handle

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        # a short poll interval: shutdown() waits up to one interval
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,),
                                       daemon=True)

    def url(self, path: str = "/submit") -> str:
        return self.base + path

    def posts(self, path: str = "/submit") -> list[dict]:
        return [r for r in self.requests if r["method"] == "POST" and r["path"] == path]

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def ok(payload=None, status=200, **headers):
    return (status, payload, headers)


def receipt(**fields):
    """A leaderboard's receipt of a stored submission, with ``fields`` added."""
    return {"status": "accepted", "submission_id": 17, **fields}


# ---------------------------------------------------------------------------- runs


def workdir_with_submission(path: Path) -> Path:
    from evaluation import ChallengeDataset
    from tests._competition_files import write_competition

    path.mkdir(parents=True, exist_ok=True)
    # the runs are for a competition on the tiny data (the official board takes "lfm" runs)
    write_competition(path / "competition-tiny.toml", ChallengeDataset(scale="tiny"))
    # the checkout's files that make the model's fingerprint: a run of the repository's
    # submission.py in this process is then the same run, resumed
    for name in ("submission.py", "requirements.txt"):
        shutil.copy(REPO / name, path / name)
    shutil.copytree(REPO / "submission", path / "submission", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    return path


def clean_env(**extra: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for name in SETTINGS:
        env.pop(name, None)
    env.update(extra)
    return env


def run_script(workdir: Path, *args: str, env_file: str | bytes | None = None,
               env: dict | None = None) -> subprocess.CompletedProcess:
    """``python submission.py --scale tiny --competition competition-tiny.toml --no-progress
    ARGS`` in ``workdir``: a process of its own, forked from one that imported the third-party
    libraries once (``tests/_script_runner.py``)."""
    if env_file is not None:
        data = env_file if isinstance(env_file, bytes) else env_file.encode()
        (workdir / "upload.env").write_bytes(data)
    argv = ["--scale", "tiny", "--competition", "competition-tiny.toml", "--no-progress", *args]
    with tempfile.TemporaryDirectory() as logs:
        done = run_forked(workdir / "submission.py", argv, cwd=workdir, logs=Path(logs),
                          timeout=300, env=env or clean_env())
    assert done.exit_status is not None, f"submission.py {argv} ran past 300 s"
    return subprocess.CompletedProcess(argv, done.exit_status, done.stdout, done.stderr)


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A workdir whose results/ holds one finished, eligible run (saved with --upload, no URL)."""
    base = tmp_path_factory.getbasetemp()
    env = clean_env(EVALRS_CACHE_DIR=str(base / "evalrs-cache"),
                    RECLIST_META_DATA_FOLDER=str(base / ".reclist"))
    work = workdir_with_submission(tmp_path_factory.mktemp("finished"))
    proc = run_script(work, "--upload", env=env,
                      env_file="EMAIL=me@example.com\nPARTICIPANT_ID=team42\nUPLOAD_URL=\n")
    assert proc.returncode == 0, proc.stderr[-3000:]  # no URL: saved locally, as documented
    assert "saved locally" in proc.stdout
    (sub,) = (work / "results").glob("*/submission.json")
    assert json.loads(sub.read_text())["results"]["eligible_for_upload"] is True
    return work


@pytest.fixture
def work(finished, tmp_path) -> Path:
    """A copy of the finished run's workdir: a run there resumes and only aggregates."""
    dest = tmp_path / "work"
    shutil.copytree(finished, dest, ignore=shutil.ignore_patterns("upload.env", "__pycache__"))
    return dest


def submission_file(work: Path) -> Path:
    (path,) = (work / "results").glob("*/submission.json")
    return path


def assert_no_leak(secret: str, *outputs: str, root: Path | None = None) -> None:
    """``secret`` (and each half of it) is in no output and no file under ``root``."""
    pieces = [secret, secret[: len(secret) // 2], secret[len(secret) // 2:]]
    pieces = [p for p in pieces if len(p) >= 8]
    for text in outputs:
        for piece in pieces:
            assert piece not in text, f"{piece!r} leaked into an output"
    if root is not None:
        files = [p for p in root.rglob("*") if p.is_file()]
        assert files
        for path in files:
            data = path.read_bytes()
            for piece in pieces:
                assert piece.encode() not in data, f"{piece!r} leaked into {path}"


def run_main(submission_script, work: Path, monkeypatch, *args: str, env_file: str | bytes = "",
             **environ: str) -> int:
    """``submission.main`` in this process, on ``work``'s results, settings from ``env_file``
    and ``environ`` (the environment): what ``python submission.py`` exits with, without the
    start of an interpreter (the exit statuses as a process: ``run_script``'s tests)."""
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    settings = work / "upload.env"
    settings.write_bytes(env_file if isinstance(env_file, bytes) else env_file.encode())
    # started in ``work`` with the finished run's arguments: the same settings, the same run
    monkeypatch.chdir(work)
    return submission_script.main(["--scale", "tiny", "--competition",
                                   "competition-tiny.toml", "--no-progress",
                                   "--results-dir", str(work / "results"), "--env-file",
                                   str(settings), *args])


# ---------------------------------------------------------------------------- submission.py


def test_upload_success_prints_the_verdict_and_never_the_token(work):
    token = new_token()
    verdict = receipt(score=0.4321, rank=7, detail="accepted\x1b[31m", ignored="x")
    with Server({"/submit": [ok(verdict)]}) as server:
        proc = run_script(work, "--upload",
                          env_file=f"PARTICIPANT_ID=team42\nUPLOAD_URL={server.url()}\n"
                                   f"UPLOAD_TOKEN={token}\n")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (post,) = server.posts()
    assert post["headers"]["Authorization"] == f"Bearer {token}"
    # the predictions are sent, with submission.json (less its per-user values) as the claim
    assert post["headers"]["Content-Type"] == PREDICTIONS_MEDIA_TYPE
    assert post["body"] == submission_file(work).with_name(PREDICTIONS_FILE).read_bytes()
    sent = read_predictions(post["body"], max_bytes=1 << 30, max_inflated=1 << 30).claim
    saved = json.loads(submission_file(work).read_text())
    saved.pop("user_values", None)
    assert sent == saved and sent["participant_id"] == "team42"
    # one submission, one key: its run id
    assert post["headers"]["Idempotency-Key"] == saved["run_id"]
    assert "score: 0.4321" in proc.stdout and "rank: 7" in proc.stdout
    assert "accepted\\x1b[31m" in proc.stdout and "\x1b[31m" not in proc.stdout
    assert "ignored" not in proc.stdout
    assert_no_leak(token, proc.stdout, proc.stderr, root=work / "results")


def test_refused_upload_exits_3_and_keeps_the_submission(work, submission_script,
                                                         monkeypatch, capsys):
    token = new_token()
    with Server({"/submit": [ok({"detail": "unknown token"}, status=401)]}) as server:
        code = run_main(submission_script, work, monkeypatch, "--upload",
                        env_file=f"UPLOAD_URL={server.url()}\nUPLOAD_TOKEN={token}\n")
    out = capsys.readouterr()
    assert code == EXIT_UPLOAD_FAILED, out.err[-3000:]
    assert len(server.posts()) == 1  # a 4xx is final: no retry
    assert "HTTP 401" in out.out and "unknown token" in out.out
    # the submission this run saved (the finished run's, resumed) is named, to be sent again
    (path,) = [p for p in (work / "results").glob("*/submission.json") if str(p) in out.err]
    assert path.is_file() and "python -m evaluation submit" in out.err
    assert "Traceback" not in out.err
    assert_no_leak(token, out.out, out.err, root=work / "results")


def test_upload_of_a_run_that_is_not_eligible_exits_4_without_a_request(work, submission_script,
                                                                        monkeypatch, capsys):
    with Server({"/submit": [ok({"score": 1})]}) as server:
        code = run_main(submission_script, work, monkeypatch, "--upload", "--num-folds", "2",
                        "--limit", "20",
                        env_file=f"UPLOAD_URL={server.url()}\nUPLOAD_TOKEN={new_token()}\n")
    out = capsys.readouterr()
    assert code == EXIT_NOT_ELIGIBLE, out.err[-3000:]
    assert server.requests == []
    assert "not eligible" in out.err and "limit=20" in out.out
    assert len(list((work / "results").glob("*/submission.json"))) == 2  # this run's, saved


def test_a_model_that_raises_exits_1_with_its_own_traceback(tmp_path):
    work = workdir_with_submission(tmp_path / "w")
    (work / "submission" / "MyModel.py").write_text(
        "from evaluation import RecModel\n\n\n"
        "class MyModel(RecModel):\n"
        "    def __init__(self, items=None, top_k=100):\n"
        "        self.k = top_k\n\n"
        "    def train(self, train_df, **kwargs):\n"
        "        self.helper(len(train_df))\n\n"
        "    def helper(self, n):\n"
        "        raise ValueError(f'model-bug-{n > 0}')\n\n"
        "    def predict(self, user_ids):\n"
        "        raise AssertionError\n")
    proc = run_script(work, "--num-folds", "2", "--limit", "10")
    assert proc.returncode == EXIT_EXCEPTION
    err = proc.stderr
    assert "Traceback" in err and "ValueError: model-bug-True" in err
    assert "the model raised ValueError" in err
    assert "in train" in err and "in helper" in err  # the model's frames...
    assert "evaluation/runner" not in err and "submission.py" not in err  # ...not the harness's


@pytest.mark.parametrize("bad, kind, position", [
    (" ", "a space or tab", 9),
    ("\n", "a line break", 9),
    ("\x07", "a control character", 9),
    ("\u00e9", "a non-ASCII character", 9),
])
def test_a_malformed_token_is_rejected_before_any_request(work, submission_script,
                                                          monkeypatch, capsys,
                                                         bad, kind, position):
    token = "Tk" + secrets.token_hex(3) + bad + secrets.token_hex(8)
    with Server({"/submit": [ok({"score": 1})]}) as server:
        code = run_main(submission_script, work, monkeypatch, "--upload",
                        env_file=f"UPLOAD_URL={server.url()}\n", UPLOAD_TOKEN=token)
    out = capsys.readouterr()
    assert code == EXIT_BAD_INPUT
    assert server.requests == []
    assert f"has {kind} at position {position}" in out.err
    assert f"a {len(token)}-character value, not shown" in out.err
    assert "from the environment" in out.err
    assert "EvalRS run" not in out.out  # rejected before the run, not after it
    for piece in token.split(bad):
        assert piece not in out.out + out.err


def test_credentials_in_the_url_are_rejected_without_showing_them(work, submission_script,
                                                                  monkeypatch,
                                                                  capsys):
    password = new_token()
    with Server({"/submit": [ok({"score": 1})]}) as server:
        url = server.url().replace("http://", f"http://alice:{password}@")
        status = run_main(submission_script, work, monkeypatch, "--upload",
                          env_file=f"UPLOAD_URL={url}\n")
    out = capsys.readouterr()
    assert status == EXIT_BAD_INPUT
    assert server.requests == []
    assert "contains credentials" in out.err and server.url() in out.err
    assert "alice" not in out.err + out.out
    assert_no_leak(password, out.out, out.err)


@pytest.mark.parametrize("status, retried", [(500, False), (502, True)])
def test_server_errors_exit_3_and_only_gateway_errors_are_retried(work, submission_script,
                                                                  monkeypatch,
                                                                  capsys, status, retried):
    waits = []
    monkeypatch.setattr(_http, "_sleep", waits.append)
    token = new_token()
    with Server({"/submit": [ok({"error": f"broken {status}"}, status=status)]}) as server:
        code = run_main(submission_script, work, monkeypatch, "--upload",
                        env_file=f"UPLOAD_URL={server.url()}\nUPLOAD_TOKEN={token}\n")
    out = capsys.readouterr()
    assert code == EXIT_UPLOAD_FAILED
    if retried:
        assert len(server.posts()) == 4 and waits == [0.5, 1.0, 2.0]
        keys = {p["headers"]["Idempotency-Key"] for p in server.posts()}
        assert len(keys) == 1  # every attempt is the same submission
    else:
        assert len(server.posts()) == 1 and waits == []
    assert f"HTTP {status}" in out.out and f"broken {status}" in out.out
    assert_no_leak(token, out.out, out.err, root=work / "results")


def test_a_redirect_is_a_failure_and_is_not_followed(work, submission_script, monkeypatch, capsys):
    token = new_token()
    with Server({"/submit": [ok(None, status=302, Location="/elsewhere")],
                 "/elsewhere": [ok({"score": 1})]}) as server:
        code = run_main(submission_script, work, monkeypatch, "--upload",
                        env_file=f"UPLOAD_URL={server.url()}\nUPLOAD_TOKEN={token}\n")
    out = capsys.readouterr()
    assert code == EXIT_UPLOAD_FAILED
    assert [r["path"] for r in server.requests] == ["/submit"]  # nothing went to /elsewhere
    assert "HTTP 302 redirect to /elsewhere" in out.out
    assert_no_leak(token, out.out, out.err)


def test_a_slow_server_hits_the_read_timeout(work, submission_script, monkeypatch, capsys):
    monkeypatch.setattr(_http, "LIMITS", Limits(connect=2.0, read=0.3))
    with Server({"/submit": ["slow"]}) as server:
        code = run_main(submission_script, work, monkeypatch, "--upload",
                        env_file=f"UPLOAD_URL={server.url()}\nUPLOAD_TOKEN={new_token()}\n")
        posts = len(server.posts())
    out = capsys.readouterr()
    assert code == EXIT_UPLOAD_FAILED
    assert posts == 1  # a read timeout is not retried: the server may still record it
    assert "no answer within 0.3 s" in out.out


def test_a_dropped_connection_is_retried_then_fails(work, submission_script, monkeypatch, capsys):
    waits = []
    monkeypatch.setattr(_http, "_sleep", waits.append)
    with Server({"/submit": ["close"]}) as server:
        code = run_main(submission_script, work, monkeypatch, "--upload",
                        env_file=f"UPLOAD_URL={server.url()}\n")
    out = capsys.readouterr()
    assert code == EXIT_UPLOAD_FAILED
    assert len(server.posts()) == 4 and waits == [0.5, 1.0, 2.0]
    assert "failed after 4 attempts" in out.out and "RemoteDisconnected" in out.out


def test_503_then_200_is_retried_and_succeeds(work, submission_script, monkeypatch, capsys):
    waits = []
    monkeypatch.setattr(_http, "_sleep", waits.append)
    with Server({"/submit": [ok({"detail": "busy"}, status=503), ok(receipt(rank=3))]}) as server:
        code = run_main(submission_script, work, monkeypatch, "--upload",
                        env_file=f"UPLOAD_URL={server.url()}\n")
    out = capsys.readouterr()
    assert code == 0
    posts = server.posts()
    assert len(posts) == 2 and waits == [0.5]
    assert posts[0]["headers"]["Idempotency-Key"] == posts[1]["headers"]["Idempotency-Key"]
    assert posts[0]["body"] == posts[1]["body"]
    assert "Authorization" not in posts[0]["headers"]  # no token configured: none sent
    assert "HTTP 503; retrying in 0.5 s (attempt 2 of 4)" in out.out
    assert "rank: 3" in out.out


# ---------------------------------------------------------------------------- upload.env


def test_a_broken_upload_env_matters_only_with_upload(work, submission_script, monkeypatch, capsys):
    token = new_token()
    latin1 = f"EMAIL=me@example.com\nUPLOAD_TOKEN={token}caf\xe9\n".encode("latin-1")
    # no --upload: the file is not read
    assert run_main(submission_script, work, monkeypatch, env_file=latin1) == 0, \
        capsys.readouterr().err
    code = run_main(submission_script, work, monkeypatch, "--upload", env_file=latin1)
    out = capsys.readouterr()
    assert code == EXIT_BAD_INPUT
    assert "upload.env is not UTF-8 text: line 2" in out.err
    assert_no_leak(token, out.out, out.err)


def test_an_unparsable_upload_env_line_is_an_error_with_upload(work, submission_script, monkeypatch,
                                                              capsys):
    token = new_token()
    broken = f"# settings\n\nEMAIL=me@example.com\nUPLOAD_TOKEN=\"{token}\nUPLOAD_URL=\n"
    assert run_main(submission_script, work, monkeypatch, env_file=broken) == 0
    assert run_main(submission_script, work, monkeypatch, "--upload",
                    env_file=broken) == EXIT_BAD_INPUT
    out = capsys.readouterr()
    assert f"{work / 'upload.env'} line 4 cannot be parsed" in out.err
    assert_no_leak(token, out.out, out.err)


def test_environment_variables_win_over_upload_env(tmp_path):
    env_file = tmp_path / "upload.env"
    env_file.write_text("EMAIL=file@example.com\nPARTICIPANT_ID=file-team\n"
                        "UPLOAD_URL=https://file.example.org/submit\n")
    settings = _upload.load_settings(env_file, {"EMAIL": "env@example.com", "UPLOAD_URL": ""})
    assert settings.email == "env@example.com"  # set in the environment: wins
    assert settings.participant_id == "file-team"  # only in the file
    assert settings.url is None  # set but empty in the environment: wins, as with dotenv
    assert _upload.load_settings(tmp_path / "missing.env", {}) == _upload.UploadSettings()


def test_read_env_file_line_numbers(tmp_path):
    path = tmp_path / "u.env"
    path.write_text("A=1\n\n\n  not a setting\n")
    with pytest.raises(ConfigError, match=r"u\.env line 4 cannot be parsed"):
        _upload.read_env_file(path)
    path.write_bytes(b"\xef\xbb\xbfA=1\nB='x y'\nexport C=${A}2\n")  # a BOM is fine
    assert _upload.read_env_file(path) == {"A": "1", "B": "x y", "C": "12"}
    path.write_bytes(b"A=1\nB=ok\nC=\xff\n")
    with pytest.raises(ConfigError, match=r"line 3, byte 3 of the line \(byte 12 of the file\)"):
        _upload.read_env_file(path)


# ------------------------------------------------------------- python -m evaluation submit


def test_submit_command_success_as_a_process(work):
    path = submission_file(work)
    token = new_token()
    (work / "upload.env").write_text("UPLOAD_URL=https://not.this.one.example/\n")
    with Server({"/submit": [ok(receipt(leaderboard_score=0.5, rank=1))]}) as server:
        proc = subprocess.run(  # ./upload.env is read; the environment wins over it
            [sys.executable, "-m", "evaluation", "submit", str(path)],
            cwd=work, env=clean_env(UPLOAD_URL=server.url(), UPLOAD_TOKEN=token),
            capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (post,) = server.posts()
    assert post["body"] == path.with_name(PREDICTIONS_FILE).read_bytes()  # as saved
    assert post["headers"]["Authorization"] == f"Bearer {token}"
    assert "leaderboard_score: 0.5" in proc.stdout and "rank: 1" in proc.stdout
    assert_no_leak(token, proc.stdout, proc.stderr, root=work / "results")


def test_submit_command_refused_missing_and_not_eligible(work, tmp_path, monkeypatch, capsys):
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)
    path = submission_file(work)
    env_file = tmp_path / "upload.env"
    with Server({"/submit": [ok({"detail": "duplicate submission"}, status=409)]}) as server:
        env_file.write_text(f"UPLOAD_URL={server.url()}\n")
        refused = cli_main(["submit", str(path), "--env-file", str(env_file)])
        err = capsys.readouterr().err
        assert refused == EXIT_UPLOAD_FAILED
        assert "HTTP 409" in err and "duplicate submission" in err
        assert f"still at {path}" in err
        missing = cli_main(["submit", str(tmp_path / "nope.json"), "--env-file", str(env_file)])
        assert missing == EXIT_BAD_INPUT and "nope.json not found" in capsys.readouterr().err
        data = json.loads(path.read_text())
        data["results"].update(eligible_for_upload=False, not_eligible_because=["limit=5"])
        ineligible = tmp_path / "ineligible.json"
        ineligible.write_text(json.dumps(data))
        code = cli_main(["submit", str(ineligible), "--env-file", str(env_file)])
        assert code == EXIT_NOT_ELIGIBLE and "limit=5" in capsys.readouterr().err
        env_file.write_text("UPLOAD_URL=\n")
        assert cli_main(["submit", str(path), "--env-file", str(env_file)]) == EXIT_BAD_INPUT
        assert "UPLOAD_URL is not set" in capsys.readouterr().err
        gone = tmp_path / "gone.env"
        assert cli_main(["submit", str(path), "--env-file", str(gone)]) == EXIT_BAD_INPUT
        assert f"settings file {gone} not found" in capsys.readouterr().err
        assert len(server.posts()) == 1  # only the first call got as far as a request


# ---------------------------------------------------------------------------- the module


def test_check_url_rules():
    assert check_url("https://lb.example.org/submit") == "https://lb.example.org/submit"
    for url, message in [("ftp://lb.example.org/x", "scheme 'ftp'"),
                         ("https://user:pw@lb.example.org/x", "contains credentials"),
                         ("https:///x", "no valid host"),
                         ("https://lb.example.org:99999/x", "no valid host"),
                         ("https://lb.example.org/ x", "spaces or control characters")]:
        with pytest.raises(ConfigError, match=message) as info:
            check_url(url)
        assert "pw" not in str(info.value)
    assert display_url("https://u:p@h:8/a?token=t#f") == "https://h:8/a?..."


def test_clean_escapes_bounds_and_scrubs():
    assert clean("a\x1b[2Jb\u202ec\\d") == "a\\x1b[2Jb\\u202ec\\\\d"
    assert clean("SECRET in here", token="SECRET") == "<token> in here"
    assert clean("x" * 1000, limit=10) == "x" * 10 + "... (1000 characters, cut)"


def test_a_server_that_echoes_the_token_or_sends_a_huge_answer(monkeypatch):
    token = new_token()
    huge = {"detail": f"bad token {token} " + "y" * 100_000}
    with Server({"/submit": [ok(huge, status=400)]}) as server:
        with pytest.raises(UploadError) as info:
            _upload.post(server.url(), {"run_id": "m-1", "x": 1}, token=token)
    message = str(info.value)
    assert token not in message and "bad token <token>" in message
    assert len(message) < 1000


def test_post_retries_connection_refused_then_gives_up():
    with Server({}) as server:
        url = server.url()
    waits = []  # the server is gone: every attempt is refused
    with pytest.raises(UploadError, match="failed after 3 attempts.*Connection refused"):
        _upload.post(url, {"run_id": "m-1"}, limits=Limits(retry_waits=(0.1, 0.2)),
                     sleep=waits.append)
    assert waits == [0.1, 0.2]


def test_body_and_key():
    body, key = _upload.body_and_key({"b": 1.5, "a": [1, None], "run_id": "M-1"}, "M-1")
    assert body == b'{"a":[1,null],"b":1.5,"run_id":"M-1"}'
    assert key == "M-1"
    with pytest.raises(ConfigError, match="not a run id"):
        _upload.body_and_key({}, "x\r\nInjected: 1")
    with pytest.raises(DataError, match="NaN and infinity must be null"):
        _upload.body_and_key({"score": float("nan")}, "M-1")


def test_exit_statuses_of_guarded(capsys):
    def interrupted():
        raise KeyboardInterrupt

    def upload_failed():
        raise UploadError("refused")

    assert guarded(interrupted) == EXIT_INTERRUPTED
    assert guarded(upload_failed) == EXIT_UPLOAD_FAILED
    assert guarded(lambda: 0) == 0
    assert "error: refused" in capsys.readouterr().err


# ---------------------------------------------------------------------------- receipts

LOGIN_PAGE = (b"<!doctype html><html><body><form action=/login>Sign in to continue"
              b"</form></body></html>")


@pytest.mark.parametrize("answer, shown", [
    (ok(LOGIN_PAGE), "Sign in to continue"),
    (ok({"status": "rejected", "reason": "nope"}), "status: rejected"),
    (ok({"status": "accepted"}, status=201), "status: accepted"),  # no submission id
    (ok({"status": "accepted", "submission_id": "7"}), "status: accepted"),
    (ok(None, status=204), "not the leaderboard's receipt"),
])
def test_a_2xx_that_is_not_a_receipt_exits_3_and_shows_the_answer(work, submission_script,
                                                                  monkeypatch,
                                                                    capsys, answer, shown):
    token = new_token()
    with Server({"/submit": [answer]}) as server:
        code = run_main(submission_script, work, monkeypatch, "--upload",
                        env_file=f"UPLOAD_URL={server.url()}\nUPLOAD_TOKEN={token}\n")
    out = capsys.readouterr()
    assert code == 3, out.out + out.err
    text = out.out + out.err
    assert "not the leaderboard's receipt" in text and shown in text
    assert "uploaded to" not in text and "The submission is saved at" in text
    assert_no_leak(token, out.out, out.err)


def test_a_receipt_echoing_the_token_is_shown_scrubbed(work, submission_script,
                                                       monkeypatch, capsys):
    token = new_token()
    with Server({"/submit": [ok(f"<html>hello {token}</html>".encode())]}) as server:
        code = run_main(submission_script, work, monkeypatch, "--upload",
                        env_file=f"UPLOAD_URL={server.url()}\nUPLOAD_TOKEN={token}\n")
    out = capsys.readouterr()
    assert code == 3 and "hello <token>" in out.out + out.err
    assert_no_leak(token, out.out, out.err)


@pytest.mark.parametrize("status", ["accepted", "duplicate"])
def test_a_receipt_accepted_or_duplicate_is_a_success(work, submission_script, monkeypatch, capsys,
                                                      status):
    answer = {"status": status, "submission_id": 3, "rank": 2}
    with Server({"/submit": [ok(answer, status=201 if status == "accepted" else 200)]}) \
            as server:
        code = run_main(submission_script, work, monkeypatch, "--upload",
                        env_file=f"UPLOAD_URL={server.url()}\n")
    out = capsys.readouterr()
    assert code == 0, out.out + out.err
    assert f"status: {status}" in out.out and "warning" not in out.out


@pytest.mark.parametrize("url, warned", [
    ("http://leaderboard.example.org/api/v1/submissions", True),
    ("http://10.0.0.5:8000/api/v1/submissions", True),
    ("http://127.0.0.1:8000/api/v1/submissions", False),
    ("http://127.8.9.10/x", False),
    ("http://[::1]:8000/x", False),
    ("http://localhost:8000/x", False),
    ("https://leaderboard.example.org/api/v1/submissions", False),
])
def test_plain_http_to_another_host_is_warned_about(url, warned):
    warning = _upload.plain_http_warning(url)
    assert (warning is not None) == warned
    if warned:
        assert "unencrypted" in warning and "https://" in warning


def test_the_warning_is_printed_before_an_upload(monkeypatch):
    lines = []
    # the request itself fails fast (nothing listens); the warning came first
    with pytest.raises(UploadError):
        _upload.post("http://leaderboard.invalid:9/api", {"run_id": "r1"}, log=lines.append,
                     limits=Limits(connect=0.5, read=0.5, deadline=1.0, retry_waits=()))
    assert lines and lines[0].startswith("warning: UPLOAD_URL http://leaderboard.invalid:9/api")


def test_upload_deadline_comes_from_the_environment():
    assert _upload.upload_limits({}) is None  # the client's default, LIMITS
    limits = _upload.upload_limits({"UPLOAD_DEADLINE": " 12.5 "})
    assert limits is not None and limits.deadline == 12.5
    for bad in ("0", "-3", "nan", "inf", "soon"):
        with pytest.raises(ConfigError, match=f"UPLOAD_DEADLINE='{bad}' is not a number"):
            _upload.upload_limits({"UPLOAD_DEADLINE": bad})


def test_post_takes_its_deadline_from_the_environment(monkeypatch):
    used = []

    class Recorded(_upload.HttpClient):
        def send(self, *args, **kwargs):
            used.append(self.limits)
            raise UploadError("not sent")

    monkeypatch.setattr(_upload, "HttpClient", Recorded)
    monkeypatch.setenv("UPLOAD_DEADLINE", "7")
    with pytest.raises(UploadError, match="not sent"):
        _upload.post("https://example.org/submit", {"run_id": "r1"}, log=lambda m: None)
    assert used[0].deadline == 7.0
