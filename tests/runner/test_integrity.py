"""Run integrity: model fingerprints, verified resume, frames a model cannot change, inputs."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evaluation.baselines import PopularityModel
from evaluation.challenge import LEADERBOARD_TESTS
from evaluation.errors import ConfigError
from evaluation.runner import CHECKSUMS_FILE, EvalRSRunner, RunWarning, model_fingerprint
from tests._script_runner import run_script
from tests.runner._runs import comparable

REPO = Path(__file__).resolve().parents[2]
# the models below change frames in place on purpose (pandas 3.1 deprecates ``inplace=``)
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword")


def fresh_tiny():
    from evaluation.dataset import ChallengeDataset

    return ChallengeDataset(source="synthetic", scale="tiny")


def make_runner(dataset, results_dir, **kw) -> EvalRSRunner:
    options = dict(results_dir=results_dir, progress=False, verbose=False, reports=False,
                   n_boot=0)
    options.update(kw)
    return EvalRSRunner(dataset, **options)


class Counting(PopularityModel):
    """Popularity that counts its trainings (the list is empty when evaluate starts)."""

    def __init__(self, top_k=100, by="plays"):
        super().__init__(top_k=top_k, by=by)
        self.trained = []

    def train(self, train_df, **kwargs):
        self.trained.append(len(train_df))
        return super().train(train_df, **kwargs)


# --------------------------------------------------------------------------- fingerprints


class WithState(PopularityModel):
    def __init__(self, weights, table, lock=None):
        super().__init__()
        self.weights = weights
        self.table = table
        self.lock = lock


def test_fingerprint_hashes_arrays_and_frames_by_content():
    big = np.zeros(5000)
    edited = big.copy()
    edited[2500] = 1.0  # the repr of both arrays is the same: "[0. 0. 0. ... 0. 0. 0.]"
    assert repr(big) == repr(edited)
    table = pd.DataFrame({"a": np.arange(3000), "s": [f"x{i}" for i in range(3000)]})
    a = model_fingerprint(WithState(big, table), {})
    same = model_fingerprint(WithState(big.copy(), table.copy()), {})
    other = model_fingerprint(WithState(edited, table), {})
    table2 = table.copy()
    table2.loc[1500, "s"] = "changed"
    other_table = model_fingerprint(WithState(big, table2), {})
    assert a["sha256"] == same["sha256"]
    assert a["params"]["sha256"] != other["params"]["sha256"]
    assert a["params"]["sha256"] != other_table["params"]["sha256"]
    assert a["code"] == other["code"] and a["train_kwargs"] == other["train_kwargs"]
    assert len({a["sha256"], other["sha256"], other_table["sha256"]}) == 3
    assert a["class"] == f"{WithState.__module__}.WithState"
    assert a["params"]["not_content_hashed"] == []
    kw = model_fingerprint(WithState(big, table), {"w": edited})
    assert kw["train_kwargs"]["sha256"] != model_fingerprint(
        WithState(big, table), {"w": big})["train_kwargs"]["sha256"]
    assert kw["params"] == a["params"]


def test_fingerprint_of_values_joblib_cannot_hash_says_so(tmp_path):
    with open(tmp_path / "log.txt", "w") as fh:
        fp = model_fingerprint(WithState(np.ones(3), None, lock=threading.Lock()),
                               {"log": fh, "n": 3})
        again = model_fingerprint(WithState(np.ones(3), None, lock=threading.Lock()),
                                  {"log": fh, "n": 3})
    assert fp["sha256"] == again["sha256"]  # a new lock, the same description
    assert any(n.startswith("lock ") for n in fp["params"]["not_content_hashed"])
    assert any(n.startswith("log ") for n in fp["train_kwargs"]["not_content_hashed"])
    assert not any(n.startswith("n ") for n in fp["train_kwargs"]["not_content_hashed"])


FINGERPRINT_SCRIPT = '''
import json, sys
import numpy as np, pandas as pd
from evaluation.runner import model_fingerprint
from evaluation.baselines import PopularityModel

class Model(PopularityModel):
    def __init__(self):
        super().__init__()
        self.emb = np.arange(10000, dtype=np.float32).reshape(100, 100)
        self.meta = {"names": {"b", "a", "c"}, "frame": pd.DataFrame({"t": ["x", "y", None]})}

print(json.dumps(model_fingerprint(Model(), {"items": pd.DataFrame({"s": ["p", "q"]}),
                                             "tags": {"z", "y"}})))
'''


def test_fingerprint_is_the_same_in_two_processes(tmp_path):
    script = tmp_path / "fp.py"
    script.write_text(FINGERPRINT_SCRIPT)
    # different string hashing (set order differs between them): a process forked from one
    # started with this process's PYTHONHASHSEED (random when unset), and a new interpreter
    # with another one
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    forked = run_script(script, [], cwd=tmp_path, logs=tmp_path, timeout=120, env=env)
    assert forked.exit_status == 0, forked.stderr[-3000:]
    seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    fresh = subprocess.run([sys.executable, str(script)], env={**env, "PYTHONHASHSEED": seed},
                           check=True, capture_output=True, text=True).stdout
    outs = [json.loads(forked.stdout), json.loads(fresh)]
    assert outs[0] == outs[1]
    assert outs[0]["code"]["classes"][0]["method"] == "source"


def _notebook_class(body: str) -> type:
    """A class defined the way a notebook cell defines it: no source file to read."""
    namespace = {"__name__": "__main__"}
    code = textwrap.dedent(f"""
        from evaluation.baselines import PopularityModel

        class NotebookModel(PopularityModel):
            def predict(self, user_ids):
                {body}
                return super().predict(user_ids)
    """)
    exec(compile(code, "<cell>", "exec"), namespace)
    return namespace["NotebookModel"]


def test_fingerprint_falls_back_to_byte_code_without_source():
    a = model_fingerprint(_notebook_class("x = 1")(), {})
    same = model_fingerprint(_notebook_class("x = 1")(), {})
    edited = model_fingerprint(_notebook_class("x = 2")(), {})
    assert a["code"]["classes"][0] == {"class": "__main__.NotebookModel", "method": "bytecode"}
    assert a["code"]["sha256"] == same["code"]["sha256"]
    assert a["code"]["sha256"] != edited["code"]["sha256"]


# --------------------------------------------------------------------------- run identity


def test_same_class_other_arguments_gets_its_own_run(tiny, tmp_path):
    runner = make_runner(tiny, tmp_path / "results")
    plays = runner.evaluate(Counting(by="plays"), limit=20)
    with pytest.warns(RunWarning, match="model parameters changed since the run of"):
        users = runner.evaluate(Counting(by="users"), limit=20)
    assert plays.run_id != users.run_id
    assert plays.run_id.startswith("Counting-") and users.run_id.startswith("Counting-")
    assert len(list((tmp_path / "results").iterdir())) == 2
    # each run's folds are its own: by users, not by plays
    fresh = make_runner(tiny, tmp_path / "other").evaluate(Counting(by="users"), limit=20)
    assert comparable(users)["aggregate"] == comparable(fresh)["aggregate"]
    # results.json and run.json record the fingerprint
    saved = json.loads(Path(str(users.path)).read_text())
    fp = saved["model"]["fingerprint"]
    assert fp == model_fingerprint(Counting(by="users"), {})
    run = json.loads((Path(str(users.path)).parent / "run.json").read_text())
    assert run["fingerprint"] == fp and run["model_fingerprint"] == fp["sha256"]
    # the same model again resumes its own run, silently
    again = Counting(by="plays")
    runner.evaluate(again, limit=20)
    assert again.trained == []


def test_training_arguments_differing_in_array_content_start_a_new_run(tiny, tmp_path):
    runner = make_runner(tiny, tmp_path / "results")
    weights = np.zeros(5000)
    edited = weights.copy()
    edited[123] = 1.0
    a = runner.evaluate(Counting(), limit=20, weights=weights)
    model = Counting()
    with pytest.warns(RunWarning, match=r"^training arguments changed since the run of"):
        b = runner.evaluate(model, limit=20, weights=edited)
    assert a.run_id != b.run_id and len(model.trained) == 4
    model = Counting()
    runner.evaluate(model, limit=20, weights=edited.copy())  # same content: resumed
    assert model.trained == []


MODEL_SOURCE = '''
from evaluation.baselines import PopularityModel


class EditedModel(PopularityModel):
    def predict(self, user_ids):
        return super().predict(user_ids){suffix}
'''


def test_edited_model_code_starts_a_new_run(tiny, tmp_path, monkeypatch, capsys):
    module_dir = tmp_path / "mods"
    module_dir.mkdir()
    path = module_dir / "edited_model_mod.py"
    path.write_text(MODEL_SOURCE.format(suffix=""))
    monkeypatch.syspath_prepend(str(module_dir))
    mod = importlib.import_module("edited_model_mod")
    runner = make_runner(tiny, tmp_path / "results", verbose=True)
    first = runner.evaluate(mod.EditedModel(), limit=20)
    created = json.loads((Path(str(first.path)).parent / "run.json").read_text())["created"]
    capsys.readouterr()

    # reversed rows: the same scores, other code
    path.write_text(MODEL_SOURCE.format(suffix=".iloc[::-1]"))
    mod = importlib.reload(mod)
    with warnings.catch_warnings():
        # printed where the run prints, once: not also as a RunWarning
        warnings.simplefilter("error", RunWarning)
        second = runner.evaluate(mod.EditedModel(), limit=20)
    out = " ".join(capsys.readouterr().out.split())  # rich wraps long lines
    assert out.count(f"model code (edited_model_mod.py) changed since the run of {created}: "
                     f"starting a new run") == 1
    assert "model parameters" not in out and "training arguments" not in out
    assert first.run_id != second.run_id
    assert second.folds == [{**f, "runtime": s["runtime"]}
                               for f, s in zip(first.folds, second.folds)]
    assert "finished in an earlier run" not in out
    sys.modules.pop("edited_model_mod", None)


# --------------------------------------------------------------------------- verified resume


@pytest.fixture(scope="module")
def finished_run(tiny, tmp_path_factory):
    """A finished run directory (4 folds, 25 users each) and its results."""
    results = tmp_path_factory.mktemp("finished") / "results"
    res = make_runner(tiny, results).evaluate(Counting(), limit=25)
    return results, res


def _recorded(run_dir: Path) -> dict:
    return json.loads((run_dir / CHECKSUMS_FILE).read_text())


def forge(run_dir: Path, name: str, content: bytes) -> None:
    """Replace a file AND its recorded checksum: a consistent edit of the whole directory."""
    (run_dir / name).write_bytes(content)
    manifest = _recorded(run_dir)
    manifest["files"][name] = hashlib.sha256(content).hexdigest()
    (run_dir / CHECKSUMS_FILE).write_text(json.dumps(manifest))


def _edit_json(run_dir: Path, fold: int, change, forged: bool = True) -> None:
    data = json.loads((run_dir / f"fold_{fold}.json").read_text())
    change(data)
    text = json.dumps(data).encode()
    if forged:
        forge(run_dir, f"fold_{fold}.json", text)
    else:
        (run_dir / f"fold_{fold}.json").write_bytes(text)


def _swap(run_dir: Path, a: str, b: str, manifest_too: bool) -> None:
    pa, pb = run_dir / a, run_dir / b
    da, db = pa.read_bytes(), pb.read_bytes()
    pa.write_bytes(db)
    pb.write_bytes(da)
    if manifest_too:
        manifest = _recorded(run_dir)
        files = manifest["files"]
        files[a], files[b] = files[b], files[a]
        (run_dir / CHECKSUMS_FILE).write_text(json.dumps(manifest))


def _retype_npz(run_dir: Path, fold: int) -> None:
    with np.load(run_dir / f"fold_{fold}_users.npz") as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["hit"] = arrays["hit"].astype(np.float32)
    tmp = run_dir / "tmp.npz"
    np.savez(tmp, **arrays)
    content = tmp.read_bytes()
    tmp.unlink()
    forge(run_dir, f"fold_{fold}_users.npz", content)
    _edit_json(run_dir, fold, lambda d: d.update(users_sha256=hashlib.sha256(content)
                                                 .hexdigest()))


def _set_test(value):
    return lambda d: d["tests"].__setitem__("HIT_RATE", value)


CORRUPTIONS = {
    # name: (damage(run_dir), the fold(s) recomputed, what the warning says)
    "edited value": (lambda d: _edit_json(d, 1, _set_test(0.99), forged=False), [1],
                     r"fold_1\.json: checksum does not match the one recorded when the fold "
                     r"finished \(edited\?\): recomputing fold 1"),
    "truncated json": (lambda d: (d / "fold_1.json").write_bytes(
        (d / "fold_1.json").read_bytes()[:40]), [1], r"fold_1\.json: checksum does not match"),
    "truncated npz": (lambda d: (d / "fold_2_users.npz").write_bytes(b"PK\x03"), [2],
                      r"fold_2_users\.npz: checksum does not match"),
    "deleted npz": (lambda d: (d / "fold_2_users.npz").unlink(), [2],
                    r"fold_2_users\.npz: missing"),
    "swapped json": (lambda d: _swap(d, "fold_0.json", "fold_1.json", False), [0, 1],
                     r"fold_0\.json: checksum does not match"),
    "swapped json and manifest": (
        lambda d: _swap(d, "fold_0.json", "fold_1.json", True), [0, 1],
        r"fold_0\.json: it holds the results of fold 1, not of fold 0"),
    "swapped npz and manifest": (
        lambda d: _swap(d, "fold_2_users.npz", "fold_3_users.npz", True), [2, 3],
        r"fold_2_users\.npz: checksum does not match the one fold_2\.json recorded"),
    "manifest deleted": (lambda d: (d / CHECKSUMS_FILE).unlink(), [0, 1, 2, 3],
                         r"fold_0\.json: no checksum was recorded"),
    "tests a list": (lambda d: _edit_json(d, 3, lambda x: x.update(tests=[])), [3],
                     r"fold_3\.json: 'tests' must be an object, found list"),
    "json null": (lambda d: forge(d, "fold_3.json", b"null"), [3],
                  r"fold_3\.json: expected a JSON object, found NoneType"),
    "missing key": (lambda d: _edit_json(d, 3, lambda x: x.pop("n_users")), [3],
                    r"'n_users' must be a positive int, found None"),
    "string value": (lambda d: _edit_json(d, 3, _set_test("0.5")), [3],
                     r"leaderboard tests must be finite numbers"),
    "NaN value": (lambda d: _edit_json(d, 3, _set_test(float("nan"))), [3],
                  r"leaderboard tests must be finite numbers"),
    "missing test": (lambda d: _edit_json(d, 3, lambda x: x["tests"].pop("MRR")), [3],
                     r"'tests' lacks \['MRR'\]"),
    "other run": (lambda d: _edit_json(d, 3, lambda x: x.update(run_key="0" * 64)), [3],
                  r"belongs to another run"),
    "npz wrong dtype": (lambda d: _retype_npz(d, 1), [1],
                        r"fold_1_users\.npz: array 'hit' must be 1-d bool"),
    "n_users inconsistent": (lambda d: _edit_json(d, 1, lambda x: x.update(n_users=24)), [1],
                             r"fold_1_users\.npz: array 'hit' must be 1-d bool with "
                             r"n_users=24"),
}


@pytest.mark.parametrize("case", list(CORRUPTIONS))
def test_resume_recomputes_damaged_folds(case, tiny, finished_run, tmp_path):
    results, original = finished_run
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    run_dir = copy / original.run_id
    damage, recomputed, message = CORRUPTIONS[case]
    damage(run_dir)
    model = Counting()
    with pytest.warns(RunWarning, match=message):
        resumed = make_runner(tiny, copy).evaluate(model, limit=25)
    assert model.trained == [len(tiny.get_train_set(f)) for f in recomputed]
    assert comparable(resumed) == comparable(original)
    # repaired: the next resume reuses every fold, silently
    again = Counting()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RunWarning)
        make_runner(tiny, copy).evaluate(again, limit=25)
    assert again.trained == []


def test_the_kept_predictions_are_in_the_manifest_and_an_edited_list_is_not_uploaded(
        finished_run, tmp_path):
    from evaluation.contract import submission_payload
    from evaluation.runner import predictions_body

    results, original = finished_run
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    run_dir = copy / original.run_id
    recorded = _recorded(run_dir)["files"]
    for fold in range(4):
        name = f"fold_{fold}_predictions.npz"
        assert recorded[name] == hashlib.sha256((run_dir / name).read_bytes()).hexdigest()
    claimed = json.loads(json.dumps(original.to_dict()))
    claim = submission_payload(claimed, email=None, participant_id=None)
    assert predictions_body(claim, claimed, run_dir)  # the run's own lists are uploaded
    # one recommended track changed after the run scored the lists
    with np.load(run_dir / "fold_2_predictions.npz") as npz:
        users, items = npz["users"], npz["items"].copy()
    items[0, 0] = items[0, 1]
    with open(run_dir / "fold_2_predictions.npz", "wb") as fh:
        np.savez(fh, users=users, items=items)
    with pytest.raises(ConfigError, match=r"fold_2_predictions\.npz: its checksum does not "
                                          r"match the one recorded"):
        predictions_body(claim, claimed, run_dir)
    # and without the manifest's entry
    manifest = _recorded(run_dir)
    del manifest["files"]["fold_2_predictions.npz"]
    (run_dir / CHECKSUMS_FILE).write_text(json.dumps(manifest))
    with pytest.raises(ConfigError, match=r"fold_2_predictions\.npz: no checksum was "
                                          r"recorded"):
        predictions_body(claim, claimed, run_dir)


# A run killed while a fold trains, with a finished fold edited before it resumes: one test in
# test_runner.py, which kills and resumes the run once for both.


# --------------------------------------------------------------------------- frames


def _fold_view(res: dict, results_dir: Path) -> list:
    """What a mutation must not change: per fold the tests, slices, counts and user arrays."""
    run_dir = Path(str(res.path)).parent
    out = []
    for f in res.folds:
        with np.load(run_dir / f"fold_{f['fold']}_users.npz") as npz:
            # NaN (a user left out of a test) as None: NaN != NaN would fail any comparison
            arrays = {k: [None if v != v else v for v in npz[k].tolist()] for k in npz.files}
        out.append({"tests": f["tests"], "details": f["details"], "n_users": f["n_users"],
                    "n_train_rows": f["n_train_rows"], "arrays": arrays})
    return out


@pytest.fixture(scope="module")
def untouched(tmp_path_factory):
    results = tmp_path_factory.mktemp("untouched")
    res = make_runner(fresh_tiny(), results).evaluate(PopularityModel(), limit=40,
                                                      model_name="m")
    return _fold_view(res, results), res.aggregate


class TrainMutator(PopularityModel):
    """Popularity trained on a private copy; then it changes the frame it was given."""

    def __init__(self, how):
        super().__init__()
        self.how = how

    def train(self, train_df, **kwargs):
        super().train(train_df.copy(deep=True), **kwargs)
        self.how(train_df)


def _drop_half(df):
    df.drop(index=df.index[::2], inplace=True)  # noqa: PD002


def _assign(df):
    df["user_track_count"] = 10_000
    df["user_id"] = df["user_id"][::-1].to_numpy()


def _dtype(df):
    df["user_track_count"] = df["user_track_count"].astype("float32") * 0.5
    df["track_id"] = df["track_id"].astype(str)


def _loc(df):
    df.loc[:, "user_track_count"] = 0
    df.iloc[: len(df) // 2, df.columns.get_loc("track_id")] = 1
    df.loc[df.index[0], "user_id"] = -5


@pytest.mark.parametrize("how", [_assign, _dtype, _drop_half, _loc],
                         ids=["assign", "dtype", "drop_inplace", "loc_iloc"])
def test_changing_the_training_frame_changes_no_score(how, untouched, tmp_path):
    ds = fresh_tiny()
    res = make_runner(ds, tmp_path).evaluate(TrainMutator(how), limit=40, model_name="m")
    assert _fold_view(res, tmp_path) == untouched[0]
    assert res.aggregate == untouched[1]


class ItemsMutator(PopularityModel):
    """Given the dataset's tracks (as RandomModel is), it drops half of them and relabels
    the artists in its constructor."""

    def __init__(self, items):
        super().__init__()
        items.drop(index=items.index[::2], inplace=True)  # noqa: PD002
        items["artist_id"] = 0
        items.iloc[:10, 0] = "x"
        self.n_items = len(items)


def test_changing_items_in_the_constructor_changes_no_score(untouched, tmp_path):
    ds = fresh_tiny()
    n_tracks = len(ds.df_tracks)
    model = ItemsMutator(ds.df_tracks)
    assert model.n_items == n_tracks // 2  # the model's copy did change
    assert len(ds.df_tracks) == n_tracks and ds.df_tracks["artist_id"].nunique() > 1
    res = make_runner(ds, tmp_path).evaluate(model, limit=40, model_name="m")
    assert _fold_view(res, tmp_path) == untouched[0]


class DatasetMutator(PopularityModel):
    """Reaches the dataset and changes its users, events and tracks in place."""

    def __init__(self, dataset):
        super().__init__()
        self.dataset = dataset

    def train(self, train_df, **kwargs):
        super().train(train_df, **kwargs)
        users, events = self.dataset.df_users, self.dataset.df_events
        users["country"] = "XX"
        users.loc[:, "gender"] = "n"
        users.drop(index=users.index[:5], inplace=True)  # noqa: PD002
        events["user_track_count"] = 1
        events.drop(index=events.index[::3], inplace=True)  # noqa: PD002
        tracks = self.dataset.df_tracks
        tracks.drop(columns=["artist_id"], inplace=True)  # noqa: PD002
        with pytest.raises(ValueError, match="read-only"):
            self.dataset.track_vectors.vectors[:] = 0.0
        with pytest.raises(ValueError, match="read-only"):
            self.dataset.fold(0).train_rows[:] = 0


def test_changing_the_dataset_tables_changes_no_score(untouched, tmp_path):
    ds = fresh_tiny()
    before = ds.tables.users.copy(deep=True)
    res = make_runner(ds, tmp_path).evaluate(DatasetMutator(ds), limit=40, model_name="m")
    assert _fold_view(res, tmp_path) == untouched[0]
    pd.testing.assert_frame_equal(ds.df_users, before)


class UserIdsMutator(PopularityModel):
    def predict(self, user_ids):
        out = super().predict(user_ids.copy(deep=True))
        user_ids["user_id"] = 0
        user_ids.drop(index=user_ids.index[::2], inplace=True)  # noqa: PD002
        return out


def test_changing_the_user_ids_frame_in_predict_changes_no_score(untouched, tmp_path):
    res = make_runner(fresh_tiny(), tmp_path).evaluate(UserIdsMutator(), limit=40,
                                                       model_name="m")
    assert _fold_view(res, tmp_path) == untouched[0]


def test_a_mutation_that_reached_the_scoring_would_show(untouched, tmp_path):
    """The comparison above can fail: a model that predicts differently changes the view."""
    res = make_runner(fresh_tiny(), tmp_path).evaluate(PopularityModel(by="users"), limit=40,
                                                       model_name="m")
    assert _fold_view(res, tmp_path) != untouched[0]
    assert set(LEADERBOARD_TESTS) <= set(res.folds[0]["tests"])


# --------------------------------------------------------------------------- inputs


@pytest.mark.parametrize("value, name", [("lfm", "str"), (pd.DataFrame(), "DataFrame"),
                                         (None, "Tables")])
def test_runner_wants_a_challenge_dataset(value, name, tiny, tmp_path):
    value = tiny.tables if name == "Tables" else value
    with pytest.raises(ConfigError, match=rf"expects a ChallengeDataset .* or None .*got a "
                                          rf"{name}\b"):
        EvalRSRunner(value, results_dir=tmp_path)


def _unwritable(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o555)
    if os.geteuid() == 0:  # root ignores permission bits: make the folder immutable
        done = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
        if done.returncode != 0:
            path.chmod(0o755)
            pytest.skip("running as root without chattr: cannot make a folder read-only")


def _writable_again(path: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True)
    path.chmod(0o755)


def test_bad_results_dir_is_a_clear_error(tiny, tmp_path):
    a_file = tmp_path / "results.txt"
    a_file.write_text("not a folder")
    with pytest.raises(ConfigError, match=r"results\.txt' is an existing file"):
        make_runner(tiny, a_file)
    with pytest.raises(ConfigError, match=r"lies under .*results\.txt', which is a file"):
        make_runner(tiny, a_file / "sub" / "results")
    with pytest.raises(ConfigError, match="is not writable"):
        make_runner(tiny, "/proc/evalrs-results")  # not writable, not even for root
    locked = tmp_path / "locked"
    _unwritable(locked)
    try:
        with pytest.raises(ConfigError, match=r"locked' is not writable"):
            make_runner(tiny, locked)
        with pytest.raises(ConfigError, match=r"nearest existing folder .*locked'"):
            make_runner(tiny, locked / "results")
    finally:
        _writable_again(locked)


def test_results_dir_is_checked_again_before_any_fold(tiny, tmp_path):
    results = tmp_path / "results"
    runner = make_runner(tiny, results)
    model = Counting()
    _unwritable(results)
    try:
        with pytest.raises(ConfigError, match="is not writable"):
            runner.evaluate(model, limit=10)
    finally:
        _writable_again(results)
    assert model.trained == []
    shutil.rmtree(results)
    results.write_text("now a file")
    with pytest.raises(ConfigError, match="is an existing file"):
        runner.evaluate(model, limit=10)
    assert model.trained == []
