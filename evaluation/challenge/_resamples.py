"""Paired user resamples: the one way every bootstrap of the harness draws and applies them.

Within each fold the test users are resampled with replacement: a seeded stream per fold
(:func:`fold_streams`) draws, ``chunk`` replicates at a time, how often each user is drawn
(:func:`resample_counts`). The run's intervals, ``compare``'s paired replicates, a run's
figures and a board's teams all take their resamples from here, so that the same seed gives
the same resamples to the bit, and the same resamples applied to several runs (or teams) make
their replicates paired. :func:`resample_folds` draws them and hands them over fold by fold
(the folds in parallel threads); :func:`paired_test_replicates` is its use by the tests; a
board keeps its resamples (:func:`paired_resamples`) to score each team on them later.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
from threadpoolctl import ThreadpoolController

from evaluation._util.validation import check_int
from evaluation.challenge._scores import UserScores
from evaluation.errors import ConfigError

#: Replicates the run's bootstrap draws at once per fold (bounds memory to chunk x users
#: counts; it also decides which random numbers go to which replicate).
RESAMPLE_CHUNK = 50

_T = TypeVar("_T")


def fold_streams(seed: int, n_folds: int) -> list[np.random.SeedSequence]:
    """One independent random stream per fold (folds can be resampled in parallel threads
    with results independent of the scheduling)."""
    return np.random.SeedSequence(seed).spawn(n_folds)


def resample_counts(rng: np.random.Generator, n_users: int, n_boot: int,
                    chunk: int = RESAMPLE_CHUNK) -> Iterator[tuple[int, np.ndarray]]:
    """The run's bootstrap resamples of one fold's users, ``chunk`` replicates at a time.

    With the fold's stream of :func:`fold_streams`, these are the run's own resamples bit for
    bit: the chunking decides which random numbers go to which replicate.

    Yields
    ------
    tuple of (int, numpy.ndarray)
        The first replicate's index and the ``b x n_users`` counts of how often each user
        is drawn in each of the chunk's ``b`` resamples.
    """
    for start in range(0, n_boot, chunk):
        b = min(chunk, n_boot - start)
        drawn = rng.integers(0, n_users, size=(b, n_users), dtype=np.int64)
        counts = np.empty((b, n_users), dtype=np.intp)
        for i in range(b):
            # one resample at a time: its table of counts stays in cache
            counts[i] = np.bincount(drawn[i], minlength=n_users)
        yield start, counts


@functools.cache
def _blas() -> ThreadpoolController:
    """The process's BLAS libraries, found on the first call only: finding them reads every
    loaded library (~3 ms, which a study of hundreds of bootstraps would pay hundreds of
    times). NumPy's, which the products here use, is loaded with NumPy; a BLAS loaded after
    the first call keeps its threads, which costs speed only (the integer-count products
    give the same bits on any number of threads)."""
    return ThreadpoolController()


def over_folds(work: Callable[[int], _T], n_folds: int) -> list[_T]:
    """``[work(0), ..., work(n_folds - 1)]``, the folds in parallel threads.

    Each fold draws from its own stream and writes its own slots, so the results do not
    depend on the scheduling; NumPy releases the GIL in the heavy parts. The folds already
    run in parallel: a multi-threaded BLAS inside each thread would only oversubscribe the
    cores (the integer-count products give the same bits either way), so it runs
    single-threaded here.
    """
    workers = min(n_folds, os.cpu_count() or 1)
    with _blas().limit(limits=1, user_api="blas"):
        if workers <= 1:
            return [work(f) for f in range(n_folds)]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(work, range(n_folds)))


def resample_folds(fold_sizes: Sequence[int], apply: Callable[[int, int, np.ndarray], None],
                   *, n_boot: int, seed: int, chunk: int = RESAMPLE_CHUNK) -> None:
    """Draw the run's resamples of every fold and hand each chunk to ``apply``.

    Parameters
    ----------
    fold_sizes : sequence of int
        The number of test users of each fold.
    apply : callable
        ``apply(fold, start, counts)``: ``counts`` (``b x users``, how often each user is
        drawn) are the resamples ``start`` to ``start + b - 1`` of fold ``fold``. Called from
        one thread per fold: it must write only that fold's slots.
    n_boot : int
        Replicates.
    seed : int
        Seed of the resampling (non-negative).
    chunk : int
        Replicates drawn at once.
    """
    streams = fold_streams(seed, len(fold_sizes))

    def fold(f: int) -> None:
        rng = np.random.default_rng(streams[f])
        for start, counts in resample_counts(rng, int(fold_sizes[f]), n_boot, chunk):
            apply(f, start, counts)

    over_folds(fold, len(fold_sizes))


def paired_test_replicates(runs: Sequence[Sequence[UserScores]], names: Sequence[str], *,
                           n_boot: int, seed: int, chunk: int = RESAMPLE_CHUNK,
                           resamples: PairedResamples | None = None
                           ) -> dict[str, np.ndarray]:
    """Each run's replicates of the fold mean of each test, on the same resamples.

    Every fold's users are resampled once for all runs; each run's tests are recomputed per
    fold from its per-user contributions (``UserScores.resampled_tests``, the MRED tests from
    the resampled groups) and averaged over folds.

    Parameters
    ----------
    runs : sequence of sequences of UserScores
        Per run, the per-user contributions of each fold; every run has the same users.
    names : sequence of str
        The tests to keep.
    n_boot, seed, chunk : int
        As for :func:`resample_folds`.
    resamples : PairedResamples, optional
        These resamples, drawn before (:func:`paired_resamples`, with the default chunk):
        the same counts, not drawn again; they must have ``seed``, ``n_boot`` and the runs'
        fold sizes.

    Returns
    -------
    dict of str to numpy.ndarray
        Test -> shape ``(n_runs, n_boot)``.

    Raises
    ------
    ConfigError
        When ``resamples`` are not these.
    """
    n_folds = len(runs[0])
    reps = {t: np.zeros((len(runs), n_folds, n_boot)) for t in names}

    def apply(f: int, start: int, counts: np.ndarray) -> None:
        for r, run in enumerate(runs):
            tests = run[f].resampled_tests(counts)
            for t in names:
                reps[t][r, f, start:start + len(counts)] = tests[t]

    sizes = [len(s) for s in runs[0]]
    if resamples is None:
        resample_folds(sizes, apply, n_boot=n_boot, seed=seed, chunk=chunk)
    else:
        if (resamples.seed, resamples.n_boot, resamples.fold_sizes, chunk) != \
                (seed, n_boot, tuple(sizes), RESAMPLE_CHUNK):
            raise ConfigError(
                f"paired_test_replicates: the kept resamples (seed {resamples.seed}, n_boot "
                f"{resamples.n_boot}, fold sizes {resamples.fold_sizes}) are not those asked "
                f"for (seed {seed}, n_boot {n_boot}, fold sizes {tuple(sizes)}, chunk {chunk}"
                f"); pass the resamples drawn for them, or none")
        kept = resamples.counts

        def replay(f: int) -> None:
            # the drawn chunks as kept (uint8, or uint16): the counts are integers, converted
            # exactly wherever they are summed, so the sums are the same to the bit
            for start in range(0, n_boot, chunk):
                apply(f, start, kept[f][start:start + chunk])

        over_folds(replay, n_folds)
    # the mean over folds one fold after the other, as a run takes it (the same bits)
    return {t: np.mean([reps[t][:, f] for f in range(n_folds)], axis=0) for t in names}


@dataclass(frozen=True)
class PairedResamples:
    """The resamples every team of a board is scored on, kept.

    Attributes
    ----------
    seed : int
    n_boot : int
    counts : tuple of numpy.ndarray
        Per fold, shape ``(n_boot, n_users)``: how often each user is drawn in each replicate
        (``uint8``, or ``uint16`` in the rare fold where a user is drawn over 255 times), the
        counts :func:`resample_folds` draws.
    kept_sums : tuple of dict
        Per fold, sums of the counts that are the same for every team scored on them (the
        resampled size of the fold, of each slice's groups), made by the first team that
        needs them and read by the others; a few hundred KiB per fold at full scale.
    """

    seed: int
    n_boot: int
    counts: tuple[np.ndarray, ...]
    kept_sums: tuple[dict, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        # made with the object (frozen), never passed in: a copy with other counts
        # (``dataclasses.replace``) starts with sums of its own
        object.__setattr__(self, "kept_sums", tuple({} for _ in self.counts))

    @property
    def fold_sizes(self) -> tuple[int, ...]:
        """The number of test users of each fold."""
        return tuple(c.shape[1] for c in self.counts)

    @property
    def nbytes(self) -> int:
        """The memory the counts take."""
        return sum(c.nbytes for c in self.counts)


def paired_resamples(seed: int, n_boot: int, fold_sizes: Sequence[int]) -> PairedResamples:
    """Draw the resamples of a board: the run's own, per fold, from ``seed``.

    Parameters
    ----------
    seed : int
        Seed of the resampling (non-negative).
    n_boot : int
        Replicates (at least 2).
    fold_sizes : sequence of int
        The number of test users of each fold (at least 1 each).

    Returns
    -------
    PairedResamples

    Raises
    ------
    ConfigError
        When a parameter is out of range.
    """
    check_int("seed", seed, minimum=0, owner="paired_resamples")
    check_int("n_boot", n_boot, minimum=2, owner="paired_resamples")
    if not fold_sizes:
        raise ConfigError("paired_resamples: fold_sizes must name at least one fold, got none")
    for i, size in enumerate(fold_sizes):
        check_int(f"fold_sizes[{i}]", size, minimum=1, owner="paired_resamples")
    # kept small: a count is at most the fold's users and almost never 256
    counts = [np.empty((n_boot, int(size)), dtype=np.uint8) for size in fold_sizes]

    def keep(f: int, start: int, block: np.ndarray) -> None:
        if block.max(initial=0) > np.iinfo(np.uint8).max:
            counts[f] = counts[f].astype(np.uint16)
        counts[f][start:start + len(block)] = block

    resample_folds(fold_sizes, keep, n_boot=n_boot, seed=seed)
    return PairedResamples(seed=seed, n_boot=n_boot, counts=tuple(counts))
