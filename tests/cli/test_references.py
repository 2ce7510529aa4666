"""``python -m evaluation references`` writes where ``--out`` says, never into the package."""

from __future__ import annotations

import json

import pytest

from evaluation.challenge import REFERENCES_DIR
from evaluation.cli import main


@pytest.mark.slow
def test_references_default_to_the_current_directory_not_the_package(tmp_path, monkeypatch):
    shipped = REFERENCES_DIR / "synthetic-tiny.json"
    before = (shipped.read_bytes(), shipped.stat().st_mtime_ns)
    monkeypatch.chdir(tmp_path)
    assert main(["references", "synthetic", "--scale", "tiny",
                 "--results-dir", str(tmp_path / "runs")]) == 0
    assert (shipped.read_bytes(), shipped.stat().st_mtime_ns) == before
    written = json.loads((tmp_path / "synthetic-tiny.json").read_text())
    # the same reference models on the same folds give back the shipped values exactly
    assert written == json.loads(before[0])
    assert main(["references", "synthetic", "--scale", "tiny", "--out", "sub/refs.json",
                 "--results-dir", str(tmp_path / "runs")]) == 0
    assert json.loads((tmp_path / "sub" / "refs.json").read_text()) == written
