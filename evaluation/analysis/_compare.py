"""``compare``: which model is better than a baseline, on which test, with corrected p-values."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from rich import box
from rich.console import JustifyMethod
from rich.table import Table

from evaluation._util.jsonable import to_jsonable
from evaluation._util.validation import check_int, check_number, check_seed
from evaluation.analysis._multiple import benjamini_hochberg, holm
from evaluation.analysis._paired import (
    ADDITIVE_TESTS,
    bc_interval,
    paired_bootstrap,
    swap_test,
)
from evaluation.analysis._results import SCORES, LoadedRun, load_results
from evaluation.analysis._tiers import (
    run_standings,
    standings_heading,
    standings_table,
    told_apart,
)
from evaluation.challenge import LEADERBOARD_TESTS, TESTS
from evaluation.contract import params_text
from evaluation.errors import ConfigError

#: The columns of ``Comparison.to_frame()``, in order.
COLUMNS: tuple[str, ...] = (
    "model", "test", "estimate", "baseline_estimate", "difference", "ci_low", "ci_high",
    "p_bootstrap", "p_permutation", "p", "p_holm", "p_bh", "significant", "run_id",
    "higher_is_better", "bias_dominated", "name", "params",
)

#: The replicates (bootstrap) and random swaps (swap test) of a comparison at least; more
#: where its family needs more (:func:`default_replicates`).
MIN_DEFAULT_REPLICATES = 1000

#: Every test and score of the harness is "higher is better": HIT_RATE, MRR, BLW and LD grow
#: with quality, and an MRED test is ``-mean_g |MR_g - MR|`` (at most 0), so a model closer
#: to equal miss rates has the higher (less negative) value.
HIGHER_IS_BETTER = True


@dataclass(frozen=True)
class Comparison:
    """Paired comparisons of models with a baseline on the same folds and test users.

    Attributes
    ----------
    baseline : LoadedRun
        The run every other run is compared with.
    runs : list of LoadedRun
        The other runs, in the order given.
    rows : list of dict
        One per (model, test): the columns of :meth:`to_frame`.
    family : str
        The family of the multiple-testing correction, in words.
    family_size : int
        Its number of tests (rows with a p-value).
    alpha, level : float
        The significance level (after Holm's correction) and the intervals' coverage.
    n_boot, seed, permutations : int
    methods : dict
        Name -> a sentence on each method used.
    left_out : dict of str to list of str
        The tests of some runs that are not compared, each with the run ids that have it: a
        custom test (a RecList subclass's) has no per-user values to resample, and a test
        that not every run has cannot be paired. The leaderboard tests are always compared.
    standings : dict or None
        The runs (the baseline included) as a board reads them: tiers and rank intervals by
        the leaderboard score (the phase-1 score without references), from the same paired
        replicates (see ``run_standings``); None where a run's score is not finite. Where it
        is given, the rows of that score are significant exactly when it tells the run and
        the baseline apart: the mark and the tiers never contradict each other.
    p_floor : str
        The smallest p-values the replicates resolve, and what they become after Holm's
        correction over the family (a sentence).
    """

    baseline: LoadedRun
    runs: list[LoadedRun]
    rows: list[dict] = field(repr=False)
    family: str
    family_size: int
    alpha: float
    level: float
    n_boot: int
    seed: int
    permutations: int
    methods: dict = field(repr=False)
    left_out: dict = field(default_factory=dict)
    standings: dict | None = field(default=None, repr=False)
    p_floor: str = ""

    def to_frame(self) -> pd.DataFrame:
        """One row per (model, test), the two scores included.

        Returns
        -------
        pandas.DataFrame
            Columns: ``model``; ``test``; ``estimate`` and ``baseline_estimate`` (fold means);
            ``difference`` (model - baseline); ``ci_low``, ``ci_high`` (its bias-corrected
            percentile interval from the paired bootstrap); ``p_bootstrap`` (two-sided, from
            the same bootstrap); ``p_permutation`` (the paired swap test; NaN for a test that
            is not a mean over users); ``p`` (the one corrected: the permutation p-value of
            an additive test, else the bootstrap one); ``p_holm``, ``p_bh`` (adjusted over
            the whole family); ``significant`` (``p_holm <= alpha``; for the score the
            standings rank by, whether they tell the run and the baseline apart);
            ``run_id``;
            ``higher_is_better``; ``bias_dominated`` (the interval is unreliable: resampling
            bias exceeds the spread); ``name`` (the run's name, else its model's) and
            ``params`` (its model's parameters as ``name=value, ...``).
        """
        return pd.DataFrame(self.rows, columns=list(COLUMNS))

    def to_dict(self) -> dict:
        """The comparison as JSON-ready data (NaN as null)."""
        return to_jsonable({
            "baseline": _run_entry(self.baseline),
            "runs": [_run_entry(r) for r in self.runs],
            "run_hash": self.baseline.run_hash, "family": self.family,
            "family_size": self.family_size, "alpha": self.alpha, "level": self.level,
            "n_boot": self.n_boot, "seed": self.seed, "permutations": self.permutations,
            "methods": self.methods, "left_out": self.left_out,
            "standings": self.standings, "p_floor": self.p_floor, "rows": self.rows})

    def table(self) -> Table:
        """A rich table of the comparison: 4 significant digits, significance marked."""
        table = Table(title=f"Compared with {self.baseline.label} "
                            f"({self.baseline.run_id})")
        columns: tuple[tuple[str, JustifyMethod], ...] = (
            ("Run", "left"), ("Test", "left"), ("Estimate", "right"), ("Baseline", "right"),
            ("Difference", "right"), (f"{self.level:.0%} CI", "right"), ("p", "right"),
            ("p Holm", "right"), ("p BH", "right"), ("", "left"))
        for name, justify in columns:
            # the run's label may wrap; the numbers never do
            table.add_column(name, justify=justify, no_wrap=name != "Run")
        for row in self.rows:
            mark = "*" if row["significant"] else ""
            ci = (f"[{_sig(row['ci_low'])}, {_sig(row['ci_high'])}]"
                  + (" †" if row["bias_dominated"] else ""))
            label = row["name"] + (f" ({row['params']})" if row["params"] else "")
            table.add_row(label, row["test"], _sig(row["estimate"]),
                          _sig(row["baseline_estimate"]), _sig(row["difference"]), ci,
                          _sig(row["p"]), _sig(row["p_holm"]), _sig(row["p_bh"]), mark)
        return table

    def _ranking_mark(self) -> str:
        """How the ranking score's rows are marked, where the standings decide them."""
        if self.standings is None:
            return ""
        return (f"; for {self.standings['score']}, * = told apart by the standings below "
                f"(simultaneous over every pair of runs, as the tiers; its p Holm is shown "
                f"for reference)")

    def run_tables(self, width: int) -> list[Table]:
        """One table per compared run, its columns fitted to ``width`` characters.

        The run's name, parameters and id are the table's title, so the rows need no run
        column; where the terminal is narrow the least needed columns go first (the
        uncorrected p, the baseline's estimate, the run's estimate, then p BH): the
        difference, its interval and p Holm always stay.
        """
        wanted = _fitted_columns(self.rows, width)
        tables = []
        for run in self.runs:
            table = Table(title=f"{run.label} ({run.run_id})", title_justify="left",
                          box=box.SIMPLE_HEAD)
            for name, key, justify in _TABLE_COLUMNS:
                if (name, key, justify) in wanted:
                    table.add_column(name, justify=justify, no_wrap=True)
            for row in self.rows:
                if row["run_id"] == run.run_id:
                    table.add_row(*(_cell(row, key) for _, key, _ in wanted))
            tables.append(table)
        return tables

    def __rich_console__(self, console, options):
        """Yield the baseline, a table per run, then the family and what the marks mean."""
        yield (f"Compared with the baseline {self.baseline.label} ({self.baseline.run_id}); "
               f"difference = run - baseline:")
        yield from self.run_tables(options.max_width)
        if self.standings is not None:
            runs = [self.baseline, *self.runs]
            yield standings_heading(self.standings)
            yield standings_table(self.standings, {r.run_id: r.label for r in runs})
        yield (f"Family: {self.family}. * = significant after Holm's correction at alpha = "
               f"{self.alpha:g}{self._ranking_mark()}. Every test and score is "
               f"higher-is-better; a positive difference favours the model.")
        yield self.p_floor
        if self.left_out:
            yield left_out_note(self.left_out)
        if any(row["bias_dominated"] for row in self.rows):
            yield ("† the interval was widened to reach the estimate (bias_dominated: the "
                   "resampling bias exceeds the spread): unreliable, and the row has no "
                   "p-value and is not in the family.")


#: The columns of the printed tables: header, row key, justification; the optional ones are
#: dropped, last first in ``_DROP_ORDER``, where the terminal is narrow.
_TABLE_COLUMNS: tuple[tuple[str, str, JustifyMethod], ...] = (
    ("Test", "test", "left"), ("Estimate", "estimate", "right"),
    ("Baseline", "baseline_estimate", "right"), ("Difference", "difference", "right"),
    ("CI", "ci", "right"), ("p", "p", "right"), ("p Holm", "p_holm", "right"),
    ("p BH", "p_bh", "right"), ("", "mark", "left"))
_DROP_ORDER = ("p", "baseline_estimate", "estimate", "p_bh")


def _cell(row: dict, key: str) -> str:
    """The text of one cell of the printed table."""
    if key == "test":
        return str(row["test"])
    if key == "mark":
        return "*" if row["significant"] else ""
    if key == "ci":
        return (f"[{_sig(row['ci_low'])}, {_sig(row['ci_high'])}]"
                + (" †" if row["bias_dominated"] else ""))
    return _sig(row[key])


def _fitted_columns(rows: list[dict], width: int) -> list[tuple[str, str, JustifyMethod]]:
    """The columns of the printed table that fit ``width`` characters: all of them, else
    fewer, dropping in ``_DROP_ORDER`` (the essential ones stay, whatever the width)."""
    for n_dropped in range(len(_DROP_ORDER) + 1):
        dropped = set(_DROP_ORDER[:n_dropped])
        kept = [c for c in _TABLE_COLUMNS if c[1] not in dropped]
        widths = [max([len(c[0]), *(len(_cell(r, c[1])) for r in rows)]) for c in kept]
        # one space of padding either side of every column, and the box's two edges
        if sum(widths) + 3 * len(kept) + 2 <= width:
            return kept
    return kept


def compare(runs: Sequence, baseline=0, *, n_boot: int | None = None, seed: int = 0,
            level: float = 0.95, permutations: int | None = None,
            alpha: float | None = None, min_difference: float = 0.0) -> Comparison:
    """Compare runs with a baseline run on the same folds and test users.

    For each other run and each test and score: the difference to the baseline with a
    bias-corrected percentile interval from a paired bootstrap over test users within folds
    (the same resampled users for every run, each test recomputed from the per-user
    contributions and averaged over folds, as the run's own intervals are), its two-sided
    bootstrap p-value, and for the additive tests (HIT_RATE, MRR, BEING_LESS_WRONG,
    LATENT_DIVERSITY) a paired swap (permutation) test. The p-values of all (model, test)
    rows form one family, adjusted by Holm-Bonferroni and by Benjamini-Hochberg; a row is
    significant where its Holm-adjusted p-value is at most ``alpha``, except the rows of the
    score the standings rank by (the leaderboard score): those are significant exactly where
    the standings tell the run and the baseline apart (:func:`evaluation.standings.read_board`,
    simultaneous over every pair of runs), so that the mark never contradicts the tiers.

    Parameters
    ----------
    runs : sequence of LoadedRun or paths
        The runs (run directories or their results.json are loaded with
        :func:`load_results`).
    baseline : int, LoadedRun or path
        The baseline: an index into ``runs``, or a run (added when not among ``runs``).
    n_boot : int, optional
        Bootstrap replicates (at least 100). Default: :func:`default_replicates` (1,000, or
        more where the family is large enough for 1,000 to keep Holm from reaching
        ``alpha``).
    seed : int
        Seed of the bootstrap and of the swap test (same seed, same bits).
    level : float
        Coverage of the intervals, in (0, 1).
    permutations : int, optional
        Random swaps per test when the swap test is not exact. Default:
        :func:`default_replicates`.
    alpha : float, optional
        Significance level after correction; default ``1 - level``.
    min_difference : float
        The minimum practical difference of the standings' tiers (>= 0): score differences
        smaller than it are ties however significant.

    Returns
    -------
    Comparison

    Raises
    ------
    ConfigError
        When a run cannot be loaded, the runs are not comparable (another dataset, other
        folds or test users, tests, harness version, list length or limit), there is no run
        besides the baseline, or a parameter is out of range.
    """
    if n_boot is not None:
        check_int("n_boot", n_boot, minimum=100, owner="compare")
    check_seed("seed", seed, owner="compare")
    check_number("level", level, low=0.0, high=1.0, low_open=True, high_open=True,
                 owner="compare")
    if permutations is not None:
        check_int("permutations", permutations, minimum=100, owner="compare")
    min_difference = check_number("min_difference", min_difference, low=0.0, owner="compare")
    alpha = 1 - level if alpha is None else check_number(
        "alpha", alpha, low=0.0, high=1.0, low_open=True, high_open=True, owner="compare")
    base, others = _baseline_and_others(runs, baseline)
    check_comparable([base, *others])
    # the largest family the runs can make: every leaderboard test and both scores per run
    largest = len(others) * (len(LEADERBOARD_TESTS) + 2)
    n_boot = default_replicates(largest, alpha, 2) if n_boot is None else n_boot
    permutations = (default_replicates(largest, alpha, 1) if permutations is None
                    else permutations)
    folds = [[run.user_scores(f) for f in range(base.num_folds)] for run in (base, *others)]
    reps, point = paired_bootstrap(folds, base.references, n_boot=n_boot, seed=seed,
                                   not_applicable=base.not_applicable)
    rows = []
    for i, run in enumerate(others, start=1):
        swaps = swap_test(folds[0], folds[i], permutations=permutations, seed=seed)
        for name in reps:
            rows.append(_row(run, name, reps[name][i] - reps[name][0], point[name][i],
                             point[name][0], swaps.get(name), level))
    family_size = _correct(rows, alpha)
    standings = run_standings([base, *others], reps, point, level=level,
                              min_difference=min_difference)
    mark_by_standings(rows, standings, base.run_id)
    names = list(reps)
    family = (f"{family_size} tests = {len(others)} model{'s' * (len(others) != 1)} x "
              f"{len(names)} tests ({', '.join(names)})")
    if family_size < len(rows):  # bias-dominated rows have no p-value to correct
        family = (f"{family_size} of the {len(others)} x {len(names)} tests "
                  f"({', '.join(names)}); {len(rows) - family_size} without a p-value "
                  f"(bias-dominated) left out")
    return Comparison(baseline=base, runs=others, rows=rows, family=family,
                      family_size=family_size, alpha=float(alpha), level=float(level),
                      n_boot=n_boot, seed=seed, permutations=permutations,
                      methods=_methods(n_boot, permutations),
                      left_out=_left_out([base, *others], names), standings=standings,
                      p_floor=p_floor_note(n_boot, permutations, family_size, alpha))


def mark_by_standings(rows: list[dict], standings: dict | None, baseline_id: str) -> None:
    """Set ``significant`` of the rows of the score the standings rank by: whether the
    standings tell the row's run and the baseline apart (the relation the tiers are drawn
    from, so that the two never contradict each other). Nothing without standings."""
    if standings is None:
        return
    for row in rows:
        if row["test"] == standings["score"]:
            row["significant"] = told_apart(standings, row["run_id"], baseline_id)


def default_replicates(family_size: int, alpha: float, floor_numerator: int) -> int:
    """The replicates (or random swaps) that let Holm's correction reach ``alpha``.

    ``B`` replicates resolve p-values down to ``floor_numerator / (B + 1)`` (2 for the
    two-sided bootstrap p-value, 1 for the swap test's), and Holm multiplies the smallest
    p-value by the family's size ``m``: the rule is the least ``B`` with
    ``m * floor_numerator / (B + 1) <= alpha``, and never fewer than
    ``MIN_DEFAULT_REPLICATES``.
    """
    needed = math.ceil(family_size * floor_numerator / alpha - 1e-9) - 1
    return max(MIN_DEFAULT_REPLICATES, needed)


def p_floor_note(n_boot: int, permutations: int, family_size: int, alpha: float) -> str:
    """The sentence on the smallest p-values a comparison can give, before and after Holm."""
    boot, swap = 2 / (n_boot + 1), 1 / (permutations + 1)
    text = (f"p-values have a floor: at least 2/(n_boot+1) = {boot:.3g} from the bootstrap "
            f"({n_boot} replicates) and 1/(permutations+1) = {swap:.3g} from the swap test "
            f"(when not exact); Holm multiplies the smallest p-value by the family's "
            f"{family_size} tests, so no adjusted p-value lies below {family_size * swap:.3g}")
    if family_size * swap > alpha:
        return (text + f", above alpha = {alpha:g}: no row can be significant by Holm. Raise "
                f"permutations to at least {default_replicates(family_size, alpha, 1)} and "
                f"n_boot to at least {default_replicates(family_size, alpha, 2)}.")
    if family_size * boot > alpha:
        return (text + f"; the bootstrap's floor times the family is {family_size * boot:.3g}"
                f" > alpha = {alpha:g}: a row tested by the bootstrap (the MRED tests, the "
                f"scores) is significant by Holm only behind enough smaller p-values. Raise "
                f"n_boot to at least {default_replicates(family_size, alpha, 2)}.")
    return text + "."


def _left_out(runs: Sequence[LoadedRun], compared: Sequence[str]) -> dict[str, list[str]]:
    """Each custom test of some run (one the harness's RecList lacks), with the run ids that
    have it: no custom test is compared."""
    own = set(TESTS) | set(compared)
    found: dict[str, list[str]] = {}
    for run in runs:
        for test in run.tests:
            if test not in own:
                found.setdefault(test, []).append(run.run_id)
    return dict(sorted(found.items()))


def left_out_note(left_out: dict[str, list[str]]) -> str:
    """The sentence that names the tests a comparison left out, and why."""
    parts = [f"{test} (in {', '.join(ids)})" for test, ids in left_out.items()]
    return (f"Left out: {'; '.join(parts)}. Only the leaderboard tests and the scores are "
            f"compared: a custom test has no per-user values to resample, and a test that "
            f"not every run has cannot be paired.")


def check_comparable(runs: Sequence[LoadedRun]) -> None:
    """Nothing; a ``ConfigError`` saying which runs differ in what, when they are not comparable.

    Comparable runs have the same dataset, fold parameters, harness version, list length
    and limit and the same test users in every fold. Their tests may differ (a custom
    RecList adds tests, and with them changes the run hash): the leaderboard tests, which
    every run has, are compared, and the others are named as left out.
    """
    first = runs[0]
    for run in runs[1:]:
        for what, get in _IDENTITY:
            a, b = get(first), get(run)
            if a != b:
                raise ConfigError(
                    f"runs {first.run_id} and {run.run_id} are not comparable: {what} "
                    f"{'differ' if what in _PLURAL else 'differs'} ({_difference(a, b)}). "
                    f"Compare runs of the same dataset and folds, made with the same harness "
                    f"and k.")
        for f in range(first.num_folds):
            if first.users_signature(f) != run.users_signature(f):
                raise ConfigError(
                    f"runs {first.run_id} and {run.run_id} are not comparable: the test users "
                    f"of fold {f} differ (their groups do not match user by user). Compare "
                    f"runs of the same folds and test users.")


_IDENTITY = [
    ("the dataset fingerprint", lambda r: r.dataset_fingerprint),
    ("the fold parameters", lambda r: r.fold_params),
    ("the number of folds", lambda r: r.num_folds),
    ("the harness version", lambda r: r.results.get("harness_version")),
    ("the list length k", lambda r: r.k),
    ("the limit (test users scored per fold)", lambda r: r.limit),
    ("the number of test users per fold", lambda r: r.n_users),
    ("the tests that are not applicable", lambda r: sorted(r.not_applicable)),
    ("the phase-2 references", lambda r: (r.results.get("references") or {}).get("values")),
]

#: The identities above that take a plural verb.
_PLURAL = {"the fold parameters", "the tests that are not applicable", "the phase-2 references"}


def _baseline_and_others(runs, baseline) -> tuple[LoadedRun, list[LoadedRun]]:
    """The baseline run and the others, loaded and checked for duplicates."""
    if isinstance(runs, (str, os.PathLike, LoadedRun)) or not isinstance(runs, Sequence):
        raise ConfigError(f"compare: runs must be a list of runs (LoadedRun or run "
                          f"directories); got {type(runs).__name__}.")
    loaded = [_load(r) for r in runs]
    if isinstance(baseline, (int, np.integer)) and not isinstance(baseline, bool):
        if not -len(loaded) <= baseline < len(loaded):
            raise ConfigError(f"compare: baseline index {baseline} is out of range for "
                              f"{len(loaded)} runs. Pass an index, a run or its directory.")
        base = loaded[baseline]
    else:
        base = _load(baseline)
        same = [r for r in loaded if _same_dir(r, base)]
        if not same:
            loaded.insert(0, base)
        base = same[0] if same else base
    seen = set()
    for run in loaded:
        where = run.run_dir.resolve()
        if where in seen:
            raise ConfigError(f"compare: run {run.run_id} is given twice. Pass each run once.")
        seen.add(where)
    others = [r for r in loaded if r is not base]
    if not others:
        raise ConfigError("compare: give at least one run besides the baseline.")
    return base, others


def _load(run) -> LoadedRun:
    """``run`` if it is a ``LoadedRun``, else the run loaded from its path."""
    if isinstance(run, LoadedRun):
        return run
    if isinstance(run, (str, os.PathLike)):
        return load_results(run)
    raise ConfigError(f"compare: a run must be a LoadedRun or a run directory; got "
                      f"{type(run).__name__}.")


def _same_dir(a: LoadedRun, b: LoadedRun) -> bool:
    """Whether two loaded runs come from the same directory."""
    return Path(a.run_dir).resolve() == Path(b.run_dir).resolve()


def _row(run: LoadedRun, name: str, diff_reps: np.ndarray, estimate: float,
         baseline_estimate: float, swap: dict | None, level: float) -> dict:
    """One (model, test) row before the correction."""
    difference = float(estimate - baseline_estimate)
    ci = bc_interval(diff_reps, difference, level)
    p_perm = swap["p"] if swap is not None else math.nan
    return {"model": run.model_name, "test": name, "estimate": float(estimate),
            "baseline_estimate": float(baseline_estimate), "difference": difference,
            "ci_low": ci["ci_low"], "ci_high": ci["ci_high"], "p_bootstrap": ci["p"],
            "p_permutation": p_perm, "p": p_perm if name in ADDITIVE_TESTS else ci["p"],
            "run_id": run.run_id, "higher_is_better": HIGHER_IS_BETTER,
            "bias_dominated": ci["bias_dominated"], "name": run.name,
            "params": params_text(run.params)}


def _run_entry(run: LoadedRun) -> dict:
    """A compared run in ``to_dict``: its id, name, model, parameters and directory."""
    return {"run_id": run.run_id, "run_hash": run.run_hash, "name": run.name,
            "model": run.model_name,
            "params": run.params, "run_dir": str(run.run_dir)}


def _correct(rows: list[dict], alpha: float) -> int:
    """Add ``p_holm``, ``p_bh`` and ``significant`` to ``rows``; the family's size."""
    p = np.array([r["p"] for r in rows], dtype=np.float64)
    p_holm, p_bh = holm(p), benjamini_hochberg(p)
    for r, ph, pb in zip(rows, p_holm, p_bh):
        r["p_holm"], r["p_bh"] = float(ph), float(pb)
        r["significant"] = bool(ph <= alpha)
    return int(np.count_nonzero(~np.isnan(p)))


def _methods(n_boot: int, permutations: int) -> dict[str, str]:
    """What each column's method is, in a sentence each."""
    return {
        "interval": f"bias-corrected percentile interval (Efron; no acceleration) of the "
                    f"difference from a paired bootstrap ({n_boot} replicates) over test "
                    f"users within folds",
        "p_bootstrap": "two-sided, inverting the same interval: the smallest 1 - level "
                       "whose interval excludes 0 (none where bias-dominated)",
        "p_permutation": f"paired swap test of the additive tests ({', '.join(ADDITIVE_TESTS)}):"
                         f" exact over every swap for up to 16 users, else {permutations} "
                         f"random swaps, p = (1 + hits) / (1 + swaps)",
        "p": "p_permutation for the additive tests, p_bootstrap for the MRED tests and the "
             "scores",
        "correction": "Holm-Bonferroni (family-wise error) and Benjamini-Hochberg (false "
                      "discovery rate) over every (model, test) row; significant = p_holm "
                      "<= alpha, except for the score the standings rank by",
        "significance": "the rows of the score the standings rank by are significant where "
                        "the standings tell the run and the baseline apart (simultaneous "
                        "intervals of every pairwise difference, max-|t| over the paired "
                        "replicates, the relation the tiers come from); the others where "
                        "p_holm <= alpha",
        "scores": f"{', '.join(SCORES)} recomputed on every replicate from the fold means "
                  f"(phase 2 with the baseline run's references)",
    }


def _sig(value) -> str:
    """``value`` to 4 significant digits; "n/a" for NaN or None."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.4g}"


def _difference(a, b) -> str:
    """What differs between two identity values, in full: the differing keys of two dicts,
    the items only in either of two lists, else both values."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted(set(a) | set(b), key=str)
        return ", ".join(f"{k}: {_value(a, k)} vs {_value(b, k)}" for k in keys
                         if a.get(k) != b.get(k) or (k in a) != (k in b))
    if isinstance(a, list) and isinstance(b, list) and all(isinstance(x, str) for x in a + b):
        only_a = [x for x in a if x not in b]
        only_b = [x for x in b if x not in a]
        return f"only in the first: {only_a}; only in the second: {only_b}"
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return ", ".join(f"[{i}]: {x!r} vs {y!r}" for i, (x, y) in enumerate(zip(a, b))
                         if x != y)
    return f"{a!r} vs {b!r}"


def _value(mapping: dict, key) -> str:
    """``mapping[key]`` as its repr, or "none" when the key is missing."""
    return repr(mapping[key]) if key in mapping else "none"
