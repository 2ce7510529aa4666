"""submission.py end to end, in fresh processes: results, determinism, upload settings, model
parameters, a custom RecList, references, and eligibility relative to the competition."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from evaluation import ChallengeDataset
from evaluation.contract import CompetitionTarget, load_competition_target
from evaluation.errors import ConfigError
from evaluation.participant import content_hash
from evaluation.runner import (
    OFFICIAL_COMPETITION,
    EvalRSRunner,
    check_model_params,
    collect_params,
    import_reclist,
    load_params_file,
    parse_param,
)
from tests._competition_files import write_competition
from tests._script_runner import run_script

REPO = Path(__file__).resolve().parents[1]
COMPETITION = "competition-tiny.toml"


@pytest.fixture(scope="module")
def tiny():
    return ChallengeDataset(scale="tiny")


def run_submission(workdir: Path, *args: str, env_file: str | None = None,
                   cwd: Path | None = None, interpreter: bool = False):
    """Run a copy of submission.py + submission/ in ``workdir`` (so upload.env is local); a
    ``submission/`` already there (a test's own model) is kept. ``cwd``: the folder it is
    started from (default: ``workdir``). The run is a process of its own, forked from one
    that imported the third-party libraries once (``tests/_script_runner.py``: about a second
    of CPU less per run); ``interpreter``: a new interpreter, as a participant starts it."""
    shutil.copy(REPO / "submission.py", workdir / "submission.py")
    if not (workdir / "submission").exists():
        shutil.copytree(REPO / "submission", workdir / "submission",
                        ignore=shutil.ignore_patterns("__pycache__"))
    if env_file is not None:
        (workdir / "upload.env").write_text(env_file)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for name in ("EMAIL", "PARTICIPANT_ID", "UPLOAD_URL", "UPLOAD_TOKEN"):
        env.pop(name, None)
    argv = ["--scale", "tiny", "--no-progress", *args]
    if interpreter:
        return subprocess.run([sys.executable, str(workdir / "submission.py"), *argv],
                              cwd=cwd or workdir, env=env, capture_output=True, text=True,
                              timeout=300)
    with tempfile.TemporaryDirectory() as logs:
        done = run_script(workdir / "submission.py", argv, cwd=cwd or workdir, logs=Path(logs),
                          timeout=300, env=env)
    assert done.exit_status is not None, f"submission.py {argv} ran past 300 s"
    return subprocess.CompletedProcess(argv, done.exit_status, done.stdout, done.stderr)


def results_of(workdir: Path) -> dict:
    (path,) = (workdir / "results").glob("*/results.json")
    return json.loads(path.read_text())


def all_results(workdir: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((workdir / "results").glob("*/results.json"))]


def stable(results: dict) -> dict:
    out = {k: v for k, v in results.items() if k not in ("runtime", "environment")}
    out["folds"] = [{k: v for k, v in f.items() if k != "runtime"} for f in results["folds"]]
    return out


def with_competition(workdir: Path, dataset) -> Path:
    """``workdir`` holding a competition file for ``dataset``'s data and folds."""
    workdir.mkdir(parents=True, exist_ok=True)
    write_competition(workdir / COMPETITION, dataset)
    return workdir


@pytest.fixture(scope="module")
def competition_run(tmp_path_factory, tiny) -> tuple[Path, subprocess.CompletedProcess]:
    """``submission.py --competition FILE`` on the tiny data's competition, run once for the
    tests that read it (its folder and the finished process). Its reports (charts drawn with
    matplotlib: most of a run's CPU) are asked of a smaller run, in
    ``test_quiet_prints_the_score_line_only_and_verbose_the_details``."""
    workdir = with_competition(tmp_path_factory.mktemp("competition-run"), tiny)
    return workdir, run_submission(workdir, "--competition", COMPETITION)


@pytest.fixture(scope="module")
def quiet_run(tmp_path_factory) -> tuple[Path, Path, subprocess.CompletedProcess]:
    """A quick ``--quiet`` run of a checkout (its folder) started from another folder (that
    one), and the finished process."""
    root = tmp_path_factory.mktemp("quiet-run")
    checkout, elsewhere = root / "checkout", root / "elsewhere"
    checkout.mkdir()
    elsewhere.mkdir()
    return checkout, elsewhere, run_submission(checkout, "--limit", "20", "--num-folds", "1",
                                               "--quiet", cwd=elsewhere)


@pytest.mark.slow
def test_submission_end_to_end(competition_run, tiny):
    workdir, proc = competition_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = results_of(workdir)
    assert res["model"]["name"] == "MyModel"
    assert len(res["folds"]) == 4 and res["eligible_for_upload"], res["not_eligible_because"]
    assert res["competition"]["fingerprint"] == tiny.fingerprint
    assert res["leaderboard_score"] is not None  # the shipped synthetic-tiny references
    assert f"LEADERBOARD SCORE: {res['leaderboard_score']:.4g}" in proc.stdout
    assert "SliceMissRates(" not in proc.stdout  # reclist's own output is --verbose only
    run_dir = workdir / "results" / res["run_id"]
    assert run_dir.is_dir() and not list(run_dir.glob("reclist/**/report.json"))  # no --reports


def test_submission_is_identical_across_processes_and_saves_uploads(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    flags = ("--num-folds", "2", "--limit", "40", "--seed", "0")
    env_file = "EMAIL=me@example.com\nPARTICIPANT_ID=team42\nUPLOAD_URL=\n"
    # a new interpreter and a forked process: string hashing (set order) differs between them
    first = run_submission(a, *flags, "--upload", env_file=env_file, interpreter=True)
    assert first.returncode == 4, first.stderr[-3000:]  # upload asked, run not eligible
    second = run_submission(b, *flags)
    assert second.returncode == 0, second.stderr[-3000:]
    ra, rb = results_of(a), results_of(b)
    assert ra["run_hash"] == rb["run_hash"] and ra["run_id"] == rb["run_id"]
    assert stable(ra) == stable(rb)  # every number, to the last bit
    assert len(ra["folds"]) == 2 and all(f["n_users"] == 40 for f in ra["folds"])
    assert ra["seed"] == 0 and ra["dataset"]["fold_params"]["seed"] == 0
    assert not ra["eligible_for_upload"]
    (sub,) = (a / "results").glob("*/submission.json")
    saved = json.loads(sub.read_text())
    assert saved["email"] == "me@example.com" and saved["participant_id"] == "team42"
    assert "not eligible" in first.stdout


def test_quiet_prints_the_score_line_only_and_verbose_the_details(tmp_path, quiet_run, capsys,
                                                                 submission_script):
    _, elsewhere, quiet = quiet_run
    assert quiet.returncode == 0, quiet.stderr[-3000:]
    (res,) = all_results_in(elsewhere / "results")
    assert quiet.stdout.splitlines() == [
        f"LEADERBOARD SCORE: {res['leaderboard_score']:.4g}  95% CI "
        f"[{res['confidence_intervals']['phase2_score'][0]:.4g}, "
        f"{res['confidence_intervals']['phase2_score'][1]:.4g}]"]
    assert quiet.stderr == ""  # no progress bars either
    verbose = run_submission(tmp_path, "--limit", "20", "--num-folds", "2", "--verbose",
                             "--reports", "--fresh")
    assert verbose.returncode == 0, verbose.stderr[-3000:]
    assert "MRED_COUNTRY:SliceMissRates(" in verbose.stdout  # reclist's table and reprs
    assert "Seconds per stage" in verbose.stdout
    # --reports: reclist's report of each fold in the run's directory
    res = results_of(tmp_path)
    reports = sorted((tmp_path / "results" / res["run_id"]).glob("reclist/fold_*/**/report.json"))
    assert len(reports) == 2 and {r.relative_to(tmp_path / "results" / res["run_id"]).parts[1]
                                  for r in reports} == {"fold_0", "fold_1"}
    # the parser refuses both before anything runs (the status of a usage error)
    capsys.readouterr()
    with pytest.raises(SystemExit) as both:
        submission_script.main(["--quiet", "--verbose"])
    assert both.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


def test_results_go_to_the_results_folder_of_the_current_folder(quiet_run, capsys,
                                                                submission_script):
    # as --help says ("default: ./results"): started from elsewhere, the run's directory is in
    # the folder it was started from, not next to submission.py
    checkout, elsewhere, done = quiet_run
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(list((elsewhere / "results").glob("*/results.json"))) == 1
    assert not (checkout / "results").exists()
    capsys.readouterr()
    with pytest.raises(SystemExit) as helped:
        submission_script.main(["--help"])
    assert helped.value.code == 0
    assert "(default: results/ in the current folder)" in " ".join(
        capsys.readouterr().out.split())


def test_submission_reports_bad_arguments_without_a_traceback(tmp_path, monkeypatch, capsys,
                                                             submission_script):
    # in this process (the other tests' runs check the statuses of fresh processes): the
    # script puts its folder first on sys.path, given back after the test
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    capsys.readouterr()
    status = submission_script.main(["--scale", "tiny", "--no-progress", "--limit", "-3"])
    err = capsys.readouterr().err
    assert status == 2
    assert "error:" in err and "limit" in err
    assert "Traceback" not in err


# --------------------------------------------------------------------------- model parameters


@pytest.mark.parametrize(("text", "expected"), [
    ("factors=64", ("factors", 64)),
    ("reg=0.05", ("reg", 0.05)),
    ("reg=1e-3", ("reg", 0.001)),
    ("use_gpu=true", ("use_gpu", True)),
    ("layers=[64, 32]", ("layers", [64, 32])),
    ('name="two words"', ("name", "two words")),
    ("metric=cosine", ("metric", "cosine")),        # a bare word is a string
    ("path=data/x.npy", ("path", "data/x.npy")),
    (" alpha = -2 ", ("alpha", -2)),
    ("empty=''", ("empty", "")),
])
def test_param_values_are_toml(text, expected):
    value = parse_param(text)
    assert value == expected and type(value[1]) is type(expected[1])


@pytest.mark.parametrize(("text", "message"), [
    ("factors", "expected NAME=VALUE"),
    ("=3", "expected NAME=VALUE"),
    ("2x=3", "expected NAME=VALUE"),
    ("layers=[64, 32", "is not a value"),
    ("x=1 2", "is not a value"),
    ("x=", "is not a value"),
])
def test_bad_params_are_refused_naming_them(text, message):
    with pytest.raises(ConfigError, match=message) as err:
        parse_param(text)
    assert repr(text) in str(err.value)


def test_params_file_toml_and_json_and_override_order(tmp_path):
    toml = tmp_path / "params.toml"
    toml.write_text('factors = 32\nreg = 0.1\nmetric = "dot"\n')
    js = tmp_path / "params.json"
    js.write_text('{"factors": 16, "layers": [8, 4]}')
    assert load_params_file(toml) == {"factors": 32, "reg": 0.1, "metric": "dot"}
    assert load_params_file(js) == {"factors": 16, "layers": [8, 4]}
    # --param wins over the file, and the file's other values stay
    assert collect_params(["factors=64", "extra=true"], toml) == {
        "factors": 64, "reg": 0.1, "metric": "dot", "extra": True}
    assert collect_params([], None) == {}
    with pytest.raises(ConfigError, match="given twice"):
        collect_params(["a=1", "a=2"])


@pytest.mark.parametrize(("name", "content", "message"), [
    ("missing.toml", None, "does not exist"),
    ("bad.toml", "factors = = 3", "is not valid TOML"),
    ("bad.json", "{factors: 3}", "is not valid JSON"),
    ("list.json", "[1, 2]", "must hold an object"),
    ("key.json", '{"two words": 1}', "is not a Python identifier"),
])
def test_bad_params_files_name_the_file(tmp_path, name, content, message):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=message) as err:
        load_params_file(path)
    assert name in str(err.value)


class _Strict:
    def __init__(self, items=None, top_k=100, factors=8, *, reg=0.0):
        self.factors, self.reg = factors, reg


class _Open:
    def __init__(self, items=None, top_k=100, **kwargs):
        self.kwargs = kwargs


def test_constructor_parameters_are_checked_against_its_signature():
    check_model_params(_Strict, {"factors": 64, "reg": 0.1}, reserved=("items", "top_k"))
    check_model_params(_Open, {"anything": 1}, reserved=("items", "top_k"))
    with pytest.raises(ConfigError) as err:
        check_model_params(_Strict, {"factors": 64, "facotrs": 3}, reserved=("items", "top_k"))
    text = str(err.value)
    assert "--param facotrs" in text and "factors, reg" in text and "items" not in text
    with pytest.raises(ConfigError, match="the harness sets 'top_k' itself"):
        check_model_params(_Open, {"top_k": 10}, reserved=("items", "top_k"))


def test_params_reach_the_constructor_the_fingerprint_and_the_run_key(tmp_path, tiny):
    work = tmp_path / "w"
    work.mkdir()
    (work / "params.toml").write_text("min_plays = 2\nexclude_heard = false\n")
    flags = ("--num-folds", "2", "--limit", "20")
    first = run_submission(work, *flags, "--params-file", "params.toml", "--param",
                           "min_plays=64")
    assert first.returncode == 0, first.stderr[-3000:]
    second = run_submission(work, *flags, "--params-file", "params.toml", "--param",
                            "min_plays=65")
    assert second.returncode == 0, second.stderr[-3000:]
    runs = {r["settings"]["params"]["min_plays"]: r for r in all_results(work)}
    assert sorted(runs) == [64, 65]  # two run directories: no fold of one reused by the other
    assert runs[64]["run_id"] != runs[65]["run_id"]
    assert runs[64]["settings"] == {"params": {"min_plays": 64, "exclude_heard": False},
                                    "reclist": None,
                                    "references": "auto", "competition": None}
    # the constructor got them: the fingerprint's params are those of MyModel(..., **params)
    sys.path.insert(0, str(REPO))
    try:
        from submission.MyModel import MyModel
    finally:
        sys.path.remove(str(REPO))
    for min_plays, res in runs.items():
        model = MyModel(items=tiny.df_tracks, top_k=100, min_plays=min_plays, exclude_heard=False)
        assert res["model"]["fingerprint"]["params"]["sha256"] == \
            content_hash(dict(vars(model)))["sha256"]
    assert runs[64]["model"]["fingerprint"]["params"] != runs[65]["model"]["fingerprint"]["params"]
    # run.json records the settings too
    run_json = json.loads((work / "results" / runs[64]["run_id"] / "run.json").read_text())
    assert run_json["settings"] == runs[64]["settings"]


def test_a_parameter_the_model_does_not_take_is_an_error_naming_it(tmp_path):
    work = tmp_path / "w"
    shutil.copytree(REPO / "submission", work / "submission",
                    ignore=shutil.ignore_patterns("__pycache__"))
    # the template names its parameters (no **kwargs): a typo cannot pass silently
    proc = run_submission(work, "--param", "min_pays=64", "--limit", "5")
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "--param min_pays" in proc.stderr
    assert "its parameters: min_plays, exclude_heard" in proc.stderr
    assert "Traceback" not in proc.stderr
    # (a value that is not TOML takes the same way out: test_bad_params_are_refused_naming_them)
    assert not (work / "results").exists() or not list((work / "results").glob("*/results.json"))


# --------------------------------------------------------------------------- RecList, references

_RECLIST = '''
from reclist.charts import CHART_TYPE
from reclist.reclist import rec_test

from evaluation import EvalRSRecList


class MyRecList(EvalRSRecList):
    @rec_test(test_type="HIT_RATE_AT_10", display_type=CHART_TYPE.SCALAR)
    def hit_rate_at_10(self):
        return float(((self.ranks > 0) & (self.ranks <= 10)).mean())


class NotOne:
    pass
'''


def test_reclist_option_imports_from_the_submission_folder(tmp_path):
    work = tmp_path / "w"
    work.mkdir()
    (work / "myreclist.py").write_text(_RECLIST)
    ok = run_submission(work, "--reclist", "myreclist:MyRecList", "--num-folds", "2",
                        "--limit", "30")
    assert ok.returncode == 0, ok.stderr[-3000:]
    res = results_of(work)
    assert "HIT_RATE_AT_10" in res["tests"] and res["settings"]["reclist"] == "myreclist:MyRecList"
    for f in res["folds"]:
        assert 0 <= f["tests"]["HIT_RATE_AT_10"] <= f["tests"]["HIT_RATE"]
    # A bad --reclist is a usage error (status 2, the reason, no traceback). Which reason each
    # bad spec gets is import_reclist's, checked in process below: one process suffices here.
    bad = run_submission(work, "--reclist", "myreclist:NotOne", "--limit", "5")
    assert bad.returncode == 2, bad.stderr[-2000:]
    assert "is not a subclass of evaluation.EvalRSRecList" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_import_reclist_in_process(tmp_path, monkeypatch):
    (tmp_path / "reclist_mod_for_test.py").write_text(_RECLIST)
    monkeypatch.syspath_prepend(str(tmp_path))
    cls = import_reclist("reclist_mod_for_test:MyRecList")
    assert cls.__name__ == "MyRecList"
    with pytest.raises(ConfigError, match="not a subclass"):
        import_reclist("json:JSONDecoder")
    for spec, message in (("nomodule:MyRecList", "no module 'nomodule'"),
                          ("reclist_mod_for_test:Missing", "has no 'Missing'"),
                          ("reclist_mod_for_test:NotOne",
                           "is not a subclass of evaluation.EvalRSRecList"),
                          ("reclist_mod_for_test.MyRecList", "expected module:Class")):
        with pytest.raises(ConfigError) as err:
            import_reclist(spec)
        assert message in str(err.value) and repr(spec) in str(err.value), spec


def test_references_option_is_used_and_recorded(tmp_path):
    work = tmp_path / "w"
    work.mkdir()
    refs = REPO / "evaluation" / "challenge" / "references" / "synthetic-tiny.json"
    shutil.copy(refs, work / "my-refs.json")
    proc = run_submission(work, "--references", "my-refs.json", "--num-folds", "2",
                          "--limit", "20")
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = results_of(work)
    assert res["references"]["note"] == "given"
    assert res["references"]["values"]["dataset"] == json.loads(refs.read_text())["dataset"]
    assert res["leaderboard_score"] is not None
    assert res["settings"]["references"] == "my-refs.json"
    missing = run_submission(work, "--references", "absent.json", "--limit", "5")
    assert missing.returncode == 2 and "absent.json" in missing.stderr


# --------------------------------------------------------------------------- eligibility


def test_eligibility_is_relative_to_the_competition(tmp_path, tiny, competition_run):
    """Default: the official board (lfm data only); --competition FILE: that file's data."""
    work = with_competition(tmp_path / "w", tiny)
    # another board's data: the repository's example competition (the synthetic data at scale
    # "small", named by its pinned fingerprint: that data need not be generated here)
    example = REPO / "competition.toml"
    small = load_competition_target(example)
    assert small.dataset_options()["scale"] == "small"
    official = run_submission(work, "--results-dir", "official")
    assert official.returncode == 0, official.stderr[-3000:]
    (res,) = all_results_in(work / "official")
    assert not res["eligible_for_upload"]
    (why,) = res["not_eligible_because"]
    assert why.startswith("the data is 'synthetic:tiny:seed42', not the official challenge "
                          "data ('lfm'")
    assert res["competition"]["name"] == OFFICIAL_COMPETITION.name
    # the summary says why
    assert "not the official challenge data" in " ".join(official.stdout.split())
    # the competition of the tiny data: the same data and folds, eligible
    ours_folder, ours = competition_run  # the same command in a folder of its own
    assert ours.returncode == 0, ours.stderr[-3000:]
    (res,) = all_results_in(ours_folder / "results")
    assert res["eligible_for_upload"] and res["not_eligible_because"] == []
    assert res["competition"]["path"] == COMPETITION
    # a competition on other data: the tiny run is not eligible, and says which data
    other = run_submission(work, "--competition", str(example), "--scale", "tiny",
                           "--results-dir", "other")
    assert other.returncode == 0, other.stderr[-3000:]
    (res,) = all_results_in(work / "other")
    assert not res["eligible_for_upload"]
    assert any("is not the competition's" in r and small.fingerprint[:12] in r
               for r in res["not_eligible_because"])


def test_competition_supplies_the_folds_unless_given(tmp_path, tiny):
    """The competition's fold parameters are the defaults; a flag that changes them makes the
    run ineligible, with the parameter named."""
    work = with_competition(tmp_path / "w", tiny)
    proc = run_submission(work, "--competition", COMPETITION, "--seed", "7", "--limit", "10")
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = results_of(work)
    assert res["dataset"]["fold_params"]["seed"] == 7 and res["dataset"]["num_folds"] == 4
    assert any(r.startswith("the folds differ from competition 'test board''s in seed (7 vs 42)")
               for r in res["not_eligible_because"])


def all_results_in(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*/results.json"))]


def test_competition_target_reads_the_file_and_judges_runs(tmp_path, tiny):
    path = write_competition(tmp_path / "c.toml", tiny)
    target = load_competition_target(path)
    assert target.fingerprint == tiny.fingerprint and target.fold_params == tiny.fold_params
    assert target.dataset_options() == {**{k: v for k, v in tiny.fold_params.items()
                                           if k != "protocol"},
                                        "source": "synthetic", "scale": "tiny"}
    info = {"source": "synthetic:tiny:seed42", "fingerprint": tiny.fingerprint,
            "fold_params": tiny.fold_params}
    assert target.not_eligible_because(info, target.harness_versions[0]) == []
    assert "harness version 9.9 is not one" in target.not_eligible_because(info, "9.9")[0]
    # the repository's example: the synthetic small data
    example = load_competition_target(REPO / "competition.toml")
    assert example.dataset_options()["scale"] == "small"
    # the official board: recognised by the source, with the default folds
    lfm = {"source": "lfm", "fingerprint": "0" * 64, "fold_params": tiny.fold_params}
    assert OFFICIAL_COMPETITION.not_eligible_because(lfm, "0.1.0") == []


@pytest.mark.parametrize(("content", "message"), [
    (None, "does not exist"),
    ("name = ", "is not valid TOML"),
    ('name = "x"\nharness_versions = ["0.1.0"]\n', "dataset.fingerprint is missing"),
    ('harness_versions = ["0.1.0"]\n[dataset]\nfingerprint = "ab"\n[dataset.fold_params]\n',
     "name is missing"),
    ('name = "x"\n[dataset]\nfingerprint = "ab"\n[dataset.fold_params]\n',
     "harness_versions is missing"),
])
def test_bad_competition_files_name_the_file_and_key(tmp_path, content, message):
    path = tmp_path / "comp.toml"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=message) as err:
        load_competition_target(path)
    assert "comp.toml" in str(err.value)


def test_runner_takes_a_competition_file_or_target(tmp_path, tiny):
    path = write_competition(tmp_path / "c.toml", tiny)
    runner = EvalRSRunner(tiny, results_dir=tmp_path / "r", competition=path)
    assert runner.competition.fingerprint == tiny.fingerprint
    target = CompetitionTarget(name="t", source="x", fingerprint=None, fold_params={})
    assert EvalRSRunner(tiny, results_dir=tmp_path / "r", competition=target).competition \
        is target
    assert EvalRSRunner(tiny, results_dir=tmp_path / "r").competition is OFFICIAL_COMPETITION
    with pytest.raises(ConfigError, match="competition must be None"):
        EvalRSRunner(tiny, results_dir=tmp_path / "r", competition=42)
