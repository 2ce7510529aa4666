"""The EvalRS schema check that every source goes through, and dtype canonicalisation.

``validate_tables`` raises a :class:`~evaluation.errors.DataError` for the first problem it
finds (naming the file, the column, the rule, a few offending values and the fix) and
otherwise returns the tables with canonical dtypes: integer columns as int32 where the values
fit (int64 otherwise), floats as float64, text as pandas' ``str`` dtype, events on a
``RangeIndex``, users indexed by ``user_id`` and tracks by ``track_id``. Canonical dtypes make
:meth:`Tables.fingerprint` independent of how a source happened to store the data.

A table may carry columns beyond the schema (the challenge's user profile statistics,
``country_id``, ``gender_id``, the 2023 tracks' ``urlSong`` and ``lastfm_id``): they are kept,
in their place, with the same canonical dtypes (a column of whole numbers without missing
values is an integer column, any other number column float64, anything else text). The users'
registration time is ``registered_unixtime`` (the challenge's name, which the synthetic twin
uses too) or ``timestamp`` (MovieLens and EvalRS-schema directories); ``age`` is a number column
that keeps integers as integers, so the challenge's ``-1`` for an unknown age stays ``-1``.

Every check is vectorised: at the full LFM scale (38M event rows) the whole validation takes a
fraction of a second.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from evaluation._util.arrays import isin
from evaluation._util.atomic import write_json
from evaluation._util.int64 import MISSING, RANGE, as_int64
from evaluation._util.paths import cache_dir
from evaluation.data._pairs import duplicate_key_rows
from evaluation.data._tables import EVENT_COLUMNS, Tables, TrackVectors
from evaluation.errors import DataError, show_values

SCHEMA_VERSION = 2  # bump when the rules change: it invalidates recorded validations
INT, FLOAT, TEXT, LABEL = "integer", "float", "text", "integer or text"
#: integers stay integers (int32 where they fit), any other numbers become float64
NUMBER = "number"

# column -> kind; events keep their file order (the folds depend on it).
EVENT_SCHEMA: dict[str, str] = dict.fromkeys(EVENT_COLUMNS, INT)
OPTIONAL_EVENT_SCHEMA: dict[str, str] = {"rating": FLOAT}
USER_SCHEMA: dict[str, str] = {
    "country": TEXT, "age": NUMBER, "gender": TEXT, "playcount": INT, "timestamp": INT,
}
#: The users' registration time: the challenge files' name, then the EvalRS schema's. A users
#: table has one of them; the first present is the schema column (the other, if any, an extra).
REGISTRATION_COLUMNS = ("registered_unixtime", "timestamp")
TRACK_SCHEMA: dict[str, str] = {
    "track": TEXT, "artist_id": INT, "artist": TEXT, "albums": TEXT, "albums_id": LABEL,
}
GENDERS = ("m", "f", "n")
COUNT_COLUMNS = {"events": ("user_track_count",), "users": ("playcount",)}
# Ids that predictions and lookups use, where -1 means "none": they must be >= 0. (Artist and
# album ids are only grouped on, so a source's own "unknown" code such as -1 is left alone.)
ID_COLUMNS = ("user_id", "track_id")

_INT32 = np.iinfo(np.int32)
# Scoring sums play counts per user, track and artist (activity and popularity groups) in
# float64, exact for integers below 2**53; a total that reaches it would be binned wrongly.
COUNT_TOTAL_LIMIT = 2**53



def data_error(file: str, column: str | None, rule: str, values=None, fix: str = "",
               rows=None, label: str = "offending values") -> DataError:
    """A DataError whose message names the file, the column, the rule, values and the fix."""
    where = f"{file}, column {column!r}" if column else file
    msg = f"{where}: {rule}"
    if values is not None:
        values = list(values)
        msg += f"; {label}: {show_values(values)}"
    if rows is not None:
        msg += f" at rows {show_values(rows)}"
    if fix:
        msg += f". Fix: {fix}"
    return DataError(msg)


def validate_tables(tables: Tables, files: Mapping[str, str] | None = None, *,
                    vector_dim: int | None = None) -> Tables:
    """Check ``tables`` against the EvalRS schema and return them with canonical dtypes.

    ``files`` maps "events", "users", "tracks" and "track_vectors" to the file each table
    came from, so that error messages point at it. ``vector_dim``, if given, is the dimension
    the track vectors must have.

    Tables whose fingerprint is already known (read from a harness cache) and that passed
    before are not re-scanned for duplicate pairs and unknown ids: the outcome is recorded
    under ``cache_dir()/validated`` by fingerprint (the cheap checks always run). When that
    content was canonical already (its fingerprint is the recorded one), the row-sized value
    checks of the events and the vectors are skipped too: they passed on these very bytes.

    Parameters
    ----------
    tables : Tables
        The dataset to check.
    files : mapping of str to str, optional
        The file of each table, for messages.
    vector_dim : int, optional
        The dimension the track vectors must have.

    Returns
    -------
    Tables
        The tables with canonical dtypes.

    Raises
    ------
    DataError
        Naming the file, column, rule and offending values of the first broken rule.
    """
    known_fp = tables._fingerprint
    memo = _read_memo(known_fp)
    names = {t: f"{t} table" for t in ("events", "users", "tracks", "track_vectors")}
    names.update({k: str(v) for k, v in (files or {}).items()})

    ranges: dict[str, tuple[int, int]] = {}  # (min, max) of each event id column
    users = _check_frame(tables.users, names["users"], "user_id", user_schema(tables.users), {},
                         {}, extras=True)
    tracks = _check_frame(tables.tracks, names["tracks"], "track_id", TRACK_SCHEMA, {}, {},
                          extras=True)
    # this very content (fingerprint), canonical as it is, passed every check before
    trusted = memo is not None and memo == known_fp
    events = _check_frame(tables.events, names["events"], None, EVENT_SCHEMA,
                          OPTIONAL_EVENT_SCHEMA, ranges, trusted=trusted, extras=True)

    _check_unique(users.index.to_numpy(), names["users"], "user_id",
                  "each user must appear once in the users table")
    _check_unique(tracks.index.to_numpy(), names["tracks"], "track_id",
                  "each track must appear once in the tracks table")
    _check_gender(users["gender"], names["users"])
    if memo is None:  # the event-sized scans
        _check_event_pairs(events, names["events"])
        _check_known(events["user_id"].to_numpy(), ranges["user_id"], users.index.to_numpy(),
                     names["events"], "user_id", names["users"])
        _check_known(events["track_id"].to_numpy(), ranges["track_id"],
                     tracks.index.to_numpy(), names["events"], "track_id", names["tracks"])

    vectors = tables.track_vectors
    if vectors is not None:
        vectors = check_track_vectors(vectors, tracks.index.to_numpy(), names["track_vectors"],
                                      names["tracks"], vector_dim, trusted=trusted)
    out = Tables(events=events, users=users, tracks=tracks, track_vectors=vectors,
                 source=tables.source)
    if _same_layout(tables, out):
        # Nothing was converted: the content (and so a fingerprint already computed) is equal.
        out._fingerprint = known_fp
    elif memo is not None:
        out._fingerprint = memo
    if known_fp is not None and memo is None:
        _write_memo(known_fp, out)
    return out


def registration_column(users: pd.DataFrame) -> str:
    """The users' registration column: ``registered_unixtime`` (the challenge files' name) when
    ``users`` has it, else ``timestamp`` (the EvalRS schema's)."""
    return next((c for c in REGISTRATION_COLUMNS if c in users.columns), REGISTRATION_COLUMNS[1])


def user_schema(users: pd.DataFrame) -> dict[str, str]:
    """The schema of ``users``: :data:`USER_SCHEMA` with its registration column."""
    column = registration_column(users) if isinstance(users, pd.DataFrame) else "timestamp"
    return {(column if c == "timestamp" else c): kind for c, kind in USER_SCHEMA.items()}


def _memo_path(fingerprint: str) -> Path:
    return cache_dir() / "validated" / f"v{SCHEMA_VERSION}-{fingerprint}.json"


def _read_memo(fingerprint: str | None) -> str | None:
    """Canonical fingerprint recorded for input content that passed validation, if any."""
    if not fingerprint:
        return None
    try:
        record = json.loads(_memo_path(fingerprint).read_text(encoding="utf-8"))
        return str(record["canonical_fingerprint"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_memo(fingerprint: str, out: Tables) -> None:
    try:
        write_json(_memo_path(fingerprint), {"canonical_fingerprint": out.fingerprint(),
                                             "source": out.source})
    except OSError:
        pass  # a read-only cache only costs a full check next time


def _same_layout(before: Tables, after: Tables) -> bool:
    for name in ("events", "users", "tracks"):
        a, b = getattr(before, name), getattr(after, name)
        if not (isinstance(a, pd.DataFrame) and list(a.columns) == list(b.columns)
                and a.dtypes.equals(b.dtypes) and a.index.name == b.index.name
                and a.index.dtype == b.index.dtype):
            return False
    if not before.events.index.equals(after.events.index):
        return False
    return before.track_vectors is None or (
        after.track_vectors is not None
        and np.array_equal(before.track_vectors.track_ids, after.track_vectors.track_ids))


# --- tables and columns ----------------------------------------------------------------------

def _check_frame(frame, file: str, key: str | None, schema: dict[str, str],
                 optional: dict[str, str], ranges: dict, *, trusted: bool = False,
                 extras: bool = False) -> pd.DataFrame:
    """Columns present/absent, dtypes, emptiness, ids >= 0, counts >= 0; canonical copy.

    ``trusted``: the values passed these checks before (same fingerprint, canonical dtypes);
    integer columns are taken as they are, without the scans for their range. ``extras``:
    columns beyond ``schema`` and ``optional`` are kept (with their kind inferred) instead of
    refused.
    """
    if not isinstance(frame, pd.DataFrame):
        raise data_error(file, None, f"expected a pandas DataFrame, got {type(frame).__name__}",
                         fix="pass the table as a DataFrame")
    if key is not None:
        frame = _key_as_index(frame, file, key)
    columns = [str(c) for c in frame.columns]
    missing = [c for c in schema if c not in columns]
    if missing:
        raise data_error(file, missing[0], f"required column(s) missing: {missing}",
                         columns, label="columns found",
                         fix=f"the table must have the columns {list(schema)}"
                         + (f" (indexed by {key!r})" if key else ""))
    extra = [c for c in columns if c not in schema and c not in optional]
    if extra and not extras:
        allowed = list(schema) + list(optional)
        raise data_error(file, extra[0], f"unexpected column(s) {extra}", None,
                         fix=f"drop or rename them; allowed columns are {allowed}")
    if len(set(columns)) != len(columns):
        dups = sorted({c for c in columns if columns.count(c) > 1})
        raise data_error(file, dups[0], "column names repeat", dups,
                         fix="keep one column of each name")
    if len(frame) == 0:
        raise data_error(file, None, "the table is empty (0 rows)",
                         fix="check that the file holds data and was read completely")

    table = file
    out: dict[str, np.ndarray] = {}
    kinds = {c: schema.get(c) or optional.get(c) or _kind_of(frame[c]) for c in columns}
    # the schema's columns first, in the schema's order, then the others in the file's order
    for col in [*schema, *[c for c in columns if c not in schema]]:
        kind = kinds[col]
        series = frame[col]
        if trusted and kind in (INT, LABEL) and series.dtype in (np.int32, np.int64):
            out[col] = series.to_numpy()
        else:
            out[col] = _canonical(series, kind, table, col, ranges)
    for col in [c for c in ID_COLUMNS if c in out and not trusted]:
        _check_min(out[col], ranges.get(col), table, col,
                   "ids must be >= 0 (-1 is reserved for padding)",
                   "renumber the ids with non-negative integers")
    for col in COUNT_COLUMNS["events" if key is None else "users"]:
        if col in out and not trusted:
            _check_min(out[col], ranges.get(col), table, col, "counts must be >= 0",
                       "remove or correct the rows with negative counts")
    if key is None and "user_track_count" in out and not trusted:
        _check_count_total(out["user_track_count"], ranges["user_track_count"], table)
    if "rating" in out:
        bad = ~np.isfinite(out["rating"])
        if bad.any():
            raise data_error(table, "rating", "ratings must be finite numbers",
                             out["rating"][bad][:5], rows=np.flatnonzero(bad)[:5],
                             fix="drop the rows without a rating")

    if key is None:
        index = pd.RangeIndex(len(frame))
    else:
        ids = _canonical(frame.index.to_series(), INT, table, key, {})
        _check_min(ids, None, table, key, "ids must be >= 0 (-1 is reserved for padding)",
                   "renumber the ids with non-negative integers")
        index = pd.Index(ids, name=key)
    result = pd.DataFrame(out, index=index, copy=False)
    return result


def _key_as_index(frame: pd.DataFrame, file: str, key: str) -> pd.DataFrame:
    """Users/tracks are indexed by their id; accept the id as a column too."""
    if key in frame.columns:
        if frame.index.name == key:
            raise data_error(file, key, f"{key!r} is both the index and a column",
                             fix=f"keep {key!r} only as the index")
        return frame.set_index(key)
    if frame.index.name != key:
        raise data_error(file, key, f"required column missing: {key!r} (neither a column nor "
                         f"the index name; index is {frame.index.name!r})",
                         [str(c) for c in frame.columns], label="columns found",
                         fix=f"add the ids as a column {key!r} or name the index {key!r}")
    return frame


def _kind_of(series: pd.Series) -> str:
    """The kind of a column outside the schema, from its values: whole numbers without missing
    values are integers, other numbers floats (missing values NaN), anything else text."""
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return TEXT
    if pd.api.types.is_integer_dtype(dtype) or pd.api.types.is_float_dtype(dtype):
        return NUMBER
    return TEXT


def _canonical(series: pd.Series, kind: str, file: str, col: str, ranges: dict):
    if kind == INT:
        return _as_int(series, file, col, ranges)
    if kind == NUMBER:
        return _as_number(series, file, col, ranges)
    if kind == FLOAT:
        return _as_float(series, file, col)
    if kind == TEXT:
        return _as_text(series)
    # LABEL: integers stay integers, anything else becomes text.
    dtype = series.dtype
    if pd.api.types.is_integer_dtype(dtype) and not series.hasnans:
        return _as_int(series, file, col, ranges)
    return _as_text(series)


def _as_text(series: pd.Series):
    """Text as pandas' ``str`` dtype (missing values stay missing); an array, not aligned."""
    return series.astype("str").array


def _as_int(series: pd.Series, file: str, col: str, ranges: dict) -> np.ndarray:
    """Integers as int32 where they fit (int64 otherwise); whole floats are cast.

    The (min, max) of the values is stored in ``ranges[col]`` for the later checks.
    """
    dtype = series.dtype
    fix = f"store {col!r} as integers"
    if pd.api.types.is_bool_dtype(dtype):
        raise data_error(file, col, "expected integers, got booleans", series.unique()[:5],
                         fix=fix)
    if col == "timestamp" and pd.api.types.is_datetime64_any_dtype(dtype):
        series = _datetime_to_seconds(series, file, col)
        dtype = series.dtype
    if not (pd.api.types.is_integer_dtype(dtype) or pd.api.types.is_float_dtype(dtype)):
        # object, str, category...: numbers are accepted, strings are not
        numeric = _object_to_numeric(series, file, col, INT)
        if numeric.dtype != np.int64:
            # Python ints beyond int64 became uint64 or inexact floats: check the values as
            # given (exactly), so that the error shows them
            numeric = pd.Series(as_int64(series.to_numpy(dtype=object), _int_failure(file, col)))
        return _as_int(numeric, file, col, ranges)
    if not isinstance(dtype, np.dtype) and series.hasnans:  # numpy ints/floats: checked below
        rows = np.flatnonzero(series.isna().to_numpy())
        raise data_error(file, col, f"missing values in an integer column ({len(rows)} rows)",
                         rows=rows, fix=f"fill or drop the rows without a {col!r}")
    if pd.api.types.is_integer_dtype(dtype):
        arr = series.to_numpy(dtype=None if isinstance(dtype, np.dtype) else
                              "uint64" if dtype.kind == "u" else np.int64)
        if arr.dtype == np.uint64:
            arr = as_int64(arr, _int_failure(file, col))
    else:
        arr = as_int64(series.to_numpy(dtype=np.float64), _int_failure(file, col))
    lo, hi = (int(arr.min()), int(arr.max())) if len(arr) else (0, 0)
    ranges[col] = (lo, hi)
    target = np.int32 if _INT32.min <= lo and hi <= _INT32.max else np.int64
    return arr.astype(target, copy=False)


def _int_failure(file: str, col: str):
    """The ``fail`` of :func:`as_int64` for column ``col`` of ``file``."""

    def fail(rule: str, bad: np.ndarray, values: np.ndarray) -> DataError:
        rows = np.flatnonzero(bad)
        if rule == MISSING:
            return data_error(file, col, f"missing values in an integer column ({len(rows)} rows)",
                              rows=rows[:5], fix=f"fill or drop the rows without a {col!r}")
        if rule == RANGE:
            fix = ("renumber the ids with integers below 2**63" if col.endswith("_id") else
                   f"correct the values of {col!r}: they cannot be stored as 64-bit integers")
        else:
            fix = f"store {col!r} as integers"
        return data_error(file, col, f"expected integers, found {len(rows)} values that are "
                          f"{rule}", values[bad][:5], rows=rows[:5], fix=fix)

    return fail


def _as_float(series: pd.Series, file: str, col: str) -> np.ndarray:
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype):
        raise data_error(file, col, "expected numbers, got booleans", series.unique()[:5],
                         fix=f"store {col!r} as numbers")
    if not (pd.api.types.is_integer_dtype(dtype) or pd.api.types.is_float_dtype(dtype)):
        series = _object_to_numeric(series, file, col, FLOAT)
    return series.to_numpy(dtype=np.float64, na_value=np.nan)


def _as_number(series: pd.Series, file: str, col: str, ranges: dict) -> np.ndarray:
    """Integers without missing values as :func:`_as_int` makes them (``-1`` for an unknown age
    stays ``-1``); any other numbers (whole floats included) as float64, missing as NaN."""
    dtype = series.dtype
    if pd.api.types.is_integer_dtype(dtype) and not series.hasnans:
        return _as_int(series, file, col, ranges)
    return _as_float(series, file, col)


def _object_to_numeric(series: pd.Series, file: str, col: str, kind: str) -> pd.Series:
    """Object columns holding numbers are accepted; strings in a numeric column are errors."""
    values = series.astype(object)
    is_str = values.map(lambda v: isinstance(v, (str, bytes))).to_numpy(dtype=bool)
    if is_str.any():
        raise data_error(file, col, f"expected {kind} values, found strings",
                         values[is_str].head(5).tolist(), rows=np.flatnonzero(is_str)[:5],
                         fix=f"convert {col!r} to numbers (e.g. with pd.to_numeric) and drop "
                             "rows that do not convert")
    numeric = pd.to_numeric(values, errors="coerce")
    bad = numeric.isna().to_numpy() & values.notna().to_numpy()
    if bad.any():
        raise data_error(file, col, f"expected {kind} values", values[bad].head(5).tolist(),
                         rows=np.flatnonzero(bad)[:5], fix=f"store {col!r} as numbers")
    return numeric


def _datetime_to_seconds(series: pd.Series, file: str, col: str) -> pd.Series:
    if series.hasnans:
        rows = np.flatnonzero(series.isna().to_numpy())
        raise data_error(file, col, "missing timestamps", rows=rows,
                         fix="fill or drop the rows without a timestamp")
    if getattr(series.dt, "tz", None) is not None:
        series = series.dt.tz_convert("UTC").dt.tz_localize(None)
    return pd.Series(series.to_numpy(dtype="datetime64[s]").astype(np.int64))


def _check_min(arr: np.ndarray, lo_hi, file: str, col: str, rule: str, fix: str) -> None:
    lo = lo_hi[0] if lo_hi is not None else (arr.min() if len(arr) else 0)
    if lo < 0:
        bad = np.flatnonzero(arr < 0)
        raise data_error(file, col, rule + f" ({len(bad)} rows)", arr[bad[:5]], rows=bad[:5],
                         fix=fix)


def _check_count_total(counts: np.ndarray, lo_hi: tuple[int, int], file: str) -> None:
    """The play counts (already >= 0) sum to less than :data:`COUNT_TOTAL_LIMIT`."""
    if lo_hi[1] * len(counts) < COUNT_TOTAL_LIMIT:  # the usual case: no pass over the rows
        return
    total = float(counts.sum(dtype=np.float64))
    if total >= COUNT_TOTAL_LIMIT:
        rows = np.argsort(counts, kind="stable")[::-1][:5]
        raise data_error(file, "user_track_count",
                         f"play counts must sum to less than 2**53 over the table (got about "
                         f"{total:.4g}); per-user and per-track sums of larger counts cannot be "
                         "computed exactly", counts[rows], rows=rows, label="largest values",
                         fix="correct the impossible counts (a play count is a number of "
                         "listens) or drop those rows")


def _check_gender(gender: pd.Series, file: str) -> None:
    bad = gender.notna().to_numpy() & ~gender.isin(GENDERS).to_numpy()
    if bad.any():
        values = pd.unique(gender[bad])
        raise data_error(file, "gender", f"gender must be one of {list(GENDERS)} or missing",
                         values[:5], fix="map the values onto 'm', 'f', 'n' (lower case) or "
                         "leave them empty")


def _check_unique(ids: np.ndarray, file: str, col: str, rule: str) -> None:
    dup = pd.Index(ids).duplicated()
    if dup.any():
        raise data_error(file, col, f"duplicate ids: {rule}", pd.unique(ids[dup])[:5],
                         rows=np.flatnonzero(dup)[:5], fix="drop or merge the repeated rows")


# --- events: duplicate (user, track) pairs and unknown ids ------------------------------------

def _check_event_pairs(events: pd.DataFrame, file: str) -> None:
    """Each (user_id, track_id) pair once: events are user-track rows, not listening logs."""
    users = events["user_id"].to_numpy()
    tracks = events["track_id"].to_numpy()
    if users.max() > _INT32.max or tracks.max() > _INT32.max:
        keys = np.unique(np.stack([users, tracks], axis=1), axis=0, return_counts=True)
        dup_pairs = keys[0][keys[1] > 1]
        if len(dup_pairs):
            _raise_duplicate_pairs(file, [tuple(p) for p in dup_pairs[:5]], users, tracks)
        return
    rows = duplicate_key_rows(users, tracks)
    if rows is not None:
        _raise_duplicate_pairs(file, [(int(users[rows[0]]), int(tracks[rows[0]]))], users,
                               tracks)


def _raise_duplicate_pairs(file, pairs, users, tracks) -> None:
    u, t = pairs[0]
    rows = np.flatnonzero((users == u) & (tracks == t))
    raise data_error(file, "user_id, track_id",
                     "duplicate (user_id, track_id) pairs: each user-track pair must appear in "
                     "one row", pairs, rows=rows[:5],
                     fix="aggregate repeated plays into one row per pair (sum "
                     "'user_track_count', keep the first timestamp)")




def known_mask(ids: np.ndarray, known: np.ndarray) -> np.ndarray:
    """Boolean mask: which ``ids`` are among ``known``."""
    return isin(ids, known)


def _check_known(ids: np.ndarray, lo_hi: tuple[int, int], known: np.ndarray, file: str,
                 col: str, other: str) -> None:
    lo, hi = lo_hi
    # Known ids are unique, so if every integer in [lo, hi] is known, so is every id.
    if np.count_nonzero((known >= lo) & (known <= hi)) == hi - lo + 1:
        return
    unknown = ~known_mask(ids, known)
    if unknown.any():
        rows = np.flatnonzero(unknown)
        values = pd.unique(ids[rows[:1000]])
        raise data_error(file, col, f"{len(rows)} rows point at ids that are not in {other}",
                         values[:5], rows=rows[:5],
                         fix=f"add the missing ids to {other} or drop those rows")


# --- track vectors -----------------------------------------------------------------------------

def check_track_vectors(vectors: TrackVectors, track_ids: np.ndarray, file: str,
                        tracks_file: str = "tracks table", dim: int | None = None, *,
                        trusted: bool = False) -> TrackVectors:
    """The vector rules of :func:`validate_tables` on their own (ids against ``track_ids``).

    ``trusted``: these very vectors passed before; only the shape rules are checked again.
    """
    vecs = vectors.vectors
    ids = vectors.track_ids
    if vecs.ndim != 2 or vecs.shape[1] == 0:
        raise data_error(file, "vector", f"vectors must be 2-d with at least one dimension, "
                         f"got shape {vecs.shape}", fix="store one non-empty vector per track")
    if dim is not None and vecs.shape[1] != dim:
        raise data_error(file, "vector", f"vectors must have dimension {dim}",
                         [vecs.shape[1]], fix=f"provide {dim}-dimensional vectors")
    if len(ids) == 0:
        raise data_error(file, "track_id", "no track vectors (0 rows)",
                         fix="provide vectors or leave the vectors out")
    if trusted:
        return TrackVectors(track_ids=ids.copy(), vectors=vecs)
    finite = np.isfinite(vecs).all(axis=1)
    if not finite.all():
        bad = np.flatnonzero(~finite)
        raise data_error(file, "vector", f"non-finite values (NaN or inf) in {len(bad)} vectors; "
                         "offending track ids", ids[bad[:5]],
                         fix="drop those tracks' vectors or recompute them")
    # TrackVectors keeps ids sorted, so repeats are neighbours.
    dup = np.flatnonzero(ids[1:] == ids[:-1])
    if len(dup):
        raise data_error(file, "track_id", "duplicate ids: one vector per track",
                         pd.unique(ids[dup])[:5], fix="keep one vector per track id")
    if ids[0] < 0:
        raise data_error(file, "track_id", "ids must be >= 0", ids[ids < 0][:5],
                         fix="map vector keys to the track ids of the tracks table")
    unknown = ~known_mask(ids, track_ids)
    if unknown.any():
        raise data_error(file, "track_id", f"{int(unknown.sum())} vectors belong to ids that are "
                         f"not in {tracks_file}", ids[unknown][:5],
                         fix="drop those vectors or add the tracks")
    return TrackVectors(track_ids=ids.copy(), vectors=vecs)
