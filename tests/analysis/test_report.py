"""The figures and the HTML report of runs: checked as a reader would look at them.

Each figure is rendered from two real (tiny, synthetic) runs and read back: its pixel size,
its panels, the number of plotted points and bars, titles, labels and legend entries, and the
plotted numbers against the run's own files (fold details, intervals) or a slow reference.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import struct
from statistics import NormalDist

import numpy as np
import pytest

from evaluation.analysis import (
    compare,
    forest_plot,
    load_results,
    plot_score_distribution,
    plot_slices,
    plot_tests,
    write_report,
)
from evaluation.analysis._groups import replicates, score_replicates
from evaluation.analysis._plots import DPI
from evaluation.baselines import PopularityModel, RandomModel
from evaluation.challenge import LEADERBOARD_TESTS, MRED_TESTS, References
from evaluation.cli import main
from evaluation.errors import ConfigError
from evaluation.runner import EvalRSRunner
from tests.analysis._png import png_size

N_BOOT = 200

# the random baseline recommends tracks the users already played: expected, not under test
pytestmark = pytest.mark.filterwarnings("ignore::evaluation.errors.PredictionWarning")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two finished runs (popularity and random) on the tiny synthetic data, with intervals."""
    from evaluation.dataset import ChallengeDataset

    data = ChallengeDataset(source="synthetic", scale="tiny")
    results = tmp_path_factory.mktemp("runs") / "results"
    out = []
    for model in (PopularityModel(), RandomModel()):
        runner = EvalRSRunner(data, results_dir=results, progress=False, verbose=False,
                              reports=False, n_boot=N_BOOT)
        out.append(runner.evaluate(model).path.parent)
    return out


@pytest.fixture(scope="module")
def run(runs):
    return load_results(runs[0])


def pixels(fig) -> tuple[float, float]:
    """The size in pixels that ``fig`` renders at (its inches at the report's DPI). Drawing a
    figure costs about a CPU-second: the figures are read here as drawn objects, and their
    rendered PNGs (the same functions' figures of the same run) are read in the report tests
    below."""
    width, height = fig.get_size_inches() * DPI
    return float(width), float(height)


def interval_segments(ax) -> list[np.ndarray]:
    """The interval bars of a panel (line collections tagged "interval"), as segments."""
    return [seg for c in ax.collections if c.get_gid() == "interval" for seg in c.get_segments()]


def bc_interval(values: np.ndarray, point: float, level: float = 0.95) -> list[float]:
    """The bias-corrected percentile interval (Efron 1981), written out as in the textbook."""
    nd = NormalDist()
    alpha = (1 - level) / 2
    b = len(values)
    below = (np.sum(values < point) + 0.5 * np.sum(values == point)) / b
    z0 = nd.inv_cdf(min(max(below, 1 / (b + 1)), b / (b + 1)))
    cap = nd.inv_cdf(1 - alpha)
    z0 = max(-cap, min(cap, z0))
    lo, hi = np.quantile(values, [nd.cdf(2 * z0 + nd.inv_cdf(p)) for p in (alpha, 1 - alpha)])
    if abs(z0) == cap:
        lo, hi = min(lo, point), max(hi, point)
    return [float(lo), float(hi)]


# --------------------------------------------------------------------------- the nine tests


def test_plot_tests_shows_each_fold_and_the_runs_intervals(run):
    fig = plot_tests(run)
    assert pixels(fig) == (1000, 800)
    axes = fig.axes
    assert [ax.get_title().rstrip(" *") for ax in axes] == list(LEADERBOARD_TESTS)
    intervals = run.intervals["tests"]
    for ax, test in zip(axes, LEADERBOARD_TESTS):
        folds = [line for line in ax.lines if line.get_gid() == "folds"]
        assert len(folds) == 1
        np.testing.assert_array_equal(folds[0].get_ydata(),
                                      [f[test] for f in run.fold_tests])
        assert len(folds[0].get_xdata()) == run.num_folds
        (segment,) = interval_segments(ax)
        # the bar spans exactly the run's interval, at the "mean" tick
        assert segment[:, 1].tolist() == intervals[test]
        labels = [t.get_text() for t in ax.get_xticklabels()]
        assert labels == [str(f) for f in range(run.num_folds)] + ["mean"]
        mean_marker = [line for line in ax.lines if line.get_marker() == "D"]
        assert mean_marker[0].get_ydata()[0] == run.aggregate["mean"][test]
    assert axes[0].get_ylabel() == "value (higher is better)"
    assert axes[-1].get_xlabel() == "fold"
    assert "nine leaderboard tests" in fig.get_suptitle()
    assert f"n_boot={N_BOOT}" in fig.get_suptitle()


# --------------------------------------------------------------------------- slices


def test_plot_slices_rates_match_the_fold_details(run):
    fig = plot_slices(run)
    width, height = pixels(fig)
    assert width == 800 and height > 800
    folds = run.results["folds"]
    panels = [ax for ax in fig.axes if ax.get_title(loc="left")]
    assert [ax.get_title(loc="left").split(" ")[0] for ax in panels] == list(MRED_TESTS)
    for ax, test in zip(panels, MRED_TESTS):
        details = [f["details"][test] for f in folds]
        groups = {g for d in details for g in d["groups"]}
        bars = [c for c in ax.containers if c.lines[0].get_gid() == "group"]
        assert len(bars) == len(groups), test
        # each group's rate: the mean over the folds where it has users, from the fold files
        labels = [t.get_text() for t in ax.get_yticklabels()]
        sizes = {g: sum(d["counts"].get(g, 0) for d in details) for g in groups}
        expected = {g: np.mean([d["groups"][g] for d in details if g in d["groups"]])
                    for g in groups}
        plotted = sorted(float(c.lines[0].get_xdata()[0]) for c in bars)
        assert plotted == pytest.approx(sorted(expected.values()), abs=1e-12)
        assert sorted(int(re.search(r"\(n=(\d+)\)$", s).group(1)) for s in labels) \
            == sorted(sizes.values())
        overall = [line for line in ax.lines if line.get_gid() == "overall"]
        assert overall[0].get_xdata()[0] == pytest.approx(np.mean([d["MR"] for d in details]),
                                                          abs=1e-12)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "misses more than all users" in legend and "misses less than all users" in legend
    assert "lower is better" in panels[-1].get_xlabel()


def test_plot_slices_refuses_group_sizes_that_do_not_match_the_users(runs, tmp_path):
    edited = tmp_path / "edited"
    shutil.copytree(runs[0], edited)
    results = json.loads((edited / "results.json").read_text())
    counts = results["folds"][0]["details"]["MRED_GENDER"]["counts"]
    first = next(iter(counts))
    counts[first] += 1
    (edited / "results.json").write_text(json.dumps(results))
    with pytest.raises(ConfigError, match="fold 0: the group sizes of MRED_GENDER"):
        plot_slices(edited)


def test_slice_intervals_match_a_slow_resampling_reference(run):
    """Group intervals against a per-replicate loop over drawn user indices."""
    folds = run.results["folds"]
    scores = [run.user_scores(f) for f in range(run.num_folds)]
    reps = replicates(folds, scores, n_boot=60, seed=7)
    test = "MRED_GENDER"
    labels = reps.groups[test].labels
    streams = np.random.SeedSequence(7).spawn(run.num_folds)
    per_fold = []
    for f, s in enumerate(scores):
        rng = np.random.default_rng(streams[f])
        draws = np.concatenate([rng.integers(0, len(s), size=(min(50, 60 - a), len(s)),
                                             dtype=np.int64) for a in range(0, 60, 50)])
        names = list(folds[f]["details"][test]["counts"])
        codes = np.asarray(s.slices[test])
        present = np.unique(codes[codes >= 0])
        rates = np.full((60, len(labels)), np.nan)
        for b, idx in enumerate(draws):
            for code, name in zip(present, names):
                member = codes[idx] == code
                if member.any():
                    rates[b, labels.index(name)] = np.mean(~s.hit[idx][member])
        per_fold.append(rates)
    with np.errstate(all="ignore"):
        expected = np.nanmean(np.stack(per_fold), axis=0)
    got = reps.group_rates[test][1][:, :len(labels)]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- the score


def test_score_replicates_are_the_runs_own(run):
    """Recomputed replicates give the run's stored intervals, to the bit."""
    scores = [run.user_scores(f) for f in range(run.num_folds)]
    ci = run.intervals
    reps = replicates(run.results["folds"], scores, n_boot=ci["n_boot"], seed=ci["seed"])
    for test in LEADERBOARD_TESTS:
        assert bc_interval(reps.tests[test], run.aggregate["mean"][test]) == ci["tests"][test]
    refs = References.from_dict(run.results["references"]["values"])
    p2 = score_replicates(reps, refs)
    assert bc_interval(p2, run.results["phase2_score"]) == ci["phase2_score"]
    p1 = score_replicates(reps, None)
    assert bc_interval(p1, run.results["phase1_score"]) == ci["phase1_score"]


def test_plot_score_distribution_marks_estimate_and_interval(run):
    fig = plot_score_distribution(run)
    assert pixels(fig) == (700, 480)
    (ax,) = fig.axes
    bars = [p for p in ax.patches if p.get_gid() == "replicates"]
    assert len(bars) == 40
    assert sum(p.get_height() for p in bars) == N_BOOT
    point = [line for line in ax.lines if line.get_gid() == "point"]
    assert point[0].get_xdata()[0] == run.results["phase2_score"]
    ends = [line.get_xdata()[0] for line in ax.lines if line.get_gid() == "interval"]
    assert ends == run.intervals["phase2_score"]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend[0] == f"bootstrap replicates ({N_BOOT})"
    assert legend[1].startswith("point estimate")
    assert legend[2].startswith("95% interval [") and legend[2].endswith("(bias-corrected)")
    assert "the interval is bias-corrected" in fig.texts[0].get_text()
    assert ax.get_xlabel() == "leaderboard score (phase 2)"


def test_run_without_intervals_is_drawn_without_them(tmp_path):
    from evaluation.dataset import ChallengeDataset

    runner = EvalRSRunner(ChallengeDataset(source="synthetic", scale="tiny"),
                          results_dir=tmp_path / "results", progress=False, verbose=False,
                          reports=False, n_boot=0)
    run = load_results(runner.evaluate(PopularityModel(), limit=40).path)
    assert run.intervals is None
    fig = plot_tests(run)
    assert all(interval_segments(ax) == [] for ax in fig.axes)
    assert "the run has no intervals" in fig.get_suptitle()
    fig = plot_score_distribution(run, n_boot=100)
    assert [line.get_gid() for line in fig.axes[0].lines] == ["point"]
    assert "no interval: the run stored none" in fig.get_suptitle()
    assert sum(p.get_height() for p in fig.axes[0].patches) == 100


def test_plots_refuse_what_is_not_a_run(tmp_path):
    with pytest.raises(ConfigError, match="expected a run"):
        plot_tests(42)
    with pytest.raises(ConfigError, match="missing"):
        plot_slices(tmp_path / "missing")
    with pytest.raises(ConfigError, match="n_boot must be an int >= 2"):
        replicates([], [], n_boot=1, seed=0)
    with pytest.raises(ConfigError, match="seed must be a non-negative int"):
        replicates([], [], n_boot=10, seed=-1)


# --------------------------------------------------------------------------- compare


def test_forest_plot_marks_significance_and_intervals(runs):
    cmp = compare([load_results(p) for p in runs], baseline=0, n_boot=N_BOOT, seed=3)
    frame = cmp.to_frame()
    fig = forest_plot(cmp)
    width, _ = pixels(fig)
    assert width == 750
    tests = list(dict.fromkeys(frame["test"]))
    assert [ax.get_ylabel() for ax in fig.axes] == tests
    filled = hollow = 0
    for ax, test in zip(fig.axes, tests):
        row = frame[frame["test"] == test].iloc[0]
        (bar,) = ax.containers
        marker = bar.lines[0]
        assert marker.get_gid() == ("significant" if row["significant"] else "not significant")
        is_hollow = marker.get_markerfacecolor() == "white"
        assert is_hollow == (not row["significant"])
        filled, hollow = filled + (not is_hollow), hollow + is_hollow
        assert marker.get_xdata()[0] == row["difference"]
        (segment,) = interval_segments(ax)
        assert segment[:, 0].tolist() == pytest.approx([row["ci_low"], row["ci_high"]],
                                                       rel=0, abs=1e-12)
    assert filled == int(frame["significant"].sum()) and filled + hollow == len(frame)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == [f"significant after Holm (alpha={cmp.alpha:g}; "
                      f"{cmp.standings['score']}: as the standings)", "not significant"]
    # runs of the Python API are shown with their models' parameters
    assert 'RandomModel (seed=42) - PopularityModel (by="plays")' in fig.get_suptitle()


# --------------------------------------------------------------------------- the report


def _attributes(page: str, name: str) -> list[str]:
    return re.findall(rf"""\b{name}\s*=\s*["']([^"']*)["']""", page, flags=re.IGNORECASE)


@pytest.fixture(scope="module")
def hostile_run(runs, tmp_path_factory):
    """A copy of the first run whose model's name and class are markup."""
    hostile = tmp_path_factory.mktemp("hostile") / "run"
    shutil.copytree(runs[0], hostile)
    results = json.loads((hostile / "results.json").read_text())
    results["model"]["name"] = "<script>alert('x')</script>"
    results["model"]["class"] = "<img src=x onerror=alert(1)>"
    (hostile / "results.json").write_text(json.dumps(results))
    return hostile


@pytest.fixture(scope="module")
def one_report(hostile_run):
    """The report of one run, written by write_report where it writes by default (a report
    renders for seconds: one render, read by the tests below). The page must be one
    self-contained file and show the run's markup as text: read as text here and opened in
    Chromium below."""
    return write_report(hostile_run)


def test_report_of_one_run_is_one_self_contained_file(runs, hostile_run, one_report):
    path = one_report
    assert path == hostile_run / "report" / "report.html"  # default: next to the run
    assert sorted(p.name for p in path.parent.iterdir()) == [
        "report.html", "score_distribution.png", "slices.png", "tests.png"]
    page = path.read_text(encoding="utf-8")
    sources = _attributes(page, "src")
    assert len(sources) == 3 and _attributes(page, "href") == []
    assert "<link" not in page and "<script" not in page and "url(" not in page
    embedded = sorted(base64.b64decode(s.split(",", 1)[1]) for s in sources)
    assert all(s.startswith("data:image/png;base64,") for s in sources)
    assert embedded == sorted(p.read_bytes() for p in path.parent.glob("*.png"))
    # no software version or creation time in a PNG: the same run draws the same bytes each
    # time (test_report_command draws it again and compares)
    for png in embedded:
        assert b"Software" not in png and b"Creation" not in png
    # each figure rendered at its size (the figure tests above read the figures as objects)
    sizes = {p.name: png_size(p.read_bytes()) for p in path.parent.glob("*.png")}
    assert sizes["tests.png"] == (1000, 800) and sizes["score_distribution.png"] == (700, 480)
    slices_width, slices_height = pixels(plot_slices(hostile_run))
    assert slices_width == 800 and slices_height > 800
    assert sizes["slices.png"] == (800, round(slices_height))
    for test in LEADERBOARD_TESTS:
        assert f"<td>{test}</td>" in page
    ci = load_results(runs[0]).intervals["tests"]["HIT_RATE"]
    assert f"[{ci[0]:.4g}, {ci[1]:.4g}]" in page


def test_report_escapes_what_the_run_names(one_report):
    page = one_report.read_text(encoding="utf-8")
    assert "<script>" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert len(_attributes(page, "src")) == 3


def test_report_command(runs, hostile_run, one_report, tmp_path, capsys):
    out = tmp_path / "cli"
    assert main(["report", str(hostile_run), "--out", str(out)]) == 0
    assert str(out / "report.html") in capsys.readouterr().out
    # the same run, the same bytes: the command writes what write_report writes, each time
    assert sorted(p.name for p in out.iterdir()) == sorted(
        p.name for p in one_report.parent.iterdir())
    for written in out.iterdir():
        assert written.read_bytes() == (one_report.parent / written.name).read_bytes(), written
    # default: next to the run, where write_report writes (one_report); a file there shows
    # where the command writes without drawing the report a third time
    other = tmp_path / "run"
    shutil.copytree(runs[1], other)
    (other / "report").write_text("x")
    assert main(["report", str(other / "results.json")]) == 2
    assert f"report output {str(other / 'report')!r} is a file" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["report", "{missing}"], "missing"),
    (["report", "{run}", "--baseline", "{run}"], "--baseline needs another run"),
    (["report", "{run}", "{run}"], "the same run is given twice"),
    (["report", "{run}", "--out", "{file}"], "is a file, not a directory"),
    (["report", "{run}", "--out", "{file}/sub"], "cannot write the report into"),
])
def test_report_command_refuses_bad_input(runs, tmp_path, capsys, argv, message):
    (tmp_path / "file").write_text("x")
    values = {"missing": str(tmp_path / "missing"), "run": str(runs[0]),
              "file": str(tmp_path / "file")}
    assert main([a.format(**values) for a in argv]) == 2
    assert message in capsys.readouterr().err


def test_report_in_headless_chromium(driver, one_report):
    # the page as a reader opens it from disk: every figure decodes at its PNG's size, the
    # tests table is laid out, and a hostile model name and class are text, not markup
    path = one_report
    driver.get(path.as_uri())
    images = driver.execute_script(
        "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, "
        "i.naturalHeight, i.getBoundingClientRect().width])")
    sizes = sorted(struct.unpack(">II", p.read_bytes()[16:24])
                   for p in path.parent.glob("*.png"))
    assert sorted((w, h) for _, w, h, _ in images) == sizes
    assert all(done and shown > 100 for done, _, _, shown in images), images
    cells = driver.execute_script(
        "return Array.from(document.querySelectorAll('td')).map(td => td.textContent.trim())")
    assert all(test in cells for test in LEADERBOARD_TESTS)
    text = driver.execute_script("return document.body.textContent")
    assert "<img src=x onerror=alert(1)>" in text and "<script>alert('x')</script>" in text
    assert driver.execute_script("return document.querySelectorAll('img[src=\"x\"]').length") == 0
