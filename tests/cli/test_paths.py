"""Output paths of ``data folds`` and the cut-off users of ``score --limit``."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from evaluation import ChallengeDataset
from evaluation.cli import main as cli_main
from tests._shared_data import shared_dataset

TINY = ["synthetic", "--scale", "tiny"]


def _folds(out, *extra) -> int:
    return cli_main(["data", "folds", *TINY, "--out", str(out), "--k-core", "2", *extra])


def test_rerun_with_fewer_folds_removes_the_stale_fold_files(tmp_path):
    out = tmp_path / "folds"
    assert _folds(out, "--num-folds", "4") == 0
    assert (out / "fold_3_test.parquet").exists()
    assert _folds(out, "--num-folds", "2") == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["manifest.json"] + [f"fold_{f}_{p}.parquet" for f in range(2) for p in ("train", "test")])
    manifest = json.loads((out / "manifest.json").read_text())
    assert [f["file"] for f in manifest["files"]] == [
        f"fold_{f}_{p}.parquet" for f in range(2) for p in ("train", "test")]


def test_a_foreign_non_empty_directory_is_refused(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    assert _folds(tmp_path) == 2
    err = capsys.readouterr().err
    assert "not empty and was not written by this command" in err and "notes.txt" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]  # nothing written


def test_a_foreign_file_beside_earlier_folds_is_refused(tmp_path, capsys):
    assert _folds(tmp_path, "--num-folds", "1") == 0
    (tmp_path / "fold_9_test.parquet").write_text("not ours")
    assert _folds(tmp_path, "--num-folds", "1") == 2
    assert "did not write: ['fold_9_test.parquet']" in capsys.readouterr().err


def test_out_under_a_file_is_refused_before_computing(tmp_path, capsys, monkeypatch):
    import evaluation.cli.data as data_cli

    monkeypatch.setattr(data_cli, "_dataset", lambda args: pytest.fail("computed folds"))
    (tmp_path / "f").write_text("x")
    assert _folds(tmp_path / "f" / "sub") == 2
    assert "is a file, not a directory" in capsys.readouterr().err
    assert _folds(tmp_path / "f") == 2


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_out_is_refused_before_computing(tmp_path, capsys, monkeypatch):
    import evaluation.cli.data as data_cli

    monkeypatch.setattr(data_cli, "_dataset", lambda args: pytest.fail("computed folds"))
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        assert _folds(ro) == 2
        assert "not writable" in capsys.readouterr().err
    finally:
        ro.chmod(0o700)


def _score(tmp_path, source, predictions: pd.DataFrame, limit: int, *extra) -> dict:
    path = tmp_path / "preds.parquet"
    predictions.to_parquet(path)
    out = tmp_path / "report.json"
    assert cli_main(["score", *source, "--fold", "0", "--predictions", str(path),
                     "--out", str(out), "--k", "5", "--limit", str(limit), *extra]) == 0
    return json.loads(out.read_text())


def _all_user_predictions(ds: ChallengeDataset, k: int = 5) -> pd.DataFrame:
    users = ds.get_test_set(0)["user_id"].to_numpy()[::-1]  # not in test order
    tracks = ds.df_tracks.index.to_numpy()[:k]
    return pd.DataFrame(np.tile(tracks, (len(users), 1)), columns=[str(i) for i in range(k)],
                        index=pd.Index(users, name="user_id"))


def test_score_limit_names_the_users_past_the_limit(tmp_path, capsys):
    ds = ChallengeDataset("synthetic", scale="tiny")
    users = ds.get_test_set(0)["user_id"].to_numpy()
    report = _score(tmp_path, TINY, _all_user_predictions(ds), 3)
    assert report["num_users"] == 3
    assert report["limit"]["cut_off_users"] == len(users) - 3
    # the cut-off users are the test users after the first three by user id
    first_cut = ", ".join(str(u) for u in users[3:8])
    assert report["limit"]["cut_off_user_ids"].startswith(f"[{first_cut}")
    err = capsys.readouterr().err
    assert f"{len(users) - 3} test users cut off: [{first_cut}" in err
    assert "not test users" not in err


@pytest.mark.realdata
def test_score_limit_on_real_ml_100k(tmp_path, capsys):
    source = f"movielens:{shared_dataset('ml-100k')}"
    ds = ChallengeDataset(source)
    users = ds.get_test_set(0)["user_id"].to_numpy()
    report = _score(tmp_path, [source], _all_user_predictions(ds), 10)
    assert report["num_users"] == 10
    assert report["limit"]["cut_off_users"] == len(users) - 10
    assert report["limit"]["cut_off_user_ids"].startswith(f"[{users[10]}, ")


@pytest.mark.realdata
def test_folds_rerun_on_real_hetrec_directory(tmp_path):
    from evaluation.data._local import write_csv_dir
    from tests.data._tables import hetrec_tables

    src = write_csv_dir(hetrec_tables(shared_dataset("hetrec2011-lastfm-2k")), tmp_path / "src")
    out = tmp_path / "folds"
    assert cli_main(["data", "folds", str(src), "--out", str(out), "--num-folds", "3"]) == 0
    assert cli_main(["data", "folds", str(src), "--out", str(out), "--num-folds", "1"]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "fold_0_test.parquet", "fold_0_train.parquet", "manifest.json"]


def test_generate_takes_data_seed(tmp_path, capsys):
    from evaluation.data import read_tables, synthetic_tables

    want = synthetic_tables("tiny", 7).fingerprint()
    assert cli_main(["data", "generate", "--scale", "tiny", "--data-seed", "7",
                     "--out", str(tmp_path / "new")]) == 0
    assert read_tables(tmp_path / "new").fingerprint() == want
    # --seed is the fold seed of the other data commands, never the generator's
    with pytest.raises(SystemExit):
        cli_main(["data", "generate", "--scale", "tiny", "--seed", "7",
                  "--out", str(tmp_path / "old")])
    assert "unrecognized arguments: --seed" in capsys.readouterr().err
