"""Hostile checkouts: each attack a participant's code can try on the organizer who reproduces
it, run for real through ``reproduce`` with the bubblewrap sandbox. Each must do no harm, and
the hostile code around an otherwise honest model must not keep it from reproducing
bit-identically (public and private folds).

Without bubblewrap these tests skip and say why (``make test`` installs it when root).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from evaluation.cli import main
from evaluation.reproduce import (
    BatchRow,
    BatchSettings,
    LeaderboardClient,
    reproduce,
    reproduce_many,
    sandbox_problem,
)
from tests.reproduce._fakes import (
    REPO,
    fake_leaderboard,
    make_checkout,
    template_model_with,
)

TOKEN = "organizer-" + "h" * 43
PRIVATE_SEED = 80417
PROBLEM = sandbox_problem()
pytestmark = pytest.mark.skipif(PROBLEM is not None, reason=f"no sandbox: {PROBLEM}")


def _reproduce(tmp_path: Path, checkout: Path, upload: dict, **options):
    """Reproduce ``checkout`` as submission 1 against a fake board; the outcome and board."""
    with fake_leaderboard(TOKEN) as (url, board):
        board.payloads[1] = upload
        board.payloads[2] = upload  # another team's submission
        outcome = reproduce(checkout, 1, LeaderboardClient(url, TOKEN),
                            python=Path(sys.executable), log_path=tmp_path / "reproduce.log",
                            log=lambda line: None, **options)
    return outcome, board


def _leaks(text: str) -> bool:
    compact = "".join(text.split())
    return any(form in compact for form in (
        TOKEN, TOKEN[::-1], TOKEN.encode().hex(), base64.b64encode(TOKEN.encode()).decode()))


def _upload_of(source: str, tmp_path: Path) -> dict:
    """The tiny run of the model ``source`` evaluated here, as the leaderboard stores it.

    The attacks are guarded by the absence of ``PYTEST_CURRENT_TEST`` (the reproduction's
    environment holds none of the organizer's variables): here they do not fire, and the
    uploaded code is the very code reproduced, so only the attacks can change the verdict.
    """
    import importlib.util

    from evaluation import ChallengeDataset, EvalRSRunner

    folder = tmp_path / "upload-code" / "submission"
    folder.mkdir(parents=True)
    # the checkout's package as the template makes it: its code is part of the fingerprint
    shutil.copy(REPO / "submission" / "__init__.py", folder / "__init__.py")
    (folder / "MyModel.py").write_text(source)
    spec = importlib.util.spec_from_file_location("submission.MyModel", folder / "MyModel.py")
    module = importlib.util.module_from_spec(spec)
    saved = sys.modules.get("submission.MyModel")
    sys.modules["submission.MyModel"] = module
    try:
        spec.loader.exec_module(module)
        dataset = ChallengeDataset(scale="tiny")
        runner = EvalRSRunner(dataset, results_dir=tmp_path / "upload-run", progress=False,
                              verbose=False)
        result = runner.evaluate(module.MyModel(items=dataset.df_tracks, top_k=runner.k))
    finally:
        if saved is not None:
            sys.modules["submission.MyModel"] = saved
        else:
            sys.modules.pop("submission.MyModel", None)
    return {"email": "a@b.org", "participant_id": "team", "run_id": result.run_id,
            "results": json.loads(json.dumps(result.to_dict()))}


def hostile(attack: str) -> str:
    """The template model with ``attack`` run at the start of ``__init__`` when reproduced."""
    body = "\n".join("    " + line for line in attack.strip().splitlines())
    return template_model_with(f"import os\nif 'PYTEST_CURRENT_TEST' not in os.environ:\n{body}")


# --------------------------------------------------------------------------- secrets
# Two attacks in one hostile model, reproduced once (public and private folds) for the tests
# that check what each of them found.

#: Reads every process's environment, command line and folders it can reach, and the
#: organizer's files (``{secret_dir}``: the organizer's working folder, holding the secrets).
_READ_THE_ORGANIZER = """
found = []
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    for what in ("environ", "cmdline"):
        try:
            found.append(open(f"/proc/{{pid}}/{{what}}", "rb").read().decode(errors="replace"))
        except OSError:
            pass
    for link in ("cwd", "root"):
        try:
            found.append(os.listdir(f"/proc/{{pid}}/{{link}}").__repr__())
        except OSError:
            pass
for folder in ({secret_dir!r}, "/root", "/work", "/home", os.path.expanduser("~")):
    try:
        for name in os.listdir(folder):
            found.append(open(os.path.join(folder, name)).read())
    except OSError:
        pass
print("LEAK " + " ".join(found), flush=True)
print("pids seen:", len([p for p in os.listdir("/proc") if p.isdigit()]), flush=True)
"""

#: Looks for the private seed in every file the sandbox shows, its configuration, its
#: environment and bwrap's command line.
_FIND_THE_SEED = """
import json
needle = str(80000 + 417).encode()  # the seed, not written as such in this file
hits = []
for top in ("/inputs", "/checkout", "/scratch", "/opt"):
    for folder, _, names in os.walk(top):
        for name in names:
            try:
                data = open(os.path.join(folder, name), "rb").read(50_000_000)
            except OSError:
                continue
            if needle in data:
                hits.append(os.path.join(folder, name))
config = json.load(open("/inputs/config.json"))
if needle in open("/proc/self/environ", "rb").read() + open("/proc/1/cmdline", "rb").read():
    hits.append("environ or bwrap's command line")
print("SEED FOUND" if hits or needle.decode() in json.dumps(config) else "no seed", hits,
      sorted(config), flush=True)
"""


@pytest.fixture(scope="module")
def secrets_run(tmp_path_factory):
    """The model with both attacks above reproduced with the private seed, from an organizer's
    working folder holding the admin token and the seed, with the token in the environment:
    the outcome, the board, the public and the private folds' logs."""
    tmp_path = tmp_path_factory.mktemp("secrets")
    secret_dir = tmp_path / "organizer"
    secret_dir.mkdir()
    (secret_dir / "admin.token").write_text(TOKEN)
    (secret_dir / "private.seed").write_text(str(PRIVATE_SEED))
    source = hostile(_READ_THE_ORGANIZER.format(secret_dir=str(secret_dir)) + _FIND_THE_SEED)
    checkout = make_checkout(tmp_path / "checkout", source)
    uploaded = _upload_of(source, tmp_path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVALRS_ADMIN_TOKEN", TOKEN)
        patch.chdir(secret_dir)  # the organizer's working folder holds the secrets
        outcome, board = _reproduce(tmp_path, checkout, uploaded, private_seed=PRIVATE_SEED)
    return (outcome, board, (tmp_path / "reproduce.log").read_text(),
            (tmp_path / "reproduce.log.private").read_text())


def test_reading_the_organizers_processes_environment_and_files_finds_nothing(secrets_run):
    outcome, board, log, _ = secrets_run
    assert "LEAK" in log  # the attack ran
    assert not _leaks(log) and str(PRIVATE_SEED) not in log
    assert "admin.token" not in log and "private.seed" not in log
    assert int(log.split("pids seen: ")[1].split()[0]) <= 3  # bwrap's init and the model
    assert not _leaks(json.dumps(board.reports[1]))
    assert outcome.verdict == "reproduced", outcome.comparison.reasons
    assert outcome.private_fold_tests is not None


def test_the_private_seed_is_nowhere_in_the_sandbox(secrets_run):
    outcome, board, public, private = secrets_run
    assert "no seed" in public and "no seed" in private
    assert "SEED FOUND" not in public + private
    assert outcome.verdict == "reproduced" and outcome.private_fold_tests is not None
    assert str(PRIVATE_SEED) not in json.dumps(board.reports[1])


# --------------------------------------------------------------------------- escapes
# Three attacks in one hostile model, reproduced once, for the tests that check each: the
# network, daemons that would outlive the run, and writes outside the scratch.


@pytest.fixture(scope="module")
def escape_run(tmp_path_factory):
    """The model with the three attacks reproduced against a fake board that it tries to
    reach (a 64 MiB scratch): the outcome, the requests the board received, the reports, the
    log, the daemons' marker, the checkout and its model file's text before the run, and the
    environment's site-packages."""
    tmp_path = tmp_path_factory.mktemp("escapes")
    marker = f"{time.time_ns() % 10**9}.5"
    env_site = next(Path(sys.prefix, "lib").glob("python3*/site-packages"))
    original = tmp_path / "checkout"
    with fake_leaderboard(TOKEN) as (url, board):
        source = hostile(f"""
import urllib.request
try:
    request = urllib.request.Request({url!r} + "/api/v1/submissions/2/reproduction",
                                     data=b'{{"verdict": "not reproduced"}}', method="POST")
    urllib.request.urlopen(request, timeout=3)
    print("NETWORK REACHED", flush=True)
except OSError as exc:
    print("network refused:", type(exc).__name__, flush=True)

import subprocess
subprocess.Popen(["setsid", "sh", "-c", "sleep {marker}"], start_new_session=True)
subprocess.Popen(["sh", "-c", "nohup sleep {marker} >/dev/null 2>&1 &"])
print("daemons started", flush=True)

for path in ({str(env_site / 'evil.pth')!r}, "/checkout/submission/planted.py",
             {str(original / 'submission' / 'MyModel.py')!r}, "/inputs/fold-0-train.pkl",
             "/usr/lib/evil", "/evil"):
    try:
        with open(path, "w") as f:
            f.write("import os; os.system('touch /tmp/pwned')")
        print("WROTE", path, flush=True)
    except OSError as exc:
        print("refused", path, type(exc).__name__, flush=True)
try:
    with open("/scratch/fill", "wb") as f:
        for _ in range(1024):
            f.write(b"0" * (1024 * 1024))
    print("FILLED 1 GiB", flush=True)
except OSError as exc:
    print("disk full:", type(exc).__name__, flush=True)
os.remove("/scratch/fill")
""")
        uploaded = _upload_of(source, tmp_path)
        board.payloads[1] = uploaded
        board.payloads[2] = uploaded  # another team's submission
        checkout = make_checkout(original, source)
        before = (checkout / "submission" / "MyModel.py").read_text()
        outcome = reproduce(checkout, 1, LeaderboardClient(url, TOKEN),
                            python=Path(sys.executable), log_path=tmp_path / "reproduce.log",
                            log=lambda line: None, scratch_mb=64)
        requests = list(board.requests)
    return {"outcome": outcome, "requests": requests, "reports": board.reports,
            "log": (tmp_path / "reproduce.log").read_text(), "marker": marker,
            "checkout": checkout, "before": before, "env_site": env_site}


def test_the_network_is_out_of_reach_even_on_localhost(escape_run):
    log, outcome = escape_run["log"], escape_run["outcome"]
    assert "network refused" in log and "NETWORK REACHED" not in log
    assert 2 not in escape_run["reports"]
    # the organizer's only
    assert all(auth == f"Bearer {TOKEN}" for _, _, auth in escape_run["requests"])
    assert outcome.verdict == "reproduced", outcome.comparison.reasons


def test_a_setsid_daemon_does_not_outlive_the_reproduction(escape_run):
    assert "daemons started" in escape_run["log"]
    time.sleep(0.3)
    alive = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if escape_run["marker"].encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                alive.append(pid)
        except OSError:
            pass
    assert alive == []
    outcome = escape_run["outcome"]
    assert outcome.verdict == "reproduced", outcome.comparison.reasons


def test_writing_outside_the_scratch_and_filling_the_disk_do_no_harm(escape_run):
    log, checkout, env_site = escape_run["log"], escape_run["checkout"], escape_run["env_site"]
    # each of the six writes refused (the network attack's line says "network refused")
    assert "WROTE" not in log
    assert sum(line.startswith("refused /") for line in log.splitlines()) == 6
    assert "disk full" in log and "FILLED" not in log
    assert not (env_site / "evil.pth").exists() and not Path("/tmp/pwned").exists()
    assert (checkout / "submission" / "MyModel.py").read_text() == escape_run["before"]
    assert not (checkout / "submission" / "planted.py").exists()
    outcome = escape_run["outcome"]
    assert outcome.verdict == "reproduced", outcome.comparison.reasons


# --------------------------------------------------------------------------- budgets


def test_a_fork_bomb_is_bounded(tmp_path, upload):
    source = template_model_with("""
import os, time
for _ in range(150):
    if os.fork() == 0:
        time.sleep(30)
        os._exit(0)
""")
    checkout = make_checkout(tmp_path / "checkout", source)
    started = time.monotonic()
    outcome, _ = _reproduce(tmp_path, checkout, upload, processes=64, timeout=120)
    assert time.monotonic() - started < 60
    assert outcome.verdict == "not reproduced"
    assert outcome.comparison.reasons[0].startswith("the run exceeded the process limit of 64")


def test_memory_held_across_processes_is_bounded_for_the_whole_tree(tmp_path, upload):
    # 3 x 700 MiB in three processes, each under the per-process limit of 1536 MiB; the first
    # child stopped ends the attempt (the others need not hold their blocks any longer)
    source = template_model_with("""
import os, signal, time
children = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        block = bytearray(700 * 1024 * 1024)
        block[::4096] = b"x" * len(block[::4096])
        time.sleep(5)
        os._exit(0)
    children.append(pid)
for _ in children:
    if os.wait()[1] != 0:
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        raise SystemExit("a child was stopped")
print("ALL HELD", flush=True)
""")
    checkout = make_checkout(tmp_path / "checkout", source)
    outcome, _ = _reproduce(tmp_path, checkout, upload, memory_mb=1536)
    assert "ALL HELD" not in (tmp_path / "reproduce.log").read_text()
    assert outcome.verdict == "not reproduced"


def test_a_neighbour_in_a_batch_cannot_edit_another_rows_checkout(tmp_path, upload):
    root = tmp_path / "teams"
    honest = make_checkout(root / "honest")
    before = (honest / "submission" / "MyModel.py").read_text()
    source = hostile(f"""
for path in ({str(honest / 'submission' / 'MyModel.py')!r},
             "/checkout/../honest/submission/MyModel.py"):
    try:
        with open(path, "a") as f:
            f.write("raise SystemExit('sabotaged')")
        print("EDITED", path, flush=True)
    except OSError as exc:
        print("refused", type(exc).__name__, flush=True)
""")
    make_checkout(root / "hostile", source)
    with fake_leaderboard(TOKEN) as (url, board):
        board.payloads[21] = _upload_of(source, tmp_path)
        board.payloads[22] = upload
        settings = BatchSettings(log_dir=tmp_path / "logs", env_cache=tmp_path / "envs",
                                 env=Path(sys.prefix), timeout=300)
        rows = [BatchRow(21, root / "hostile", None, 2), BatchRow(22, honest, None, 3)]
        results = reproduce_many(rows, LeaderboardClient(url, TOKEN), settings, jobs=2)
    assert (honest / "submission" / "MyModel.py").read_text() == before
    assert "EDITED" not in (tmp_path / "logs" / "reproduce-21.log").read_text()
    assert [r.verdict for r in results] == ["reproduced", "reproduced"], results


def test_forged_results_are_not_trusted(tmp_path, upload):
    # the model writes what a finished worker would, with the upload's numbers, and stops
    source = template_model_with(f"""
import json, os, numpy as np
fd = int(os.environ.get("EVALRS_RESULT_FD", "1"))
out = os.fdopen(fd, "wb", buffering=0)
for record in ({{"results": {json.dumps(upload["results"]["folds"][:1])!r}}}, {{"done": True}}):
    np.lib.format.write_array(out, np.frombuffer(json.dumps(record).encode(), np.uint8))
for name in ("/scratch/out.json", "/scratch/results.json"):
    open(name, "w").write(json.dumps({{"fingerprint": "forged", "results": {{}}}}))
os._exit(0)
""")
    checkout = make_checkout(tmp_path / "checkout", source)
    outcome, board = _reproduce(tmp_path, checkout, upload)
    assert outcome.verdict == "not reproduced"
    assert all(row["reproduced"] is None for row in board.reports[1][0]["table"])


def test_a_model_file_linked_to_the_token_is_refused_without_showing_it(tmp_path, capsys,
                                                                          upload):
    token_file = tmp_path / "admin.token"
    token_file.write_text(TOKEN + "\n")
    checkout = make_checkout(tmp_path / "checkout")
    (checkout / "submission" / "MyModel.py").unlink()
    (checkout / "submission" / "MyModel.py").symlink_to(token_file)
    with fake_leaderboard(TOKEN) as (url, board):
        board.payloads[1] = upload
        status = main(["reproduce", str(checkout), "--submission", "1", "--server", url,
                       "--admin-token-file", str(token_file), "--env", sys.prefix,
                       "--log", str(tmp_path / "r.log")])
    out, err = capsys.readouterr()
    assert status == 2
    assert "submission/MyModel.py is a symbolic link leading outside the checkout" in err
    assert not _leaks(out + err) and board.reports == {} and board.requests == []


def test_without_a_sandbox_unsafe_runs_with_a_warning_and_secrets_are_scrubbed(
        tmp_path, monkeypatch):
    from evaluation.reproduce import _sandbox

    monkeypatch.setattr(_sandbox, "find_bwrap", lambda: None)
    monkeypatch.setattr(_sandbox, "_PROBE", {})
    organizer = tmp_path / "organizer"
    organizer.mkdir()
    (organizer / "admin.token").write_text(TOKEN)
    monkeypatch.chdir(organizer)
    # unconfined, the model reads the token through its parent's working folder and prints
    # it in several forms
    source = hostile("""
import base64
token = ""
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    try:
        token = open(f"/proc/{pid}/cwd/admin.token").read().strip() or token
    except OSError:
        pass
print("plain", token, "hex", token.encode().hex(), "b64",
      base64.b64encode(token.encode()).decode(), "reversed", token[::-1],
      "spaced", " ".join(token), flush=True)
""")
    checkout = make_checkout(tmp_path / "checkout", source)
    upload = _upload_of(source, tmp_path)
    with fake_leaderboard(TOKEN) as (url, board):
        board.payloads[1] = upload
        client = LeaderboardClient(url, TOKEN)
        from evaluation.reproduce import SandboxUnavailable

        with pytest.raises(SandboxUnavailable, match="--unsafe-no-sandbox"):
            reproduce(checkout, 1, client, python=Path(sys.executable),
                      log_path=tmp_path / "r.log", log=lambda line: None)
        assert board.requests == []  # refused before the server was called
        reproduce(checkout, 1, client, python=Path(sys.executable),
                  log_path=tmp_path / "r.log", log=lambda line: None, unsafe_no_sandbox=True)
    sent = board.reports[1][0]["log_tail"]
    assert "plain" in sent  # the attack ran and printed
    assert "UNSAFE" in sent and "[REDACTED]" in sent
    assert not _leaks(sent)
    assert TOKEN in (tmp_path / "r.log").read_text()  # it did read the token: unconfined
