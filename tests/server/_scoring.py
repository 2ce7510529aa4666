"""A real run for the scoring job's tests: the template model on the tiny synthetic data,
made for a competition on that data, its folds' predictions kept; and its uploads."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from evaluation import ChallengeDataset, EvalRSRunner
from evaluation.contract import submission_payload
from evaluation.runner import PREDICTIONS_FILE, predictions_body
from tests._competition_files import write_competition

#: The tiny board's one phase: open now (the tests' clock) and for long.
PHASE = ("\n[[phases]]\nname = \"open\"\nopens = 2020-01-01T00:00:00Z\n"
         "closes = 2100-01-01T00:00:00Z\nreferences = \"synthetic-tiny\"\ndaily_limit = 50\n"
         "public = true\n")


@dataclass(frozen=True)
class TinyRun:
    """A finished run: its results, directory, submission (the claim) and predictions upload."""

    results: dict
    run_dir: Path
    claim: dict
    predictions: bytes


def tiny_competition(folder: Path, *, accept_claims: bool = False) -> Path:
    """A competition on the tiny synthetic data with one open public phase; its file."""
    path = write_competition(folder / "competition.toml", ChallengeDataset(scale="tiny"))
    head = "accept_claims = true\n" if accept_claims else ""
    path.write_text(head + path.read_text() + PHASE)
    return path


def tiny_run(competition_file: Path, results_dir: Path) -> TinyRun:
    """The template model's run for that competition, with its upload built as `evalrs
    submit` builds it (the predictions kept in the run directory, the submission the claim).
    """
    from submission.MyModel import MyModel

    dataset = ChallengeDataset(scale="tiny")
    runner = EvalRSRunner(dataset, results_dir=str(results_dir), progress=False,
                          verbose=False, competition=competition_file)
    result = runner.evaluate(MyModel(items=dataset.df_tracks, top_k=runner.k))
    results = json.loads(json.dumps(result.to_dict()))
    run_dir = Path(str(result.path)).parent
    claim = submission_payload(results, email="a@example.org", participant_id="team-a")
    body = predictions_body(claim, results, run_dir)
    (run_dir / PREDICTIONS_FILE).write_bytes(body)
    return TinyRun(results=results, run_dir=run_dir, claim=claim, predictions=body)


def small_run(results_dir: Path) -> TinyRun:
    """A run on the small synthetic data, made as cheaply as such a run can be: the
    popularity baseline, no bootstrap (the tiny run's tests cover the interval), no
    competition file (the scoring job reads the data and folds from the run itself)."""
    from evaluation.baselines import PopularityModel

    runner = EvalRSRunner(ChallengeDataset(scale="small"), results_dir=str(results_dir),
                          progress=False, verbose=False, reports=False, n_boot=0)
    result = runner.evaluate(PopularityModel(), model_name="pop")
    results = json.loads(json.dumps(result.to_dict()))
    run_dir = Path(str(result.path)).parent
    claim = submission_payload(results, email="a@example.org", participant_id="team-a")
    return TinyRun(results=results, run_dir=run_dir, claim=claim,
                   predictions=predictions_body(claim, results, run_dir))
