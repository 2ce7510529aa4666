"""Leakage audit: how much of the future a split lets a model see, and what it cannot know."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from evaluation._util.arrays import fib_hash
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
            if name == "train_events_after_cut":
                label = ("train events at/after the global cut" if self.cutoff is not None
                         else "train events after the earliest test event (any user)")
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

    Parameters
    ----------
    train : pandas.DataFrame or Split
        The training events, or a whole split.
    test : pandas.DataFrame, optional
        The test events (when ``train`` is a frame).
    cutoff : optional
        The global split time.

    Returns
    -------
    LeakageAudit
        The counts of test information visible in training.
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

    tr_t = time_values(train["timestamp"]).astype(np.float64)
    te_t = time_values(test["timestamp"]).astype(np.float64)
    tr_u, te_u, n_users = _joint_codes(train["user_id"].to_numpy(), test["user_id"].to_numpy())
    tr_i, te_i, n_items = _joint_codes(train["track_id"].to_numpy(),
                                       test["track_id"].to_numpy())

    # Per-code tables (ids are dense codes): earliest test time per user, first appearance
    # per item, presence in train. All O(rows) scatter/gather, no sort of the train table.
    first_test = np.full(n_users, np.inf)
    np.minimum.at(first_test, te_u, te_t)
    is_test_user = np.isfinite(first_test)
    after_user = tr_t > first_test[tr_u]  # inf for users without test events: never after
    if cut is not None:
        after_cut = int((tr_t >= cut).sum())
    else:
        after_cut = int((tr_t > te_t.min()).sum()) if len(te_t) else 0
    first_seen = np.full(n_items, np.inf)
    np.minimum.at(first_seen, tr_i, tr_t)
    np.minimum.at(first_seen, te_i, te_t)
    point = np.full(len(te_t), float(cut)) if cut is not None else first_test[te_u]
    future = first_seen[te_i] >= point
    train_item = np.bincount(tr_i, minlength=n_items) > 0
    train_user = np.bincount(tr_u, minlength=n_users) > 0
    in_train_item = train_item[te_i]
    in_train_user = train_user[te_u]
    future_items = _present(te_i[future], n_items)
    in_both = _pairs_in(te_u, te_i, tr_u, tr_i, n_items)

    return LeakageAudit(
        train_events=len(train), test_events=len(test), test_users=int(is_test_user.sum()),
        test_items=int(_present(te_i, n_items).sum()), cutoff=cut,
        train_events_after_user_test=int(after_user.sum()),
        users_with_train_after_test=int(_present(tr_u[after_user], n_users).sum()),
        train_events_after_cut=after_cut,
        test_events_future_item=int(future.sum()),
        test_items_future=int(future_items.sum()),
        test_items_future_in_train=int((future_items & train_item).sum()),
        test_events_unseen_item=int((~in_train_item).sum()),
        test_items_unseen=int(_present(te_i[~in_train_item], n_items).sum()),
        test_events_unseen_user=int((~in_train_user).sum()),
        test_users_unseen=int(_present(te_u[~in_train_user], n_users).sum()),
        test_events_in_train=int(in_both.sum()),
    )


def _joint_codes(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Codes of ``a`` and ``b`` in one shared space ``0..n-1``, and ``n``.

    Compact non-negative integer ids are their own codes (a table over them is cheaper than
    hashing tens of millions of rows); other ids are factorised.
    """
    both = np.concatenate([a, b])
    if len(both) == 0:
        return np.zeros(0, np.intp), np.zeros(0, np.intp), 0
    if both.dtype.kind in "iu":
        lo, hi = int(both.min()), int(both.max())
        if lo >= 0 and hi < max(4 * len(both), 1 << 20):
            return a.astype(np.intp, copy=False), b.astype(np.intp, copy=False), hi + 1
    codes, uniques = pd.factorize(both)
    codes = codes.astype(np.intp, copy=False)
    return codes[: len(a)], codes[len(a):], len(uniques)


def _present(codes: np.ndarray, n: int) -> np.ndarray:
    """Boolean table of the codes that occur."""
    table = np.zeros(n, dtype=bool)
    table[codes] = True
    return table


def _pairs_in(q_users, q_items, r_users, r_items, n_items: int) -> np.ndarray:
    """Whether each query (user, item) pair occurs among the reference pairs.

    A bit table over hashed pair keys rules out most queries in O(rows); only the few
    candidates are compared exactly, against the reference keys that share their hash.
    """
    q = q_users.astype(np.int64) * n_items + q_items
    r = r_users.astype(np.int64) * n_items + r_items
    out = np.zeros(len(q), dtype=bool)
    if len(q) == 0 or len(r) == 0:
        return out
    bits = int(min(30, max(16, np.ceil(np.log2(4 * len(r))))))
    h_r = fib_hash(r, bits)
    h_q = fib_hash(q, bits)
    table = np.zeros(1 << bits, dtype=bool)
    table[h_r] = True
    cand = table[h_q]
    if cand.any():
        table[:] = False
        table[h_q[cand]] = True
        out[cand] = np.isin(q[cand], r[table[h_r]])
    return out
