"""Named runs: ``evaluate(name=...)`` and ``submission.py --name``, and the name and the model's
parameters beside the run in results.json, compare, the forest plot, the report and the upload."""

from __future__ import annotations

import io
import json
import re

import pytest
from rich.console import Console

from evaluation.analysis import compare, forest_plot, load_results, write_report
from evaluation.baselines import PopularityModel, RandomModel
from evaluation.contract import RecordRefused, read_submission, submission_payload
from evaluation.dataset import ChallengeDataset
from evaluation.errors import ConfigError
from evaluation.runner import EvalRSRunner
from tests.analysis._png import png_size

pytestmark = pytest.mark.filterwarnings("ignore::evaluation.errors.PredictionWarning")

LIMIT = 40


@pytest.fixture(scope="module")
def data():
    return ChallengeDataset(source="synthetic", scale="tiny", num_folds=2)


@pytest.fixture(scope="module")
def named(data, tmp_path_factory):
    """Two named runs of the random model with other seeds, and one unnamed run."""
    results = tmp_path_factory.mktemp("named") / "results"
    out = {}
    for name, seed in (("narrow", 1), ("wide", 2), (None, 1)):
        runner = EvalRSRunner(data, results_dir=results, progress=False, verbose=False,
                              reports=False, n_boot=100)
        out[name] = runner.evaluate(RandomModel(seed=seed), limit=LIMIT, name=name,
                                    settings={"params": {"seed": seed}})
    return out


def test_the_name_is_recorded_and_starts_the_run_id_but_not_the_hash(named):
    narrow, unnamed = named["narrow"], named[None]
    written = json.loads(narrow.path.read_text())
    assert written["name"] == "narrow" and narrow.name == "narrow"
    assert narrow.run_id.startswith("narrow-") and unnamed.run_id.startswith("RandomModel-")
    # the run hash is the data's, folds', version's and tests': a name leaves it alone
    assert narrow.run_hash == unnamed.run_hash == named["wide"].run_hash
    assert "name" not in json.loads(unnamed.path.read_text())
    # the same model and settings under a name is another run directory
    assert narrow.path.parent != unnamed.path.parent


def test_a_run_name_must_be_short_printable_text(data, tmp_path):
    runner = EvalRSRunner(data, results_dir=tmp_path, progress=False, verbose=False)
    for bad, rule in ((7, "must be a str"), ("", "1 to 80 printable"),
                      ("a\nb", "1 to 80 printable"), ("x" * 81, "1 to 80 printable")):
        with pytest.raises(ConfigError, match=rule):
            runner.evaluate(RandomModel(), limit=LIMIT, name=bad)
    assert not any(tmp_path.iterdir())  # refused before any run directory


def test_compare_shows_each_run_with_its_name_and_parameters(named):
    cmp = compare([named["narrow"].path.parent, named["wide"].path.parent], n_boot=100)
    frame = cmp.to_frame()
    assert set(frame["name"]) == {"wide"} and set(frame["params"]) == {"seed=2"}
    assert set(frame["model"]) == {"RandomModel"}
    data = cmp.to_dict()
    assert data["baseline"]["name"] == "narrow" and data["baseline"]["params"] == {"seed": 1}
    assert data["runs"][0]["name"] == "wide"
    for width in (80, 200):
        console = Console(width=width, file=io.StringIO(), color_system=None)
        console.print(cmp)
        out = console.file.getvalue()
        assert "narrow (seed=1)" in out and "wide (seed=2)" in out
        assert max(len(line) for line in out.splitlines()) <= width


def test_the_forest_plot_labels_runs_by_name_and_parameters(named):
    runs = [named[n].path.parent for n in ("narrow", "wide", None)]
    fig = forest_plot(compare(runs, n_boot=100))
    labels = {t.get_text() for ax in fig.axes for t in ax.get_yticklabels()}
    assert {"wide (seed=2)", "RandomModel (seed=1)"} <= labels
    assert "narrow (seed=1)" in fig.texts[0].get_text()


@pytest.fixture(scope="module")
def named_report(named, tmp_path_factory):
    """The report of the two named runs (a report of two runs renders for seconds: one render,
    read as files by one test and opened in Chromium by another)."""
    runs = [named["narrow"].path.parent, named["wide"].path.parent]
    return write_report(runs, tmp_path_factory.mktemp("named_report") / "report")


@pytest.mark.slow
def test_report_of_two_runs_adds_the_comparison(named_report):
    path = named_report
    names = sorted(p.name for p in path.parent.iterdir())
    assert "forest.png" in names and len([n for n in names if n.endswith(".png")]) == 7
    # the forest plot rendered at its width (test_report.py reads its figure as an object)
    assert png_size((path.parent / "forest.png").read_bytes())[0] == 750
    page = path.read_text(encoding="utf-8")
    assert len(re.findall(r"""\bsrc\s*=\s*["']([^"']*)["']""", page, flags=re.IGNORECASE)) == 7
    assert "Comparison with the baseline" in page and "p_holm" in page


def test_the_report_page_shows_names_and_parameters(driver, named, named_report):
    runs = [named["narrow"].path.parent, named["wide"].path.parent]
    path = named_report
    driver.get(path.as_uri())
    assert driver.title == "EvalRS report: narrow (seed=1), wide (seed=2)"
    headings = driver.execute_script(
        "return Array.from(document.querySelectorAll('h2')).map(h => h.textContent)")
    assert any(h.startswith("narrow (seed=1)") for h in headings)
    assert any(h.startswith("wide (seed=2)") for h in headings)
    # the comparison table's first column names each row's run
    table = driver.execute_script(
        "const t = Array.from(document.querySelectorAll('table')).find("
        "  t => t.querySelector('th') && t.querySelector('th').textContent === 'run');"
        "return Array.from(t.querySelectorAll('tbody tr')).map("
        "  r => r.querySelector('td').textContent)")
    wide = load_results(runs[1])
    assert table and set(table) == {f"wide (seed=2) [{wide.run_id}]"}
    facts = driver.execute_script(
        "return Array.from(document.querySelectorAll('tr')).filter("
        "  r => r.querySelector('th') && r.querySelector('th').textContent === 'parameters')"
        ".map(r => r.querySelector('td').textContent)")
    assert facts == ["seed=1", "seed=2"]


def test_the_upload_carries_the_name_and_a_payload_without_one_is_read(named):
    payload = submission_payload(named["narrow"].to_dict(), email="a@b.c", participant_id="p")
    assert payload["name"] == "narrow"
    assert read_submission(payload, leaderboard=None).name == "narrow"
    plain = submission_payload(named[None].to_dict(), email="a@b.c", participant_id="p")
    assert "name" not in plain and read_submission(plain, leaderboard=None).name is None
    with pytest.raises(RecordRefused, match="differs from results.name"):
        read_submission({**payload, "name": "other"}, leaderboard=None)


def test_a_named_run_of_a_changed_model_says_so(data, tmp_path):
    from evaluation.errors import RunWarning

    runner = EvalRSRunner(data, results_dir=tmp_path, progress=False, verbose=False, n_boot=0)
    runner.evaluate(RandomModel(seed=1), limit=LIMIT, name="mine")
    with pytest.warns(RunWarning, match="model parameters changed since the run of"):
        runner.evaluate(RandomModel(seed=2), limit=LIMIT, name="mine")


def test_runs_of_the_python_api_and_baselines_show_their_models_parameters(data, tmp_path):
    # no settings: the parameters come from the models themselves, as submission.py's would
    runner = EvalRSRunner(data, results_dir=tmp_path, progress=False, verbose=False,
                          reports=False, n_boot=100)
    popular = runner.evaluate(PopularityModel(data.df_tracks, by="users"), limit=LIMIT)
    random = runner.evaluate(RandomModel(seed=3), limit=LIMIT)
    assert json.loads(random.path.read_text())["model"]["params"] == {"seed": 3}
    assert load_results(popular.path.parent).params == {"by": "users"}
    cmp = compare([popular.path.parent, random.path.parent], n_boot=100)
    assert cmp.to_dict()["baseline"]["params"] == {"by": "users"}
    assert set(cmp.to_frame()["params"]) == {"seed=3"}


def test_the_parameters_given_to_submission_py_win_over_the_models(named):
    # settings.params holds what was asked for: the model's own record does not add to it
    results = json.loads(named["narrow"].path.read_text())
    assert results["settings"]["params"] == {"seed": 1}
    assert load_results(named["narrow"].path.parent).params == {"seed": 1}
