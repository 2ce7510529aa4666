"""``python -m evaluation reproduce --many``: the batch file's checks, and whole batches of three
submissions (one of them not reproducible) against a leaderboard that follows the organizer
endpoints' contract, in this process (as tasks of a local Ray with 2 CPUs in
tests/runner/test_ray_reproduce.py, beside the runner's Ray tests: they share one Ray).

As in tests/reproduce/test_reproduce.py, the reproductions run the worker with this test's
interpreter (``--env`` names this test's environment) in checkouts that link this repository's
``evaluation`` package: nothing is downloaded.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from evaluation.cli import main
from evaluation.errors import ConfigError, UploadError
from evaluation.reproduce import (
    BatchSettings,
    LeaderboardClient,
    read_batch,
    reproduce_many,
)
from tests.reproduce._batches import (
    ENV,
    PRIVATE_SEED,
    TOKEN,
    batch_checkouts,
    check_batch,
    run_batch,
)
from tests.reproduce._fakes import fake_leaderboard, make_checkout

# --------------------------------------------------------------------------- the batch file


def _csv(tmp_path: Path, text: str, name: str = "batch.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_valid_batch_file(tmp_path):
    a = make_checkout(tmp_path / "teams" / "a")
    b = make_checkout(tmp_path / "elsewhere" / "b")
    path = _csv(tmp_path, f"\ufeffSubmission, Checkout ,private\n17,teams/a,YES\n\n"
                          f"23,{b},\n5,teams/a/../a,no\n")
    rows = read_batch(path)
    assert [(r.submission, r.checkout, r.private, r.line) for r in rows] == [
        (17, a.resolve(), True, 2), (23, b.resolve(), None, 4), (5, a.resolve(), False, 5)]
    # without the private column, every row follows --private
    path = _csv(tmp_path, "checkout,submission\nteams/a,3\n")
    assert [(r.submission, r.private) for r in read_batch(path)] == [(3, None)]


@pytest.mark.parametrize("text, message", [
    ("", "the file is empty; write the header 'submission,checkout[,private]'"),
    ("submission,checkout\n", "the header is there but no submission follows"),
    ("submission,path\n1,teams/a\n", "line 1: no 'checkout' column (the header is "
                                     "'submission,path')"),
    ("id,checkout\n1,teams/a\n", "line 1: no 'submission' column"),
    ("submission,checkout\n1,teams/a\nx7,teams/a\n",
     "line 3, column submission: 'x7' is not a submission id; give the positive integer"),
    ("submission,checkout\n0,teams/a\n", "line 2, column submission: '0' is not a submission"),
    ("submission,checkout\n-4,teams/a\n", "line 2, column submission: '-4' is not"),
    ("submission,checkout\n1,teams/a\n2,teams/a\n1,teams/a\n",
     "line 4, column submission: 1 is already on line 2; list each submission once"),
    ("submission,checkout\n1,teams/none\n",
     "line 2, column checkout: 'teams/none' is not a folder"),
    ("submission,checkout\n1,\n", "line 2, column checkout: empty"),
    ("submission,checkout\n1,teams\n", "line 2, column checkout: 'teams' has no "
                                       "submission/MyModel.py"),
    ("submission,checkout,private\n1,teams/a,maybe\n",
     "line 2, column private: 'maybe' is neither a yes nor a no"),
])
def test_batch_file_errors_name_the_line_column_value_and_fix(tmp_path, text, message):
    make_checkout(tmp_path / "teams" / "a")
    path = _csv(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        read_batch(path)
    assert str(err.value).startswith(f"--many {path}")
    assert message in str(err.value)


def test_a_missing_batch_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot be read .*FileNotFoundError"):
        read_batch(tmp_path / "absent.csv")


def test_command_line_argument_errors(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    checkout = make_checkout(tmp_path / "teams" / "a")
    batch = _csv(tmp_path, "submission,checkout,private\n1,teams/a,\n2,teams/a,yes\n")
    token = tmp_path / "admin.token"
    token.write_text(TOKEN)
    seed = tmp_path / "private.seed"
    seed.write_text(f"{PRIVATE_SEED}\n")
    # the server is never called: every case fails before (the port is closed)
    base = ["reproduce", "--server", "http://127.0.0.1:9", "--admin-token-file", str(token)]
    cases = [
        ([str(checkout), "--many", str(batch)], "CHECKOUT", "exclude each other"),
        ([], "", "give a CHECKOUT and its --submission ID, or --many CSV"),
        (["--many", str(batch), "--submission", "1"], "", "--submission does not go with "
                                                          "--many"),
        (["--many", str(batch), "--keep-env"], "", "--keep-env does not go with --many"),
        ([str(checkout), "--submission", "1", "--jobs", "2"], "", "--jobs goes with --many"),
        (["--many", str(batch), "--jobs", "0"], "", "--jobs 0: give at least 1"),
        (["--many", str(batch), "--executor", "ray", "--jobs", "2"], "",
         "--jobs goes with --executor local"),
        (["--many", str(batch), "--ray-num-cpus", "0"], "", "--ray-num-cpus 0.0"),
        (["--many", str(batch), "--timeout", "-1"], "", "--timeout -1.0"),
        (["--many", str(batch)], "", "1 row(s) evaluate the private folds (first: line 3); "
                                     "give --private-seed-file"),
        (["--many", str(batch), "--private"], "", "2 row(s) evaluate the private folds"),
        (["--many", str(_csv(tmp_path, "submission,checkout\n1,teams/a\n", "public.csv")),
          "--private-seed-file", str(seed)], "", "no row of --many"),
        (["--many", str(tmp_path / "none.csv")], "", "cannot be read"),
    ]
    for argv, _, message in cases:
        assert main([*base, *argv]) == 2, message
        assert message in capsys.readouterr().err
    # a missing Ray is a bad argument too, with the way to install it
    batch = tmp_path / "public.csv"
    monkeypatch.setitem(sys.modules, "ray", None)
    assert main([*base, "--many", str(batch), "--executor", "ray"]) == 2
    err = capsys.readouterr().err
    assert "--executor ray needs Ray" in err and "evalrs-harness[ray]" in err


# --------------------------------------------------------------------------- whole batches


@pytest.fixture(scope="module")
def checkouts(tmp_path_factory):
    """The batch's three participants' folders beside its batch file (its helper module)."""
    return batch_checkouts(tmp_path_factory.mktemp("batch"))


def test_many_in_process(checkouts, upload, capsys, monkeypatch):
    monkeypatch.chdir(checkouts)
    status, report, sent, output = run_batch(checkouts, upload, capsys, "--jobs", "2")
    check_batch(checkouts, upload, status, report, sent, output)
    assert report["executor"] == "local"


@pytest.mark.slow  # builds a virtual environment (about 5 s on a quiet machine)
def test_a_row_that_cannot_be_done_does_not_stop_the_batch(checkouts, upload, capsys,
                                                           monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    # 14: unknown to the server; 15: requirements that cannot be installed; 13: the changed
    # code (not reproduced, and quick: the run stops at the fingerprint)
    broken = make_checkout(tmp_path / "broken")
    # a package no index has (a path would be refused before any installer runs)
    (broken / "requirements.txt").write_text("no-such-folder==0.0.0\n")
    batch = tmp_path / "batch.csv"
    batch.write_text(f"submission,checkout\n14,{checkouts / 'teams' / 'alpha'}\n"
                     f"15,{broken}\n13,{checkouts / 'teams' / 'gamma'}\n")
    report_path = tmp_path / "record" / "batch.json"
    # the environments: 15's is built for real (and fails at once, before any download); the
    # others stand for one built earlier, this test's environment (nothing is downloaded)
    from evaluation.reproduce import _many

    def prepare_env(checkout, cache_dir, **options):
        if (checkout / "requirements.txt").is_file():
            return real_prepare_env(checkout, cache_dir, **options)
        return ENV

    real_prepare_env = _many.prepare_env
    monkeypatch.setattr(_many, "prepare_env", prepare_env)
    with fake_leaderboard(TOKEN) as (url, board):
        board.payloads[13] = board.payloads[15] = upload
        status = main(["reproduce", "--many", str(batch), "--server", url,
                       "--admin-token-file", str(checkouts / "admin.token"),
                       "--env-cache", str(tmp_path / "envs"), "--report", str(report_path)])
    output = "".join(capsys.readouterr())
    assert status == 3, output
    rows = {r["submission"]: r for r in json.loads(report_path.read_text())["rows"]}
    assert rows[14]["verdict"] == "error" and "HTTP 404" in rows[14]["reasons"][0]
    assert rows[14]["log"] == "" and rows[14]["fingerprint_ok"] is None  # nothing was run
    assert rows[15]["verdict"] == "error"
    assert "installing the participant's and the harness's requirements failed" \
        in rows[15]["reasons"][0]
    env_log = tmp_path / "reproduce-logs" / "reproduce-15.log.env"
    assert "no-such-folder" in env_log.read_text()
    assert rows[13]["verdict"] == "not reproduced" and rows[13]["fingerprint_ok"] is False
    assert set(board.reports) == {13}  # no verdict for the rows in error
    assert "error" in output and "HTTP 404" in output


def test_a_verdict_the_server_refuses_is_an_error(checkouts, upload, tmp_path):
    class Refusing(LeaderboardClient):
        def send_reproduction(self, submission_id, report):
            raise UploadError("POST ...: the server refused: HTTP 409 (phase closed).")

    rows = read_batch(checkouts / "batch.csv")[2:]  # 13: quick, stops at the fingerprint
    with fake_leaderboard(TOKEN) as (url, board):
        board.payloads[13] = upload
        settings = BatchSettings(log_dir=tmp_path / "logs", env_cache=tmp_path / "envs",
                                 env=ENV, timeout=300)
        (result,) = reproduce_many(rows, Refusing(url, TOKEN), settings)
    assert result.verdict == "error" and result.fingerprint_ok is False
    assert result.reasons[0] == ("the run found 'not reproduced' but the verdict was not "
                                 "sent: POST ...: the server refused: HTTP 409 (phase closed).")
    assert board.reports == {}
