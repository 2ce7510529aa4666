"""The competition a run is made for, and the one check of whether a run belongs to it.

A leaderboard accepts runs on its own data and folds, made by the harness versions it names.
A competition file (the TOML file a leaderboard is served from, e.g. the example
``competition.toml``) names the dataset by its fingerprint, its fold parameters and the
harness versions; the official EvalRS board names none and recognises its data by the source
(``"lfm"``). The participant's runner and the leaderboard server judge a run with the same
check, :meth:`CompetitionTarget.ineligibilities`; each says the outcome in its own words.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluation.contract._dataset import OFFICIAL_SOURCE, dataset_arguments
from evaluation.contract._keys import (
    FINGERPRINT_KEY,
    FOLD_PARAMS_KEY,
    NUM_FOLDS_KEY,
    REPEATED_LISTS_KEY,
    SOURCE_KEY,
)
from evaluation.contract._text import cut
from evaluation.errors import ConfigError

#: How many differing fold parameters a message names (then "and N more").
SHOWN_DIFFERENCES = 4

#: The parts of a run an ineligibility is about: its data, its fold parameters, its fold count
#: and its harness version.
OTHER_DATA = "data"
OTHER_FOLDS = "folds"
OTHER_FOLD_COUNT = "fold count"
OTHER_HARNESS_VERSION = "harness version"
OTHER_REPEATED_ITEMS = "repeated items"

#: A competition file's ``repeated_items``: ``"first"`` scores lists that name a track twice
#: as the 2022 harness did (a target counts at its first position), ``"error"`` refuses them.
REPEATED_ITEMS_RULES = ("first", "error")


@dataclass(frozen=True)
class Ineligibility:
    """One reason why a run does not belong to a competition.

    Attributes
    ----------
    part : str
        ``OTHER_DATA`` (other data), ``OTHER_FOLDS`` (other fold parameters, or none recorded),
        ``OTHER_FOLD_COUNT`` (a fold count other than the fold parameters') or
        ``OTHER_HARNESS_VERSION`` (a version the competition does not accept).
    got, want : Any
        The run's value and the competition's (for ``OTHER_FOLDS``: the run's fold parameters,
        None when it records none, and the competition's).
    differences : str
        For ``OTHER_FOLDS``: the differing parameters with both values, ``key (got vs want)``,
        joined by ", " (at most ``SHOWN_DIFFERENCES``, then "and N more").
    """

    part: str
    got: Any
    want: Any
    differences: str = ""


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
    repeated_items : {"first", "error"}
        Lists that name a track twice: scored as 2022 did (``"first"``) or refused.
    """

    name: str
    source: str
    fingerprint: str | None
    fold_params: dict = field(hash=False)
    harness_versions: tuple[str, ...] | None = None
    path: str | None = None
    repeated_items: str = "first"

    def ineligibilities(self, dataset: Mapping[str, Any], version: Any,
                        folds: Any = ()) -> list[Ineligibility]:
        """Why a run on ``dataset`` with harness ``version`` does not belong here.

        Parameters
        ----------
        dataset : mapping
            The run's ``results["dataset"]``: ``source``, ``fingerprint``, ``fold_params``,
            ``num_folds``.
        version : Any
            The run's harness version.
        folds : sequence of mapping
            The run's ``results["folds"]``: their ``repeated_lists`` are counted when the
            competition refuses repeated items (a fold without the key counts 0).

        Returns
        -------
        list of Ineligibility
            In the order data, folds (or, with the same fold parameters, the fold count),
            harness version, repeated items; empty when the run belongs here. Values compare
            as JSON, as the run hash sees them: 4 and 4.0 differ, and so do 1 and true.
        """
        found = []
        if self.fingerprint is None:
            source = dataset.get(SOURCE_KEY)
            if source != self.source:
                found.append(Ineligibility(OTHER_DATA, source, self.source))
        elif dataset.get(FINGERPRINT_KEY) != self.fingerprint:
            found.append(Ineligibility(OTHER_DATA, dataset.get(FINGERPRINT_KEY), self.fingerprint))
        found += self._fold_ineligibilities(dataset)
        if self.harness_versions is not None and version not in self.harness_versions:
            found.append(Ineligibility(OTHER_HARNESS_VERSION, version, self.harness_versions))
        if self.repeated_items == "error" and repeated_lists(folds):
            found.append(Ineligibility(OTHER_REPEATED_ITEMS, repeated_lists(folds), 0))
        return found

    def _fold_ineligibilities(self, dataset: Mapping[str, Any]) -> list[Ineligibility]:
        """Other fold parameters than the competition's, or else another fold count."""
        params = dataset.get(FOLD_PARAMS_KEY)
        if not isinstance(params, Mapping):
            return [Ineligibility(OTHER_FOLDS, None, self.fold_params)]
        differ = differences(params, self.fold_params)
        if differ:
            return [Ineligibility(OTHER_FOLDS, dict(params), self.fold_params, differ)]
        want = self.fold_params.get(NUM_FOLDS_KEY)
        got = dataset.get(NUM_FOLDS_KEY, want)
        if want is not None and _canonical(got) != _canonical(want):
            return [Ineligibility(OTHER_FOLD_COUNT, got, want)]
        return []

    def not_eligible_because(self, dataset: Mapping[str, Any], version: Any,
                             folds: Any = ()) -> list[str]:
        """Why a run on ``dataset`` with harness ``version`` (and ``folds``, see
        :meth:`ineligibilities`) does not belong here, in words.

        Returns
        -------
        list of str
            One sentence per :meth:`ineligibilities` item (as ``results.json`` records them
            under ``not_eligible_because``); empty when the run belongs here.
        """
        return [self._sentence(i, dataset)
                for i in self.ineligibilities(dataset, version, folds)]

    def _sentence(self, why: Ineligibility, dataset: Mapping[str, Any]) -> str:
        """One ineligibility as the participant reads it."""
        source = cut(dataset.get(SOURCE_KEY) or "unknown")
        if why.part == OTHER_DATA and self.fingerprint is None:
            return (f"the data is {source!r}, not the official challenge data "
                    f"({self.source!r}; --competition FILE for another board)")
        if why.part == OTHER_DATA:
            return (f"the data ({source!r}, fingerprint {cut(why.got, 12)}) is not the "
                    f"competition's ({self.source or 'fingerprint'} {cut(self.fingerprint, 12)}"
                    f") named by {self.path}")
        if why.part == OTHER_FOLDS and why.got is None:
            return f"the run records no fold parameters, so its folds cannot be {self.name}'s"
        if why.part == OTHER_FOLDS:
            return f"the folds differ from {self.name}'s in {why.differences}"
        if why.part == OTHER_FOLD_COUNT:
            return f"the run has {cut(why.got)} folds, {self.name}'s fold parameters {why.want}"
        if why.part == OTHER_REPEATED_ITEMS:
            return (f"{why.got} lists recommend the same track more than once, which "
                    f"{self.name} refuses ({self.repeated_rule()})")
        return (f"harness version {cut(why.got)} is not one {self.name} accepts "
                f"({', '.join(self.harness_versions or ())})")

    def repeated_rule(self) -> str:
        """The competition's rule on repeated items, in words, with the fix."""
        where = f" (repeated_items = \"error\" in {self.path})" if self.path else ""
        return (f"{self.name} refuses lists that recommend the same track more than once"
                f"{where}; recommend each track at most once per user and pad with -1")

    def dataset_options(self) -> dict:
        """``ChallengeDataset`` keyword arguments that rebuild the competition's data and folds
        (see :func:`dataset_arguments`; no source is the official data)."""
        return dataset_arguments(self.source or OFFICIAL_SOURCE, self.fold_params)

    def to_dict(self) -> dict:
        """What ``results.json`` records under ``competition``."""
        return {"name": self.name, SOURCE_KEY: self.source, FINGERPRINT_KEY: self.fingerprint,
                FOLD_PARAMS_KEY: self.fold_params,
                "harness_versions": None if self.harness_versions is None
                else list(self.harness_versions), "path": self.path,
                "repeated_items": self.repeated_items}


def differences(got: Mapping, want: Mapping) -> str:
    """The keys where ``got`` differs from ``want``, with both values ("" when equal).

    Values compare as JSON (4 and 4.0 differ, and so do 1 and true); a key on one side only is
    ``absent`` on the other. At most ``SHOWN_DIFFERENCES`` keys are named, then "and N more".
    """
    parts = []
    for key in sorted(set(got) | set(want), key=str):
        a = cut(got[key]) if key in got else "absent"
        b = cut(want[key]) if key in want else "absent"
        if key not in got or key not in want or _canonical(got[key]) != _canonical(want[key]):
            parts.append(f"{cut(key)} ({a} vs {b})")
    more = len(parts) - SHOWN_DIFFERENCES
    return ", ".join(parts[:SHOWN_DIFFERENCES]) + (f" and {more} more" if more > 0 else "")


def repeated_lists(folds: Any) -> int:
    """How many lists of a run's ``folds`` named a track twice: the sum of their
    ``repeated_lists`` (0 for a fold without the key, made before it was recorded, and for
    anything that is no count)."""
    if not isinstance(folds, (list, tuple)):
        return 0
    counts = (f.get(REPEATED_LISTS_KEY, 0) if isinstance(f, Mapping) else 0 for f in folds)
    return sum(c for c in counts if isinstance(c, int) and not isinstance(c, bool) and c > 0)


def _canonical(value: Any) -> str:
    """``value`` as canonical JSON, as the run hash sees it."""
    return json.dumps(value, sort_keys=True, default=str)


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
            # Python 3.10's stand-in: absent on 3.11 where this line never runs
            import tomli as tomllib  # type: ignore[import-not-found,no-redef]
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
    fingerprint = dataset.get(FINGERPRINT_KEY) if isinstance(dataset, dict) else None
    fold_params = dataset.get(FOLD_PARAMS_KEY) if isinstance(dataset, dict) else None
    versions = data.get("harness_versions")
    name = data.get("name")
    repeated = data.get("repeated_items", "first")
    for key, value, ok, fix in (
            ("name", name, isinstance(name, str) and name.strip(), 'name = "..."'),
            ("dataset.fingerprint", fingerprint, isinstance(fingerprint, str),
             'fingerprint = "..." under [dataset] (results["dataset"]["fingerprint"] of a run '
             'on the data)'),
            ("dataset.fold_params", fold_params, isinstance(fold_params, dict),
             "a [dataset.fold_params] table (results['dataset']['fold_params'] of a run)"),
            ("harness_versions", versions, isinstance(versions, list)
             and all(isinstance(v, str) for v in versions), 'harness_versions = ["0.1.0"]'),
            ("repeated_items", repeated, repeated in REPEATED_ITEMS_RULES,
             'repeated_items = "error" (refuse lists naming a track twice) or "first" (score '
             'them as 2022 did, the default)')):
        if not ok:
            got = "is missing" if value is None else f"is invalid ({cut(value)})"
            raise ConfigError(f"competition file {shown!r}: {key} {got}. Fix: write {fix}.")
    source = data.get(SOURCE_KEY)
    return CompetitionTarget(name=f"competition {name!r}",
                             source=source if isinstance(source, str) else "",
                             fingerprint=fingerprint, fold_params=dict(fold_params or {}),
                             harness_versions=tuple(versions or ()), path=shown,
                             repeated_items=repeated)
