"""The models and the task function that the Ray executor's tests send to Ray's workers.

Ray pickles them by reference to their module, and each worker process imports that module:
this light one, not the test module (pytest and the tests' own imports), which every new
worker (the tests kill some on purpose) would import again.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import numpy as np

from evaluation.baselines import PopularityModel
from evaluation.runner._ray import SharedDataset


class MarkedModel(PopularityModel):
    """A popularity model that records each finished training in ``marks``.

    Where ``marks/kill-<rows>`` exists, the first training on ``<rows>`` rows kills its own
    process (``os._exit``), as a worker lost to the out-of-memory killer would die. Where
    ``marks/fail`` exists, training on fold 1's rows waits until the driver saved fold 0
    and then raises, as a model that crashes mid-run.
    """

    def __init__(self, marks: str, fold1_rows: int):
        super().__init__()
        self.marks = marks
        self.fold1_rows = fold1_rows

    def train(self, train_df, **kwargs):
        marks, rows = Path(self.marks), len(train_df)
        kill = marks / f"kill-{rows}"
        if kill.exists() and not (marks / f"killed-{rows}").exists():
            (marks / f"killed-{rows}").touch()
            os._exit(1)
        if (marks / "fail").exists() and rows == self.fold1_rows:
            deadline = time.monotonic() + 30
            while not list(marks.parent.glob("results/*/fold_0.json")) \
                    and time.monotonic() < deadline:
                time.sleep(0.05)
            raise RuntimeError("simulated crash in fold 1")
        super().train(train_df, **kwargs)
        with open(marks / f"trained-{rows}", "a") as fh:
            fh.write("x")


def trainings(marks: Path, dataset) -> list[int]:
    """How often each fold's training finished (from the marks)."""
    out = []
    for fold in range(dataset.num_folds):
        path = marks / f"trained-{len(dataset.get_train_set(fold))}"
        out.append(len(path.read_text()) if path.exists() else 0)
    return out


def in_a_task(shared):
    """What a task sees of the shared dataset: whether it copied, and the data itself."""
    ds = SharedDataset(shared)
    column = shared.events["track_id"]
    return {"writeable": column.flags.writeable, "owndata": column.flags.owndata,
            "frame_shares": np.shares_memory(ds.tables.events["track_id"].to_numpy(), column),
            "fold_owndata": ds.fold(1).train_rows.flags.owndata,
            "events": ds.tables.events, "users": ds.df_users, "tracks": ds.df_tracks,
            "vectors": ds.track_vectors.vectors, "train": ds.get_train_set(1),
            "test": ds.get_test_set(1), "fingerprint": ds.fingerprint,
            # computed again over the rebuilt tables, not the recorded one
            "recomputed": dataclasses.replace(ds.tables, _fingerprint=None).fingerprint(),
            "fold_params": ds.fold_params}


class DropsAUser(PopularityModel):
    """A popularity model whose predictions leave out the first user: a harness error."""

    def predict(self, user_ids):
        return super().predict(user_ids).iloc[1:]
