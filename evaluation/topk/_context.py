"""What every path shares: the checked inputs of a call, a chunk's exclusions, the
assembly of the selected items, and the error for scores that overflow."""

from __future__ import annotations

import numpy as np
import pandas as pd

from evaluation.errors import ConfigError, show_values


class Context:
    """The validated inputs every path reads (one object keeps the chunk functions short)."""

    def __init__(self, user, item, exclude, k, bounded, user_ids, item_ids):
        self.user, self.item, self.exclude, self.k = user, item, exclude, k
        self.bounded, self.user_ids, self.item_ids = bounded, user_ids, item_ids
        self.n_items = item.shape[0]
        self._item_t = None

    @property
    def item_t(self) -> np.ndarray:
        """A contiguous ``(d, n_items)`` copy: it multiplies faster than the transposed view."""
        if self._item_t is None:
            self._item_t = np.ascontiguousarray(self.item.T)
        return self._item_t

    def check_finite(self, scores: np.ndarray, start: int, column: int = 0) -> None:
        """Refuse scores that overflowed (only needed when no bound rules it out)."""
        # NaN propagates through max: two reductions find any inf or NaN
        if self.bounded or (np.isfinite(scores.max(initial=0.0))
                            and np.isfinite(scores.min(initial=0.0))):
            return
        finite = np.ones((scores.shape[0], self.n_items), dtype=bool)
        finite[:, column : column + scores.shape[1]] = np.isfinite(scores)
        raise overflow_error(finite, start, self.user_ids, self.item_ids, scores.dtype)


def overflow_error(finite: np.ndarray, start: int, user_ids: np.ndarray, item_ids: np.ndarray,
              dtype) -> ConfigError:
    """The error for scores that are not finite (``finite``: the chunk's mask from ``start``)."""
    r, c = np.nonzero(~finite)
    users = pd.unique(user_ids[start + r])
    items = pd.unique(item_ids[c])
    return ConfigError(
        f"'user_emb' @ 'item_emb'.T is not finite in {dtype}: {len(r)} scores overflow to inf "
        f"or are NaN (inf - inf), e.g. for users {show_values(users)} and items "
        f"{show_values(items)}; a ranking of them would be arbitrary. Fix: scale the "
        "embeddings down (e.g. normalise their rows) or pass float64 arrays"
    )


def chunk_exclusions(exclude, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
    if exclude is None:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    lo, hi = exclude.indptr[start], exclude.indptr[stop]
    counts = np.diff(exclude.indptr[start : stop + 1])
    rows = np.repeat(np.arange(stop - start, dtype=np.int64), counts)
    return rows, exclude.indices[lo:hi].astype(np.int64)


def assemble_rows(out: np.ndarray, r: np.ndarray, c: np.ndarray, v: np.ndarray) -> None:
    """Write selected (row, column, score) triples into ``out``: score desc, then column asc."""
    order = np.lexsort((c, -v, r))
    r, c = r[order], c[order]
    counts = np.bincount(r, minlength=out.shape[0])
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    position = np.arange(len(r)) - starts[r]
    keep = position < out.shape[1]
    out[r[keep], position[keep]] = c[keep]
