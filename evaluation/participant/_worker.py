"""The participant's model, run inside the sandbox: it trains and predicts, nothing else.

    python -P -m evaluation.participant /inputs

Started by ``reproduce`` inside the bubblewrap sandbox, with the checkout's copy as the working
folder. ``/inputs`` holds what a model receives and nothing more (written by the organizer's
process): ``config.json`` (the constructor's parameters, ``k``, the run's seed, the folds, the
uploaded fingerprint), ``items.pkl`` (the tracks table), and per fold ``fold-F-train.pkl`` (the
training frame) and ``fold-F-users.pkl`` (the test users). There are no test targets, no private
seed and nothing to send anywhere in it. Under a sampled-negative protocol (``score_candidates``
in the configuration) each fold also has ``fold-F-candidates.npy``: per test user, in the users'
order, the items to score (the target among sampled negatives, the row sorted by item id so
that its place says nothing); the model then scores them with ``score_items`` instead of
predicting lists.

It writes records to the result channel (the pipe whose descriptor is in ``EVALRS_RESULT_FD``):
each an ``.npy`` array written with ``allow_pickle=False``: a JSON record (UTF-8 bytes as a
uint8 array) ``{"fingerprint": ...}``, then per fold ``{"fold": F, "columns": [...], "cost":
{...}}`` (the fold's seconds to train and to predict and its peak memory, measured here)
followed by the index and the values of its predictions, or ``{"fold": F, "error": "..."}``,
and last ``{"done": true}``. Under a sampled-negative protocol a fold's record is ``{"fold": F,
"scores": true, "cost": {...}}`` followed by its ``(users, candidates)`` float64 scores, and a
model without ``score_items`` sends ``{"problem": "..."}`` before ``done``, untrained. The
organizer's process trusts none of it beyond "predictions (or scores) to validate" (and the
costs, which only the sandbox can measure).
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from evaluation.participant._fingerprint import fingerprint_differences, model_fingerprint
from evaluation.participant._memory import PeakMemory
from evaluation.participant._model_class import load_model_class
from evaluation.participant._seeds import fold_seed, seed_global_generators


class Channel:
    """The result channel: records written as ``.npy`` arrays."""

    def __init__(self, fd: int) -> None:
        # unbuffered: numpy writes an array's data to the descriptor itself
        self._file = os.fdopen(fd, "wb", buffering=0)

    def record(self, data: dict) -> None:
        self.array(np.frombuffer(json.dumps(data).encode(), dtype=np.uint8))

    def array(self, array: np.ndarray) -> None:
        np.lib.format.write_array(self._file, np.ascontiguousarray(array), allow_pickle=False)


def _load(path: Path):
    with open(path, "rb") as f:  # written by the organizer's process for this run
        return pickle.load(f)


def prediction_arrays(raw) -> tuple[np.ndarray, list[str], np.ndarray]:
    """The user ids, column labels and values of what ``predict`` returned.

    Raises
    ------
    TypeError
        When it is not a DataFrame of numbers indexed (or keyed) by user id.
    """
    if not isinstance(raw, pd.DataFrame):
        raise TypeError(f"predict() must return a pandas DataFrame; got {type(raw).__name__}")
    frame = raw
    if "user_id" in frame.columns and frame.index.name != "user_id":
        frame = frame.set_index("user_id")
    elif "user_id" in frame.columns:
        frame = frame.drop(columns="user_id")
    index = frame.index.to_numpy()
    values = frame.to_numpy()
    for what, array in (("user ids", index), ("items", values)):
        if array.dtype.kind not in "iufb":
            raise TypeError(f"predictions: the {what} must be numbers to be scored "
                            f"(got dtype {array.dtype})")
    return index, [str(c) for c in frame.columns], values


#: Test users scored in one call of ``score_items`` (as ``evaluate_sampled`` batches them).
SCORE_BATCH = 4096
#: Why a model cannot run under a sampled-negative protocol.
NO_SCORE_ITEMS = ("the model has no score_items(user_ids, item_ids) method, which the "
                  "sampled-negative protocol calls to score each test user's candidates; add "
                  "one that returns a (users, candidates) array of finite scores, higher = "
                  "better")


def candidate_scores(model, user_ids: np.ndarray, candidates: np.ndarray,
                     batch: int = SCORE_BATCH) -> np.ndarray:
    """``model.score_items`` on every row of ``candidates`` (``users x candidates`` item ids),
    ``batch`` users at a time, as one float64 array.

    Raises
    ------
    TypeError
        When a batch's scores are not numbers or not of the batch's shape.
    """
    out = np.empty(candidates.shape, dtype=np.float64)
    for start in range(0, len(user_ids), batch):
        stop = min(start + batch, len(user_ids))
        raw = model.score_items(user_ids[start:stop], candidates[start:stop])
        try:
            scores = np.asarray(raw, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"score_items must return numbers; got "
                            f"{type(raw).__name__}") from None
        if scores.shape != (stop - start, candidates.shape[1]):
            raise TypeError(f"score_items returned shape {scores.shape} for "
                            f"{stop - start} users of {candidates.shape[1]} candidates; "
                            f"return one score per candidate, in item_ids' layout")
        out[start:stop] = scores
    return out


def fold_cost(train_s: float, predict_s: float, peak: int | None) -> dict:
    """A fold's cost as measured here: seconds to train and to predict, and the peak resident
    memory of this process while it trained and predicted (MiB; Linux: VmHWM, reset before
    the fold; elsewhere getrusage's peak so far)."""
    return {"train_seconds": train_s, "predict_seconds": predict_s,
            "peak_rss_mib": None if peak is None else round(peak / 2**20, 1)}


def main(argv: list[str]) -> int:
    """Train and predict every fold described in ``argv[0]``; write the records."""
    inputs = Path(argv[0])
    config = json.loads((inputs / "config.json").read_text())
    channel = Channel(int(os.environ["EVALRS_RESULT_FD"]))

    # the checkout's own top-level modules import as under submission.py, after the harness
    sys.path.append(str(Path.cwd()))
    model_class = load_model_class(Path.cwd())
    model = model_class(items=_load(inputs / "items.pkl"), top_k=config["k"],
                        **config.get("params", {}))
    fingerprint = model_fingerprint(model, {})  # before any training, as the runner takes it
    channel.record({"fingerprint": fingerprint})
    expected = config.get("expected_fingerprint")
    if expected is not None and fingerprint_differences(expected, fingerprint):
        print("the model's fingerprint is not the upload's: not evaluated", flush=True)
        channel.record({"done": True})
        return 0
    scoring = config.get("score_candidates") is True
    if scoring and not callable(getattr(model, "score_items", None)):
        channel.record({"problem": NO_SCORE_ITEMS})
        channel.record({"done": True})
        return 0
    memory = PeakMemory()
    for fold in config["folds"]:
        seed_global_generators(fold_seed(config["seed"], fold))
        train_df, users = (_load(inputs / f"fold-{fold}-train.pkl"),
                           _load(inputs / f"fold-{fold}-users.pkl"))
        memory.reset()
        start = time.perf_counter()
        model.train(train_df)
        trained = time.perf_counter()
        if scoring:
            _score_fold(channel, model, fold, users, inputs, memory, trained - start)
            continue
        raw = model.predict(users)
        cost = fold_cost(trained - start, time.perf_counter() - trained, memory.read())
        try:
            index, columns, values = prediction_arrays(raw)
        except TypeError as exc:
            channel.record({"fold": fold, "error": str(exc)})
            continue
        channel.record({"fold": fold, "columns": columns, "cost": cost})
        channel.array(index)
        channel.array(values)
        print(f"fold {fold}: predicted", flush=True)
    channel.record({"done": True})
    return 0


def _score_fold(channel: Channel, model, fold: int, users: pd.DataFrame, inputs: Path,
                memory: PeakMemory, train_s: float) -> None:
    """Score one fold's candidates and send them (or why they could not be)."""
    candidates = np.load(inputs / f"fold-{fold}-candidates.npy", allow_pickle=False)
    started = time.perf_counter()
    try:
        scores = candidate_scores(model, users["user_id"].to_numpy(), candidates)
    except TypeError as exc:
        channel.record({"fold": fold, "error": str(exc)})
        return
    cost = fold_cost(train_s, time.perf_counter() - started, memory.read())
    channel.record({"fold": fold, "scores": True, "cost": cost})
    channel.array(scores)
    print(f"fold {fold}: scored", flush=True)
