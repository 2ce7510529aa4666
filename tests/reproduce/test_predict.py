"""What comes back from the sandbox is data to validate, never trusted: the result channel's
parser refuses pickles, malformed records and shapes that do not fit."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd

from evaluation.reproduce import _predict


def _stream(tmp_path, *arrays) -> object:
    buffer = io.BytesIO()
    for array in arrays:
        np.lib.format.write_array(buffer, array, allow_pickle=True)
    path = tmp_path / "stream"
    path.write_bytes(buffer.getvalue())
    return _predict.read_results(path)


def _json(record) -> np.ndarray:
    return np.frombuffer(json.dumps(record).encode(), dtype=np.uint8)


def test_a_well_formed_stream_gives_the_fingerprint_and_each_folds_frame(tmp_path):
    index, values = np.array([3, 1]), np.array([[10, 11], [12, -1]])
    run = _stream(tmp_path, _json({"fingerprint": {"sha256": "ab"}}),
                  _json({"fold": 0, "columns": ["0", "1"]}), index, values,
                  _json({"fold": 1, "error": "predict() must return a DataFrame"}),
                  _json({"done": True}))
    assert run.problem is None and run.done and run.fingerprint == {"sha256": "ab"}
    expected = pd.DataFrame(values, index=pd.Index(index, name="user_id"), columns=["0", "1"])
    pd.testing.assert_frame_equal(run.predictions[0], expected)
    assert run.errors == {1: "predict() must return a DataFrame"}


def test_pickles_garbage_and_misfit_shapes_are_refused(tmp_path):
    class Evil:
        def __reduce__(self):
            return (print, ("unpickled!",))

    for arrays in [
        (np.array([Evil()], dtype=object),),  # a pickle: never loaded
        (_json({"fold": 0, "columns": ["0"]}), np.array([1, 2]), np.zeros((3, 1))),
        (_json({"fold": 0, "columns": ["0", "1"]}), np.array([1]), np.zeros((1, 1))),
        (_json(["not", "a", "record"]),),
        (np.zeros(3, dtype=np.float64),),
    ]:
        run = _stream(tmp_path, *arrays)
        assert run.problem is not None and "could not be read" in run.problem
        assert run.predictions == {}
    (tmp_path / "stream").write_bytes(b"\x93NUMPY garbage")
    assert "could not be read" in _predict.read_results(tmp_path / "stream").problem
