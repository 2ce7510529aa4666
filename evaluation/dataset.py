"""``ChallengeDataset``: a dataset source plus the challenge's leave-one-out folds."""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any

import numpy as np
import pandas as pd

from evaluation._util.hugepages import no_hugepage_advice
from evaluation._util.validation import check_int
from evaluation.data import Tables, TrackVectors, load_source, validate_tables
from evaluation.data import source_options as options_of
from evaluation.errors import ConfigError
from evaluation.legacy import (
    OLD_DATASET_ARGUMENTS,
    dataset_arguments,
    keyed_vectors,
    vectors_folder,
)
from evaluation.splits import (
    DEFAULT_SEED,
    EventIndex,
    Fold,
    FoldParams,
    fold_cache_path,
    global_cut_fold,
    make_fold,
    read_fold,
    write_fold,
)

#: What scoring may do with a list naming a track twice (``validate_predictions``'s
#: ``repeated``).
REPEATED_ITEMS = ("first", "error")


class ChallengeDataset:
    """Events, users, tracks and track vectors of one source, cut into ``num_folds`` folds.

    ``source`` is ``"synthetic"`` (the embedded default, ``scale`` tiny | small | full, built
    from ``data_seed``), ``"lfm"`` or ``"lfm2023"`` (the 2022 or 2023 challenge data,
    downloaded and cached), a directory in
    the EvalRS schema, ``"movielens:PATH"``, or an already loaded ``Tables`` (schema-checked
    unless ``validate=False``, for tables that were checked already). ``**source_options`` go
    to ``evaluation.data.load_source``: for ``"lfm"``/``"lfm2023"`` ``url``, ``sha256``,
    ``cache_dir`` and ``progress``; any other keyword is a ConfigError listing the expected
    ones.

    Fold parameters: ``seed`` (``None`` means the fixed default 42; ``0`` is a
    seed), ``num_folds``, ``frac`` (share of users per fold), ``k_core`` and ``max_rounds`` of
    the k-core filter, ``sampler`` (``"pandas"``: the 2022 folds row for row; ``"generator"``:
    a vectorised ``numpy.random.Generator`` draw, different but equally valid folds) and
    ``split`` (``"bootstrap"``: a uniformly drawn target per user; ``"last_one"``: each user's
    single latest event, ties to the largest track id). The 2023 edition's split (every event
    at a user's latest timestamp) has several targets per user, which the per-user leaderboard
    tests do not score: it is ``evaluation.splits.leave_last_out``, and ``split="last"`` is a
    ConfigError that says so. Folds are computed on first use and kept; with ``fold_cache``
    (the default) they are also cached on disk under ``cache_dir()/folds/`` (see
    ``evaluation.splits.read_fold``), keyed by the data's fingerprint and the fold
    parameters, so the next run reads them instead of cutting them again. A cached fold is
    checked (checksums, fingerprint, parameters) before it is used; one that fails a check is
    computed again with a ``FoldCacheWarning``.

    Parameters
    ----------
    source : str, path or Tables
        The data (see above).
    scale : str
        Synthetic scale.
    seed : int or None
        Fold seed.
    num_folds, frac, k_core, max_rounds, sampler, split
        Fold parameters (see above and :class:`~evaluation.splits.FoldParams`).
    data_seed : int
        Seed of the synthetic generator.
    validate : bool, default True
        Check already loaded ``Tables`` against the schema.
    fold_cache : bool, default True
        Read and write the folds in the on-disk cache; False computes them every time.
    repeated_items : {"first", "error"}
        What scoring does with a list that names the same track twice (a model sampling with
        replacement, as the 2022 template did): ``"first"`` scores it as the 2022 harness
        did, the target counting at its first position, with a ``PredictionWarning`` that
        counts such lists; ``"error"`` refuses it (a board that wants distinct tracks).
    **source_options
        Options of the source. The 2022/2023 arguments ``force_download``,
        ``sample_users_perc``, ``min_user_item_freq``, ``folded_dataset_split`` and
        ``dataset_out_path`` are mapped to their equivalents with a ``DeprecationWarning``
        (or refused with a ``ConfigError`` saying why, where there is none).

    Raises
    ------
    ConfigError
        On a bad fold parameter or an option the source does not take.
    DataError
        When the data breaks the schema.
    """

    def __init__(
        self,
        source: str | os.PathLike | Tables = "synthetic",
        scale: str = "small",
        seed: int | None = DEFAULT_SEED,
        num_folds: int = 4,
        frac: float = 0.25,
        k_core: int = 10,
        max_rounds: int = 10,
        sampler: str = "pandas",
        split: str = "bootstrap",
        *,
        data_seed: int = DEFAULT_SEED,
        validate: bool = True,
        fold_cache: bool = True,
        repeated_items: str = "first",
        **source_options: Any,
    ) -> None:
        if any(o in source_options for o in OLD_DATASET_ARGUMENTS):
            # the 2022/2023 arguments enter here: mapped to their equivalents (or refused,
            # saying why)
            frac, k_core, source_options = dataset_arguments(
                source_options, source=source, frac=frac, k_core=k_core, default_frac=0.25,
                default_k_core=10)
        if repeated_items not in REPEATED_ITEMS:
            raise ConfigError(f"ChallengeDataset: repeated_items must be one of "
                              f"{REPEATED_ITEMS}, got {repeated_items!r}. Fix: 'first' scores "
                              f"a list that names a track twice as the 2022 harness did (by "
                              f"the first occurrence, with a warning); 'error' refuses it.")
        self.repeated_items = repeated_items
        self.params = FoldParams(num_folds=num_folds, seed=DEFAULT_SEED if seed is None else seed,
                                 frac=frac, k_core=k_core, max_rounds=max_rounds,
                                 sampler=sampler, split=split)
        if isinstance(source, Tables):
            if source_options:
                raise ConfigError(f"ChallengeDataset: source options {sorted(source_options)} "
                                  f"make no sense with already loaded Tables; drop them.")
            if validate:
                with no_hugepage_advice():
                    source = validate_tables(source)
            self.tables = source
        else:
            accepted = [o for o in options_of(source) if o not in ("scale", "seed")]
            unknown = sorted(set(source_options) - set(accepted))
            if unknown:
                raise ConfigError(
                    f"ChallengeDataset: unknown keyword argument(s) {unknown} for source "
                    f"{os.fspath(source) if isinstance(source, os.PathLike) else source!r}. "
                    f"Expected: source, scale, seed, num_folds, frac, k_core, max_rounds, "
                    f"sampler, split, data_seed, validate, fold_cache"
                    + (f", and for this source {accepted}" if accepted else
                       " (this source takes no other options)")
                    + ". Fix: check the spelling or drop the argument.")
            with no_hugepage_advice():
                self.tables = load_source(source, scale=scale, seed=data_seed, **source_options)
        vectors = self.tables.track_vectors
        if vectors is not None:
            # models read the vectors; none may write into the ones the tests score with
            vectors.track_ids.flags.writeable = False
            vectors.vectors.flags.writeable = False
        self.fold_cache = bool(fold_cache)
        self._index: EventIndex | None = None
        # Folds that exist only here (computed, not on disk) are kept; a fold read back from
        # the on-disk cache only while something uses it (a few tens of milliseconds to read it
        # again, and three fewer folds' rows in memory during a run).
        self._folds: dict[int, Fold] = {}
        self._disk_folds: weakref.WeakValueDictionary[int, Fold] = weakref.WeakValueDictionary()
        self._lock = threading.Lock()

    # -- pickling -----------------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        """The dataset's state for ``pickle``, complete before the first byte is written.

        The tables (with their cached fingerprint), the parameters and the folds that exist
        only in memory travel. A fold of the on-disk cache does not: the unpickled dataset
        reads it again (or, where that cache is absent, cuts it again: the same rows, the
        folds being deterministic), as it would after letting it go. The lock and the shared
        per-dataset index do not travel either (the index is rebuilt when a fold is cut).
        The state is a new dict gathered here, so nothing later changes what is written.
        """
        with self._lock:
            state = {k: v for k, v in self.__dict__.items()
                     if k not in ("_lock", "_disk_folds", "_index", "_folds")}
            state["_folds"] = dict(self._folds)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Rebuild the dataset from :meth:`__getstate__`'s state (read-only arrays again)."""
        self.__dict__.update(state)
        self._index = None
        self._disk_folds = weakref.WeakValueDictionary()
        self._lock = threading.Lock()
        vectors = self.tables.track_vectors
        if vectors is not None:
            vectors.track_ids.flags.writeable = False
            vectors.vectors.flags.writeable = False
        for found in self._folds.values():
            for rows in (found.train_rows, found.test_rows):
                rows.flags.writeable = False

    # -- data ---------------------------------------------------------------------------------
    # Each table is handed out as a shallow copy: with pandas' copy-on-write (pandas >= 3) it
    # shares the data until written to, so a model that adds a column, changes a dtype or
    # drops rows in place changes its copy only, never the tables the folds are cut from and
    # the tests are scored against. The harness itself reads ``self.tables``.
    @property
    def df_events(self) -> pd.DataFrame:
        return self.tables.events.copy(deep=False)

    @property
    def df_users(self) -> pd.DataFrame:
        return self.tables.users.copy(deep=False)

    @property
    def df_tracks(self) -> pd.DataFrame:
        return self.tables.tracks.copy(deep=False)

    @property
    def track_vectors(self) -> TrackVectors | None:
        """The track vectors (read-only arrays), or None when the dataset has none."""
        return self.tables.track_vectors

    @property
    def song2vec(self) -> Any:
        """The track vectors as gensim ``KeyedVectors`` keyed by int track id (built once).

        The name 2022 and 2023 code used for the ``song2vec.wv`` vectors. ``ConfigError``
        when the dataset has no track vectors.
        """
        return keyed_vectors(self)

    @property
    def path_to_dataset(self) -> str:
        """A folder holding ``song2vec.wv`` (these track vectors, gensim ``KeyedVectors``).

        The 2022/2023 attribute: ``KeyedVectors.load(os.path.join(dataset.path_to_dataset,
        "song2vec.wv"))`` reads :attr:`song2vec`. Written once under the cache directory.
        """
        return os.fspath(vectors_folder(self))

    @property
    def fingerprint(self) -> str:
        """sha256 of the full data content (computed on first use)."""
        return self.tables.fingerprint()

    # -- fold parameters ----------------------------------------------------------------------
    @property
    def num_folds(self) -> int:
        return self.params.num_folds

    @property
    def seed(self) -> int:
        return self.params.seed

    @property
    def fold_params(self) -> dict[str, Any]:
        """Everything that defines the folds besides the data (for the run hash)."""
        return self.params.as_dict()

    # -- folds --------------------------------------------------------------------------------
    def fold(self, fold: int) -> Fold:
        """Fold ``fold`` as row positions into ``df_events``.

        Computed once. A fold on the on-disk fold cache is kept in memory only while something
        holds it, and read again (a few tens of milliseconds) when asked for after that.
        """
        fold = self._check_fold(fold)
        found = self._folds.get(fold) or self._disk_folds.get(fold)
        if found is None:
            found, on_disk = self._read_or_make_fold(fold)
            for rows in (found.train_rows, found.test_rows):
                rows.flags.writeable = False  # cached and shared: nobody may edit a fold
            found = (self._disk_folds if on_disk else self._folds).setdefault(fold, found)
        return found

    def _read_or_make_fold(self, fold: int) -> tuple[Fold, bool]:
        """Fold ``fold`` from the on-disk cache, or computed (and then cached); and whether it
        is on disk (can be read again)."""
        if not self.fold_cache:
            return make_fold(self._event_index(), self.params, fold), False
        key = (self.fingerprint, self.params, fold, len(self.tables.events))
        path = fold_cache_path(key[0], self.params, fold)
        found = read_fold(path, *key)
        if found is not None:
            return found, True
        found = make_fold(self._event_index(), self.params, fold)
        return found, write_fold(path, found, key[0], self.params, key[3])

    def _event_index(self) -> EventIndex:
        """The per-dataset precomputation shared by all folds (built once)."""
        with self._lock:
            if self._index is None:
                self._index = EventIndex(self.tables.events,
                                         need_time=self.params.split == "last_one")
            return self._index

    def compute_folds(self, workers: int = 2) -> list[Fold]:
        """Compute every fold now (in ``workers`` threads; NumPy releases the GIL)."""
        todo = [f for f in range(self.num_folds)
                if f not in self._folds and f not in self._disk_folds]
        if workers > 1 and len(todo) > 1:
            from concurrent.futures import ThreadPoolExecutor

            # computed once, before the threads need them
            if self.fold_cache:
                self.tables.fingerprint()
            else:
                self._event_index()
            with ThreadPoolExecutor(max_workers=workers) as pool:
                # held here: a fold read from the disk cache lives only while it is used
                made = dict(zip(todo, pool.map(self.fold, todo)))
        else:
            made = {}
        return [made.get(f) or self.fold(f) for f in range(self.num_folds)]

    def get_train_set(self, fold: int) -> pd.DataFrame:
        """The fold's training events (every events column, the events' order and index)."""
        return self._train_frame(np.asarray(self.fold(fold).train_rows, dtype=np.intp))

    def get_test_set(self, fold: int, limit: int | None = None) -> pd.DataFrame:
        """``[user_id, track_id]``: one target per test user, sorted by ``user_id``.

        ``limit`` keeps the first ``limit`` test users in that order (``None`` or ``0``: all),
        so a limited run always scores the same users. The index is the target's row label
        in ``df_events``.
        """
        return self._test_frame(self.fold(fold).test_rows, limit)

    def get_train_and_test_sets(self, fold: int, limit: int | None = None
                                ) -> tuple[pd.DataFrame, pd.DataFrame]:
        """``(get_train_set(fold), get_test_set(fold, limit))``, the fold read once.

        A fold read from the disk cache is let go before the training frame is gathered, so
        its rows and the new frame are not in memory together.
        """
        found = self.fold(fold)
        test = self._test_frame(found.test_rows, limit)
        rows = np.asarray(found.train_rows, dtype=np.intp)
        del found
        return self._train_frame(rows), test

    def _train_frame(self, rows: np.ndarray) -> pd.DataFrame:
        with no_hugepage_advice():  # a new frame per fold: see evaluation._util.hugepages
            return _take_rows(self.tables.events, rows)

    def _test_frame(self, rows: np.ndarray, limit: int | None) -> pd.DataFrame:
        if limit is not None:
            # 0, like None, means every test user
            limit = check_int("limit", limit, minimum=0, owner="get_test_set")
            if limit:
                rows = rows[:limit]
        return self.tables.events[["user_id", "track_id"]].take(rows)

    def fold_statistics(self) -> pd.DataFrame:
        """One row per fold: sampled users, test users, train rows and tracks, k-core rounds."""
        records = []
        for fold in self.compute_folds():
            stats = fold.stats()
            train_tracks = self.tables.events["track_id"].to_numpy()[fold.train_rows]
            stats["train_tracks"] = len(pd.unique(train_tracks))
            stats["train_rows_per_user"] = (len(fold.train_rows) / fold.n_test_users
                                            if fold.n_test_users else 0.0)
            records.append(stats)
        return pd.DataFrame.from_records(records).set_index("fold")

    # -- the 2022 names -----------------------------------------------------------------------
    def _get_train_set(self, fold: int) -> pd.DataFrame:
        return self.get_train_set(fold)

    def _get_test_set(self, fold: int, limit: int | None = None) -> pd.DataFrame:
        return self.get_test_set(fold, limit=limit)

    def get_sample_train_test(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Fold 0's training events and test targets, for exploring the data.

        Fold 0, as in 2023. The 2022 harness returned fold 1, and so does the 2022 path
        (``from evaluation.EvalRSRunner import ChallengeDataset``), where 2022 code gets it.
        """
        return self.get_train_set(0), self.get_test_set(0)

    def _check_fold(self, fold: int) -> int:
        """``fold`` as an int, if it names one of the dataset's folds."""
        return check_int("fold", fold, minimum=0, maximum=self.num_folds - 1)

    def __repr__(self) -> str:
        return (f"ChallengeDataset(source={self.tables.source!r}, events={len(self.df_events)}, "
                f"users={len(self.df_users)}, tracks={len(self.df_tracks)}, "
                f"num_folds={self.num_folds}, seed={self.seed}, sampler={self.params.sampler!r}, "
                f"split={self.params.split!r})")


#: Below this many rows a plain ``DataFrame.take`` is as fast.
_PARALLEL_TAKE_ROWS = 1 << 20


def _take_rows(frame: pd.DataFrame, rows: np.ndarray) -> pd.DataFrame:
    """``frame.take(rows)``, the same frame, with the columns gathered in two threads.

    pandas gathers one column after the other; NumPy's ``take`` releases the GIL, so the
    columns of a large frame of plain numeric columns are gathered in parallel.
    """
    plain = all(isinstance(dt, np.dtype) and dt.kind in "biuf" for dt in frame.dtypes)
    if len(rows) < _PARALLEL_TAKE_ROWS or not plain or not frame.columns.is_unique \
            or (os.cpu_count() or 1) < 2:
        return frame.take(rows)
    from concurrent.futures import ThreadPoolExecutor

    idx = np.asarray(rows, dtype=np.intp)
    with ThreadPoolExecutor(max_workers=2) as pool:
        taken = [pool.submit(np.take, frame[c].to_numpy(), idx) for c in frame.columns]
        index = _take_index(frame.index, idx)
        columns = {c: f.result() for c, f in zip(frame.columns, taken)}
    out = pd.DataFrame(columns, index=index, copy=False)
    return out.__finalize__(frame, method="take")


def _take_index(index: pd.Index, idx: np.ndarray) -> pd.Index:
    """``index.take(idx)``; for the default ``RangeIndex`` the positions are the labels.

    pandas' ``RangeIndex.take`` computes ``start + idx * step`` into a new array; for
    ``range(n)`` that equals ``idx`` itself (int64, the same labels), which is reused.
    """
    plain = (isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1
             and idx.dtype == np.int64)
    if not plain or not len(idx) or idx.min() < 0 or idx.max() >= len(index):
        return index.take(idx)
    return pd.Index(idx, name=index.name, copy=False)


class TimeCutDataset(ChallengeDataset):
    """A dataset's tables with one fold: a global time cut at ``cut`` (unix seconds; see
    :func:`evaluation.splits.global_cut_fold`), the same data and scoring rule otherwise.

    Raises
    ------
    ConfigError
        When the cut leaves no training event or no test user.
    """

    def __init__(self, dataset: ChallengeDataset, cut: float) -> None:
        super().__init__(dataset.tables, num_folds=1, validate=False, fold_cache=False,
                         repeated_items=dataset.repeated_items)
        self._cut_fold = global_cut_fold(dataset.tables.events, cut)
        for rows in (self._cut_fold.train_rows, self._cut_fold.test_rows):
            rows.flags.writeable = False

    def fold(self, fold: int) -> Fold:
        """The cut's fold (the only one)."""
        self._check_fold(fold)
        return self._cut_fold
