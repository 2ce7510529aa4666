"""``python -m evaluation reproduce`` end to end: a real environment built for the checkout, a
submission uploaded by ``submission.py --upload`` to a live leaderboard (the server's app on
127.0.0.1), reproduced, its badge on the board; a checkout with other model code is not
reproduced. Builds one environment from the package index (about a minute): marked slow.
The board is the example competition on the tiny synthetic data (what is checked does not
depend on the data's size; the small data made each of its runs cost seconds).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from evaluation.cli import main  # noqa: E402
from evaluation.reproduce import env_python, prepare_env  # noqa: E402
from evaluation.server.api import create_app  # noqa: E402
from evaluation.server.core import load_competition  # noqa: E402
from evaluation.server.db import add_team, create_admin_token, reveal_phase  # noqa: E402
from tests.reproduce._fakes import REPO, make_checkout, template_model_with  # noqa: E402
from tests.server._live_server import live_server  # noqa: E402

pytestmark = pytest.mark.slow
PRIVATE_SEED = 90417


@pytest.fixture(scope="module")
def built_env(tmp_path_factory):
    """An environment built as `reproduce --keep-env` builds it (cached: built once)."""
    cache = tmp_path_factory.mktemp("envs")
    checkout = make_checkout(tmp_path_factory.mktemp("for-env") / "checkout")
    lines = []
    env = prepare_env(checkout, cache, log=lines.append, log_path=cache / "build.log")
    assert lines[0].startswith("environment: building")
    # the second time it comes from the cache: nothing is built again (how fast that is, is
    # the threat model's benchmark's, not a bound a loaded machine could break here)
    built = len(lines)
    again = prepare_env(checkout, cache, log=lines.append, log_path=cache / "build.log")
    assert again == env and lines[built:] == [f"environment: cached {env}"]
    # isolated: the harness installed in it, not this repository's tree
    where = subprocess.run([str(env_python(env)), "-c", "import evaluation; "
                            "print(evaluation.__file__)"], capture_output=True, text=True,
                           cwd=checkout, check=True).stdout.strip()
    assert where.startswith(str(env)), where
    return env


@pytest.fixture(scope="module")
def tiny_competition(tmp_path_factory, tiny) -> Path:
    """``competition.toml`` with its data, references and source the tiny synthetic data's
    (the same phases and fold parameters; without its pinned baselines, runs on other data)."""
    text = (REPO / "competition.toml").read_text().split("\n[[baselines]]")[0]
    for old, new in (('"synthetic:small"', '"synthetic:tiny"'),
                     ('"synthetic-small"', '"synthetic-tiny"')):
        assert old in text, f"competition.toml no longer says {old}: update this fixture"
        text = text.replace(old, new)
    text, found = re.subn(r'^fingerprint = "[0-9a-f]+"', f'fingerprint = "{tiny.fingerprint}"',
                          text, flags=re.MULTILINE)
    assert found == 1, "competition.toml has no single dataset fingerprint: update this fixture"
    path = tmp_path_factory.mktemp("competition") / "competition.toml"
    path.write_text(text)
    competition = load_competition(path)
    assert competition.target.dataset_options()["scale"] == "tiny" and not competition.baselines
    return path


def _upload(checkout: Path, url: str, token: str, competition: Path) -> None:
    """``python submission.py --upload`` in the checkout, as a participant runs it."""
    (checkout / "upload.env").write_text(
        f"EMAIL=team@example.org\nPARTICIPANT_ID=team-a\nUPLOAD_URL={url}/api/v1/submissions\n"
        f"UPLOAD_TOKEN={token}\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "submission.py", "--upload", "--no-progress",
                           "--competition", str(competition)],
                          cwd=checkout, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_upload_reproduce_badge_and_fingerprint_mismatch(tmp_path, built_env, monkeypatch,
                                                         capsys, tiny_competition):
    monkeypatch.chdir(tmp_path)
    competition = load_competition(tiny_competition)
    app = create_app(competition, f"sqlite:///{tmp_path / 'board.db'}")
    store = app.state.store
    team_token = add_team(store, "Team A", "team@example.org")[1]
    admin_token = create_admin_token(store)
    token_file = tmp_path / "admin.token"
    token_file.write_text(admin_token + "\n")
    seed_file = tmp_path / "private.seed"
    seed_file.write_text(f"{PRIVATE_SEED}\n")
    checkout = make_checkout(tmp_path / "participant")

    with live_server(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        _upload(checkout, url, team_token, tiny_competition)
        admin = {"Authorization": f"Bearer {admin_token}"}
        rows = [r for r in http.get("/api/v1/leaderboard", headers=admin).json()["rows"]
                if r["team"] == "Team A"]
        assert len(rows) == 1 and rows[0]["reproduction"] == "pending"
        submission = rows[0]["submission_id"]

        common = ["reproduce", str(checkout), "--submission", str(submission), "--server", url,
                  "--admin-token-file", str(token_file), "--env", str(built_env),
                  "--timeout", "300", "--memory-mb", "6144"]
        status = main([*common, "--private", "--private-seed-file", str(seed_file)])
        out, err = capsys.readouterr()
        assert status == 0, out + err
        assert "verdict: reproduced" in out and "matches the upload" in out
        assert admin_token not in out + err and str(PRIVATE_SEED) not in out + err
        row = [r for r in http.get("/api/v1/leaderboard").json()["rows"]
               if r["team"] == "Team A"][0]
        assert row["reproduction"] == "reproduced"
        page = http.get("/").text
        assert "badge-reproduced" in page
        # the phase is not revealed: no private score anywhere public
        assert row.get("private_score") is None
        # once revealed, the private score sent by --private is on the board
        reveal_phase(store, "public", close_now=True)
        row = [r for r in http.get("/api/v1/leaderboard").json()["rows"]
               if r["team"] == "Team A"][0]
        assert isinstance(row["private_score"], float)
        assert row["private_score"] != row["leaderboard_score"]  # other folds, other score

        # other model code: the run stops at the fingerprint, whichever environment runs it;
        # this test's own (its bytecode compiled) spares the imports from source that a run in
        # the built one (no bytecode, read-only) pays
        other = make_checkout(tmp_path / "other", template_model_with("self.extra = 2"))
        here = str(Path(sys.executable).parents[1])
        status = main(["reproduce", str(other),
                       *[here if arg == str(built_env) else arg for arg in common[2:]]])
        out, err = capsys.readouterr()
        assert status == 1, out + err
        assert "model code differs" in out and "verdict: not reproduced" in out
        row = [r for r in http.get("/api/v1/leaderboard").json()["rows"]
               if r["team"] == "Team A"][0]
        assert row["reproduction"] == "not reproduced"
