"""Leakage audit on a hand-made leaky split, counted by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evaluation.errors import ConfigError, DataError
from evaluation.splits import Split, audit_leakage, global_time_split, temporal_user_split

# Train: user 1 has 12@9 after its first test event (t=5); user 2 has 13@8 after its first
# test event (t=6); user 4 appears in train only. Test: user 1 re-listens to 10 (also in
# train); user 3 is a new user with a new item 15.
TRAIN = pd.DataFrame({"user_id": [1, 1, 1, 2, 2, 4],
                      "track_id": [10, 11, 12, 10, 13, 14],
                      "timestamp": [1, 2, 9, 3, 8, 7]})
TEST = pd.DataFrame({"user_id": [1, 1, 2, 3],
                     "track_id": [13, 10, 14, 15],
                     "timestamp": [5, 6, 6, 4]})


def test_audit_per_user_split_point():
    audit = audit_leakage(TRAIN, TEST)
    # first test times: u1 = 5, u2 = 6, u3 = 4. Item first appearances (train or test):
    # 10:1, 11:2, 12:9, 13:5, 14:6, 15:4.
    assert audit.to_dict() == {
        "train_events": 6, "test_events": 4, "test_users": 3, "test_items": 4, "cutoff": None,
        "train_events_after_user_test": 2,  # 12@9 (u1, > 5), 13@8 (u2, > 6)
        "users_with_train_after_test": 2,
        "train_events_after_cut": 3,  # > 4, the earliest test event: 12@9, 13@8, 14@7
        "test_events_future_item": 3,  # 13@5 (first 5 >= 5), 14@6 (6 >= 6), 15@4 (4 >= 4)
        "test_items_future": 3,
        "test_items_future_in_train": 2,  # 13 and 14 are in train through later events
        "test_events_unseen_item": 1,  # 15
        "test_items_unseen": 1,
        "test_events_unseen_user": 1,  # user 3
        "test_users_unseen": 1,
        "test_events_in_train": 1,  # (1, 10)
        "has_leakage": True,
    }


def test_audit_global_cut():
    audit = audit_leakage(TRAIN, TEST, cutoff=5)
    assert audit.cutoff == 5
    assert audit.train_events_after_cut == 3  # 12@9, 13@8, 14@7 are >= 5
    assert audit.train_events_after_user_test == 2  # independent of the cut
    assert audit.test_events_future_item == 2  # 13 (first 5 >= 5), 14 (first 6); not 15 (4)
    assert audit.test_items_future == 2 and audit.test_items_future_in_train == 2
    assert audit.test_users_unseen == 1 and audit.test_items_unseen == 1


def test_audit_clean_splits():
    rng = np.random.default_rng(3)
    events = pd.DataFrame({"user_id": rng.integers(0, 20, 400),
                           "track_id": rng.integers(0, 50, 400),
                           "timestamp": rng.integers(0, 1000, 400)})
    events = events.drop_duplicates(["user_id", "track_id"])
    cut = global_time_split(events, quantile=0.7)
    audit = audit_leakage(cut)
    assert audit.cutoff == cut.cutoff
    assert audit.train_events_after_cut == 0 and audit.train_events_after_user_test == 0
    assert audit.test_items_future_in_train == 0 and not audit.has_leakage
    # with a global cut, items first seen at/after the cut are exactly the items not in train
    assert audit.test_events_future_item == audit.test_events_unseen_item
    assert audit.test_events_in_train == 0
    per_user = audit_leakage(temporal_user_split(events, 0.2))
    assert per_user.train_events_after_user_test == 0  # no train event after the user's test
    assert per_user.train_events_after_cut > 0  # ... but other users' later events leak
    assert per_user.has_leakage and per_user.test_users_unseen == 0


def test_audit_summary_text_and_rich():
    audit = audit_leakage(TRAIN, TEST)
    text = str(audit)
    assert "6 train / 4 test events" in text
    assert "train events after the user's first test event" in text
    assert "train sees the future" in text
    from rich.console import Console

    console = Console(record=True, width=120)
    console.print(audit)
    assert "Leakage audit" in console.export_text()


def test_audit_errors():
    with pytest.raises(ConfigError, match="missing the test table"):
        audit_leakage(TRAIN)
    with pytest.raises(ConfigError, match="a Split alone"):
        audit_leakage(Split(TRAIN, TEST), TEST)
    with pytest.raises(DataError, match="test: missing column"):
        audit_leakage(TRAIN, TEST.drop(columns="timestamp"))


def test_audit_same_counts_for_any_id_encoding():
    # huge and negative ids take the factorising path; the counts must not change
    shifted = audit_leakage(TRAIN.assign(user_id=TRAIN.user_id * -(10**12),
                                         track_id=TRAIN.track_id + 2**40),
                            TEST.assign(user_id=TEST.user_id * -(10**12),
                                        track_id=TEST.track_id + 2**40))
    assert shifted.to_dict() == audit_leakage(TRAIN, TEST).to_dict()


def test_pair_membership_equals_a_set_reference():
    from evaluation.splits._audit import _pairs_in

    rng = np.random.default_rng(11)
    r_u, r_i = rng.integers(0, 300, 50_000), rng.integers(0, 400, 50_000)
    q_u, q_i = rng.integers(0, 300, 20_000), rng.integers(0, 400, 20_000)
    got = _pairs_in(q_u, q_i, r_u, r_i, 400)
    ref = set(zip(r_u.tolist(), r_i.tolist()))
    expected = np.array([(u, i) in ref for u, i in zip(q_u.tolist(), q_i.tolist())])
    np.testing.assert_array_equal(got, expected)
    assert 0 < expected.sum() < len(expected)
    assert not _pairs_in(q_u, q_i, r_u[:0], r_i[:0], 400).any()
