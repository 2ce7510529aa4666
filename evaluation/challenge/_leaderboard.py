"""Aggregation of per-fold test results into the leaderboard scores, with bootstrap CIs.

Design §4: each test is averaged over folds; the phase-1 score is the mean of the nine
leaderboard tests; the phase-2 score is -100 when HIT_RATE is below the reference threshold,
otherwise each test is normalised as ``(x - baseline) / (best - baseline)`` and the groups are
combined as ``(1 * mean(HR, MRR) + 1.5 * mean(five MREDs) + 1.5 * mean(BLW, LD)) / 4``.

The references (baseline, best, threshold, groups and weights) are data: one JSON file per
dataset under ``evaluation/references/``.

Confidence intervals come from a seeded bootstrap over test users within each fold: every
fold's users are resampled with replacement, every test is recomputed from per-user
contributions (:class:`UserScores`), averaged over folds and turned into scores.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import NormalDist

import numpy as np
from threadpoolctl import threadpool_limits

from evaluation.errors import ConfigError, DataError

HIT_RATE = "HIT_RATE"
MRR = "MRR"
MRED_TESTS = (
    "MRED_COUNTRY",
    "MRED_USER_ACTIVITY",
    "MRED_TRACK_POPULARITY",
    "MRED_ARTIST_POPULARITY",
    "MRED_GENDER",
)
BEING_LESS_WRONG = "BEING_LESS_WRONG"
LATENT_DIVERSITY = "LATENT_DIVERSITY"
#: The nine tests that enter the leaderboard scores, in the 2022 order.
LEADERBOARD_TESTS = (HIT_RATE, MRR, *MRED_TESTS, BEING_LESS_WRONG, LATENT_DIVERSITY)

DEFAULT_GROUPS = {
    "accuracy": [HIT_RATE, MRR],
    "fairness": list(MRED_TESTS),
    "behavioural": [BEING_LESS_WRONG, LATENT_DIVERSITY],
}
DEFAULT_WEIGHTS = {"accuracy": 1.0, "fairness": 1.5, "behavioural": 1.5}
#: Phase-2 score of a submission below the hit-rate threshold.
GATED_SCORE = -100.0

_NORMAL = NormalDist()

REFERENCES_DIR = Path(__file__).resolve().parent / "references"

# Slice codes in UserScores.slices: a group index (>= 0), or one of these.
IN_MR_ONLY = -1  # counts in the slice's overall miss rate, in no group (e.g. missing gender)
LEFT_OUT = -2  # left out of the slice entirely (e.g. a country outside the list)


# --------------------------------------------------------------------------- references


@dataclass(frozen=True)
class References:
    """Phase-2 references of one dataset: baseline and best value of each test, gate, weights."""

    baseline: dict[str, float]
    best: dict[str, float]
    hit_rate_threshold: float
    groups: dict[str, list[str]] = field(default_factory=lambda: dict(DEFAULT_GROUPS))
    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    name: str = ""
    description: str = ""
    dataset: dict = field(default_factory=dict)
    path: str = ""

    def __post_init__(self) -> None:
        where = f"references {self.path or self.name or '(in memory)'}"
        if set(self.groups) != set(self.weights):
            raise DataError(
                f"{where}: 'groups' and 'weights' must name the same groups; got groups "
                f"{sorted(self.groups)} and weights {sorted(self.weights)}. Give every group "
                f"a weight."
            )
        tests = [t for members in self.groups.values() for t in members]
        for key in ("baseline", "best"):
            values = getattr(self, key)
            missing = [t for t in tests if t not in values]
            if missing:
                raise DataError(
                    f"{where}: '{key}' lacks a value for {missing}; every test of 'groups' "
                    f"needs a baseline and a best value."
                )
            bad = [t for t in tests if not _is_finite_number(values[t])]
            if bad:
                raise DataError(
                    f"{where}: '{key}' values must be finite numbers; got "
                    f"{ {t: values[t] for t in bad} }."
                )
        flat = [t for t in tests if self.best[t] == self.baseline[t]]
        if flat:
            raise DataError(
                f"{where}: best equals baseline for {flat}, so the normalisation "
                f"(x - baseline) / (best - baseline) is undefined. Use a reference model that "
                f"differs from the baseline on every test."
            )
        if not _is_finite_number(self.hit_rate_threshold):
            raise DataError(
                f"{where}: 'hit_rate_threshold' must be a finite number, got "
                f"{self.hit_rate_threshold!r}."
            )
        bad_w = {g: w for g, w in self.weights.items() if not _is_finite_number(w) or w < 0}
        if bad_w or sum(self.weights.values()) <= 0:
            raise DataError(
                f"{where}: weights must be non-negative numbers with a positive sum; got "
                f"{self.weights}."
            )

    @property
    def tests(self) -> list[str]:
        return [t for members in self.groups.values() for t in members]

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "description": self.description,
            "hit_rate_threshold": self.hit_rate_threshold,
            "groups": self.groups,
            "weights": self.weights,
            "baseline": self.baseline,
            "best": self.best,
            "dataset": self.dataset,
        }

    @classmethod
    def from_dict(cls, data: Mapping, path: str = "") -> References:
        where = f"references {path or '(in memory)'}"
        if not isinstance(data, Mapping):
            raise DataError(f"{where}: expected a JSON object, got {type(data).__name__}.")
        missing = [k for k in ("baseline", "best", "hit_rate_threshold") if k not in data]
        if missing:
            raise DataError(
                f"{where}: missing key(s) {missing}; a references file needs 'baseline', "
                f"'best' (test name -> value) and 'hit_rate_threshold'."
            )
        for key in ("baseline", "best", "groups", "weights"):
            if key in data and not isinstance(data[key], Mapping):
                raise DataError(
                    f"{where}: '{key}' must be an object (name -> value), got "
                    f"{type(data[key]).__name__}."
                )
        return cls(
            baseline={str(k): v for k, v in data["baseline"].items()},
            best={str(k): v for k, v in data["best"].items()},
            hit_rate_threshold=data["hit_rate_threshold"],
            groups={k: list(v) for k, v in data.get("groups", DEFAULT_GROUPS).items()},
            weights=dict(data.get("weights", DEFAULT_WEIGHTS)),
            name=str(data.get("name", "")),
            description=str(data.get("description", "")),
            dataset=dict(data.get("dataset") or {}),
            path=path,
        )


def _is_finite_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def load_references(path_or_name: str | Path) -> References:
    """Load a references file: a path, or the name of a shipped file (``"lfm"``)."""
    path = Path(path_or_name)
    if not path.suffix and not path.exists():
        path = REFERENCES_DIR / f"{path_or_name}.json"
    if not path.is_file():
        shipped = sorted(p.stem for p in REFERENCES_DIR.glob("*.json"))
        raise ConfigError(
            f"references file {str(path)!r} does not exist. Pass a path to a references JSON "
            f"or one of the shipped names {shipped}; `python -m evaluation references SOURCE` "
            f"writes one for a synthetic dataset."
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"references file {str(path)!r} is not valid JSON: {exc}") from None
    return References.from_dict(data, path=str(path))


def references_name(source: str, scale: str | None = None) -> str | None:
    """Name of the shipped references file for a dataset source, or None when there is none."""
    if source == "lfm":
        return "lfm"
    if source == "synthetic" and scale:
        return f"synthetic-{scale}"
    return None


#: HIT_RATE gate of a computed references file, as a share of the baseline's hit rate
#: (the 2022 gate, 0.015, is 0.8 times the CBOW baseline's 0.018763).
THRESHOLD_RATIO = 0.8


def build_references(
    means: Mapping[str, Mapping[str, float]],
    baseline: str = "CBOWModel",
    *,
    threshold_ratio: float = THRESHOLD_RATIO,
    name: str = "",
    dataset: Mapping | None = None,
) -> References:
    """References from the fold-mean test results of reference models run on the same folds.

    ``means``: model name -> ``{test: mean over folds}``. The baseline is ``means[baseline]``;
    the best value of a test is the best (highest; every test is "higher is better") over all
    reference models. Where no model beats the baseline on a test, the best is mirrored:
    ``baseline + (baseline - worst)``, so that a model as much better than the baseline as the
    worst reference model is worse normalises to 1. The HIT_RATE gate is
    ``threshold_ratio * baseline HIT_RATE``.
    """
    if baseline not in means:
        raise ConfigError(f"build_references: the baseline {baseline!r} is not among the "
                          f"reference models {sorted(means)}.")
    base = {t: float(means[baseline][t]) for t in LEADERBOARD_TESTS}
    best, best_from = {}, {}
    for t in LEADERBOARD_TESTS:
        values = {m: float(v[t]) for m, v in means.items()}
        top_model = max(values, key=lambda m: (values[m], m == baseline))
        if values[top_model] > base[t]:
            best[t], best_from[t] = values[top_model], top_model
            continue
        spread = base[t] - min(values.values())
        if spread <= 0:
            raise DataError(f"build_references: every reference model has {t} = {base[t]}; "
                            f"the normalisation needs models that differ on every test.")
        best[t], best_from[t] = base[t] + spread, f"mirror of {min(values, key=values.get)}"
    return References(
        baseline=base,
        best=best,
        hit_rate_threshold=threshold_ratio * base[HIT_RATE],
        name=name,
        description=(f"Computed by `python -m evaluation references`: baseline = {baseline}; "
                     f"best = the best reference model per test (see best_from); HIT_RATE gate "
                     f"= {threshold_ratio} x the baseline's hit rate."),
        dataset={**(dict(dataset) if dataset else {}), "best_from": best_from,
                 "models": {m: {t: float(v[t]) for t in LEADERBOARD_TESTS}
                            for m, v in means.items()}},
    )


# --------------------------------------------------------------------------- scores


def phase1_score(tests: Mapping[str, float], names: Sequence[str] = LEADERBOARD_TESTS) -> float:
    """Mean of the leaderboard tests (design §4)."""
    _require(tests, names)
    return float(np.mean([tests[t] for t in names]))


def normalise(tests: Mapping[str, float], references: References) -> dict[str, float]:
    """``(x - baseline) / (best - baseline)`` for every test of the references."""
    _require(tests, references.tests)
    return {
        t: (tests[t] - references.baseline[t]) / (references.best[t] - references.baseline[t])
        for t in references.tests
    }


def phase2_score(tests: Mapping[str, float], references: References) -> float:
    """The leaderboard score: the hit-rate gate, then the weighted mean of normalised groups."""
    _require(tests, [HIT_RATE])
    if tests[HIT_RATE] < references.hit_rate_threshold:
        return GATED_SCORE
    norm = normalise(tests, references)
    total = sum(references.weights.values())
    return float(
        sum(
            references.weights[g] * np.mean([norm[t] for t in members])
            for g, members in references.groups.items()
        )
        / total
    )


def _require(tests: Mapping[str, float], names: Sequence[str]) -> None:
    missing = [t for t in names if t not in tests]
    if missing:
        raise ConfigError(
            f"test results lack {missing}; the leaderboard needs every one of "
            f"{list(names)}. A custom RecList must keep the EvalRSRecList tests."
        )


def aggregate(
    fold_tests: Sequence[Mapping[str, float]], references: References | None = None
) -> dict:
    """Mean and standard deviation over folds of every scalar test, and the scores.

    ``fold_tests`` holds one ``{test name: value}`` mapping per fold. The standard deviation
    is the sample one (``ddof=1``; 0 for a single fold). Non-scalar values are skipped.
    """
    if not fold_tests:
        raise ConfigError("aggregate needs the results of at least one fold, got none.")
    names = [n for n, v in fold_tests[0].items()
             if v is None or _is_finite_number(v) or _is_nan(v)]
    mean, std = {}, {}
    for name in names:
        # a test undefined in some fold (None/NaN) is undefined on average too
        values = np.array([np.nan if f.get(name) is None else float(f[name])
                           for f in fold_tests], dtype=np.float64)
        mean[name] = float(values.mean())
        std[name] = float(values.std(ddof=1)) if len(values) > 1 else 0.0
    out: dict = {"mean": mean, "std": std, "num_folds": len(fold_tests)}
    out["phase1_score"] = phase1_score(mean)
    if references is not None:
        out["phase2_score"] = phase2_score(mean, references)
        out["gated"] = mean[HIT_RATE] < references.hit_rate_threshold
        out["normalised"] = normalise(mean, references)
    else:
        out["phase2_score"] = None
        out["gated"] = None
        out["normalised"] = None
    return out


def _is_nan(v) -> bool:
    return isinstance(v, float) and math.isnan(v)


# --------------------------------------------------------------------------- bootstrap


@dataclass(frozen=True)
class UserScores:
    """Per-test-user contributions of one fold; every leaderboard test is a function of them.

    - ``hit``: the target is in the top-k; ``rr``: 1 / rank of the target, 0 when missed.
    - ``slices``: for each MRED test, an int code per user: the user's group (>= 0),
      ``IN_MR_ONLY`` (-1: in the overall miss rate, in no group) or ``LEFT_OUT`` (-2).
    - ``blw``: cosine similarity counted by BEING_LESS_WRONG, NaN where the user is left out.
    - ``ld``: the user's LATENT_DIVERSITY score, NaN where the user is left out.
    """

    hit: np.ndarray
    rr: np.ndarray
    slices: dict[str, np.ndarray]
    blw: np.ndarray
    ld: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.hit)
        arrays = {"rr": self.rr, "blw": self.blw, "ld": self.ld, **self.slices}
        bad = {k: len(v) for k, v in arrays.items() if len(v) != n}
        if bad:
            raise ConfigError(
                f"UserScores: every array needs one value per test user ({n}); got lengths "
                f"{bad}."
            )

    def __len__(self) -> int:
        return len(self.hit)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Flat name -> array mapping (for ``np.savez``)."""
        out = {"hit": np.asarray(self.hit, dtype=bool), "rr": np.asarray(self.rr, np.float64),
               "blw": np.asarray(self.blw, np.float64), "ld": np.asarray(self.ld, np.float64)}
        for name, codes in self.slices.items():
            out[f"slice:{name}"] = np.asarray(codes, dtype=np.int32)
        return out

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> UserScores:
        slices = {k.split(":", 1)[1]: np.asarray(v) for k, v in arrays.items()
                  if k.startswith("slice:")}
        return cls(hit=np.asarray(arrays["hit"]), rr=np.asarray(arrays["rr"]),
                   slices=slices, blw=np.asarray(arrays["blw"]), ld=np.asarray(arrays["ld"]))

    @classmethod
    def from_challenge_fold(cls, fold) -> UserScores:
        """Per-user contributions of a scored fold (``evaluation.metrics`` ``ChallengeFold``).

        Same semantics as the fold's tests: slice codes with ``considered`` False become
        ``LEFT_OUT``; BEING_LESS_WRONG counts missed users whose target has a vector (a first
        prediction that is -1 or has no vector: similarity 0); LATENT_DIVERSITY is the
        per-user score (NaN where the target has no vector).
        """
        from evaluation.challenge._fold import MRED_SLICES, latent_diversity_scores

        ranks = np.asarray(fold.ranks)
        hit = ranks > 0
        rr = np.zeros(len(ranks))
        rr[hit] = 1.0 / ranks[hit]
        slices = {}
        for test, slice_name in MRED_SLICES.items():
            s = fold.slices[slice_name]
            codes = np.asarray(s.codes, dtype=np.int32).copy()
            codes[codes < 0] = IN_MR_ONLY
            if s.considered is not None:
                codes[~np.asarray(s.considered, dtype=bool)] = LEFT_OUT
            slices[test] = codes
        vectors = fold.vectors
        # the fold keeps either a TrackVectors or a cached id -> row lookup wrapping one
        if hasattr(vectors, "rows"):
            rows_of, table = vectors.rows, vectors.vectors
        else:
            rows_of, table = vectors, vectors.vectors.vectors
        preds = np.asarray(fold.predictions)
        blw = np.full(len(ranks), np.nan)
        t_rows = rows_of(np.asarray(fold.targets))
        sel = np.flatnonzero(~hit & (t_rows >= 0))
        if len(sel):
            first = preds[sel, 0] if preds.shape[1] else np.full(len(sel), -1)
            f_rows = rows_of(first)
            a = table[t_rows[sel]].astype(np.float64)
            b = table[np.maximum(f_rows, 0)].astype(np.float64)
            dot = np.einsum("ij,ij->i", a, b)
            norms = np.sqrt(np.einsum("ij,ij->i", a, a) * np.einsum("ij,ij->i", b, b))
            sims = np.zeros(len(sel))
            np.divide(dot, norms, out=sims, where=(norms > 0) & (f_rows >= 0))
            blw[sel] = sims
        if hasattr(fold, "latent_diversity_scores"):  # cached by the fold's own LD test
            ld = np.asarray(fold.latent_diversity_scores(), dtype=np.float64)
        else:
            ld = latent_diversity_scores(preds, fold.targets, vectors)
        return cls(hit=hit, rr=rr, slices=slices, blw=blw, ld=ld)

    def tests(self, weights: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """The nine tests, each an array over the rows of ``weights`` (B x users counts).

        Without weights: one row of ones, i.e. the plain point estimates. Every test is a
        ratio of weighted sums, so all of them come from one product ``weights @ X`` with a
        per-user design matrix ``X`` (one pass over the weights).
        """
        x, layout = self._design()
        if weights is None:
            sums = x.sum(axis=0)[None, :]
        else:
            w = np.asarray(weights).astype(np.float64, copy=False)
            # Integer counts times 0/1 columns: every partial sum is an exact integer, so the
            # BLAS product gives the same bits whatever its kernel, threads or order.
            sums = w @ x
            # The real-valued columns (rr, BLW, LD) are summed by NumPy's fixed pairwise
            # order instead, so that the intervals repeat to the last bit on any machine.
            for col in layout["real_columns"]:
                sums[:, col] = (w * x[:, col]).sum(axis=1)
        return _tests_from_sums(sums, layout)

    def _design(self):
        cached = self.__dict__.get("_design_cache")
        if cached is not None:
            return cached
        hit = np.asarray(self.hit, dtype=np.float64)
        miss = 1.0 - hit
        cols = [np.ones(len(hit)), hit, np.asarray(self.rr, dtype=np.float64)]
        layout: dict = {"slices": {}}
        for name, codes in self.slices.items():
            codes = np.asarray(codes)
            in_mr = (codes >= IN_MR_ONLY).astype(np.float64)
            first = len(cols)
            cols += [in_mr, miss * in_mr]
            groups = np.unique(codes[codes >= 0])
            for g in groups:
                member = (codes == g).astype(np.float64)
                cols += [member, miss * member]
            layout["slices"][name] = (first, len(groups))
        for key, values in ((BEING_LESS_WRONG, self.blw), (LATENT_DIVERSITY, self.ld)):
            v = np.asarray(values, dtype=np.float64)
            ok = ~np.isnan(v)
            layout[key] = len(cols)
            cols += [np.where(ok, v, 0.0), ok.astype(np.float64)]
        layout["real_columns"] = [2, layout[BEING_LESS_WRONG], layout[LATENT_DIVERSITY]]
        design = (np.column_stack(cols), layout)
        object.__setattr__(self, "_design_cache", design)  # frozen dataclass: cache by hand
        return design


def _tests_from_sums(sums: np.ndarray, layout: dict) -> dict[str, np.ndarray]:
    """Tests from the weighted column sums of a ``UserScores`` design matrix."""
    with np.errstate(invalid="ignore", divide="ignore"):
        total = sums[:, 0]
        out = {HIT_RATE: sums[:, 1] / total, MRR: sums[:, 2] / total}
        for name, (first, n_groups) in layout["slices"].items():
            if n_groups == 0:
                out[name] = np.full(len(sums), np.nan)
                continue
            mr = sums[:, first + 1] / sums[:, first]
            size = sums[:, first + 2:first + 2 + 2 * n_groups:2]
            misses = sums[:, first + 3:first + 3 + 2 * n_groups:2]
            present = size > 0
            mr_g = misses / np.where(present, size, 1.0)
            dev = np.where(present, np.abs(mr_g - mr[:, None]), 0.0)
            count = present.sum(axis=1)
            out[name] = np.where(count > 0, -dev.sum(axis=1) / np.maximum(count, 1), np.nan)
        for key in (BEING_LESS_WRONG, LATENT_DIVERSITY):
            j = layout[key]
            out[key] = sums[:, j] / sums[:, j + 1]
    return out


def bootstrap(
    folds: Sequence[UserScores],
    references: References | None = None,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    chunk: int = 50,
) -> dict:
    """Percentile confidence intervals of each test (fold mean) and of both scores.

    Each replicate resamples every fold's users with replacement (a seeded
    ``numpy.random.Generator``; the same ``seed`` gives the same intervals), recomputes each
    test per fold, averages over folds and computes the scores from those averages.
    """
    if not folds:
        raise ConfigError("bootstrap needs the per-user scores of at least one fold, got none.")
    if not isinstance(n_boot, int) or n_boot < 2:
        raise ConfigError(f"n_boot must be an int >= 2, got {n_boot!r}.")
    if not 0 < level < 1:
        raise ConfigError(f"level must be in (0, 1), e.g. 0.95; got {level!r}.")
    available = {HIT_RATE, MRR, BEING_LESS_WRONG, LATENT_DIVERSITY}
    available |= set.intersection(*(set(f.slices) for f in folds))
    names = [t for t in LEADERBOARD_TESTS if t in available]
    # one independent stream per fold, so that folds can be resampled in parallel threads
    # (NumPy releases the GIL in the heavy parts) with results independent of scheduling
    streams = np.random.SeedSequence(seed).spawn(len(folds))

    def resample(i: int) -> dict[str, np.ndarray]:
        return _fold_replicates(folds[i], np.random.default_rng(streams[i]), n_boot, chunk,
                                names)

    workers = min(len(folds), os.cpu_count() or 1)
    # The folds already run in parallel: a multi-threaded BLAS inside each thread would only
    # oversubscribe the cores (seconds lost on a busy 2-core machine).
    with threadpool_limits(limits=1, user_api="blas"):
        if workers > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=workers) as pool:
                per_fold = list(pool.map(resample, range(len(folds))))
        else:
            per_fold = [resample(i) for i in range(len(folds))]
    reps = {t: np.mean([r[t] for r in per_fold], axis=0) for t in names}
    point = _fold_mean([f.tests() for f in folds], names)
    alpha = (1 - level) / 2
    out: dict = {"level": level, "n_boot": n_boot, "seed": seed, "method": "bias-corrected "
                 "percentile bootstrap over test users within folds", "tests": {}}
    flagged: list[str] = []
    for t in names:
        out["tests"][t] = _interval(reps[t], point[t], alpha, flagged, t)
    if set(LEADERBOARD_TESTS) <= set(names):
        matrix = np.column_stack([reps[t] for t in LEADERBOARD_TESTS])
        out["phase1_score"] = _interval(
            np.nanmean(matrix, axis=1), phase1_score(point), alpha, flagged, "phase1_score")
        if references is not None:
            p2 = np.array([
                phase2_score(dict(zip(LEADERBOARD_TESTS, row)), references) for row in matrix
            ])
            out["phase2_score"] = _interval(p2, phase2_score(point, references), alpha,
                                            flagged, "phase2_score")
    out["bias_dominated"] = flagged
    return out


def _fold_replicates(scores: UserScores, rng: np.random.Generator, n_boot: int, chunk: int,
                     names: Sequence[str]) -> dict[str, np.ndarray]:
    """Each test on ``n_boot`` resamples (with replacement) of one fold's users."""
    n = len(scores)
    out = {t: np.empty(n_boot) for t in names}
    for start in range(0, n_boot, chunk):
        b = min(chunk, n_boot - start)
        # b resamples of n users: how often each user is drawn, as one bincount over
        # "replicate * n + user" codes
        flat = rng.integers(0, n, size=(b, n), dtype=np.int64)
        flat += (np.arange(b, dtype=np.int64) * n)[:, None]
        counts = np.bincount(flat.ravel(), minlength=b * n).reshape(b, n)
        tests = scores.tests(counts)
        for t in names:
            out[t][start:start + b] = tests[t]
    return out


def _fold_mean(per_fold: Sequence[Mapping[str, np.ndarray]], names) -> dict[str, float]:
    return {t: float(np.mean([f[t][0] for f in per_fold])) for t in names}


def _interval(values: np.ndarray, point: float, alpha: float,
              flagged: list | None = None, name: str = "") -> list[float] | None:
    """Bias-corrected percentile interval (Efron 1981).

    Plain percentiles are off for the MRED tests: a resampled ``|MR_g - MR|`` is biased
    upwards, so the replicates sit below the point estimate. The correction shifts the
    quantiles by ``z0 = Phi^-1(share of replicates below the point estimate)``. ``|z0|`` is
    capped at ``Phi^-1(1 - alpha)``, the largest shift that keeps the point estimate inside
    the interval when the replicates straddle it; a capped test is named in ``flagged``: its
    sampling bias exceeds its spread (typically an MRED over tiny groups), its interval is
    widened to reach the point estimate (which may lie beyond every replicate), and it should
    not be trusted.
    """
    values = values[~np.isnan(values)]
    if len(values) == 0 or not np.isfinite(point):
        return None
    b = len(values)
    below = (np.count_nonzero(values < point) + 0.5 * np.count_nonzero(values == point)) / b
    z0 = _NORMAL.inv_cdf(float(np.clip(below, 1 / (b + 1), b / (b + 1))))
    cap = _NORMAL.inv_cdf(1 - alpha)
    if abs(z0) > cap:
        z0 = float(np.sign(z0)) * cap
        if flagged is not None:
            flagged.append(name)
    q = [_NORMAL.cdf(2 * z0 + _NORMAL.inv_cdf(p)) for p in (alpha, 1 - alpha)]
    lo, hi = np.quantile(values, q)
    if abs(z0) == cap:
        lo, hi = min(lo, point), max(hi, point)
    return [float(lo), float(hi)]
