"""What the runner's tests share: results compared without what legitimately changes between
two runs, and a run script that a test can kill part-way through and resume."""

from __future__ import annotations

from evaluation.runner import RunResult


def comparable(results: dict | RunResult) -> dict:
    """Results without what legitimately changes between runs (timings, paths)."""
    if isinstance(results, RunResult):
        results = results.to_dict()
    out = {k: v for k, v in results.items()
           if k not in ("runtime", "results_path", "environment", "submission")}
    out["folds"] = [{k: v for k, v in f.items() if k != "runtime"} for f in results["folds"]]
    return out


# A tiny synthetic run in its own process: argv[1] is the results folder, argv[2] a log with a
# line per training, and argv[3] == "hang" makes it hang in the third training (fold 2).
KILLABLE = '''
import os, sys, time
from evaluation import ChallengeDataset, EvalRSRunner
from evaluation.baselines import PopularityModel

class Resumable(PopularityModel):
    """Popularity; logs each training to a file and, if asked, hangs in fold 2."""
    def train(self, train_df, **kwargs):
        with open(sys.argv[2], "a") as log:
            log.write(f"{len(train_df)}\\n")
        if sys.argv[3] == "hang" and sum(1 for _ in open(sys.argv[2])) == 3:
            time.sleep(600)
        return super().train(train_df, **kwargs)

ds = ChallengeDataset(source="synthetic", scale="tiny")
EvalRSRunner(ds, results_dir=sys.argv[1], progress=False, verbose=False, reports=False,
             n_boot=50).evaluate(Resumable())
'''
