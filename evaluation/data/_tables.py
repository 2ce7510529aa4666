"""The in-memory form of a dataset in the EvalRS schema, whatever its source."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from evaluation._util.arrays import IdIndex

EVENT_COLUMNS = ("user_id", "artist_id", "album_id", "track_id", "timestamp", "user_track_count")
#: The users' schema columns. The challenge sources name the registration time
#: ``registered_unixtime``, as their files do, and keep the files' other columns beside these
#: (so does the synthetic source, their twin).
USER_COLUMNS = ("country", "age", "gender", "playcount", "timestamp")
TRACK_COLUMNS = ("track", "artist_id", "artist", "albums", "albums_id")


@dataclass(frozen=True)
class TrackVectors:
    """Dense vectors keyed by track id (``track_ids`` sorted, unique; one row of ``vectors`` each).

    Lookups always go through the id -> row mapping: a track without a vector gets row -1,
    never some other track's row.
    """

    track_ids: np.ndarray
    vectors: np.ndarray
    # set by __post_init__: not an argument, not shown, not compared
    _index: IdIndex = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ids = np.asarray(self.track_ids, dtype=np.int64)
        order = np.argsort(ids, kind="stable")
        vecs = np.asarray(self.vectors, dtype=np.float32)
        if vecs.ndim != 2 or len(vecs) != len(ids):
            raise ValueError(
                f"track vectors: expected a 2-d array with one row per track id "
                f"({len(ids)} ids), got shape {vecs.shape}"
            )
        if not np.all(order == np.arange(len(ids))):
            ids, vecs = ids[order], vecs[order]
        object.__setattr__(self, "track_ids", ids)
        object.__setattr__(self, "vectors", vecs)
        # one index per vector set: its id -> row table is built once, on the first lookup
        object.__setattr__(self, "_index", IdIndex(ids, is_sorted=True))

    def __len__(self) -> int:
        return len(self.track_ids)

    @property
    def dim(self) -> int:
        return self.vectors.shape[1]

    def rows(self, track_ids) -> np.ndarray:
        """Row of each track id in ``vectors``.

        Parameters
        ----------
        track_ids : array-like of int
            Track ids, of any shape.

        Returns
        -------
        numpy.ndarray
            int64 rows shaped like ``track_ids``; -1 where the track has no vector (or the id
            is the padding -1).
        """
        return self._index.positions(np.asarray(track_ids, dtype=np.int64))

    def lookup(self, track_ids) -> tuple[np.ndarray, np.ndarray]:
        """Vectors of ``track_ids`` (zeros where missing) and a boolean "has a vector" mask."""
        rows = self.rows(track_ids)
        found = rows >= 0
        out = self.vectors[np.where(found, rows, 0)]
        out[~found] = 0.0
        return out, found


@dataclass
class Tables:
    """Events, users, tracks and track vectors of one dataset, as every loader returns them."""

    events: pd.DataFrame
    users: pd.DataFrame
    tracks: pd.DataFrame
    track_vectors: TrackVectors | None = None
    source: str = ""
    _fingerprint: str | None = field(default=None, repr=False)

    def fingerprint(self) -> str:
        """sha256 over the full content of every table (names, dtypes, values), cached."""
        if self._fingerprint is None:
            h = hashlib.sha256()
            for name, frame in (("events", self.events), ("users", self.users),
                                ("tracks", self.tracks)):
                _hash_frame(h, name, frame)
            if self.track_vectors is not None:
                h.update(b"track_vectors")
                h.update(self.track_vectors.track_ids.data.cast("B"))
                h.update(self.track_vectors.vectors.data.cast("B"))
            self._fingerprint = h.hexdigest()
        return self._fingerprint


def _hash_frame(h, name: str, frame: pd.DataFrame) -> None:
    h.update(f"table:{name}:{len(frame)}".encode())
    columns = [(frame.index.name or "index", frame.index)] + list(frame.items())
    for col, values in columns:
        values = pd.Series(values) if not isinstance(values, pd.Series) else values
        h.update(f"col:{col}".encode())
        if pd.api.types.is_numeric_dtype(values.dtype) and not values.hasnans:
            # Loaders canonicalise dtypes, so hashing the native bytes is stable and cheap.
            arr = np.ascontiguousarray(values.to_numpy())
            h.update(str(arr.dtype).encode())
            h.update(arr.data.cast("B"))
        else:
            # Strings, missing values: pandas' stable (fixed-key) row hash.
            h.update(b"h")
            h.update(pd.util.hash_pandas_object(values.astype(object), index=False)
                     .to_numpy().tobytes())
