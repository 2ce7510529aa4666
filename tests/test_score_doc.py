"""The reference numbers of "What is a good score?" (docs/participants/score.md) are the shipped
references' and the pinned baselines', so they cannot drift from them.

Each row of the doc's tables is recomputed: a reference model's HIT_RATE and scores from the
fold means its references file records (scored as the runner scores them), a pinned baseline's
leaderboard score and interval from its ``submission.json``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evaluation.challenge import load_references, phase1_score, phase2_score

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "participants" / "score.md"
SECTION = re.compile(r"\*\*What is a good score\?\*\*(.*?)\*\*Tests that do not apply", re.S)
MODEL_ROW = re.compile(r"^\| `(synthetic-\w+)` \| `(\w+)` \| (\S+) \| (\S+) \| (\S+) \|$", re.M)
BASELINE_ROW = re.compile(r"^\| `(\w+)` \| (\S+) \| \[(\S+), (\S+)\] \|$", re.M)


def _number(x: float) -> str:
    """How the doc writes a number: 4 significant digits."""
    return f"{x:.4g}"


@pytest.fixture(scope="module")
def section() -> str:
    found = SECTION.search(DOC.read_text(encoding="utf-8"))
    assert found, f"{DOC}: no 'What is a good score?' section"
    return found.group(1)


def test_every_reference_model_of_every_synthetic_references_file_has_its_row(section):
    rows = {(refs, model): numbers for refs, model, *numbers in MODEL_ROW.findall(section)}
    expected = set()
    for scale in ("tiny", "small", "full"):
        references = load_references(f"synthetic-{scale}")
        for model, means in references.dataset["models"].items():
            expected.add((references.name, model))
            assert rows.get((references.name, model)) == [
                _number(means["HIT_RATE"]), _number(phase1_score(means)),
                _number(phase2_score(means, references))], (references.name, model)
    assert set(rows) == expected


def test_the_pinned_baselines_scores_and_intervals(section):
    rows = {name: numbers for name, *numbers in BASELINE_ROW.findall(section)}
    for name in ("Popularity", "Random"):
        run = json.loads((ROOT / "competition" / "baselines" / f"{name.lower()}.json")
                         .read_text())["results"]
        low, high = run["confidence_intervals"]["phase2_score"]
        assert rows.get(name) == [_number(run["leaderboard_score"]), _number(low),
                                  _number(high)], name
    assert set(rows) == {"Popularity", "Random"}
