"""Competition files for tests: the data and folds of a ``ChallengeDataset`` as a competition
TOML file (what ``submission.py --competition FILE`` and ``EvalRSRunner(competition=...)``
read)."""

from __future__ import annotations

import json
from pathlib import Path

from evaluation import __version__


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value)  # a basic TOML string


def write_competition(path: Path, dataset, *, name: str = "test board",
                      source: str = "synthetic:tiny") -> Path:
    """Write a competition file whose data and folds are ``dataset``'s; returns ``path``."""
    lines = [f"name = {json.dumps(name)}", f"source = {json.dumps(source)}",
             f"harness_versions = [{json.dumps(__version__)}]", "", "[dataset]",
             f"fingerprint = {json.dumps(dataset.fingerprint)}", "", "[dataset.fold_params]"]
    lines += [f"{k} = {_toml_value(v)}" for k, v in dataset.fold_params.items()]
    path.write_text("\n".join(lines) + "\n")
    return path
