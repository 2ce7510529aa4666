"""``python -m evaluation submit RUN --competition FILE``: a finished run made without
``--competition`` is submitted to a competition whose data and folds it has, without computing
it again; a run that does not belong there is refused with the reasons."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.baselines import PopularityModel
from evaluation.cli import EXIT_NOT_ELIGIBLE, main
from evaluation.contract import load_competition_target, read_submission
from evaluation.dataset import ChallengeDataset
from evaluation.runner import EvalRSRunner, retarget

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "competition.toml"

pytestmark = pytest.mark.filterwarnings("ignore::evaluation.errors.PredictionWarning")


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """A run on the example competition's data and folds, made for the official board."""
    results = tmp_path_factory.mktemp("small") / "results"
    runner = EvalRSRunner(ChallengeDataset(), results_dir=results, progress=False,
                          verbose=False, n_boot=100)
    return runner.evaluate(PopularityModel(), name="pop")


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    results = tmp_path_factory.mktemp("tiny") / "results"
    runner = EvalRSRunner(ChallengeDataset(scale="tiny"), results_dir=results, progress=False,
                          verbose=False, n_boot=0)
    return runner.evaluate(PopularityModel())


def test_a_finished_run_is_submitted_to_the_competition_it_belongs_to(small_run, tmp_path,
                                                                      capsys, monkeypatch):
    for key in ("EMAIL", "PARTICIPANT_ID", "UPLOAD_URL", "UPLOAD_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)  # no upload.env here: saved locally
    assert not small_run.eligible_for_upload  # judged against the official board
    before = {p.name: p.read_bytes() for p in small_run.path.parent.iterdir()}
    assert main(["submit", str(small_run.path.parent), "--competition", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "submitted without computing it again" in out and "saved locally" in out
    saved = small_run.path.parent / "submission.json"
    payload = json.loads(saved.read_text())
    # the run's own files are untouched; only submission.json and its predictions are new
    after = {p.name: p.read_bytes() for p in small_run.path.parent.iterdir()
             if p.name not in ("submission.json", "submission.predictions")}
    assert after == before
    results = payload["results"]
    own = small_run.to_dict()
    assert results["eligible_for_upload"] is True and results["not_eligible_because"] == []
    assert results["competition"]["fingerprint"] == own["dataset"]["fingerprint"]
    changed = {k for k in own if own[k] != results[k]}
    assert changed == {"eligible_for_upload", "not_eligible_because", "competition"}
    record = read_submission(payload, leaderboard=None)
    assert record.run_hash == small_run.run_hash and record.name == "pop"


def test_a_run_of_other_data_is_refused_with_the_reasons(tiny_run, capsys):
    code = main(["submit", str(tiny_run.path.parent), "--competition", str(EXAMPLE)])
    err = capsys.readouterr().err
    assert code == EXIT_NOT_ELIGIBLE
    assert "does not belong to" in err and "synthetic:tiny" in err
    assert not (tiny_run.path.parent / "submission.json").exists()


def test_retarget_agrees_with_a_run_made_for_the_competition(small_run, tmp_path):
    # the eligibility decided afterwards is the runner's own, made for the competition
    competition = load_competition_target(EXAMPLE)
    made = EvalRSRunner(ChallengeDataset(), results_dir=tmp_path, progress=False,
                        verbose=False, n_boot=0, competition=competition).evaluate(
        PopularityModel(), limit=50)
    again = retarget({**made.to_dict(), "eligible_for_upload": True,
                      "not_eligible_because": []}, competition)
    assert again["not_eligible_because"] == made.not_eligible_because
    assert retarget(small_run.to_dict(), competition)["eligible_for_upload"] is True


def test_a_directory_without_competition_says_how_to_submit_it(small_run, capsys):
    assert main(["submit", str(small_run.path.parent)]) == 2
    assert "--competition FILE" in capsys.readouterr().err
