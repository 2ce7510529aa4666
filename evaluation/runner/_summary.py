"""What a run prints: the line per fold, the summary of a ``RunResult`` and the score line.

Numbers are shown to 4 significant digits (``results.json`` keeps full precision). Text is
wrapped here, at word boundaries, with a hanging indent, so that a console of 80 columns never
breaks a phrase in the middle of a line of its own; tables are sized to fit 80 columns.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Protocol

from rich import box
from rich.table import Table
from rich.text import Text

from evaluation.challenge import GATED_SCORE, HIT_RATE, References, scored_groups
from evaluation.contract import run_label

#: The footnote of a starred interval (``confidence_intervals.bias_dominated``).
STAR_NOTE = ("* the interval was widened to reach the estimate: the resampling bias exceeds "
             "the spread (small groups), so the interval is unreliable; read the value with "
             "care (confidence_intervals.bias_dominated)")
#: What a normalised value is, under the breakdown of the score.
NORMALISED_NOTE = ("Normalised = (mean - baseline) / (best - baseline), with the references' "
                   "baseline and best value of each test: 0 is the baseline model, 1 the best "
                   "reference. Normalised values are not bounded to [0, 1]: below 0 is worse "
                   "than the baseline, above 1 better than the best reference. Contribution = "
                   "weight x the group's mean; the contributions add up to the score.")


class ShownResult(Protocol):
    """What the summary reads of a run's results: the attributes of ``RunResult`` it shows.

    The summary is written against this shape, not against ``RunResult``, which prints
    itself with :func:`summary`.
    """

    @property
    def model(self) -> dict: ...

    @property
    def dataset(self) -> dict: ...

    @property
    def limit(self) -> int: ...

    @property
    def aggregate(self) -> dict: ...

    @property
    def confidence_intervals(self) -> dict | None: ...

    @property
    def not_applicable(self) -> dict: ...

    @property
    def references(self) -> dict: ...

    @property
    def eligible_for_upload(self) -> bool: ...

    @property
    def not_eligible_because(self) -> list[str]: ...

    @property
    def folds(self) -> list[dict]: ...

    @property
    def path(self) -> Path | None: ...

    @property
    def phase1_score(self) -> float | None: ...

    @property
    def leaderboard_score(self) -> float | None: ...


def fmt(value) -> str:
    """``value`` to 4 significant digits; ``"n/a"`` for None."""
    if value is None:
        return "n/a"
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return f"{value:.4g}"


def paragraph(text: str, width: int, indent: str = "", style: str = "") -> Text:
    """``text`` wrapped at word boundaries to ``width`` columns, continuation lines indented
    two more spaces than ``indent`` (a phrase is never cut by the console's own wrapping).
    A word longer than a line (a path) stays whole, on a line of its own, to be copied."""
    lines = textwrap.wrap(text, width=max(width, 40), initial_indent=indent,
                          subsequent_indent=indent + "  ", break_on_hyphens=False,
                          break_long_words=False)
    return Text("\n".join(lines), style=style)


def show(console, part) -> None:
    """Print ``part`` on ``console``: a table as it is, text as wrapped here (``soft_wrap``:
    the console neither re-wraps it nor folds a long path)."""
    if isinstance(part, Text):
        console.print(part, soft_wrap=True)
    else:
        console.print(part)


def fold_line(fold: dict, reused: bool = False) -> str:
    """The line printed for a finished fold: HIT_RATE, MRR and its seconds."""
    tests = fold["tests"]
    parts = ", ".join(f"{t} {fmt(tests[t])}" for t in (HIT_RATE, "MRR")
                      if isinstance(tests.get(t), (int, float)))
    if reused:
        return f"  fold {fold['fold']}: {parts} (finished in an earlier run, reused)"
    seconds = sum(stage["seconds"] for stage in fold["runtime"].values())
    return f"  fold {fold['fold']}: {parts} ({seconds:.1f} s)"


def training_items_note(folds: list[dict]) -> str | None:
    """The one warning of a run whose predictions recommend training items, with the counts
    of each fold (None when no fold did)."""
    counted = [(f["fold"], f.get("seen_in_training") or {}, f["n_users"]) for f in folds]
    counted = [(fold, seen, n) for fold, seen, n in counted if seen.get("items")]
    if not counted:
        return None
    per_fold = "; ".join(f"fold {fold}: {seen['items']:,} items in {seen['lists']:,} of {n:,} "
                         f"lists" for fold, seen, n in counted)
    return (f"the predictions recommend tracks the user already has in the training "
            f"set ({per_fold}). A leave-one-out target is never one of them, so these slots "
            f"cannot hit; models usually exclude training items.")


def repeated_items_note(folds: list[dict]) -> str | None:
    """The one warning of a run whose lists name a track more than once, with how many lists
    each fold had (None when no fold did)."""
    counted = [(f["fold"], f.get("repeated_lists") or 0, f["n_users"]) for f in folds]
    counted = [(fold, lists, n) for fold, lists, n in counted if lists]
    if not counted:
        return None
    total = sum(lists for _, lists, _ in counted)
    per_fold = "; ".join(f"fold {fold}: {lists:,} of {n:,} lists" for fold, lists, n in counted)
    return (f"{total:,} lists recommend the same item more than once ({per_fold}; sampling "
            f"with replacement, as the 2022 template did?). They are scored as the 2022 "
            f"harness scored them: a target counts at its first position and a repeat takes a "
            f"slot that another track could have used. Recommend each track at most once "
            f"(pad with -1) to use every slot; a competition may refuse such runs.")


def score_line(result: ShownResult) -> Text:
    """The leaderboard score line, with its interval (starred when unreliable)."""
    score = result.leaderboard_score
    if score is None:
        return Text("LEADERBOARD SCORE: n/a (no phase-2 references for this dataset)")
    ci = result.confidence_intervals or {}
    line = Text(f"LEADERBOARD SCORE: {fmt(score)}", style="bold")
    if result.aggregate["gated"]:
        line.append(" (HIT_RATE below the threshold)")
    line.append(_interval(ci.get("phase2_score"), "phase2_score" in ci.get("bias_dominated", []),
                          prefix="  95% CI "))
    return line


def summary(result: ShownResult, width: int, verbose: bool = False) -> Iterator[Table | Text]:
    """Yield the summary of ``result`` for a console ``width`` characters wide.

    The tests with their intervals (each fold's value when it fits), the tests that do not
    apply, how the leaderboard score is made, the scores, what limits the run's use and where
    its results are; with ``verbose``, also the seconds per stage of every fold.
    """
    ci = result.confidence_intervals or {}
    flagged = set(ci.get("bias_dominated", []))
    yield tests_table(result, per_fold=width >= 100 + 9 * len(result.folds))
    for test, reason in result.not_applicable.items():
        yield paragraph(f"n/a {test}: not applicable ({reason})", width, "  ")
    if flagged:
        yield paragraph(STAR_NOTE, width)
    if verbose:
        yield timing_table(result.folds)
    yield from score_breakdown(result, width)
    what = (f"the {9 - len(result.not_applicable)} applicable tests" if result.not_applicable
            else "the nine tests")
    yield Text(f"Phase-1 score (mean of {what}): {fmt(result.phase1_score)}"
               + _interval(ci.get("phase1_score"), "phase1_score" in flagged,
                           prefix="  95% CI "))
    yield paragraph(f"References: {result.references['note']}", width)
    if result.limit:
        yield paragraph(
            f"Note: limit={result.limit} scores only the first {result.limit} test users of "
            f"each fold. These scores are not comparable with full runs (small groups bias the "
            f"MRED tests away from 0), only with runs of the same limit.", width, style="yellow")
    if not result.eligible_for_upload:
        yield from local_run_note(result, width)
    yield score_line(result)
    if result.leaderboard_score is not None:
        yield paragraph(good_score_line(result), width, "  ")
    yield paragraph(f"Results: {result.path}", width)


def local_run_note(result: ShownResult, width: int) -> Iterator[Text]:
    """What a run that no leaderboard takes as it is can be used for, why, and what next."""
    yield paragraph("Local run: its scores compare with runs of the same data and folds; it "
                    "is not a leaderboard submission, as", width)
    for reason in result.not_eligible_because:
        yield paragraph(f"- {reason}", width, "  ")
    yield paragraph("Next: python -m evaluation compare RUN... compares runs; python -m "
                    "evaluation submit RUN --competition FILE submits a finished run to a "
                    "board whose data and folds it has, without running it again.", width,
                    "  ")


#: The baselines' leaderboard scores on the data they were measured on (the run's
#: ``dataset.source``), as the Baselines page of the documentation lists them.
BASELINE_SCORES = {
    "synthetic:small:seed42": "the template and PopularityModel score -0.391, the ALS recipe "
                              "10.77",
    "synthetic:full:seed42": "PopularityModel scores -1.232, the ALS recipe 2.988",
}


def good_score_line(result: ShownResult) -> str:
    """One line on what a good leaderboard score is, with the baselines' on this data."""
    dataset = getattr(result, "dataset", None) or {}
    known = BASELINE_SCORES.get(str(dataset.get("source")))
    line = "For scale: 0 is the references' baseline model (CBOWModel), 1 their best"
    return line + (f"; on this data {known}" if known else "") + " (docs: Baselines)."


def _as_results(result: ShownResult) -> dict:
    """What ``run_label`` reads of a result: its name, model and settings."""
    return {"name": getattr(result, "name", None), "model": result.model,
            "settings": getattr(result, "settings", None)}


def tests_table(result: ShownResult, per_fold: bool) -> Table:
    """The table of tests: mean, std, 95% interval and, if ``per_fold``, each fold's value."""
    ci = result.confidence_intervals or {}
    intervals = ci.get("tests", {})
    flagged = set(ci.get("bias_dominated", []))
    table = Table(title=f"EvalRS results: {run_label(_as_results(result))}")
    table.add_column("Test", style="cyan", no_wrap=True)
    table.add_column("Mean", justify="right", style="green", no_wrap=True)
    table.add_column("Std", justify="right", no_wrap=True)
    table.add_column("95% CI", justify="right", no_wrap=True)
    folds = result.folds if per_fold else []
    for f in folds:
        table.add_column(f"Fold {f['fold']}", justify="right", no_wrap=True)
    for name, mean in result.aggregate["mean"].items():
        interval = intervals.get(name)
        cells = [name, fmt(mean), fmt(result.aggregate["std"][name]),
                 _interval(interval, name in flagged) if interval else "n/a"]
        cells += [fmt(f["tests"][name]) if _is_number(f["tests"].get(name)) else "n/a"
                  for f in folds]
        table.add_row(*cells)
    return table


def score_breakdown(result: ShownResult, width: int) -> Iterator[Table | Text]:
    """Yield how the leaderboard score is made: each group's tests with their normalised
    values, the group's mean, weight and contribution (or why the gate decided the score)."""
    values = (result.references or {}).get("values")
    normalised = result.aggregate.get("normalised")
    if not values or normalised is None or result.leaderboard_score is None:
        return
    refs = References.from_dict(values)
    mean = result.aggregate["mean"]
    if result.aggregate["gated"]:
        yield paragraph(
            f"The leaderboard score is {fmt(GATED_SCORE)}: HIT_RATE {fmt(mean[HIT_RATE])} is "
            f"below the references' threshold {fmt(refs.hit_rate_threshold)} (the gate), "
            f"whatever the other tests.", width, style="yellow")
        return
    yield breakdown_table(mean, normalised, *scored_groups(refs, result.not_applicable),
                          result.leaderboard_score)
    yield paragraph(NORMALISED_NOTE, width)
    interval = (result.confidence_intervals or {}).get("phase2_score")
    if interval and interval[0] == GATED_SCORE:
        yield paragraph(f"The score's interval reaches {fmt(GATED_SCORE)}: in some bootstrap "
                        f"replicates HIT_RATE falls below the threshold "
                        f"{fmt(refs.hit_rate_threshold)} (the gate).", width)


def breakdown_table(mean: Mapping[str, float], normalised: Mapping[str, float],
                    groups: Mapping[str, list[str]], weights: Mapping[str, float],
                    score: float) -> Table:
    """The table behind the score: per group its tests (mean, normalised), then the group's
    mean normalised value, its weight (of the total) and its contribution to the score."""
    total = sum(weights.values())
    table = Table(title="How the leaderboard score is made", box=box.SIMPLE_HEAD,
                  show_edge=False)
    table.add_column("Group / test", no_wrap=True)
    for column in ("Mean", "Normalised", "Weight", "Contribution"):
        table.add_column(column, justify="right", no_wrap=True)
    for group, members in groups.items():
        group_mean = sum(normalised[t] for t in members) / len(members)
        for t in members:
            table.add_row(f"  {t}", fmt(mean[t]), fmt(normalised[t]), "", "")
        table.add_row(f"{group} (mean)", "", fmt(group_mean),
                      f"{weights[group]:g}/{total:g}", fmt(weights[group] / total * group_mean),
                      style="bold", end_section=True)
    table.add_row("leaderboard score", "", "", "", fmt(score), style="bold")
    return table


def timing_table(folds: list[dict]) -> Table:
    """The table of seconds per stage and peak memory, one row per fold."""
    stages = list(folds[0]["runtime"]) if folds else []
    timing = Table(title="Seconds per stage; peak memory of the fold")
    timing.add_column("Fold")
    for s in stages:
        timing.add_column(s, justify="right")
    timing.add_column("peak MiB", justify="right")
    for f in folds:
        rt = f["runtime"]
        peaks = [rt[s]["peak_rss_mib"] for s in stages if rt[s]["peak_rss_mib"] is not None]
        timing.add_row(str(f["fold"]), *(f"{rt[s]['seconds']:.2f}" for s in stages),
                       f"{max(peaks):.0f}" if peaks else "n/a")
    return timing


def _interval(interval, starred: bool, prefix: str = "") -> str:
    """``prefix[low, high]`` to 4 significant digits, `` *`` when unreliable; "" for None."""
    if not interval:
        return ""
    return f"{prefix}[{fmt(interval[0])}, {fmt(interval[1])}]" + (" *" if starred else "")


def _is_number(value) -> bool:
    """Whether ``value`` is an int or float (a test's value rather than a summary object)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)
