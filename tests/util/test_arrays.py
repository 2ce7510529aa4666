"""The shared id lookups of ``evaluation._util.arrays`` against slow, obviously correct loops."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation._util.arrays import (
    DENSE_FLOOR,
    IdIndex,
    dense_ok,
    fib_hash,
    isin,
    sorted_positions,
    sorted_unique,
    take_small_table,
)


def slow_positions(ids, query):
    where = {int(v): i for i, v in enumerate(ids)}
    return np.array([where.get(int(q), -1) for q in np.ravel(query)],
                    dtype=np.int64).reshape(np.shape(query))


def slow_contains(members, query):
    present = {int(v) for v in members}
    return np.array([int(q) in present for q in np.ravel(query)],
                    dtype=bool).reshape(np.shape(query))


# (ids, queries): small non-negative ids (dense tables), negatives, huge ids (sorted/hashed
# paths), and queries mixing known and unknown ids
CASES = {
    "small": (lambda rng: rng.choice(1000, 300, replace=False),
              lambda rng: rng.integers(-5, 1200, (40, 7))),
    "negative": (lambda rng: rng.choice(np.arange(-500, 500), 200, replace=False),
                 lambda rng: rng.integers(-600, 600, 500)),
    "large": (lambda rng: rng.choice(2**62, 300, replace=False) - 2**61,
              lambda rng: np.concatenate([rng.integers(-2**62, 2**62, 100),
                                          rng.choice(2**62, 50) - 2**61])),
    "just_above_floor": (lambda rng: DENSE_FLOOR + rng.choice(10**6, 100, replace=False),
                         lambda rng: DENSE_FLOOR + rng.integers(-10, 10**6, 300)),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("is_sorted", [False, True])
def test_positions_and_contains_match_the_slow_reference(case, is_sorted):
    rng = np.random.default_rng(7)
    make_ids, make_query = CASES[case]
    ids = make_ids(rng).astype(np.int64)
    if is_sorted:
        ids = np.sort(ids)
    query = make_query(rng).astype(np.int64)
    query.reshape(-1)[: min(len(ids), query.size) // 2] = ids[: min(len(ids), query.size) // 2]
    index = IdIndex(ids, is_sorted=is_sorted)
    for _ in range(2):  # the second lookup reuses the cached tables
        np.testing.assert_array_equal(index.positions(query), slow_positions(ids, query))
        np.testing.assert_array_equal(index.contains(query), slow_contains(ids, query))
    assert index.positions(query).dtype == np.int64
    np.testing.assert_array_equal(isin(query, ids), slow_contains(ids, query))
    if is_sorted:
        np.testing.assert_array_equal(sorted_positions(ids, query), slow_positions(ids, query))


def test_contains_allows_repeated_members_and_wider_queries():
    members = np.array([3, 3, 9, 0, 9])
    query = np.array([0, 1, 3, 9, 10, 5_000, 2_000_000])
    np.testing.assert_array_equal(isin(query, members), slow_contains(members, query))
    index = IdIndex(members)
    np.testing.assert_array_equal(index.contains(np.array([10, 9])), [False, True])
    # a later, wider query widens the cached table without changing any answer
    np.testing.assert_array_equal(index.contains(query), slow_contains(members, query))
    np.testing.assert_array_equal(index.contains(np.array([-1, 3])), [False, True])


@pytest.mark.parametrize("ids,query", [
    (np.zeros(0, np.int64), np.array([1, 2])),
    (np.array([1, 2]), np.zeros(0, np.int64)),
    (np.zeros(0, np.int64), np.zeros((0, 3), np.int64)),
])
def test_empty_ids_or_queries(ids, query):
    index = IdIndex(ids)
    assert index.positions(query).shape == query.shape
    assert (index.positions(query) == -1).all()
    assert index.contains(query).shape == query.shape
    assert not index.contains(query).any()
    assert sorted_positions(ids, query).shape == query.shape
    assert len(index) == len(ids)


def test_dense_rule():
    assert dense_ok(0, DENSE_FLOOR - 1, 0)
    assert not dense_ok(0, DENSE_FLOOR, 0)
    assert dense_ok(0, 4 * 10**7 - 1, 10**7)  # large data justify a larger table
    assert not dense_ok(-1, 10, 100)


def test_fib_hash_is_the_top_bits_of_the_multiplicative_hash():
    keys = np.array([0, 1, 2, -1, 2**62, -(2**63), 2**63 - 1], dtype=np.int64)
    for bits in (1, 10, 27, 31):
        expected = [((int(k) % 2**64) * 0x9E3779B97F4A7C15 % 2**64) >> (64 - bits)
                    for k in keys]
        got = fib_hash(keys, bits)
        assert got.dtype == np.int32
        assert got.tolist() == expected


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_take_small_table_equals_indexing(monkeypatch, dtype):
    import evaluation._util.arrays as arrays_module

    monkeypatch.setattr(arrays_module, "_TAKE_CHUNK", 7)  # many pieces, a short last one
    rng = np.random.default_rng(3)
    table = rng.random(50) < 0.3
    positions = rng.integers(-50, 50, size=(9, 11)).astype(dtype)  # negatives count from the end
    np.testing.assert_array_equal(take_small_table(table, positions), table[positions])
    codes = rng.integers(0, 1000, 50).astype(np.int32)
    np.testing.assert_array_equal(take_small_table(codes, positions[0]), codes[positions[0]])
    assert take_small_table(codes, np.zeros((0, 3), dtype=dtype)).shape == (0, 3)
    with pytest.raises(IndexError):
        take_small_table(table, np.array([0, 50], dtype=dtype))


@pytest.mark.parametrize("values", [
    np.array([], dtype=np.int64),
    np.array([7]),
    np.array([[3, -1], [3, 2**62]]),
    np.random.default_rng(0).integers(-50, 50, 1000),
    np.random.default_rng(1).integers(0, 2**40, 5000, dtype=np.int64),
    np.array([True, False, True]),
    np.array([2.5, np.nan, 2.5, np.nan]),
])
def test_sorted_unique_is_numpys_unique(values):
    got = sorted_unique(values)
    slow = sorted(set(values.ravel().tolist()), key=lambda v: (v != v, v))
    expected = np.unique(values)
    assert got.dtype == expected.dtype
    assert np.array_equal(got, expected, equal_nan=True)
    if values.dtype.kind != "f":
        assert got.tolist() == slow
