"""The tutorial notebook runs top to bottom (nbclient) on the tiny synthetic dataset."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_random_model_tutorial_executes(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.chdir(tmp_path)
    nb = nbformat.read(REPO / "notebooks" / "random_model_tutorial.ipynb", as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = "".join(
        o.get("text", "") + str(o.get("data", {}).get("text/plain", ""))
        for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", []))
    assert "leaderboard score:" in outputs
    assert "HIT_RATE random:" in outputs
    assert list(tmp_path.glob("results/*/results.json"))
    # the tutorial teaches the current API: nothing it does is deprecated
    assert "DeprecationWarning" not in outputs
