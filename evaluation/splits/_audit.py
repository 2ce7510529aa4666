"""Leakage audit: how much of the future a split lets a model see, and what it cannot know."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from evaluation.errors import ConfigError
from evaluation.splits._split import Split, check_events, time_values
from evaluation.splits._temporal import to_unix_seconds

_COLUMNS = ("user_id", "track_id", "timestamp")

# (field, label) rows of the printed summary, in order
_ROWS = (
    ("train_events_after_user_test", "train events after the user's first test event"),
    ("users_with_train_after_test", "  test users with such train events"),
    ("train_events_after_cut", "train events after the split point"),
    ("test_events_future_item", "test events whose item first appears at/after the split point"),
    ("test_items_future", "  distinct such items"),
    ("test_items_future_in_train", "  of which known to train (seen through later events)"),
    ("test_events_unseen_item", "test events whose item is not in train"),
    ("test_items_unseen", "  distinct items not in train"),
    ("test_events_unseen_user", "test events whose user is not in train"),
    ("test_users_unseen", "  distinct users not in train"),
    ("test_events_in_train", "test events whose (user, item) pair is also in train"),
)


@dataclass(frozen=True)
class LeakageAudit:
    """Counts that describe the leakage and the cold-start load of one train/test split.

    *Split point*: the global cut where the split has one (``cutoff``), else each user's
    earliest test event. ``train_events_after_cut`` counts train events at or after the global
    cut (train should end strictly before it) or, without a cut, strictly after the earliest
    test event overall (how much of the "future" a per-user split lets every model see).
    "After" is strictly later; an item "first appears" at the earliest time it occurs in train
    or test, so an item first appearing exactly at the split point was not known before it.
    """

    train_events: int
    test_events: int
    test_users: int
    test_items: int
    cutoff: int | float | None
    train_events_after_user_test: int
    users_with_train_after_test: int
    train_events_after_cut: int
    test_events_future_item: int
    test_items_future: int
    test_items_future_in_train: int
    test_events_unseen_item: int
    test_items_unseen: int
    test_events_unseen_user: int
    test_users_unseen: int
    test_events_in_train: int

    @property
    def has_leakage(self) -> bool:
        """True when train holds events from the future of a test event or its user."""
        return bool(self.train_events_after_user_test or self.train_events_after_cut
                    or self.test_items_future_in_train)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["has_leakage"] = self.has_leakage
        return out

    def _lines(self) -> list[tuple[str, str, str]]:
        rows = []
        for name, label in _ROWS:
            value = getattr(self, name)
            base = (self.train_events if name.startswith("train_events") else
                    self.test_users if "users" in name else
                    self.test_items if name.startswith("test_items") else self.test_events)
            share = f"{value / base:.1%}" if base else "-"
            rows.append((label, str(value), share))
        return rows

    def __str__(self) -> str:
        cut = "per-user (earliest test event)" if self.cutoff is None else f"{self.cutoff}"
        head = (f"Leakage audit: {self.train_events} train / {self.test_events} test events, "
                f"{self.test_users} test users, {self.test_items} test items; split point: {cut}")
        lines = self._lines()
        width = max(len(label) for label, _, _ in lines)
        body = [f"  {label:<{width}}  {value:>9}  {share:>6}" for label, value, share in lines]
        verdict = ("  -> train sees the future of some test events" if self.has_leakage
                   else "  -> no temporal leakage")
        return "\n".join([head, *body, verdict])

    def __rich__(self):
        from rich.table import Table

        table = Table(title="Leakage audit", caption=str(self).splitlines()[-1].strip())
        table.add_column("count")
        table.add_column("value", justify="right")
        table.add_column("share", justify="right")
        for label, value, share in self._lines():
            table.add_row(label, value, share)
        return table


def audit_leakage(
    train: pd.DataFrame | Split, test: pd.DataFrame | None = None, *, cutoff: Any = None
) -> LeakageAudit:
    """Audit a split: ``audit_leakage(split)`` or ``audit_leakage(train, test, cutoff=...)``.

    Both tables need ``user_id``, ``track_id`` and ``timestamp``. ``cutoff`` (the global split
    time) defaults to the split's own cut when a ``Split`` is given; without one the split point
    is each user's earliest test event. See ``LeakageAudit`` for the meaning of each count.
    """
    if isinstance(train, Split):
        if test is not None:
            raise ConfigError("audit_leakage: pass a Split alone, or train and test tables.")
        split = train
        train, test = split.train, split.test
        if cutoff is None:
            cutoff = split.cutoff
    elif test is None:
        raise ConfigError("audit_leakage: missing the test table; call audit_leakage(split) or "
                          "audit_leakage(train, test).")
    check_events(train, _COLUMNS, name="train")
    check_events(test, _COLUMNS, name="test")
    cut = None if cutoff is None else to_unix_seconds(cutoff, "cutoff")

    tr_u = train["user_id"].to_numpy(np.int64)
    tr_i = train["track_id"].to_numpy(np.int64)
    tr_t = time_values(train["timestamp"])
    te_u = test["user_id"].to_numpy(np.int64)
    te_i = test["track_id"].to_numpy(np.int64)
    te_t = time_values(test["timestamp"])

    # Each user's earliest test time, looked up for train rows (NaN-free via a found mask).
    test_users, inv = np.unique(te_u, return_inverse=True)
    first_test = np.full(len(test_users), np.inf)
    np.minimum.at(first_test, inv, te_t.astype(np.float64))
    pos = np.searchsorted(test_users, tr_u)
    pos_c = np.minimum(pos, max(len(test_users) - 1, 0))
    in_test = (pos < len(test_users)) & (test_users[pos_c] == tr_u) if len(test_users) else \
        np.zeros(len(tr_u), dtype=bool)
    after_user = in_test & (tr_t > first_test[pos_c]) if len(test_users) else in_test
    split_start = cut if cut is not None else (te_t.min() if len(te_t) else None)
    after_cut = 0 if split_start is None else int(
        ((tr_t >= split_start) if cut is not None else (tr_t > split_start)).sum())

    # First appearance of every item anywhere, against each test event's split point.
    items, item_inv = np.unique(np.r_[tr_i, te_i], return_inverse=True)
    first_seen = np.full(len(items), np.inf)
    np.minimum.at(first_seen, item_inv, np.r_[tr_t, te_t].astype(np.float64))
    te_item_row = item_inv[len(tr_i):]
    point = np.full(len(te_t), float(cut)) if cut is not None else first_test[inv]
    future = first_seen[te_item_row] >= point
    in_train_item = np.isin(te_i, tr_i)
    future_items = np.unique(te_i[future])
    unseen_items = np.unique(te_i[~in_train_item])
    in_train_user = np.isin(te_u, tr_u)

    # (user, item) pairs present on both sides, via one int64 key per pair (ids shifted to >= 0).
    low_u = min(tr_u.min(initial=0), te_u.min(initial=0))
    low_i = min(tr_i.min(initial=0), te_i.min(initial=0))
    stride = int(max(tr_i.max(initial=0), te_i.max(initial=0))) - int(low_i) + 1
    in_both = np.isin((te_u - low_u) * stride + (te_i - low_i),
                      (tr_u - low_u) * stride + (tr_i - low_i))

    return LeakageAudit(
        train_events=len(train), test_events=len(test), test_users=len(test_users),
        test_items=len(np.unique(te_i)), cutoff=cut,
        train_events_after_user_test=int(after_user.sum()),
        users_with_train_after_test=len(np.unique(tr_u[after_user])),
        train_events_after_cut=after_cut,
        test_events_future_item=int(future.sum()),
        test_items_future=len(future_items),
        test_items_future_in_train=int(np.isin(future_items, tr_i).sum()),
        test_events_unseen_item=int((~in_train_item).sum()),
        test_items_unseen=len(unseen_items),
        test_events_unseen_user=int((~in_train_user).sum()),
        test_users_unseen=len(np.unique(te_u[~in_train_user])),
        test_events_in_train=int(in_both.sum()),
    )
