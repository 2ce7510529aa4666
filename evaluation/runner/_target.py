"""The competition a run is made for, which decides whether the run is eligible for upload.

A leaderboard accepts runs on its own data and folds only. By default a run is made for the
official EvalRS board (the real challenge data, source ``"lfm"``, with the default folds); a
competition file (the TOML file a leaderboard is served from, e.g. the example
``competition.toml``) names another dataset by its fingerprint, its fold parameters and the
harness versions it accepts. The file is read here with the standard library's ``tomllib``,
so that the participant's side needs none of the server's packages; the server checks the
same keys (and the rest of the file) when it starts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluation.dataset import FoldParams
from evaluation.errors import ConfigError

#: The source of the official challenge data.
OFFICIAL_SOURCE = "lfm"


@dataclass(frozen=True)
class CompetitionTarget:
    """The data, folds and harness versions a competition accepts runs of.

    Attributes
    ----------
    name : str
        The competition's name, as messages quote it.
    source : str
        The dataset's source, in words (``"lfm"``, ``"synthetic:small"``, ...).
    fingerprint : str or None
        The content fingerprint of the competition's dataset; None for the official board,
        whose data is recognised by its source (``"lfm"``).
    fold_params : dict
        The fold parameters runs must use.
    harness_versions : tuple of str or None
        The harness versions whose runs are accepted (None: any).
    path : str or None
        The competition file it was read from (None for the official board).
    """

    name: str
    source: str
    fingerprint: str | None
    fold_params: dict = field(hash=False)
    harness_versions: tuple[str, ...] | None = None
    path: str | None = None

    def not_eligible_because(self, dataset: Mapping[str, Any], version: str) -> list[str]:
        """Why a run on ``dataset`` with harness ``version`` does not belong here.

        Parameters
        ----------
        dataset : mapping
            The run's ``results["dataset"]``: ``source``, ``fingerprint``, ``fold_params``.
        version : str
            The harness version of the run.

        Returns
        -------
        list of str
            One sentence per reason; empty when the run's data, folds and version are the
            competition's. The fold count is left out: the runner reports it already.
        """
        reasons = []
        source = str(dataset.get("source") or "unknown")
        if self.fingerprint is None:
            if source != self.source:
                reasons.append(f"the data is {source!r}, not the official challenge data "
                               f"({self.source!r}; --competition FILE for another board)")
        elif dataset.get("fingerprint") != self.fingerprint:
            reasons.append(f"the data ({source!r}, fingerprint "
                           f"{str(dataset.get('fingerprint'))[:12]}...) is not the "
                           f"competition's ({self.source or 'fingerprint'} "
                           f"{self.fingerprint[:12]}...) named by {self.path}")
        differ = _differences(dataset.get("fold_params") or {}, self.fold_params)
        if differ:
            reasons.append(f"the folds differ from {self.name}'s in {differ}")
        if self.harness_versions is not None and version not in self.harness_versions:
            reasons.append(f"harness version {version} is not one {self.name} accepts "
                           f"({', '.join(self.harness_versions)})")
        return reasons

    def dataset_options(self) -> dict:
        """``ChallengeDataset`` keyword arguments that rebuild the competition's data and folds.

        The source ``"synthetic:small"`` (as the example competition writes it) becomes
        ``source="synthetic", scale="small"`` (``"synthetic:small:seed7"`` adds
        ``data_seed=7``); the fold parameters become keyword arguments
        (``protocol`` is not one: it is the only protocol there is).
        """
        options = {k: v for k, v in self.fold_params.items() if k != "protocol"}
        source = self.source or OFFICIAL_SOURCE
        if source.startswith("synthetic"):
            parts = source.split(":")
            options["source"] = "synthetic"
            if len(parts) > 1 and parts[1]:
                options["scale"] = parts[1]
            if len(parts) > 2 and parts[2].startswith("seed") and parts[2][4:].isdigit():
                options["data_seed"] = int(parts[2][4:])  # "synthetic:small:seed42"
        else:
            options["source"] = source
        return options

    def to_dict(self) -> dict:
        """What ``results.json`` records under ``competition``."""
        return {"name": self.name, "source": self.source, "fingerprint": self.fingerprint,
                "fold_params": self.fold_params,
                "harness_versions": None if self.harness_versions is None
                else list(self.harness_versions), "path": self.path}


#: The official EvalRS board: the real challenge data with the default folds.
OFFICIAL_COMPETITION = CompetitionTarget(
    name="the official EvalRS board", source=OFFICIAL_SOURCE, fingerprint=None,
    fold_params=FoldParams().as_dict())


def read_competition_toml(path: str | os.PathLike) -> dict:
    """The parsed competition TOML file ``path``.

    Raises
    ------
    ConfigError
        Naming the file, when it is missing, unreadable or not TOML (or when this Python has
        no TOML reader).
    """
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib
        except ModuleNotFoundError:
            raise ConfigError("reading a competition file needs Python >= 3.11 (tomllib) or "
                              "the tomli package: pip install tomli") from None
    shown = os.fspath(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"competition file {shown!r} does not exist. Pass the path of a "
                          f"competition TOML file (the repository's competition.toml is an "
                          f"example).") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"competition file {shown!r} cannot be read as UTF-8 text "
                          f"({getattr(exc, 'strerror', None) or exc}).") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"competition file {shown!r} is not valid TOML: {exc}. Fix the "
                          f"syntax there.") from None


def resolve_competition(competition) -> CompetitionTarget:
    """The ``CompetitionTarget`` of ``competition``: None (the official board), a target, or
    the path of a competition file (read with :func:`load_competition_target`)."""
    if competition is None:
        return OFFICIAL_COMPETITION
    if isinstance(competition, CompetitionTarget):
        return competition
    if isinstance(competition, (str, os.PathLike)):
        return load_competition_target(competition)
    raise ConfigError(f"competition must be None (the official board), a CompetitionTarget or "
                      f"the path of a competition TOML file; got a {type(competition).__name__}.")


def load_competition_target(path: str | os.PathLike) -> CompetitionTarget:
    """Read the data, folds and harness versions of a competition file.

    Parameters
    ----------
    path : str or os.PathLike
        A competition TOML file (see the example ``competition.toml``): its ``name``,
        ``source``, ``harness_versions``, ``[dataset] fingerprint`` and
        ``[dataset.fold_params]`` are read; the other keys (phases, baselines) are the
        server's.

    Returns
    -------
    CompetitionTarget

    Raises
    ------
    ConfigError
        Naming the file and the key, when the file cannot be read, is not TOML or lacks one
        of those keys.
    """
    shown = os.fspath(path)
    data = read_competition_toml(path)
    dataset = data.get("dataset")
    fingerprint = dataset.get("fingerprint") if isinstance(dataset, dict) else None
    fold_params = dataset.get("fold_params") if isinstance(dataset, dict) else None
    versions = data.get("harness_versions")
    name = data.get("name")
    for key, value, ok, fix in (
            ("name", name, isinstance(name, str) and name.strip(), 'name = "..."'),
            ("dataset.fingerprint", fingerprint, isinstance(fingerprint, str),
             'fingerprint = "..." under [dataset] (results["dataset"]["fingerprint"] of a run '
             'on the data)'),
            ("dataset.fold_params", fold_params, isinstance(fold_params, dict),
             "a [dataset.fold_params] table (results['dataset']['fold_params'] of a run)"),
            ("harness_versions", versions, isinstance(versions, list)
             and all(isinstance(v, str) for v in versions), 'harness_versions = ["0.1.0"]')):
        if not ok:
            got = "is missing" if value is None else f"is invalid ({_cut(value)})"
            raise ConfigError(f"competition file {shown!r}: {key} {got}. Fix: write {fix}.")
    source = data.get("source") if isinstance(data.get("source"), str) else ""
    return CompetitionTarget(name=f"competition {name!r}", source=source, fingerprint=fingerprint,
                             fold_params=dict(fold_params), harness_versions=tuple(versions),
                             path=shown)


def _differences(got: Mapping, want: Mapping) -> str:
    """The keys (besides num_folds) where ``got`` differs from ``want``, with both values."""
    parts = []
    for key in sorted(set(got) | set(want), key=str):
        if key == "num_folds":
            continue
        a, b = got.get(key, "absent"), want.get(key, "absent")
        if json.dumps(a, sort_keys=True, default=str) != json.dumps(b, sort_keys=True,
                                                                    default=str):
            parts.append(f"{key} ({_cut(a)} vs {_cut(b)})")
    return ", ".join(parts)


def _cut(value, limit: int = 40) -> str:
    """``value`` as short printable text."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + "..."
