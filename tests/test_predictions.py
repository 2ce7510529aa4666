"""Validation of what predict() returned: one test per rule, alignment, the training warning."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from evaluation.errors import ConfigError, PredictionError
from evaluation.predictions import (
    PredictionWarning,
    predictions_frame,
    seen_in_training,
    validate_predictions,
)

USERS = np.array([10, 20, 30])
CATALOG = np.array([1, 2, 3, 4, 5, 6])


def good(k=3):
    return pd.DataFrame([[1, 2, 3], [4, 5, -1], [6, -1, -1]],
                        index=pd.Index(USERS, name="user_id"),
                        columns=[str(i) for i in range(k)])


def check(frame, **kw):
    kw.setdefault("k", 3)
    kw.setdefault("catalog", CATALOG)
    return validate_predictions(frame, USERS, **kw)


def test_valid_predictions_are_normalised():
    out = check(good())
    assert out.index.name == "user_id" and out.index.tolist() == USERS.tolist()
    assert list(out.columns) == ["0", "1", "2"]
    assert all(dt == np.int64 for dt in out.dtypes)
    assert out.to_numpy().tolist() == [[1, 2, 3], [4, 5, -1], [6, -1, -1]]


def test_rows_are_aligned_by_user_id_not_position():
    shuffled = good().iloc[[2, 0, 1]]
    pd.testing.assert_frame_equal(check(shuffled), check(good()))


def test_user_id_as_column_and_integer_labels_and_whole_floats():
    frame = good().reset_index()
    frame.columns = ["user_id", 0, 1, 2]
    out = check(frame.astype({0: float, 1: float, 2: float}))
    pd.testing.assert_frame_equal(out, check(good()))


def test_columns_in_another_order_are_put_in_rank_order():
    out = check(good()[["2", "0", "1"]])
    pd.testing.assert_frame_equal(out, check(good()))


def test_user_ids_df_is_accepted():
    out = validate_predictions(good(), pd.DataFrame({"user_id": USERS}), k=3)
    assert out.index.tolist() == USERS.tolist()


def test_rule_not_a_dataframe():
    with pytest.raises(PredictionError, match="must return a pandas DataFrame; got ndarray"):
        check(good().to_numpy())


def test_rule_user_id_neither_index_nor_column():
    with pytest.raises(PredictionError, match='"user_id" is neither the index nor a column'):
        check(good().reset_index(drop=True))


def test_rule_user_id_index_and_column_disagree():
    frame = good()
    frame["user_id"] = [1, 2, 3]
    with pytest.raises(PredictionError, match="both the index name and a column"):
        check(frame)


def test_rule_user_ids_must_be_integers():
    frame = good()
    frame.index = pd.Index(["a", "b", "c"], name="user_id")
    with pytest.raises(PredictionError, match="user_id values must be integers"):
        check(frame)


def test_rule_missing_users():
    with pytest.raises(PredictionError, match=r"1 of 3 test users have no row: \[30\]"):
        check(good().iloc[:2])


def test_rule_extra_users():
    frame = pd.concat([good(), good().iloc[:1].rename(index={10: 99})])
    with pytest.raises(PredictionError, match=r"not test users: \[99\]"):
        check(frame)


def test_rule_duplicated_users():
    frame = pd.concat([good(), good().iloc[:1]])
    with pytest.raises(PredictionError, match=r"appear more than once: \[10\]"):
        check(frame)


@pytest.mark.parametrize("columns,detail", [
    (["0", "1"], "got 2 columns"),
    (["0", "1", "2", "3"], "got 4 columns"),
    (["a", "b", "c"], "unexpected labels"),
    (["0", "1", "1"], "appear twice"),
])
def test_rule_wrong_columns(columns, detail):
    frame = pd.DataFrame(np.ones((3, len(columns)), int), index=pd.Index(USERS, name="user_id"),
                         columns=columns)
    with pytest.raises(PredictionError, match=detail) as exc:
        check(frame)
    assert 'expected k=3 columns labelled "0".."2"' in str(exc.value)
    assert "Fix:" in str(exc.value)


def test_rule_nan():
    frame = good().astype(float)
    frame.iloc[1, 2] = np.nan
    with pytest.raises(PredictionError, match=r"1 values are missing \(NaN\)") as exc:
        check(frame)
    assert "user 20: [4.0, 5.0, nan]" in str(exc.value)
    assert "fillna(-1)" in str(exc.value)


def test_rule_nullable_missing_values():
    frame = good().astype("Int64")
    frame.iloc[0, 0] = pd.NA
    with pytest.raises(PredictionError, match="missing"):
        check(frame)


def test_rule_fractional_floats():
    frame = good().astype(float)
    frame.iloc[0, 1] = 2.5
    with pytest.raises(PredictionError, match=r"whole numbers; 1 values are not \(e.g. \[2.5\]\)"):
        check(frame)


def test_rule_strings():
    frame = good().astype(str)
    with pytest.raises(PredictionError, match="9 values are strings") as exc:
        check(frame)
    assert "user 10: ['1', '2', '3']" in str(exc.value)


def test_rule_booleans():
    frame = good().astype(bool)
    with pytest.raises(PredictionError, match="booleans"):
        check(frame)


def test_rule_items_not_in_catalog():
    frame = good()
    frame.iloc[2, 1] = 77
    frame.iloc[0, 2] = -5
    with pytest.raises(PredictionError, match=r"2 item ids are not tracks of the catalog.*"
                                              r"\[-5, 77\]") as exc:
        check(frame)
    assert "user 30: [6, 77, -1]" in str(exc.value)


def test_catalog_check_with_sparse_ids():
    catalog = np.array([10**15, 3])
    frame = pd.DataFrame([[10**15, 3], [3, -1], [7, -1]], index=pd.Index(USERS, name="user_id"),
                         columns=["0", "1"])
    with pytest.raises(PredictionError, match=r"\[7\]"):
        validate_predictions(frame, USERS, k=2, catalog=catalog)


def test_rule_same_item_twice():
    frame = good()
    frame.iloc[0] = [1, 2, 1]
    with pytest.raises(PredictionError, match=r"same item more than once \(e.g. \[1\]\)"):
        check(frame)


def test_rule_real_item_after_padding():
    frame = good()
    frame.iloc[1] = [4, -1, 5]
    with pytest.raises(PredictionError, match="real item after a -1") as exc:
        check(frame)
    assert "user 20: [4, -1, 5]" in str(exc.value)


def test_padding_only_rows_are_fine():
    frame = good()
    frame.iloc[2] = [-1, -1, -1]
    assert check(frame).iloc[2].tolist() == [-1, -1, -1]


def test_bad_k():
    with pytest.raises(ConfigError, match=r"'k' parameter of validate_predictions must be an "
                       r"int in the range \[1, inf\)\. Got 0 instead"):
        validate_predictions(good(), USERS, k=0)


def test_training_items_warn_not_fail():
    train = pd.DataFrame({"user_id": [10, 20, 99], "track_id": [3, 1, 6]})
    with pytest.warns(PredictionWarning, match=r"1 recommended items \(in 1 of 3 lists\)"):
        out = check(good(), train=train)
    assert out.shape == (3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check(good(), train=pd.DataFrame({"user_id": [10], "track_id": [6]}))


@pytest.mark.parametrize("scale", [1, 10**13, 10**15])
def test_seen_in_training_equals_naive_reference(rng, scale):
    n_users, k = 200, 15
    users = rng.permutation(1000)[:n_users] * scale
    matrix = rng.integers(0, 60, size=(n_users, k)) * scale
    matrix[rng.random(matrix.shape) < 0.1] = -1
    train = pd.DataFrame({"user_id": rng.choice(np.append(users, [5 * scale + 1]), 3000),
                          "track_id": rng.integers(0, 60, 3000) * scale})
    got = seen_in_training(matrix, users, train)
    pairs = set(zip(train["user_id"].tolist(), train["track_id"].tolist()))
    expected = np.array([[(u, t) in pairs for t in row] for u, row in zip(users.tolist(),
                                                                          matrix.tolist())])
    np.testing.assert_array_equal(got, expected & (matrix != -1))


def test_predictions_frame_pads_ragged_lists():
    frame = predictions_frame([7, 8], [[3, 1], [2]], k=3)
    assert frame.index.name == "user_id"
    assert frame.to_numpy().tolist() == [[3, 1, -1], [2, -1, -1]]
    assert predictions_frame([7], np.array([[1, 2, 3]]), k=2).to_numpy().tolist() == [[1, 2]]
    with pytest.raises(PredictionError, match="one list per user"):
        predictions_frame([7, 8], [[1]])
