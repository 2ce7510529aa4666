"""``python -m evaluation reproduce``: the comparison by hand, the limits, the HTTP client, and
whole reproductions against a leaderboard that follows the organizer endpoints' contract.

The reproductions here run the worker with this test's interpreter in a checkout that links
this repository's ``evaluation`` package (``make_checkout(link_harness=True)``): the stand-in
for a built environment (tests/reproduce/test_live.py builds a real one).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluation import ChallengeDataset, EvalRSRunner
from evaluation.challenge import (
    GATED_SCORE,
    LEADERBOARD_TESTS,
    decode_user_values,
    load_references,
    phase2_score,
)
from evaluation.cli import main
from evaluation.contract import Limits, _http
from evaluation.errors import ConfigError, UploadError
from evaluation.reproduce import (
    EQUAL_TOLERANCE,
    LeaderboardClient,
    child_environment,
    classify,
    compare,
    env_key,
    fingerprint_differences,
    log_tail,
    read_private_seed,
    reproduce,
    vendored_warning,
    worker_config,
)
from tests.reproduce._fakes import (
    fake_leaderboard,
    make_checkout,
    template_model_with,
)

TOKEN = "organizer-" + "x" * 43
PRIVATE_SEED = 731_209_468  # nine digits, which a number of a report all but never holds by chance


# --------------------------------------------------------------------------- comparison


def test_classify_by_hand():
    interval = [0.40, 0.50]
    assert classify(0.45, 0.45, interval) == ("equal", 0.0)
    status, diff = classify(0.45, 0.45 + 0.5e-9, interval)
    assert status == "equal" and abs(diff - 0.5e-9) < 1e-15
    # 1e-9 is the bound: twice it is no longer equal, but inside the interval
    assert classify(0.45, 0.45 + 2e-9, interval)[0] == "within"
    assert classify(0.45, 0.41, interval) == ("within", pytest.approx(-0.04))
    assert classify(0.45, 0.50, interval)[0] == "within"  # the bounds are inside
    assert classify(0.45, 0.39, interval) == ("outside", pytest.approx(-0.06))
    assert classify(0.45, 0.46, None)[0] == "outside"  # no interval: only equal passes
    assert classify(0.45, 0.46, [0.4, "x"])[0] == "outside"
    assert classify(0.45, None, interval) == ("missing", None)
    assert classify(float("nan"), 0.45, interval) == ("missing", None)
    assert classify(True, 1.0, interval) == ("missing", None)  # a bool is not a number
    assert EQUAL_TOLERANCE == 1e-9


def _results(values: dict[int, dict[str, float]], intervals: dict[str, list[float]],
             code="c" * 64, params="p" * 64) -> dict:
    return {"folds": [{"fold": f, "tests": t} for f, t in values.items()],
            "confidence_intervals": {"tests": intervals},
            "model": {"fingerprint": {"sha256": "s", "code": {"sha256": code},
                                      "params": {"sha256": params}}}}


def test_compare_by_hand():
    uploaded = _results({0: {"A": 0.5, "B": -0.2}, 1: {"A": 0.7, "B": -0.3}},
                        {"A": [0.4, 0.8], "B": [-0.35, -0.1]})
    same = compare(uploaded, copy.deepcopy(uploaded), ["A", "B"])
    assert same.verdict == "reproduced" and same.reasons == [] and same.fingerprint_matches
    assert [(r.fold, r.test, r.status) for r in same.rows] == [
        (0, "A", "equal"), (0, "B", "equal"), (1, "A", "equal"), (1, "B", "equal")]

    near = _results({0: {"A": 0.55, "B": -0.2}, 1: {"A": 0.7, "B": -0.3}},
                    {"A": [0.0, 1.0], "B": [0.0, 1.0]})
    result = compare(uploaded, near, ["A", "B"])
    assert result.verdict == "reproduced"
    assert result.rows[0].status == "within" and result.rows[0].difference == pytest.approx(0.05)
    assert result.rows[0].as_json() == {"test": "A", "fold": 0, "uploaded": 0.5,
                                        "reproduced": 0.55, "difference": pytest.approx(0.05),
                                        "within": True}

    far = _results({0: {"A": 0.5, "B": -0.2}, 1: {"A": 0.7, "B": -0.5}}, {})
    result = compare(uploaded, far, ["A", "B"])
    assert result.verdict == "not reproduced"
    assert [r.status for r in result.rows] == ["equal", "equal", "equal", "outside"]
    assert result.rows[3].as_json()["within"] is False
    assert "1 of 4 values" in result.reasons[0] and "B on fold 1 (outside)" in result.reasons[0]

    # a test missing from the reproduction, and a test outside the leaderboard ones is ignored
    missing = _results({0: {"A": 0.5}, 1: {"A": 0.7, "B": -0.3, "C": 9.0}}, {})
    result = compare(uploaded, missing, ["A", "B"])
    assert [r.status for r in result.rows] == ["equal", "missing", "equal", "equal"]


def test_fingerprint_mismatch_wins_over_equal_numbers():
    uploaded = _results({0: {"A": 0.5}}, {"A": [0.4, 0.6]})
    other_code = _results({0: {"A": 0.5}}, {"A": [0.4, 0.6]}, code="d" * 64)
    result = compare(uploaded, other_code, ["A"])
    assert result.rows[0].status == "equal"
    assert result.verdict == "not reproduced" and not result.fingerprint_matches
    assert result.reasons == ["the model code differs from the upload's (sha256 cccccccccccc... "
                              "uploaded, dddddddddddd... in the checkout)"]
    other_params = _results({0: {"A": 0.5}}, {}, params="q" * 64)
    assert fingerprint_differences(uploaded["model"]["fingerprint"],
                                   other_params["model"]["fingerprint"])[0].startswith(
        "the model parameters differ")
    # an upload without the digests cannot be shown to come from the checkout
    assert fingerprint_differences({"sha256": "s"}, other_code["model"]["fingerprint"]) == [
        "the upload records no model code digest (results.model.fingerprint.code.sha256)",
        "the upload records no model parameters digest (results.model.fingerprint.params."
        "sha256)"]


def test_env_key_changes_with_each_part():
    base = env_key(b"numpy\n", "0.1.0", "3.11.7", "h")
    assert len(base) == 64 and base == env_key(b"numpy\n", "0.1.0", "3.11.7", "h")
    others = {env_key(b"numpy==2\n", "0.1.0", "3.11.7", "h"),
              env_key(b"numpy\n", "0.1.1", "3.11.7", "h"),
              env_key(b"numpy\n", "0.1.0", "3.12.0", "h"),
              env_key(b"numpy\n", "0.1.0", "3.11.7", "i")}
    assert len(others) == 4 and base not in others


# --------------------------------------------------------------------------- the log's tail


def test_log_tail_is_bounded_in_bytes(tmp_path):
    path = tmp_path / "log"
    path.write_text("a" * 100 + "é" * 100, encoding="utf-8")
    tail = log_tail(path, 51)
    assert len(tail.encode("utf-8")) <= 51 and tail.endswith("é" * 25)
    assert log_tail(tmp_path / "absent", 10) == ""


# --------------------------------------------------------------------------- client


def test_client_against_a_contract_server(tmp_path, monkeypatch):
    with fake_leaderboard(TOKEN) as (url, board):
        board.payloads[3] = {"results": {"folds": []}}
        client = LeaderboardClient(url, TOKEN)
        assert client.submission(3)["payload_url"] == "/api/v1/submissions/3/payload"
        assert client.payload(3) == {"results": {"folds": []}}
        answer = client.send_reproduction(3, {"verdict": "reproduced"})
        assert answer == {"status": "recorded", "submission_id": 3, "verdict": "reproduced"}
        assert board.reports[3] == [{"verdict": "reproduced"}]
        assert all(auth == f"Bearer {TOKEN}" for _, _, auth in board.requests)

        wrong = LeaderboardClient(url, "wrong-" + "y" * 43)
        with pytest.raises(UploadError) as err:
            wrong.payload(3)
        assert "HTTP 404" in str(err.value) and "wrong-" not in str(err.value)
        with pytest.raises(UploadError, match="HTTP 401.*--admin-token-file"):
            wrong.submission(3)
        with pytest.raises(UploadError, match="HTTP 404"):
            client.payload(99)
        assert TOKEN not in repr(client)
    # the server is gone: each retry's pause is taken (recorded here instead of waited out)
    waits: list[float] = []
    monkeypatch.setattr(_http, "_sleep", waits.append)
    with pytest.raises(UploadError, match="unreachable") as err:
        client.payload(3)
    assert TOKEN not in str(err.value)
    assert waits == list(Limits().retry_waits)


def test_the_model_gets_no_secret_nor_the_parents_python_path():
    env = child_environment({"PATH": "/bin", "HOME": "/h", "PYTHONPATH": "/harness",
                             "UPLOAD_TOKEN": "t", "AWS_SECRET_ACCESS_KEY": "s",
                             "OMP_NUM_THREADS": "2", "EVALRS_API_TOKEN": "t2",
                             "DATABASE_URL": "postgresql://u:p@h/db"})
    assert env == {"PATH": "/bin", "HOME": "/h", "OMP_NUM_THREADS": "2",
                   "PYTHONUNBUFFERED": "1"}


def test_private_seed_file(tmp_path):
    path = tmp_path / "seed"
    path.write_text(" 123456\n")
    assert read_private_seed(path) == 123456
    path.write_text("12ab-hidden-value")
    with pytest.raises(ConfigError) as err:
        read_private_seed(path)
    assert "hidden-value" not in str(err.value) and "one non-negative integer" in str(err.value)
    with pytest.raises(ConfigError, match="cannot be read"):
        read_private_seed(tmp_path / "absent")


# --------------------------------------------------------------------------- reproductions


def _reproduce(tmp_path, board, url, checkout, **options):
    return reproduce(checkout, 1, LeaderboardClient(url, TOKEN), python=Path(sys.executable),
                     log_path=tmp_path / "reproduce.log", log=lambda line: None, **options)


def test_the_template_reproduces_exactly_and_its_private_folds_are_sent(tmp_path, upload):
    """One reproduction of the template (public and private folds) in a checkout that also
    holds a vendored 2022 ``evaluation/`` folder, with an environment whose path is under
    /tmp: each of them must leave the verdict "reproduced" and the numbers bit-identical."""
    from submission.MyModel import MyModel

    checkout = make_checkout(tmp_path / "checkout")
    folder = _vendor_2022_folder(checkout)
    # an environment anywhere on the host: under /tmp, which the sandbox replaces with its
    # scratch, it is bound at a fixed place instead
    env = tmp_path / "envs" / "env"
    env.parent.mkdir()
    env.symlink_to(Path(sys.executable).parents[1])
    lines: list[str] = []
    with fake_leaderboard(TOKEN) as (url, board):
        board.payloads[1] = upload
        outcome = reproduce(checkout, 1, LeaderboardClient(url, TOKEN),
                            python=env / "bin" / "python", log_path=tmp_path / "reproduce.log",
                            log=lines.append, private_seed=PRIVATE_SEED)
    # the vendored copy raises when imported: a reproduced verdict shows the harness came first
    assert outcome.verdict == "reproduced", outcome.comparison.reasons
    _check_the_vendored_warning(lines, folder, tmp_path)
    assert outcome.private_problem is None
    report = board.reports[1][0]
    assert set(report) == {"verdict", "private", "table", "log_tail", "fingerprint_matches",
                           "harness_version", "private_fold_tests", "user_values",
                           "private_user_values", "costs"}
    assert report["verdict"] == "reproduced" and report["fingerprint_matches"] is True
    assert len(report["table"]) == 4 * len(LEADERBOARD_TESTS)
    for row in report["table"]:
        assert row["within"] and abs(row["difference"]) <= 1e-9
        assert row["uploaded"] == upload["results"]["folds"][row["fold"]]["tests"][row["test"]]
    assert "verdict: reproduced" in report["log_tail"]
    assert outcome.answer["status"] == "recorded"

    # the private folds: an independent run on the private seed's folds gives the same values
    assert report["private"] is True and len(report["private_fold_tests"]) == 4
    dataset = ChallengeDataset(scale="tiny", seed=PRIVATE_SEED)
    runner = EvalRSRunner(dataset, results_dir=tmp_path / "independent", progress=False,
                          verbose=False)
    result = runner.evaluate(MyModel(items=dataset.df_tracks, top_k=runner.k),
                             seed=upload["results"]["seed"])
    expected = [{t: f["tests"][t] for t in LEADERBOARD_TESTS} for f in result.to_dict()["folds"]]
    assert report["private_fold_tests"] == expected
    public = [{t: f["tests"][t] for t in LEADERBOARD_TESTS} for f in upload["results"]["folds"]]
    assert expected != public  # other folds, other values
    # the per-user values computed here: the upload's test users, adding up to the values
    folds = upload["results"]["folds"]
    public_users = decode_user_values(report["user_values"], [f["n_users"] for f in folds],
                                      k=upload["results"]["k"])
    assert [f.users_sha256 for f in public_users] == [f["test_users_sha256"] for f in folds]
    for users, fold in zip(public_users, folds):
        assert users.scores.tests()["MRR"][0] == pytest.approx(fold["tests"]["MRR"], rel=1e-9)
    private_users = decode_user_values(report["private_user_values"], None,
                                       k=upload["results"]["k"])
    for users, tests in zip(private_users, expected):
        assert users.scores.tests()["HIT_RATE"][0] == pytest.approx(tests["HIT_RATE"],
                                                                    rel=1e-9)
    # each fold's cost, measured in the sandbox
    assert len(report["costs"]) == 4
    for cost in report["costs"]:
        assert cost["train_seconds"] >= 0 and cost["predict_seconds"] >= 0
        assert cost["peak_rss_mib"] is None or cost["peak_rss_mib"] > 10
    # the seed is neither sent nor in the log that is
    assert str(PRIVATE_SEED) not in json.dumps(report)
    assert str(PRIVATE_SEED) not in (tmp_path / "reproduce.log").read_text()


def test_tampered_numbers_are_not_reproduced(tmp_path, upload):
    tampered = copy.deepcopy(upload)
    fold = tampered["results"]["folds"][2]["tests"]
    fold["HIT_RATE"] = min(1.0, fold["HIT_RATE"] + 0.3)  # far outside its interval
    # a value the reproduction gives inside the uploaded interval of its test, claimed a
    # little differently: within, not equal
    ci = tampered["results"]["confidence_intervals"]["tests"]
    inside = [(f["fold"], t) for f in upload["results"]["folds"] if f["fold"] != 2
              for t in LEADERBOARD_TESTS if ci[t][0] < f["tests"][t] < ci[t][1]]
    assert inside, "no fold value lies inside its test's interval"
    near_fold, near_test = inside[0]
    tampered["results"]["folds"][near_fold]["tests"][near_test] += 1e-6
    checkout = make_checkout(tmp_path / "checkout")
    with fake_leaderboard(TOKEN) as (url, board):
        board.payloads[1] = tampered
        outcome = _reproduce(tmp_path, board, url, checkout)
    rows = {(r.fold, r.test): r for r in outcome.comparison.rows}
    assert rows[(2, "HIT_RATE")].status == "outside"
    assert rows[(near_fold, near_test)].status == "within"
    assert outcome.verdict == "not reproduced" and outcome.comparison.fingerprint_matches
    sent = board.reports[1][0]
    assert sent["verdict"] == "not reproduced"
    assert [r["within"] for r in sent["table"]].count(False) == 1


def test_changed_model_code_is_a_fingerprint_mismatch(tmp_path, upload):
    source = template_model_with("self.unused = 1  # not the uploaded code")
    checkout = make_checkout(tmp_path / "checkout", source)
    with fake_leaderboard(TOKEN) as (url, board):
        board.payloads[1] = upload
        outcome = _reproduce(tmp_path, board, url, checkout)
    assert outcome.verdict == "not reproduced" and not outcome.comparison.fingerprint_matches
    assert any(r.startswith("the model code differs") for r in outcome.comparison.reasons)
    assert any(r.startswith("the model parameters differ") for r in outcome.comparison.reasons)
    report = board.reports[1][0]
    assert report["fingerprint_matches"] is False and report["verdict"] == "not reproduced"
    # stopped before evaluating: no reproduced value in the table
    assert all(row["reproduced"] is None for row in report["table"])
    assert len(outcome.comparison.reasons) == 2  # code and parameters; no "missing values"
    assert "not evaluated" in report["log_tail"]


def test_a_run_made_with_model_parameters_is_rebuilt_with_them(tmp_path):
    """submission.py --param reaches the constructor; the reproduction passes it too."""
    import tempfile

    from submission.MyModel import MyModel

    with tempfile.TemporaryDirectory() as results_dir:
        dataset = ChallengeDataset(scale="tiny", num_folds=2)
        runner = EvalRSRunner(dataset, results_dir=results_dir, progress=False, verbose=False)
        params = {"min_plays": 2, "exclude_heard": False}
        result = runner.evaluate(MyModel(items=dataset.df_tracks, top_k=runner.k, **params),
                                 settings={"params": params, "reclist": None})
        uploaded = {"email": "a@b.org", "participant_id": "team", "run_id": result.run_id,
                    "results": json.loads(json.dumps(result.to_dict()))}
    assert worker_config(uploaded["results"])["params"] == params
    checkout = make_checkout(tmp_path / "checkout")
    with fake_leaderboard(TOKEN) as (url, board):
        board.payloads[1] = uploaded
        outcome = _reproduce(tmp_path, board, url, checkout)
        assert outcome.verdict == "reproduced", outcome.comparison.reasons
        # the same upload without its recorded parameters: the model built without them
        # is not the uploaded one
        bare = copy.deepcopy(uploaded)
        bare["results"]["settings"]["params"] = {}
        board.payloads[2] = bare
        outcome = reproduce(checkout, 2, LeaderboardClient(url, TOKEN),
                            python=Path(sys.executable), log_path=tmp_path / "bare.log",
                            log=lambda line: None)
    assert outcome.verdict == "not reproduced"
    assert any(r.startswith("the model parameters differ") for r in outcome.comparison.reasons)


def test_a_model_past_the_timeout_is_not_reproduced(tmp_path, upload):
    checkout = make_checkout(tmp_path / "checkout", template_model_with(
        "import time\nprint('sleeping', flush=True)\ntime.sleep(120)"))
    # the sandboxed interpreter imports pandas and the harness before the model sleeps (about
    # a second on a quiet machine): a short limit first, and only where the machine was too
    # busy for the model to have started within it, once more with room for a loaded one
    for timeout in (5, 10):
        started = time.monotonic()
        with fake_leaderboard(TOKEN) as (url, board):
            board.payloads[1] = upload
            outcome = _reproduce(tmp_path, board, url, checkout, timeout=timeout)
        report = board.reports[1][0]
        if "sleeping" in report["log_tail"]:
            break
    assert time.monotonic() - started < timeout + 30
    assert outcome.verdict == "not reproduced"
    assert outcome.comparison.reasons[0] == (f"the run passed the wall-clock limit of {timeout} "
                                             "s and was stopped")
    assert "sleeping" in report["log_tail"]
    assert f"wall-clock limit of {timeout} s" in report["log_tail"]


def test_a_model_past_the_memory_limit_is_not_reproduced(tmp_path, upload):
    checkout = make_checkout(tmp_path / "checkout", template_model_with(
        "self.ballast = bytearray(16 * 1024**3)"))
    with fake_leaderboard(TOKEN) as (url, board):
        board.payloads[1] = upload
        outcome = _reproduce(tmp_path, board, url, checkout, memory_mb=4096)
    assert outcome.verdict == "not reproduced"
    assert outcome.comparison.reasons[0].startswith("the run exceeded the memory limit of "
                                                    "4096 MiB")
    assert "MemoryError" in board.reports[1][0]["log_tail"]


# --------------------------------------------------------------------------- command line


#: A competition file's alternative protocols (only [robustness] and the folds' seed matter to
#: a reproduction): another fold seed, and a cut before any event.
COMPETITION = """
[dataset.fold_params]
seed = 42
[[robustness.protocols]]
name = "seed-7"
kind = "fold_seed"
seed = 7
private = true
[[robustness.protocols]]
name = "cut-1990"
kind = "global_time"
cut = 1990-01-01T00:00:00+02:00
"""
#: Competition files a reproduction refuses before running anything, and what it says.
BAD_COMPETITIONS = [
    ("[dataset]\n", "declares no [[robustness.protocols]]"),
    (COMPETITION.replace("seed = 7", "seed = 42"), "is the official fold seed"),
    (COMPETITION.replace("00:00:00+02:00", "00:00:00"), "has no time zone"),
    (COMPETITION.replace('"fold_seed"', '"sideways"'), "needs a name and a kind"),
    (COMPETITION.replace("cut-1990", "seed-7"), "is another protocol's too"),
    (COMPETITION.replace("cut = 1990-01-01T00:00:00+02:00", 'cut = "soon"'),
     "is not an ISO"),
]


def _competition(folder: Path, text: str) -> Path:
    """A competition file of ``text`` in ``folder`` (each its own)."""
    path = folder / f"competition-{abs(hash(text))}.toml"
    path.write_text(text)
    return path


def test_command_line_reproduces_and_reports_errors(tmp_path, upload, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_checkout(tmp_path / "checkout")
    token_file = tmp_path / "admin.token"
    token_file.write_text(TOKEN + "\n")
    # this test's environment as the prepared one; every path relative to the current folder
    # (a relative environment works)
    env = os.path.relpath(Path(sys.executable).parents[1], tmp_path)
    with fake_leaderboard(TOKEN) as (url, board):
        board.payloads[5] = upload
        common = ["checkout", "--server", url, "--admin-token-file", "admin.token",
                  "--env-cache", "envs", "--env", env]
        # with the competition's alternatives: one the model runs on, one before the data
        assert main(["reproduce", *common, "--submission", "5", "--competition",
                     str(_competition(tmp_path, COMPETITION))]) == 0
        out, err = capsys.readouterr()
        assert "verdict: reproduced" in out and "HIT_RATE" in out and TOKEN not in out + err
        report = board.reports[5][0]
        assert report["verdict"] == "reproduced"
        sent = {a["protocol"]: a for a in report["alternatives"]}
        assert [sent["seed-7"]["status"], sent["cut-1990"]["status"]] == ["scored", "failed"]
        results = upload["results"]
        folds = decode_user_values(sent["seed-7"]["user_values"], None, k=results["k"])
        tests = {t: sum(f.scores.tests()[t][0] for f in folds) / len(folds)
                 for t in LEADERBOARD_TESTS}
        expected = phase2_score(tests, load_references(results["references"]["name"]))
        assert expected not in (GATED_SCORE, results["leaderboard_score"])
        log = (tmp_path / "reproduce-5.log").read_text()
        # the log's end the server keeps (the team reads it) has none of them
        assert not any(f"alternative {name}" in report["log_tail"] for name in sent)
        for shown in (out, log):
            line = next(x for x in shown.splitlines() if x.startswith("alternative seed-7"))
            assert f"scored, score {expected:.6f} (run " in line, line
            assert f"{sent['seed-7']['cost']['seconds']:.1f} s" in line
            line = next(x for x in shown.splitlines() if x.startswith("alternative cut-1990"))
            assert "failed, score - (" in line and "leaves no training event" in line

        assert main(["reproduce", *common, "--submission", "6"]) == 3  # unknown submission
        assert "HTTP 404" in capsys.readouterr().err
        bad = [
            ([str(tmp_path), *common[1:], "--submission", "5"], "no submission/MyModel.py"),
            ([*common, "--submission", "5", "--private"], "--private and --private-seed-file"),
            ([*common, "--submission", "5", "--timeout", "0"], "--timeout 0.0"),
            ([*common, "--submission", "0"], "positive integer"),
            ([*common[:-1], str(tmp_path / "none"), "--submission", "5"], "no bin/python"),
            ([*common, "--submission", "5", "--competition", str(tmp_path / "none.toml")],
             "does not exist"),
            *[([*common, "--submission", "5", "--competition",
                str(_competition(tmp_path, text))], message)
              for text, message in BAD_COMPETITIONS],
        ]
        for argv, message in bad:
            assert main(["reproduce", *argv]) == 2, message
            assert message in capsys.readouterr().err
        assert len(board.reports[5]) == 1  # no bad input ran anything
        token_file.write_text("\n")
        assert main(["reproduce", *common, "--submission", "5"]) == 2
        assert "is empty" in capsys.readouterr().err
    token_file.write_text(TOKEN)
    monkeypatch.setattr(_http, "_sleep", lambda seconds: None)  # its retries, not waited out
    assert main(["reproduce", *common, "--submission", "5"]) == 3  # the server is gone
    err = capsys.readouterr().err
    assert "unreachable" in err and TOKEN not in err


def test_help_does_not_import_the_reproduce_package():
    code = ("import sys, contextlib, io\nfrom evaluation.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try: main(['reproduce', '--help'])\n"
            "    except SystemExit: pass\n"
            "print('evaluation.reproduce' in sys.modules, 'requests' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2], check=True).stdout
    assert out.split() == ["False", "False"]


def test_exit_statuses_each_mean_one_thing(tmp_path, upload, capsys, monkeypatch):
    """4 and 3 here; 0 (reproduced, with a relative environment) and 2 (bad arguments) in
    ``test_command_line_reproduces_and_reports_errors``, 1 (not reproduced) in test_live.py
    and test_many.py."""
    from evaluation.reproduce import _reproduce, _sandbox

    monkeypatch.chdir(tmp_path)
    make_checkout(tmp_path / "checkout")
    token_file = tmp_path / "admin.token"
    token_file.write_text(TOKEN + "\n")
    relative_env = os.path.relpath(Path(sys.executable).parents[1], tmp_path)
    with fake_leaderboard(TOKEN) as (url, board):
        board.payloads[5] = upload
        common = ["reproduce", "checkout", "--submission", "5", "--server", url,
                  "--admin-token-file", "admin.token", "--env", relative_env,
                  "--env-cache", "envs"]

        def broken(*args, **kwargs):
            raise RuntimeError("a bug of the harness")

        with monkeypatch.context() as patch:
            patch.setattr(_reproduce, "_run", broken)
            assert main(common) == 4
            assert "internal error of the harness: RuntimeError" in capsys.readouterr().err
        with monkeypatch.context() as patch:
            patch.setattr(_sandbox, "find_bwrap", lambda: None)
            patch.setattr(_sandbox, "_PROBE", {})
            requests = len(board.requests)
            assert main(common) == 3
            err = capsys.readouterr().err
            assert "bubblewrap (bwrap) is not installed" in err and "--unsafe-no-sandbox" in err
            assert len(board.requests) == requests  # refused before the server was called


def _vendor_2022_folder(checkout: Path) -> Path:
    """A copy-like 2022 ``evaluation/`` folder in ``checkout`` (an imitation written here, with
    the names the official files are recognised by), which fails when it is imported."""
    folder = checkout / "evaluation"
    folder.mkdir()
    (folder / "__init__.py").write_text(
        'raise ImportError("the checkout\'s own evaluation/ folder was imported")\n')
    (folder / "EvalRSRunner.py").write_text(
        'LFM_DATASET_PATH = "https://example.invalid/lfm.zip"\n\n\n'
        "class EvalRSRunner:\n    def _generate_folds(self):\n        pass\n")
    (folder / "EvalRSRecList.py").write_text(
        "from reclist.abstractions import RecList, rec_test\n\n\n"
        "class EvalRSDataset:\n    pass\n\n\n"
        "class EvalRSRecList(RecList):\n"
        "    @rec_test(test_type='MY_TEST')\n    def my_test(self):\n        return 1\n")
    return folder


def _check_the_vendored_warning(lines: list[str], folder: Path, tmp_path: Path) -> None:
    """The vendored 2022 ``folder`` of a checkout is named once in the reproduction's progress
    ``lines`` and in its log (``tmp_path / "reproduce.log"``), with the custom test found in
    it; a checkout without one gets no warning."""
    checkout = folder.parent
    warned = [line for line in lines if line.startswith("warning: CHECKOUT")]
    assert len(warned) == 1
    assert str(folder) in warned[0] and "evaluation/EvalRSRunner.py" in warned[0]
    assert "The reproduction does not use it" in warned[0]
    assert "Fix: delete or rename that folder" in warned[0]
    assert "EvalRSRecList (MY_TEST)" in warned[0]  # the custom test found in the copy
    assert warned[0] in (tmp_path / "reproduce.log").read_text()
    plain = make_checkout(tmp_path / "plain")
    assert vendored_warning(plain) is None
    assert vendored_warning(checkout) == warned[0]
