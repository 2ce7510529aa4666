"""Validation and normalisation of what a model's ``predict`` returned.

The expected format: a DataFrame indexed by ``user_id`` with one row per test user
and ``k`` ranked columns labelled ``"0".."k-1"`` (integer labels work too), holding track ids,
best first, with ``-1`` padding at the end of a shorter list. Rows are matched to test users by
``user_id``, never by position.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from evaluation._util.arrays import (
    IdIndex,
    dense_ok,
    fib_hash,
    isin,
    sorted_unique,
    take_small_table,
)
from evaluation._util.int64 import FRACTION, INFINITE, MISSING, NOT_NUMBER, as_int64
from evaluation._util.validation import check_k
from evaluation.errors import ConfigError, PredictionError, PredictionWarning, show_values

PAD = -1


_FORMAT_HINT = (
    'the expected format is a DataFrame indexed by "user_id" with k columns "0".."k-1" of '
    "track ids, best first, padded with -1"
)


def _fail(problem: str, fix: str, rows: str = "") -> PredictionError:
    text = f"predictions: {problem}"
    if rows:
        text += f"\n{rows}"
    return PredictionError(f"{text}\nFix: {fix}")


def _show_rows(users: np.ndarray, matrix: np.ndarray, bad_rows: np.ndarray, limit: int = 3,
               width: int = 8) -> str:
    """A few offending rows as ``user 12: [5, 7, -1, ...]``."""
    lines = []
    for r in bad_rows[:limit]:
        row = matrix[r]
        items = ", ".join(repr(v.item() if hasattr(v, "item") else v) for v in row[:width])
        more = ", ..." if len(row) > width else ""
        user = users[r].item() if hasattr(users[r], "item") else users[r]
        lines.append(f"  user {user!r}: [{items}{more}]")
    if len(bad_rows) > limit:
        lines.append(f"  ... ({len(bad_rows)} rows in all)")
    return "\n".join(lines)


def predictions_frame(user_ids, items, k: int | None = None) -> pd.DataFrame:
    """Build a predictions DataFrame from user ids and their ranked items.

    ``items`` is an (N, m) array or a list of per-user lists (of any lengths); lists are cut or
    padded with ``-1`` to ``k`` columns (default: the longest list).

    Parameters
    ----------
    user_ids : array-like
        One id per list, the frame's index.
    items : array-like or sequence of sequences
        The ranked track ids of each user.
    k : int, optional
        Number of columns.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``user_id``, columns ``"0".."k-1"`` of int64 track ids.

    Raises
    ------
    PredictionError
        On ids that are not whole int64 numbers, or a list count that differs from the users'.
    """
    user_ids = np.asarray(user_ids)

    def fail(rule: str, bad: np.ndarray, values: np.ndarray) -> PredictionError:
        return PredictionError(
            f"predictions_frame: item ids must be integer track ids; {int(bad.sum())} values are "
            f"{rule}: {show_values(values[bad])}. Fix: pass the track ids "
            "themselves (pad short lists with -1, or pass lists of different lengths)"
        )

    if isinstance(items, np.ndarray) and items.ndim == 2:
        matrix = as_int64(items, fail)
    else:
        lists = [_list_ids(x, fail) for x in items]
        width = max((len(x) for x in lists), default=0)
        lengths = np.array([len(x) for x in lists], dtype=np.int64)
        matrix = np.full((len(lists), width), PAD, dtype=np.int64)
        mask = np.arange(width) < lengths[:, None]
        if lists:
            matrix[mask] = np.concatenate(lists)
    if len(matrix) != len(user_ids):
        raise PredictionError(
            f"predictions_frame: {len(user_ids)} user ids but {len(matrix)} item lists; pass one "
            "list per user"
        )
    k = matrix.shape[1] if k is None else k
    if matrix.shape[1] >= k:
        matrix = matrix[:, :k]
    else:
        matrix = np.hstack([matrix, np.full((len(matrix), k - matrix.shape[1]), PAD, np.int64)])
    return pd.DataFrame(matrix, index=pd.Index(user_ids, name="user_id"),
                        columns=[str(i) for i in range(k)])


def _list_ids(items, fail) -> np.ndarray:
    """One list of ids as int64; a refused list is read again as Python objects, exactly."""
    try:
        return as_int64(np.asarray(items).reshape(-1), fail)
    except PredictionError:
        # NumPy reads [-1, 2**64 - 1] as floats: the error shows the values as given, and a
        # value such as 2**63 - 1, which float64 rounds up to 2**63, passes
        return as_int64(np.asarray(items, dtype=object).reshape(-1), fail)


def _user_index(frame: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """Move ``user_id`` to the index; return the frame and the ids as int64."""
    if "user_id" in frame.columns:
        if frame.index.name == "user_id":
            same = np.array_equal(frame.index.to_numpy(), frame["user_id"].to_numpy())
            if not same:
                raise _fail(
                    '"user_id" is both the index name and a column, with different values',
                    'keep only one: df = df.drop(columns="user_id") or df.reset_index(drop=True)',
                )
            frame = frame.drop(columns="user_id")
        else:
            frame = frame.set_index("user_id")
    elif frame.index.name != "user_id":
        raise _fail(
            f'"user_id" is neither the index nor a column (index name: {frame.index.name!r}, '
            f"first columns: {show_values(frame.columns)})",
            'index the frame by user: df.index.name = "user_id" (if its rows are the users) or '
            'df = df.set_index("user_id"); ' + _FORMAT_HINT,
        )
    ids = frame.index.to_numpy()
    if ids.dtype.kind not in "iufb":
        ids = ids.astype(object)

    def fail(rule: str, bad: np.ndarray, values=None) -> PredictionError:
        return _fail(
            f"user_id values must be integers; {int(bad.sum())} values are {rule}: "
            f"{show_values(ids[bad])}",
            "use the user ids exactly as given to predict() (user_ids_df['user_id'])",
        )

    values = ids
    if ids.dtype == object and _is_text(ids).any():
        # ids written as text ("12") are read as numbers; any other text is an error
        values = pd.to_numeric(pd.Series(ids), errors="coerce").to_numpy()
        unread = pd.isna(values) & ~pd.isna(ids)
        if unread.any():
            raise fail(NOT_NUMBER, unread, ids)
    return frame, as_int64(values, fail)


def _is_text(values: np.ndarray) -> np.ndarray:
    """Boolean mask of the str/bytes entries of an object array."""
    return np.frompyfunc(lambda v: isinstance(v, (str, bytes)), 1, 1)(values).astype(bool)


def _argument_failure(argument: str, column: str | None = None):
    """The ``fail`` of :func:`as_int64` for an argument of :func:`validate_predictions`."""
    where = f"column {column!r} of the {argument!r} argument" if column else \
        f"the {argument!r} argument"

    def fail(rule: str, bad: np.ndarray, values: np.ndarray) -> PredictionError:
        return PredictionError(
            f"validate_predictions: {where} must hold integer ids; {int(bad.sum())} values are "
            f"{rule}: {show_values(values[bad])}. Fix: pass the ids of the dataset (int64)"
        )

    return fail


def _column_order(columns: pd.Index, k: int) -> np.ndarray:
    """Position of column "0".."k-1" in ``columns`` (labels may be str or int, any order)."""
    labels: list[int | None] = []
    for c in columns:
        if isinstance(c, (int, np.integer)) and not isinstance(c, bool):
            labels.append(int(c))
        elif isinstance(c, str) and c.strip().isdigit():
            labels.append(int(c))
        else:
            labels.append(None)
    wanted = set(range(k))
    bad = [c for c, lab in zip(columns, labels) if lab not in wanted]
    seen = [lab for lab in labels if lab is not None]
    dup = len(seen) != len(set(seen))
    if len(columns) != k or bad or dup:
        missing = sorted(wanted - set(seen))
        detail = f"got {len(columns)} columns"
        if bad:
            detail += f"; unexpected labels {show_values(bad)}"
        if missing:
            detail += f"; missing labels {show_values([str(m) for m in missing])}"
        if dup:
            detail += "; some labels appear twice"
        raise _fail(
            f'expected k={k} columns labelled "0".."{k - 1}" (rank 0 = best); {detail}',
            f"return exactly k={k} columns (pad shorter lists with -1; drop extra ranks), or "
            "score with the k your model produces",
        )
    order = np.empty(k, dtype=np.int64)
    order[seen] = np.arange(k)  # every label is one of 0..k-1 here, each once
    return order


def _item_matrix(frame: pd.DataFrame, users: np.ndarray) -> np.ndarray:
    """The prediction values as integers, rejecting strings, booleans, NaN, fractions and
    values that do not fit in int64 (a uint64 2**64 - 1 would otherwise wrap to the padding -1).

    int64, or the columns' own integer dtype when they all share one (then possibly a view of
    ``frame``: never write to it).
    """
    plain = all(isinstance(dt, np.dtype) for dt in frame.dtypes)
    kinds = {dt.kind for dt in frame.dtypes}
    if plain and kinds <= {"i", "u"}:
        for j, dt in enumerate(frame.dtypes):
            if dt == np.uint64:  # the one integer dtype that can exceed int64
                column = frame.iloc[:, j].to_numpy()
                as_int64(column, _item_failure(users, column[:, None]))
        if len(set(frame.dtypes)) == 1:
            return frame.to_numpy()
        return frame.to_numpy(dtype=np.int64)
    if plain and kinds <= {"i", "u", "f"} and np.uint64 not in set(frame.dtypes):
        matrix = frame.to_numpy(dtype=np.float64)
    else:
        # strings, booleans, nullable, uint64 mixed with floats, Python ints: the values
        # themselves (objects keep a Python int's exact value for the range check)
        matrix = frame.to_numpy(dtype=object, na_value=np.nan)
        is_str = _is_text(matrix)
        is_bool = np.frompyfunc(lambda v: isinstance(v, (bool, np.bool_)), 1, 1)(matrix)
        is_bool = is_bool.astype(bool)
        for bad, kind, fix in ((is_str, "strings", " (e.g. df.astype('int64'))"),
                               (is_bool, "booleans", "")):
            if bad.any():
                raise _fail(
                    f"item ids must be integers; {int(bad.sum())} values are {kind}",
                    f"return integer track ids{fix}; " + _FORMAT_HINT,
                    _show_rows(users, matrix, np.flatnonzero(bad.any(axis=1))),
                )
    return as_int64(matrix, _item_failure(users, matrix))


def _item_failure(users: np.ndarray, matrix: np.ndarray):
    """The ``fail`` of :func:`as_int64` for the (N, k) prediction values ``matrix``."""

    def fail(rule: str, bad: np.ndarray, values=None) -> PredictionError:
        bad = bad.reshape(matrix.shape)
        rows = np.flatnonzero(bad.any(axis=1))
        shown = _show_rows(users, matrix, rows)
        if rule == MISSING:
            return _fail(
                f"{int(bad.sum())} values are missing (NaN) in {len(rows)} rows",
                "pad a list shorter than k with -1 instead of NaN: "
                "df.fillna(-1).astype('int64')", shown)
        if rule in (FRACTION, INFINITE):
            return _fail(
                f"item ids must be whole numbers; {int(bad.sum())} values are not "
                f"(e.g. {show_values(matrix[bad])})",
                "return track ids, not scores or row positions; " + _FORMAT_HINT, shown)
        return _fail(
            f"item ids must be integers; {int(bad.sum())} values are {rule} "
            f"(e.g. {show_values(matrix[bad])})",
            "return the track ids of the catalog (they fit in int64); " + _FORMAT_HINT, shown)

    return fail


#: Largest (test users x recommended tracks) grid checked through a dense table (32 MiB).
_DENSE_PAIRS = 1 << 25


def seen_in_training(matrix: np.ndarray, user_ids: np.ndarray, train: pd.DataFrame) -> np.ndarray:
    """Boolean (N, k) mask: the predicted item is one of that user's training items.

    Exact, without sorting the training rows. Only the training rows whose track is recommended
    to someone can match, so a track lookup table picks those (usually few) rows first. Their
    (user, track) pairs then go into a dense table over test users x recommended tracks when
    that grid is small, else into a hashed bit table that filters the candidates, the few
    candidates being checked exactly.

    Parameters
    ----------
    matrix : numpy.ndarray
        ``(N, k)`` int64 predicted track ids, ``-1`` padding.
    user_ids : numpy.ndarray
        The user of each row.
    train : pandas.DataFrame
        The fold's training rows (``user_id``, ``track_id``).

    Returns
    -------
    numpy.ndarray
        Boolean ``(N, k)`` mask.
    """
    out = np.zeros(matrix.shape, dtype=bool)
    real = matrix != PAD
    if matrix.size == 0 or not len(train) or not real.any():
        return out
    tracks = train["track_id"].to_numpy()
    if tracks.dtype.kind != "i":
        tracks = as_int64(tracks, _argument_failure("train", "track_id"))
    hi = int(matrix.max())
    top = max(hi, int(tracks.max(initial=0)))
    present = None
    # every real item >= 0 when nothing is below the padding (-1)
    if int(matrix.min()) >= PAD and int(tracks.min(initial=0)) >= 0 \
            and dense_ok(0, top, tracks.size + matrix.size):
        # a table over every track, plus a last slot that the padding (-1) marks and unmarks
        present = np.zeros(top + 2, dtype=bool)
        present[matrix] = True
        present[-1] = False
        pick = np.flatnonzero(take_small_table(present, tracks))
    else:
        pick = np.flatnonzero(isin(tracks, matrix[real]))
    if not len(pick):
        return out
    users = as_int64(train["user_id"].to_numpy()[pick], _argument_failure("train", "user_id"))
    rows = IdIndex(user_ids, queries=len(users)).positions(users)
    keep = rows >= 0
    if not keep.any():
        return out
    tracks = tracks[pick]
    if not keep.all():
        rows, tracks = rows[keep], tracks[keep]
    if present is not None:
        recommended = np.flatnonzero(present[: hi + 1])
        n = len(recommended)
        if len(matrix) * n <= _DENSE_PAIRS:
            code = np.full(hi + 2, -1, dtype=np.int32)  # the padding (-1) reads the last slot
            code[recommended] = np.arange(n, dtype=np.int32)
            pairs = np.zeros(len(matrix) * n, dtype=bool)
            pairs[rows.astype(np.int32) * n + code[tracks]] = True
            keys = take_small_table(code, matrix)
            keys += (np.arange(len(matrix), dtype=np.int32) * n)[:, None]
            out = take_small_table(pairs, keys)  # padding lands on another cell: masked below
            out &= real
            return out
    return _seen_hashed(matrix, real, rows, tracks.astype(np.int64, copy=False), out)


def _seen_hashed(matrix: np.ndarray, real: np.ndarray, rows: np.ndarray, tracks: np.ndarray,
                 out: np.ndarray) -> np.ndarray:
    """``seen_in_training`` for training pairs ``(rows, tracks)`` through a hashed bit table."""
    shift = int(max(tracks.max(), matrix.max())) + 1
    if tracks.min() < 0 or matrix[real].min(initial=0) < 0 or shift > (1 << 62) // len(matrix):
        # ids too large or negative to pack (row, track) into one int64: compact them first
        codes, uniq = pd.factorize(np.concatenate([tracks, matrix[real]]))
        tracks, shift = codes[: len(tracks)].astype(np.int64), len(uniq)
        packed = np.full(matrix.shape, -1, dtype=np.int64)
        packed[real] = codes[len(tracks):]
        matrix = packed
    train_keys = rows * shift
    train_keys += tracks
    del rows, tracks
    pred_keys = np.arange(len(matrix), dtype=np.int64)[:, None] * shift + matrix
    bits = int(min(max(np.ceil(np.log2(4 * len(train_keys))), 10), 27))
    train_hash = fib_hash(train_keys, bits)
    table = np.zeros(1 << bits, dtype=bool)
    table[train_hash] = True
    cand = real & table[fib_hash(pred_keys, bits)]
    if cand.any():
        cand_keys = pred_keys[cand]
        table[:] = False  # reuse the table to mark the candidates' buckets
        table[fib_hash(cand_keys, bits)] = True
        relevant = train_keys[table[train_hash]]
        out[cand] = pd.Series(cand_keys).isin(relevant).to_numpy()  # hash-based: no sort
    return out


#: What ``validate_predictions`` does with a list that names the same track twice.
REPEATED_ITEMS = ("error", "first")


def validate_predictions(predictions, user_ids, *, k: int = 100, catalog=None,
                         train: pd.DataFrame | None = None,
                         repeated: str = "error") -> pd.DataFrame:
    """Check what ``predict`` returned and normalise it for scoring.

    Parameters
    ----------
    predictions : pandas.DataFrame
        What ``predict`` returned.
    user_ids : array-like, pandas.Series or pandas.DataFrame
        The test users (a DataFrame through its ``user_id`` column).
    k : int
        Number of ranked columns expected (>= 1).
    catalog : array-like of int, optional
        The valid track ids; None skips the check.
    train : pandas.DataFrame, optional
        The fold's training rows (``user_id, track_id``); when given, predicting one of the
        user's training items raises a :class:`PredictionWarning` (not an error).
    repeated : {"error", "first"}
        A list naming the same track more than once: ``"error"`` refuses it; ``"first"``
        keeps it as it is, with a :class:`PredictionWarning` counting such lists, and the
        tests score it as the 2022 harness did (a target counts at its first position, the
        vector tests see every slot).

    Returns
    -------
    pandas.DataFrame
        Indexed by ``user_id`` in the order of ``user_ids``, int64 columns ``"0".."k-1"``.

    Raises
    ------
    ConfigError
        On a bad ``k`` or ``repeated``.
    PredictionError
        Naming the rule broken, a few offending rows, and the fix.
    """
    k = check_k(k, owner="validate_predictions")
    repeated = _check_repeated(repeated)
    expected = _expected_users(user_ids)
    frame, users = _user_index(_check_frame(predictions))
    pos = _test_user_rows(users, expected)
    matrix = _ranked_matrix(frame, users, pos, k)
    real = matrix != PAD
    if catalog is not None:
        _check_catalog(matrix, real, expected, catalog)
    _check_padding_last(matrix, real, expected)
    _check_repeats(matrix, expected, repeated)
    if train is not None and len(train):
        _warn_training_items(matrix, expected, train)
    # ``matrix`` (a fancy-indexed copy) is ours alone: the frame can take it as it is
    return pd.DataFrame(matrix, index=pd.Index(expected, name="user_id"),
                        columns=[str(i) for i in range(k)], copy=False)


def _check_repeated(repeated: str) -> str:
    """``repeated`` if it is one of :data:`REPEATED_ITEMS`."""
    if repeated not in REPEATED_ITEMS:
        raise ConfigError(f"validate_predictions: repeated must be one of {REPEATED_ITEMS}, got "
                          f"{repeated!r}. Fix: 'error' refuses lists that name a track twice; "
                          f"'first' scores them by the first occurrence, as the 2022 harness "
                          f"did.")
    return repeated


def _expected_users(user_ids) -> np.ndarray:
    """The test users as int64 ids (a DataFrame through its ``user_id`` column)."""
    if isinstance(user_ids, pd.DataFrame):
        user_ids = user_ids["user_id"]
    return as_int64(user_ids, _argument_failure("user_ids"))


def _check_frame(predictions) -> pd.DataFrame:
    """``predictions`` if it is a DataFrame."""
    if not isinstance(predictions, pd.DataFrame):
        kind = type(predictions).__name__
        raise _fail(
            f"predict() must return a pandas DataFrame; got {kind}",
            "wrap the ranked items: pd.DataFrame(items, index=pd.Index(user_ids, "
            'name="user_id"), columns=[str(i) for i in range(k)]) or use '
            "evaluation.predictions_frame(user_ids, items, k); " + _FORMAT_HINT,
        )
    return predictions


def _test_user_rows(users: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """The row of each test user in the predictions: one row per test user, no other."""
    dup = pd.Index(users).duplicated()
    if dup.any():
        raise _fail(
            f"{int(dup.sum())} user ids appear more than once: "
            f"{show_values(sorted_unique(users[dup]))}",
            "return exactly one row per user (one ranked list each)",
        )
    pos = IdIndex(users, queries=len(expected)).positions(expected)
    missing = pos < 0
    if missing.any():
        raise _fail(
            f"{int(missing.sum())} of {len(expected)} test users have no row: "
            f"{show_values(expected[missing])}",
            "return a row for every user in user_ids (a user with nothing to recommend gets a "
            "row of -1)",
        )
    if len(users) > len(expected):
        extra = ~IdIndex(expected, queries=len(users)).contains(users)
        raise _fail(
            f"{int(extra.sum())} rows are for users that are not test users: "
            f"{show_values(users[extra])}",
            "predict only for the users in user_ids",
        )
    return pos


def _ranked_matrix(frame: pd.DataFrame, users: np.ndarray, pos: np.ndarray,
                   k: int) -> np.ndarray:
    """The (N, k) int64 track ids, rows in test-user order, columns in rank order."""
    order = _column_order(frame.columns, k)
    if not np.array_equal(order, np.arange(k)):
        frame = frame.iloc[:, order]
    # rows in test-user order first, int64 next: one full-size int64 array, a fresh one
    return _item_matrix(frame, users)[pos].astype(np.int64, copy=False)


def _check_catalog(matrix: np.ndarray, real: np.ndarray, expected: np.ndarray,
                   catalog) -> None:
    """Nothing; a ``PredictionError`` for an item that is neither a track nor padding."""
    known = isin(matrix, as_int64(catalog, _argument_failure("catalog"))) | ~real
    if not known.all():
        rows = np.flatnonzero(~known.all(axis=1))
        raise _fail(
            f"{int((~known).sum())} item ids are not tracks of the catalog (and not the "
            f"padding -1): {show_values(sorted_unique(matrix[~known]))}",
            "recommend track ids from the dataset's tracks table (dataset.df_tracks.index); "
            "use -1 only as padding",
            _show_rows(expected, matrix, rows),
        )


def _check_padding_last(matrix: np.ndarray, real: np.ndarray, expected: np.ndarray) -> None:
    """Nothing; a ``PredictionError`` for a real item after a ``-1``."""
    after_pad = np.maximum.accumulate(~real, axis=1) & real
    if after_pad.any():
        rows = np.flatnonzero(after_pad.any(axis=1))
        raise _fail(
            f"{len(rows)} lists have a real item after a -1 (padding must come last)",
            "put the recommended items first and the -1 padding at the end of each row",
            _show_rows(expected, matrix, rows),
        )


def _check_repeats(matrix: np.ndarray, expected: np.ndarray, repeated: str) -> None:
    """Nothing, or a ``PredictionWarning`` (``repeated="first"``); a ``PredictionError``
    (``repeated="error"``) for a list that names the same track twice."""
    fits = int(matrix.min(initial=0)) >= -(1 << 31) and int(matrix.max(initial=0)) < 1 << 31
    srt = matrix.astype(np.int32 if fits else np.int64)  # half the memory where ids fit
    srt.sort(axis=1)
    twice = (srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] != PAD)
    if not twice.any():
        return
    rows = np.flatnonzero(twice.any(axis=1))
    example = show_values(sorted_unique(srt[:, 1:][twice]))
    if repeated == "error":
        exc = _fail(
            f"{len(rows)} lists recommend the same item more than once (e.g. {example})",
            "recommend each item at most once per user (e.g. drop duplicates, keeping the best "
            "rank, and pad with -1)",
            _show_rows(expected, matrix, rows),
        )
        exc.repeated_lists = len(rows)  # type: ignore[attr-defined]  # for the runner's note
        raise exc
    message = (
        f"predictions: {len(rows)} of {len(expected)} lists recommend the same item more than "
        f"once (e.g. {example}; sampling with replacement, as the 2022 template did?). They "
        "are scored as the 2022 harness scored them: a target counts at its first position "
        "and a repeat takes a slot that another track could have used. Recommend each track "
        "at most once (pad with -1) to use every slot.\n" + _show_rows(expected, matrix, rows))
    counts = {"repeated_lists": len(rows), "of_lists": len(expected)}
    warnings.warn(PredictionWarning(message, counts=counts), stacklevel=3)


def _warn_training_items(matrix: np.ndarray, expected: np.ndarray,
                         train: pd.DataFrame) -> None:
    """Nothing; a ``PredictionWarning`` when lists recommend the user's training tracks."""
    seen = seen_in_training(matrix, expected, train)
    if seen.any():
        rows = np.flatnonzero(seen.any(axis=1))
        message = (
            f"predictions: {int(seen.sum())} recommended items (in {len(rows)} of "
            f"{len(expected)} lists) are tracks the user already has in the training set; "
            "a leave-one-out target is never one of them, so these slots cannot hit. "
            "Models usually exclude training items.\n" + _show_rows(expected, matrix, rows))
        counts = {"items": int(seen.sum()), "lists": len(rows), "of_lists": len(expected)}
        warnings.warn(PredictionWarning(message, counts=counts), stacklevel=3)
