"""Which phase-2 references a run scores against, and what its results record about them."""

from __future__ import annotations

import os
import re

from evaluation.challenge import REFERENCES_DIR, References, load_references, references_name
from evaluation.contract import FINGERPRINT_KEY, FOLD_PARAMS_KEY
from evaluation.dataset import ChallengeDataset


def resolve_references(references: References | str | os.PathLike | None,
                       dataset: ChallengeDataset) -> tuple[References | None, str]:
    """The references to score against (or None) and a note saying which and why.

    ``"auto"`` picks the shipped references of the dataset, if any, unless they were computed
    on other data; computed on other folds, they are used and the score is marked indicative.
    """
    if isinstance(references, References):
        return references, "given"
    if references is None:
        return None, "no references: phase-2 score not computed"
    if str(references) != "auto":
        return load_references(references), "given"  # type: ignore[arg-type]  # any PathLike
    source, name = _shipped_references_name(dataset)
    if name is None or not (REFERENCES_DIR / f"{name}.json").exists():
        return None, (f"no references shipped for dataset source {source!r}: phase-2 score "
                      f"not computed (`python -m evaluation references` writes them)")
    refs = load_references(name)
    expected = refs.dataset.get(FINGERPRINT_KEY)
    if expected and expected != dataset.fingerprint:
        return None, (f"references {name!r} were computed on other data (fingerprint "
                      f"{expected[:12]}...): phase-2 score not computed")
    expected_folds = refs.dataset.get(FOLD_PARAMS_KEY)
    if expected_folds and expected_folds != dataset.fold_params:
        return refs, (f"references {name!r} were computed on other folds "
                      f"({expected_folds}); the phase-2 score is indicative")
    return refs, f"references {name!r}"


def _shipped_references_name(dataset: ChallengeDataset) -> tuple[str, str | None]:
    """The dataset's source and the name of its shipped references (None if none)."""
    tables = getattr(dataset, "tables", None)
    source = getattr(tables, "source", "") or ""
    scale = None
    m = re.fullmatch(r"synthetic(?::|-|/)?(\w+)?.*", source)
    if m:
        scale = m.group(1) or getattr(dataset, "scale", None)
        source = "synthetic"
    return source, references_name(source, scale)


def references_record(references: References | None, note: str) -> dict:
    """What results.json records about the references: the note, name and values."""
    record: dict = {"note": note}
    if references:
        record.update(name=references.name, values=references.to_dict())
    return record
