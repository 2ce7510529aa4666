"""submission.py end to end, in fresh processes: results, determinism, upload settings."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def run_submission(workdir: Path, *args: str, env_file: str | None = None):
    """Run a copy of submission.py + submission/ in ``workdir`` (so upload.env is local)."""
    shutil.copy(REPO / "submission.py", workdir / "submission.py")
    shutil.copytree(REPO / "submission", workdir / "submission", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    if env_file is not None:
        (workdir / "upload.env").write_text(env_file)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for name in ("EMAIL", "PARTICIPANT_ID", "UPLOAD_URL", "UPLOAD_TOKEN"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "submission.py", "--scale", "tiny", "--no-progress", *args],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=300)


def results_of(workdir: Path) -> dict:
    (path,) = (workdir / "results").glob("*/results.json")
    return json.loads(path.read_text())


def stable(results: dict) -> dict:
    out = {k: v for k, v in results.items() if k not in ("runtime", "environment")}
    out["folds"] = [{k: v for k, v in f.items() if k != "runtime"} for f in results["folds"]]
    return out


@pytest.mark.slow
def test_submission_end_to_end(tmp_path):
    proc = run_submission(tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = results_of(tmp_path)
    assert res["model"]["name"] == "MyModel"
    assert len(res["folds"]) == 4 and res["eligible_for_upload"]
    assert res["leaderboard_score"] is not None  # the shipped synthetic-tiny references
    assert f"LEADERBOARD SCORE: {res['leaderboard_score']}" in proc.stdout
    run_dir = tmp_path / "results" / res["run_id"]
    assert len(list(run_dir.glob("reclist/fold_*/**/report.json"))) == 4


def test_submission_is_identical_across_processes_and_saves_uploads(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    flags = ("--num-folds", "2", "--limit", "40", "--seed", "0")
    env_file = "EMAIL=me@example.com\nPARTICIPANT_ID=team42\nUPLOAD_URL=\n"
    first = run_submission(a, *flags, "--upload", env_file=env_file)
    assert first.returncode == 4, first.stderr[-3000:]  # upload asked, run not eligible
    second = run_submission(b, *flags)
    assert second.returncode == 0, second.stderr[-3000:]
    ra, rb = results_of(a), results_of(b)
    assert ra["run_hash"] == rb["run_hash"] and ra["run_id"] == rb["run_id"]
    assert stable(ra) == stable(rb)  # every number, to the last bit
    assert len(ra["folds"]) == 2 and all(f["n_users"] == 40 for f in ra["folds"])
    assert ra["seed"] == 0 and ra["dataset"]["fold_params"]["seed"] == 0
    assert not ra["eligible_for_upload"]
    (sub,) = (a / "results").glob("*/submission.json")
    saved = json.loads(sub.read_text())
    assert saved["email"] == "me@example.com" and saved["participant_id"] == "team42"
    assert "not eligible" in first.stdout


def test_submission_reports_bad_arguments_without_a_traceback(tmp_path):
    proc = run_submission(tmp_path, "--limit", "-3")
    assert proc.returncode == 2
    assert "error:" in proc.stderr and "limit" in proc.stderr
    assert "Traceback" not in proc.stderr
