"""What a run prints: a line per fold and the summary by default, reclist's tables only when
verbose, the score line alone when quiet; 4 significant digits; the breakdown of the score; one
warning per run with per-fold counts; stars on unreliable intervals; 80 columns."""

from __future__ import annotations

import io
import json
import re
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

from evaluation import ChallengeDataset, EvalRSRunner, RecModel
from evaluation.baselines import PopularityModel
from evaluation.challenge import (
    DEFAULT_GROUPS,
    DEFAULT_WEIGHTS,
    HIT_RATE,
    LEADERBOARD_TESTS,
    MRED_COUNTRY,
    MRED_GENDER,
    REFERENCES_DIR,
    References,
)
from evaluation.errors import ConfigError, PredictionWarning
from tests._movielens_files import write_movielens_like

#: How a line at column 0 may begin: anything else would be a phrase wrapped by the console.
LINE_HEADS = ("EvalRS run", "Warning:", "Normalised =", "The score's interval",
              "The leaderboard score is", "Phase-1 score", "References:", "Note:",
              "Local run:", "LEADERBOARD SCORE:", "Results:", "* the interval",
              "┏", "┃", "┡", "│", "└", "─")
FOLD_LINE = re.compile(r"^  fold (\d+): HIT_RATE (\S+), MRR (\S+) \((\d+\.\d) s\)$")


@pytest.fixture(autouse=True)
def _eighty_columns(monkeypatch):
    # what rich assumes for a console that is not a terminal; explicit, whatever the CI sets
    monkeypatch.setenv("COLUMNS", "80")


@pytest.fixture(scope="module")
def one_fold():
    return ChallengeDataset(source="synthetic", scale="tiny", num_folds=1)


def run(dataset, tmp_path, model=None, **options):
    """Evaluate ``model`` (default: popularity) with the runner's ``options``."""
    limit = options.pop("limit", 0)
    options = {"results_dir": tmp_path / "results", "progress": False, "n_boot": 50,
               **options}
    return EvalRSRunner(dataset, **options).evaluate(model or PopularityModel(), limit=limit)


def significant_digits(token: str) -> int:
    """The significant digits of a number as printed (``-0.08866`` -> 4, ``100`` -> 3)."""
    mantissa = token.lstrip("+-").split("e")[0].replace(".", "").lstrip("0")
    return len(mantissa)


def check_lines(out: str) -> None:
    """Every line fits 80 columns (but a single word longer than a line, a path, which stays
    whole), and none is the continuation of a phrase the console wrapped (those would start at
    column 0 with an arbitrary word)."""
    for line in out.splitlines():
        assert len(line.rstrip()) <= 80 or " " not in line.strip(), line
        if line and not line[0].isspace():
            assert line.startswith(LINE_HEADS), f"a wrapped phrase? {line!r}"


class SeenFirstModel(RecModel):
    """Recommends each user's own training tracks (by track id), padded with -1: every real
    item of a list is one the harness warns about, and none can hit."""

    def train(self, train_df, **kwargs):
        pairs = train_df[["user_id", "track_id"]].sort_values(["user_id", "track_id"])
        self.heard = pairs.groupby("user_id")["track_id"].apply(list).to_dict()

    def predict(self, user_ids):
        users = user_ids["user_id"].to_numpy()
        rows = np.full((len(users), 100), -1, dtype=np.int64)
        for i, u in enumerate(users):  # a test model on 150 users
            own = self.heard.get(u, [])[:100]
            rows[i, :len(own)] = own
        return pd.DataFrame(rows, index=pd.Index(users, name="user_id"),
                            columns=[str(i) for i in range(100)])


def expected_seen(dataset, fold: int) -> tuple[int, int]:
    """By hand: items recommended by ``SeenFirstModel`` that are training items, and lists."""
    train = dataset.get_train_set(fold)
    users = dataset.get_test_set(fold)["user_id"].to_numpy()
    per_user = train.groupby("user_id")["track_id"].nunique().reindex(users, fill_value=0)
    return int(np.minimum(per_user, 100).sum()), int((per_user > 0).sum())


# --------------------------------------------------------------------------- default output


@pytest.fixture(scope="module")
def popularity_default(tiny, tmp_path_factory):
    """A popularity run on the tiny data with the default output, and what it printed."""
    capture = io.StringIO()
    console_out = pytest.MonkeyPatch()
    console_out.setattr("sys.stdout", capture)
    console_out.setenv("COLUMNS", "80")
    try:
        result = run(tiny, tmp_path_factory.mktemp("pop"))
    finally:
        console_out.undo()
    return result, capture.getvalue()


def test_default_prints_one_line_per_fold_and_the_summary(popularity_default):
    result, out = popularity_default
    lines = [m for m in map(FOLD_LINE.match, out.splitlines()) if m]
    assert [int(m.group(1)) for m in lines] == [0, 1, 2, 3]
    for m, fold in zip(lines, result.folds):
        assert m.group(2) == f"{fold['tests']['HIT_RATE']:.4g}"
        assert m.group(3) == f"{fold['tests']['MRR']:.4g}"
        seconds = sum(s["seconds"] for s in fold["runtime"].values())
        assert m.group(4) == f"{seconds:.1f}"
    assert "SliceMissRates(" not in out and "EvalRSRecList" not in out
    assert "Seconds per stage" not in out  # the timings are verbose output
    assert "How the leaderboard score is made" in out
    assert out.count("LEADERBOARD SCORE:") == 1
    check_lines(out)


def test_numbers_have_four_significant_digits(popularity_default):
    result, out = popularity_default
    rows = {line.split("│")[1].strip(): line for line in out.splitlines()
            if line.startswith("│") and line.split("│")[1].strip() in LEADERBOARD_TESTS}
    assert set(rows) == set(LEADERBOARD_TESTS)
    for test, line in rows.items():
        cells = [c.strip() for c in line.split("│")[2:-1]]
        assert cells[0] == f"{result.aggregate['mean'][test]:.4g}"
        assert cells[1] == f"{result.aggregate['std'][test]:.4g}"
        low, high = result.confidence_intervals["tests"][test]
        assert cells[2].rstrip(" *") == f"[{low:.4g}, {high:.4g}]"
        for token in re.findall(r"-?\d[\d.e+-]*", " ".join(cells)):
            assert significant_digits(token) <= 4, (test, token)
    ci = result.confidence_intervals["phase2_score"]
    assert (f"LEADERBOARD SCORE: {result.leaderboard_score:.4g}  95% CI "
            f"[{ci[0]:.4g}, {ci[1]:.4g}]") in out
    # full precision stays in results.json
    saved = json.loads(result.path.read_text())
    assert saved["leaderboard_score"] == result.leaderboard_score
    assert f"{result.leaderboard_score:.4g}" != repr(result.leaderboard_score)


def test_score_breakdown_adds_up_to_the_leaderboard_score(popularity_default):
    result, out = popularity_default
    refs = json.loads((REFERENCES_DIR / "synthetic-tiny.json").read_text())
    mean = result.aggregate["mean"]
    assert not result.aggregate["gated"]
    # by hand, from the references file
    norm = {t: (mean[t] - refs["baseline"][t]) / (refs["best"][t] - refs["baseline"][t])
            for t in LEADERBOARD_TESTS}
    total = sum(refs["weights"].values())
    contribution = {g: refs["weights"][g] / total * np.mean([norm[t] for t in members])
                    for g, members in refs["groups"].items()}
    assert sum(contribution.values()) == pytest.approx(result.leaderboard_score, rel=1e-12)
    section = out[out.index("How the leaderboard score is made"):out.index("Normalised =")]
    for t in LEADERBOARD_TESTS:
        (m,) = re.findall(rf"^\s+{t}\s+(\S+)\s+(\S+)\s*$", section, flags=re.M)
        assert m == (f"{mean[t]:.4g}", f"{norm[t]:.4g}")
    printed = {}
    for group, g_mean, weight, of, part in re.findall(
            r"^\s*(\w+) \(mean\)\s+(\S+)\s+(\S+)/(\S+)\s+(\S+)\s*$", section, flags=re.M):
        members = refs["groups"][group]
        assert g_mean == f"{np.mean([norm[t] for t in members]):.4g}"
        assert float(weight) == refs["weights"][group] and float(of) == total
        assert part == f"{contribution[group]:.4g}"
        printed[group] = float(part)
    assert list(printed) == list(refs["groups"])
    # the printed contributions add up to the score, to their rounding
    assert sum(printed.values()) == pytest.approx(result.leaderboard_score,
                                                  abs=5e-4 * max(1, abs(result.leaderboard_score)))
    assert re.search(rf"leaderboard score\s+{re.escape(f'{result.leaderboard_score:.4g}')}",
                     section)
    assert "not bounded to [0, 1]" in " ".join(out.split())


# --------------------------------------------------------------------------- the warning


def test_training_items_warning_once_per_run_with_per_fold_counts(tiny, tmp_path, capsys):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run(tiny, tmp_path, SeenFirstModel(), n_boot=0)
    out = capsys.readouterr().out
    assert not [w for w in caught if issubclass(w.category, PredictionWarning)]  # printed
    flat = " ".join(out.split())
    assert flat.count("already has in the training set") == 1
    assert "predictions.py" not in out and "warnings.warn" not in out  # no source line
    for fold in range(tiny.num_folds):
        items, lists = expected_seen(tiny, fold)
        assert f"fold {fold}: {items:,} items in {lists:,} of 150 lists" in flat
        assert result.folds[fold]["seen_in_training"] == {"items": items, "lists": lists}
    # HIT_RATE is 0: the gate decides the score, and the summary says so
    assert "below the references' threshold" in flat and "LEADERBOARD SCORE: -100" in out
    check_lines(out)


def test_silent_run_warns_once_through_python_warnings(tiny, tmp_path, capsys):
    with pytest.warns(PredictionWarning) as caught:
        run(tiny, tmp_path, SeenFirstModel(), n_boot=0, verbose=False)
    ours = [w for w in caught if issubclass(w.category, PredictionWarning)]
    assert len(ours) == 1
    assert ours[0].message.counts == {
        "items": sum(expected_seen(tiny, f)[0] for f in range(tiny.num_folds)),
        "lists": sum(expected_seen(tiny, f)[1] for f in range(tiny.num_folds))}
    assert ours[0].filename == __file__  # points at the caller, not the harness
    assert capsys.readouterr().out == ""


# --------------------------------------------------------------------------- the levels


def test_quiet_prints_only_the_score_line(tiny, tmp_path, capsys):
    result = run(tiny, tmp_path, quiet=True, limit=30)
    out = capsys.readouterr().out
    ci = result.confidence_intervals["phase2_score"]
    assert out == (f"LEADERBOARD SCORE: {result.leaderboard_score:.4g}  95% CI "
                   f"[{ci[0]:.4g}, {ci[1]:.4g}]\n")
    with pytest.raises(ConfigError, match="contradict"):
        EvalRSRunner(tiny, results_dir=tmp_path, verbose=True, quiet=True)
    with pytest.raises(ConfigError, match="quiet must be True or False"):
        EvalRSRunner(tiny, results_dir=tmp_path, quiet="yes")


def test_reclist_reports_go_to_the_run_directory_with_tables_only_when_verbose(one_fold, tmp_path,
                                                                             capsys):
    res = run(one_fold, tmp_path / "default", reports=True, n_boot=0, limit=30)
    out = capsys.readouterr().out
    assert "SliceMissRates(" not in out and "EvalRSRecList" not in out
    assert "Seconds per stage" not in out
    # the report (every leaderboard test) and its charts, in the run's directory
    reclist_dir = tmp_path / "default" / "results" / res.run_id / "reclist" / "fold_0"
    (report,) = reclist_dir.rglob("report.json")
    data = json.loads(report.read_text())
    assert {r["name"] for r in data["data"]} >= set(LEADERBOARD_TESTS)
    assert list(reclist_dir.rglob("MRED_COUNTRY.png"))
    run(one_fold, tmp_path / "verbose", reports=True, n_boot=0, limit=30, verbose=True)
    out = capsys.readouterr().out
    assert "EvalRSRecList" in out and "MRED_COUNTRY:SliceMissRates(" in out
    assert "Seconds per stage" in out


def test_limit_says_the_scores_are_not_comparable(tiny, tmp_path, capsys):
    run(tiny, tmp_path, limit=40, n_boot=0)
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    assert ("limit=40 scores only the first 40 test users of each fold. These scores are not "
            "comparable with full runs (small groups bias the MRED tests away from 0)") in flat
    assert "Local run:" in out and "not a leaderboard submission" in " ".join(out.split())
    check_lines(out)


def test_long_paths_wrap_with_an_indent(tiny, tmp_path, capsys):
    deep = tmp_path / ("a-rather-long-folder-name-" * 3) / "results"
    result = run(tiny, tmp_path, results_dir=deep, limit=20, n_boot=0)
    out = capsys.readouterr().out
    lines = out.splitlines()
    at = lines.index("Results:")
    assert lines[at + 1] == f"  {result.path}"  # whole, on a line of its own, to be copied
    assert len(lines[at + 1]) > 80
    check_lines(out)


# --------------------------------------------------------------------------- stars


def render(result) -> str:
    """``result``'s summary as an 80-column console prints it."""
    console = Console(width=80, file=io.StringIO(), highlight=False, color_system=None)
    console.print(result)
    return console.file.getvalue()


def test_bias_dominated_entries_are_starred_with_a_footnote(popularity_default):
    result, _ = popularity_default
    plain = render(replace(result, confidence_intervals={
        **result.confidence_intervals, "bias_dominated": []}))
    assert " *" not in plain and "widened" not in plain
    flagged = replace(result, confidence_intervals={
        **result.confidence_intervals,
        "bias_dominated": [MRED_GENDER, "phase1_score", "phase2_score"]})
    out = render(flagged)
    rows = {line.split("│")[1].strip(): line for line in out.splitlines()
            if line.startswith("│")}
    assert rows[MRED_GENDER].rstrip().endswith("* │")
    assert all(not rows[t].rstrip().endswith("* │") for t in LEADERBOARD_TESTS
               if t != MRED_GENDER)
    (phase1,) = [line for line in out.splitlines() if line.startswith("Phase-1 score")]
    (score,) = [line for line in out.splitlines() if line.startswith("LEADERBOARD SCORE")]
    assert phase1.endswith("] *") and score.endswith("] *")
    assert "widened to reach the estimate" in " ".join(out.split())


# --------------------------------------------------------------------------- n/a tests


def test_not_applicable_tests_show_n_a_with_the_reason_and_renormalised_weights(tmp_path,
                                                                                 capsys):
    data = ChallengeDataset(source=f"movielens:{write_movielens_like(tmp_path / 'ml')}")
    baseline = dict.fromkeys(LEADERBOARD_TESTS, -0.2) | {HIT_RATE: 0.05, "MRR": 0.01}
    best = dict.fromkeys(LEADERBOARD_TESTS, -0.05) | {HIT_RATE: 0.4, "MRR": 0.1}
    refs = References(baseline=baseline, best=best, hit_rate_threshold=0.0)
    result = run(data, tmp_path, references=refs, n_boot=0)
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    for test, reason in result.not_applicable.items():
        assert re.search(rf"│ {test}\s+│\s+n/a │\s+n/a │\s+n/a │", out)
        assert f"n/a {test}: not applicable ({reason})" in flat
    assert MRED_COUNTRY in result.not_applicable
    # behavioural is dropped; accuracy and fairness keep the total of 4 between them
    groups = re.findall(r"^\s*(\w+) \(mean\)\s+\S+\s+(\S+)\s+(\S+)\s*$", out, flags=re.M)
    total = sum(DEFAULT_WEIGHTS.values())
    kept = {g: w for g, w in DEFAULT_WEIGHTS.items()
            if any(t not in result.not_applicable for t in DEFAULT_GROUPS[g])}
    assert [g for g, _, _ in groups] == list(kept)
    for g, weight, _ in groups:
        assert weight == f"{kept[g] * total / sum(kept.values()):g}/{total:g}"
    norm = result.aggregate["normalised"]
    hand = sum(kept[g] / sum(kept.values())
               * np.mean([norm[t] for t in DEFAULT_GROUPS[g] if t not in result.not_applicable])
               for g in kept)
    assert hand == pytest.approx(result.leaderboard_score, rel=1e-12)
    assert sum(float(c) for _, _, c in groups) == pytest.approx(
        result.leaderboard_score, abs=5e-4 * max(1, abs(result.leaderboard_score)))
    check_lines(out)
