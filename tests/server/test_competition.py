"""The competition file: the example that ships, every rule of the file (a clear ConfigError
naming the file and key), the phases in time, and the check that a run belongs to it."""

from __future__ import annotations

import copy
import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

for _module in ("pydantic", "fastapi", "sqlalchemy"):  # the server extra
    pytest.importorskip(_module, reason="the server extra is not installed (pip install "
                                        ".[server])")

import evaluation  # noqa: E402
from evaluation.challenge import REFERENCES_DIR, load_references  # noqa: E402
from evaluation.contract import run_hash  # noqa: E402
from evaluation.errors import ConfigError, SubmissionRejected  # noqa: E402
from evaluation.server.core import (  # noqa: E402
    load_competition,
    parse_submission,
)
from tests.server._helpers import JAN, UTC, document, phase, toml_text, toml_value, write  # noqa: E402, F401

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "competition.toml"
POPULARITY = REPO / "competition" / "baselines" / "popularity.json"


@pytest.fixture(scope="module")
def example():
    return load_competition(EXAMPLE)


@pytest.fixture(scope="module")
def results() -> dict:
    """The results of a real run (the Popularity baseline's)."""
    return json.loads(POPULARITY.read_text(encoding="utf-8"))["results"]


# --------------------------------------------------------------------------- the example


def test_the_example_competition(example):
    assert example.path == EXAMPLE.resolve()
    assert [p.name for p in example.phases] == ["public", "final"]
    public, final = example.phases
    assert public.is_open(datetime(2026, 6, 1, tzinfo=UTC))
    assert public.closes == datetime(2028, 1, 1, tzinfo=UTC) == final.opens
    assert (public.daily_limit, public.public) == (5, True)
    assert (final.daily_limit, final.public) == (2, False)
    assert public.final_selections == final.final_selections == 2  # the default; given
    assert public.references_name == final.references_name == "synthetic-small"
    assert public.references == load_references("synthetic-small")
    assert [(b.name, b.file.name) for b in example.baselines] == [
        ("Popularity", "popularity.json"), ("Random", "random.json")]
    assert evaluation.__version__ in example.harness_versions, (
        "competition.toml does not accept this harness version: add it to harness_versions and "
        "run `python competition/make_baselines.py`")


@pytest.mark.slow
def test_the_example_is_the_default_dataset(example):
    dataset = evaluation.ChallengeDataset()
    assert example.dataset_fingerprint == dataset.fingerprint
    assert example.fold_params == dataset.fold_params
    assert json.dumps(example.fold_params) == json.dumps(dataset.fold_params)  # types too


def test_the_baselines_are_runs_of_the_competition(example):
    for spec in example.baselines:
        body = spec.file.read_bytes()
        submission = parse_submission(body)
        example.check_run(submission)
        example.check_run(json.loads(body))                    # the submission as a mapping
        example.check_run(json.loads(body)["results"])         # its results alone
        assert spec.load() == submission
        assert submission.results.harness_version == evaluation.__version__, (
            "the baselines were made by another harness version: run "
            "`python competition/make_baselines.py`")


def test_a_results_file_serves_as_a_baseline(tmp_path, example, results):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results), encoding="utf-8")
    spec = type(example.baselines[0])(name="From results", file=path)
    loaded = spec.load()
    assert loaded.run_id == results["run_id"]
    assert loaded.participant_id is None
    example.check_run(loaded)


# --------------------------------------------------------------------------- check_run


def changed(results: dict, change) -> dict:
    data = copy.deepcopy(results)
    change(data)
    return data


def refused(competition, payload) -> str:
    with pytest.raises(SubmissionRejected) as info:
        competition.check_run(payload)
    assert info.value.status == 422
    return info.value.reason


def test_another_dataset_is_other_data(example, results):
    reason = refused(example, changed(results, lambda r: r["dataset"].update(
        fingerprint="ab" * 32)))
    assert reason.startswith("other data: dataset fingerprint abababababababab")
    assert f"the competition's is {example.dataset_fingerprint[:16]}" in reason


@pytest.mark.parametrize("change, expected", [
    (lambda p: p.update(num_folds=2), "fold_params differ in num_folds (2 vs 4)"),
    (lambda p: p.update(num_folds=4.0), "fold_params differ in num_folds (4.0 vs 4)"),
    (lambda p: p.update(seed=7, frac=0.5), "fold_params differ in frac (0.5 vs 0.25), "
                                           "seed (7 vs 42)"),
    (lambda p: p.pop("k_core"), "fold_params differ in k_core (absent vs 10)"),
    (lambda p: p.update(extra=True), "fold_params differ in extra (true vs absent)"),
])
def test_other_fold_parameters_are_other_folds(example, results, change, expected):
    reason = refused(example, changed(results, lambda r: change(r["dataset"]["fold_params"])))
    assert reason.startswith("other folds: ")
    assert expected in reason


def test_a_fold_count_other_than_the_parameters_is_other_folds(example, results):
    reason = refused(example, changed(results, lambda r: r["dataset"].update(num_folds=2)))
    assert "other folds: the run has 2 folds, the competition's fold_params 4" in reason


def test_a_harness_version_not_accepted(example, results):
    reason = refused(example, changed(results, lambda r: r.update(harness_version="0.0.9")))
    assert "harness version 0.0.9 is not accepted (accepted: 0.1.0)" in reason


def test_tests_lacking_a_leaderboard_test(example, results):
    def drop(r):
        r["tests"] = [t for t in r["tests"] if t not in ("MRR", "MRED_GENDER")]
    reason = refused(example, changed(results, drop))
    assert "tests lack MRR, MRED_GENDER" in reason


def test_an_edited_run_hash(example, results):
    reason = refused(example, changed(results, lambda r: r.update(run_hash="0" * 64)))
    assert reason.startswith("run hash does not match its parts")


def test_a_run_hash_made_with_other_parts(example, results):
    # a hash over the right parts but another test list than the one sent
    other = run_hash(example.dataset_fingerprint, example.fold_params,
                     [*results["tests"], "MY_TEST"], results["harness_version"])
    reason = refused(example, changed(results, lambda r: r.update(run_hash=other)))
    assert reason.startswith("run hash does not match its parts")


def test_a_participants_own_tests_are_accepted(example, results):
    # a custom RecList adds tests, which changes the run hash the harness computes
    tests = [*results["tests"], "MY_TEST"]
    data = changed(results, lambda r: r.update(
        tests=tests, run_hash=run_hash(example.dataset_fingerprint, example.fold_params, tests,
                                       results["harness_version"])))
    assert data["run_hash"] != results["run_hash"]
    example.check_run(data)


def test_the_top_level_run_hash_is_checked_too(example, results):
    submission = json.loads(POPULARITY.read_text(encoding="utf-8"))
    submission["run_hash"] = "1" * 64
    assert refused(example, submission).startswith("run hash does not match its parts")


@pytest.mark.parametrize("payload", [None, [], "text", {}, {"dataset": []}])
def test_malformed_payloads_are_refused_not_crashed(example, payload):
    with pytest.raises(SubmissionRejected) as info:
        example.check_run(payload)
    assert info.value.status == 422


# --------------------------------------------------------------------------- phases in time


def test_phases_in_time(tmp_path, example):
    doc = document(example)
    doc["phases"].reverse()  # the file's order does not matter: time order does
    comp = load_competition(write(tmp_path, doc))
    warmup, main = comp.phases
    assert [p.name for p in comp.phases] == ["warmup", "main"]
    second = timedelta(seconds=1)
    assert comp.phase_at(JAN - second) is None
    assert comp.phase_at(JAN) is warmup                              # opens: included
    assert comp.phase_at(JAN + timedelta(days=10) - second) is warmup
    assert comp.phase_at(JAN + timedelta(days=10)) is None           # closes: excluded
    assert comp.phase_at(JAN + timedelta(days=25)) is main
    assert comp.current_phase(JAN - second) is warmup                # before: the first
    assert comp.current_phase(JAN + timedelta(days=15)) is warmup    # between: the last opened
    assert comp.current_phase(JAN + timedelta(days=25)) is main
    assert comp.current_phase(JAN + timedelta(days=99)) is main      # after: the last
    # any offset is the same instant in UTC
    plus2 = timezone(timedelta(hours=2))
    assert comp.phase_at(datetime(2030, 1, 1, 2, 0, tzinfo=plus2)) is warmup
    with pytest.raises(TypeError, match="aware"):
        comp.phase_at(datetime(2030, 1, 5))
    assert comp.phase("main") is main
    with pytest.raises(SubmissionRejected) as info:
        comp.phase("nope")
    assert info.value.status == 404
    assert "no phase 'nope'" in info.value.reason and "['warmup', 'main']" in info.value.reason


def test_offsets_in_the_file_are_read_as_utc(tmp_path, example):
    text = toml_text(document(example)).replace("2030-01-01T00:00:00Z",
                                                "2030-01-01T02:00:00+02:00")
    comp = load_competition(write(tmp_path, text))
    assert comp.phases[0].opens == JAN
    assert comp.phases[0].opens.utcoffset() == timedelta(0)


def test_references_by_path_relative_to_the_file(tmp_path, example, monkeypatch):
    (tmp_path / "refs").mkdir()
    shutil.copy(REFERENCES_DIR / "synthetic-small.json", tmp_path / "refs" / "mine.json")
    doc = document(example)
    doc["phases"][0]["references"] = "refs/mine.json"
    path = write(tmp_path, doc)
    monkeypatch.chdir(REPO)  # not the file's folder
    comp = load_competition(path)
    assert comp.phases[0].references_name == "refs/mine.json"
    assert comp.phases[0].references.path == str(tmp_path / "refs" / "mine.json")
    assert comp.phases[0].references.to_dict() == load_references("synthetic-small").to_dict()


def test_baselines_relative_to_the_file(tmp_path, example):
    (tmp_path / "b").mkdir()
    shutil.copy(POPULARITY, tmp_path / "b" / "pop.json")
    doc = document(example)
    doc["baselines"] = [{"name": "Pop", "file": "b/pop.json"}]
    comp = load_competition(write(tmp_path, doc))
    assert comp.baselines[0].file == tmp_path / "b" / "pop.json"


# --------------------------------------------------------------------------- the file's rules


def _set(path: tuple, value):
    def change(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        if value is _DELETE:
            del target[path[-1]]
        else:
            target[path[-1]] = value
    return change


_DELETE = object()


@pytest.mark.parametrize("change, key, words", [
    (_set(("nmae",), "typo"), "nmae", "correct the spelling"),
    (_set(("phases", 0, "daily_limt"), 3), "phases[0].daily_limt", "correct the spelling"),
    (_set(("dataset", "fingerprnt"), "x"), "dataset.fingerprnt", "correct the spelling"),
    (_set(("name",), _DELETE), "name", "is missing"),
    (_set(("phases", 1, "public"), _DELETE), "phases[1].public", "is missing"),
    (_set(("name",), ""), "name", "non-empty string"),
    (_set(("harness_versions",), []), "harness_versions", "non-empty list"),
    (_set(("harness_versions",), "0.1.0"), "harness_versions", "non-empty list"),
    (_set(("dataset", "fingerprint"), "F42C"), "dataset.fingerprint", "64-character"),
    (_set(("dataset", "fold_params"), 4), "dataset.fold_params", "must be a table"),
    (_set(("dataset", "fold_params", "start"), datetime(2020, 1, 1, tzinfo=UTC)),
     "dataset.fold_params.start", "as in the run's results.json"),
    (_set(("phases",), []), "phases", "must be one or more"),
    (_set(("phases", 1, "name"), "warmup"), "phases", "distinct names; 'warmup' appears 2"),
    (_set(("phases", 1, "name"), "a b/c"), "phases[1].name", "appears in URLs"),
    (_set(("phases", 0, "closes"), JAN), "phases[0].closes", "must be after opens"),
    (_set(("phases", 0, "closes"), JAN + timedelta(days=21)), "phases",
     "must not overlap: 'warmup' closes"),
    (_set(("phases", 0, "daily_limit"), 0), "phases[0].daily_limit", "integer >= 1"),
    (_set(("phases", 0, "daily_limit"), 1.5), "phases[0].daily_limit", "integer >= 1"),
    (_set(("phases", 0, "daily_limit"), True), "phases[0].daily_limit", "integer >= 1"),
    (_set(("phases", 0, "final_selections"), 0), "phases[0].final_selections", "from 1 to 100"),
    (_set(("phases", 0, "final_selections"), "2"), "phases[0].final_selections", "from 1 to 100"),
    (_set(("phases", 0, "final_selections"), True), "phases[0].final_selections",
     "from 1 to 100"),
    (_set(("phases", 0, "public"), "yes"), "phases[0].public", "true or false"),
    (_set(("phases", 0, "references"), "no-such-references"), "phases[0].references",
     "cannot be loaded"),
    (_set(("phases", 0, "references"), "synthetic-tiny"), "phases[0].references",
     "computed on other data"),
    (_set(("baselines",), [{"name": "Gone", "file": "missing.json"}]), "baselines[0].file",
     "make_baselines.py"),
    (_set(("baselines",), [{"name": "P", "file": str(POPULARITY)},
                           {"name": "P", "file": str(POPULARITY)}]),
     "baselines", "distinct names; 'P' appears 2"),
    (_set(("baselines",), [{"name": "P", "path": str(POPULARITY)}]), "baselines[0].path",
     "correct the spelling"),
])
def test_each_rule_names_the_file_and_key(tmp_path, example, change, key, words):
    doc = document(example)
    change(doc)
    path = write(tmp_path, doc)
    with pytest.raises(ConfigError) as info:
        load_competition(path)
    message = str(info.value)
    assert message.startswith(f"competition file {str(path)!r}: {key} ")
    assert words in message


def test_a_local_time_is_refused(tmp_path, example):
    text = toml_text(document(example)).replace("2030-01-01T00:00:00Z", "2030-01-01T00:00:00")
    with pytest.raises(ConfigError, match=r"phases\[0\]\.opens must be a TOML offset "
                                          r"date-time, got 2030-01-01T00:00:00\. Fix: write "
                                          r"e\.g\. opens = 2026-01-01T00:00:00Z"):
        load_competition(write(tmp_path, text))


def test_a_baseline_of_another_competition_is_refused(tmp_path, example):
    doc = document(example)
    doc["harness_versions"] = ["9.9.9"]
    doc["baselines"] = [{"name": "Popularity", "file": str(POPULARITY)}]
    with pytest.raises(ConfigError, match=r"baselines\[0\]\.file .* is no run the competition "
                                          r"accepts: harness version 0\.1\.0 is not accepted "
                                          r"\(accepted: 9\.9\.9\).*make_baselines\.py"):
        load_competition(write(tmp_path, doc))


@pytest.mark.parametrize("text, words", [
    (None, "does not exist"),
    ("name = ", "is not valid TOML"),
    (b"\xff\xfe", "cannot be read as UTF-8 text"),
])
def test_an_unreadable_file(tmp_path, text, words):
    path = tmp_path / "competition.toml"
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8")
    elif isinstance(text, bytes):
        path.write_bytes(text)
    with pytest.raises(ConfigError, match=words) as info:
        load_competition(path)
    assert str(path) in str(info.value)


# --------------------------------------------------------------------------- repeated items


def test_a_competition_can_refuse_runs_that_had_repeated_items(tmp_path, example, results):
    doc = document(example)
    assert load_competition(write(tmp_path, doc)).repeated_items == "first"
    strict = load_competition(write(tmp_path, {**doc, "repeated_items": "error"}))
    assert strict.repeated_items == "error" and strict.target.repeated_items == "error"
    # the baseline's lists repeat nothing; results made before the count was recorded read
    # as none
    assert all(f["repeated_lists"] == 0 for f in results["folds"])
    strict.check_run(results)
    older = changed(results, lambda r: [f.pop("repeated_lists") for f in r["folds"]])
    strict.check_run(older)
    some = changed(results, lambda r: (r["folds"][1].update(repeated_lists=5),
                                       r["folds"][3].update(repeated_lists=2)))
    reason = refused(strict, some)
    assert reason.startswith("repeated items: 7 of the run's lists recommend the same track "
                             "more than once, which this competition refuses")
    assert "pad with -1" in reason
    # the count is no part of the run hash: the same run is accepted where they are scored
    load_competition(write(tmp_path, doc)).check_run(some)
    with pytest.raises(ConfigError, match=r"repeated_items must be one of first, error, "
                                          r"got \"last\".*Fix: write repeated_items"):
        load_competition(write(tmp_path, {**doc, "repeated_items": "last"}))


# --------------------------------------------------------------------------- the board's reading


def test_the_board_settings_default_and_read(tmp_path, example):
    from evaluation.server.core import BoardSettings
    assert load_competition(write(tmp_path, document(example))).board == BoardSettings()
    doc = document(example)
    doc["board"] = {"min_difference": 0.005, "level": 0.9, "n_boot": 500, "seed": 7,
                    "tie_break": "cost"}
    doc["phases"][1]["min_difference"] = 0.01
    comp = load_competition(write(tmp_path, doc))
    assert comp.board == BoardSettings(min_difference=0.005, level=0.9, n_boot=500, seed=7,
                                       tie_break="cost")
    assert [comp.board.for_phase(p.min_difference) for p in comp.phases] == [0.005, 0.01]
    assert comp.phases[0].min_difference is None


@pytest.mark.parametrize("table, key, words", [
    ({"min_difference": -0.1}, "board.min_difference", "number >= 0"),
    ({"min_difference": float("nan")}, "board.min_difference", "number >= 0"),
    ({"min_difference": "0.01"}, "board.min_difference", "number >= 0"),
    ({"level": 1.0}, "board.level", "from 0.5 up to"),
    ({"level": 0.2}, "board.level", "from 0.5 up to"),
    ({"n_boot": 10}, "board.n_boot", "from 100 to 10000"),
    ({"n_boot": 1000.0}, "board.n_boot", "from 100 to 10000"),
    ({"seed": -1}, "board.seed", "integer >= 0"),
    ({"tie_break": "memory"}, "board.tie_break", "must be \"score\""),
    ({"min_diff": 0.1}, "board.min_diff", "correct the spelling"),
])
def test_each_board_rule_names_the_file_and_key(tmp_path, example, table, key, words):
    doc = document(example)
    doc["board"] = table
    path = write(tmp_path, doc)
    with pytest.raises(ConfigError) as info:
        load_competition(path)
    assert str(info.value).startswith(f"competition file {str(path)!r}: {key} ")
    assert words in str(info.value) and "Fix:" in str(info.value)


def test_a_phase_min_difference_is_checked(tmp_path, example):
    doc = document(example)
    doc["phases"][0]["min_difference"] = True
    path = write(tmp_path, doc)
    with pytest.raises(ConfigError, match=r"phases\[0\]\.min_difference must be a number >= 0"):
        load_competition(path)
