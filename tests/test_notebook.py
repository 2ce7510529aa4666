"""The tutorial notebook runs top to bottom (nbclient) on the tiny synthetic dataset, the way a
reader runs it: from a ``notebooks/`` folder, with the venv's kernel and no ``PYTHONPATH``, so
that it fails when the harness is not installed in the venv (``make install`` installs it)."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "random_model_tutorial.ipynb"

# Appended to the reader's notebook: where the kernel found the harness, and with what path.
_WHERE = ("import os, sys, evaluation\n"
          "print('EVALUATION_FILE', evaluation.__file__)\n"
          "print('KERNEL_PYTHON', sys.executable)\n"
          "print('PYTHONPATH_SET', 'PYTHONPATH' in os.environ)")


@pytest.mark.slow
def test_random_model_tutorial_executes(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    # a copy outside the repository, so that neither the working directory nor the notebook's
    # folder puts the repository on the kernel's path; its results/ land there, not in the
    # repository (which ignores results/ anyway)
    folder = tmp_path / "notebooks"
    folder.mkdir()
    shutil.copy(NOTEBOOK, folder / NOTEBOOK.name)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.chdir(folder)
    nb = nbformat.read(folder / NOTEBOOK.name, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(_WHERE))
    # "python3" is the venv's own kernel: jupyter_client starts it with this interpreter
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(folder)}})
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as exc:
        if "No module named 'evaluation'" in str(exc):
            pytest.fail("the notebook cannot import the harness: it is not installed in the "
                        "venv (run `make install`, which installs it editable)")
        raise
    outputs = "".join(
        o.get("text", "") + str(o.get("data", {}).get("text/plain", ""))
        for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", []))
    assert "leaderboard score:" in outputs
    # the text says what the cell below it prints: the random model's hit rate, k / catalog
    # size, the gate and the popularity model's hit rate
    (printed,) = re.findall(r"HIT_RATE random: (\S+) \(k / catalog size = (\d+) / ([\d,]+) = "
                            r"(\S+)\), gate: (\S+), popularity: (\S+)", outputs)
    text = " ".join("".join(cell.source for cell in nb.cells
                            if cell.cell_type == "markdown").split())
    random_hr, k, catalog, ratio, gate, popular = printed
    assert float(random_hr) == pytest.approx(int(k) / int(catalog.replace(",", "")), abs=0.02)
    for value in (f"k / catalog size = {k} / {catalog} = {ratio}", f"measures {random_hr} ",
                  f"HIT_RATE {gate},", f"hit {popular} of the time"):
        assert value in text, value
    assert list(folder.glob("results/*/results.json"))
    # the tutorial teaches the current API: nothing it does is deprecated
    assert "DeprecationWarning" not in outputs
    # the kernel was this venv's Python, found the harness installed, with no PYTHONPATH
    last = "".join(o.get("text", "") for o in nb.cells[-1].get("outputs", []))
    where = dict(line.split(" ", 1) for line in last.splitlines())
    assert where["PYTHONPATH_SET"] == "False"
    assert where["KERNEL_PYTHON"] == sys.executable
    assert Path(where["EVALUATION_FILE"]).resolve().is_relative_to(REPO / "evaluation")
