"""Phase-2 references: the baseline and best value of each test, the gate, groups and weights.

The references are data: one JSON file per dataset under ``evaluation/challenge/references/``
(:data:`REFERENCES_DIR`), or one computed from reference models by :func:`build_references`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from evaluation.challenge._spec import (
    DEFAULT_GROUPS,
    DEFAULT_WEIGHTS,
    HIT_RATE,
    LEADERBOARD_TESTS,
    THRESHOLD_RATIO,
)
from evaluation.errors import ConfigError, DataError

REFERENCES_DIR = Path(__file__).resolve().parent / "references"


@dataclass(frozen=True)
class References:
    """Phase-2 references of one dataset: baseline and best value of each test, gate, weights.

    Parameters
    ----------
    baseline, best : dict of str to float
        Test name -> the baseline's value and the best value; a test normalises to 0 at the
        baseline and to 1 at the best value.
    hit_rate_threshold : float
        The gate: a HIT_RATE below it scores ``GATED_SCORE``.
    groups, weights : dict
        Group name -> its tests, and group name -> its weight (default: the challenge's).
    name, description, dataset, path : optional
        Where the references come from, for reports.
    not_applicable : dict of str to str, optional
        The leaderboard tests the references leave out because they are not applicable to
        their dataset (test -> reason); ``groups`` lists the tests they cover.

    Raises
    ------
    DataError
        When groups and weights differ, a test lacks a finite baseline or best value, a best
        equals its baseline, the threshold is not finite or the weights are not non-negative
        with a positive sum.
    """

    baseline: dict[str, float]
    best: dict[str, float]
    hit_rate_threshold: float
    groups: dict[str, list[str]] = field(default_factory=lambda: _default_groups())
    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    name: str = ""
    description: str = ""
    dataset: dict = field(default_factory=dict)
    path: str = ""
    not_applicable: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        where = f"references {self.path or self.name or '(in memory)'}"
        if set(self.groups) != set(self.weights):
            raise DataError(
                f"{where}: 'groups' and 'weights' must name the same groups; got groups "
                f"{sorted(self.groups)} and weights {sorted(self.weights)}. Give every group "
                f"a weight."
            )
        self._check_values(where)
        if not is_finite_number(self.hit_rate_threshold):
            raise DataError(
                f"{where}: 'hit_rate_threshold' must be a finite number, got "
                f"{self.hit_rate_threshold!r}."
            )
        bad_w = {g: w for g, w in self.weights.items() if not is_finite_number(w) or w < 0}
        if bad_w or sum(self.weights.values()) <= 0:
            raise DataError(
                f"{where}: weights must be non-negative numbers with a positive sum; got "
                f"{self.weights}."
            )

    def _check_values(self, where: str) -> None:
        """Nothing; a ``DataError`` unless every test has finite, distinct baseline and best."""
        tests = self.tests
        for key in ("baseline", "best"):
            values = getattr(self, key)
            missing = [t for t in tests if t not in values]
            if missing:
                raise DataError(
                    f"{where}: '{key}' lacks a value for {missing}; every test of 'groups' "
                    f"needs a baseline and a best value."
                )
            bad = [t for t in tests if not is_finite_number(values[t])]
            if bad:
                raise DataError(
                    f"{where}: '{key}' values must be finite numbers; got "
                    f"{ {t: values[t] for t in bad} }."
                )
        flat = [t for t in tests if self.best[t] == self.baseline[t]]
        if flat:
            raise DataError(
                f"{where}: best equals baseline for {flat}, so the normalisation "
                f"(x - baseline) / (best - baseline) is undefined. Use a reference model that "
                f"differs from the baseline on every test."
            )

    @property
    def tests(self) -> list[str]:
        """The tests of every group, in group order."""
        return [t for members in self.groups.values() for t in members]

    def to_dict(self) -> dict:
        """The references as a JSON object (the layout of a references file; the key
        ``not_applicable`` only when they leave a test out)."""
        out = {
            "name": self.name,
            "description": self.description,
            "hit_rate_threshold": self.hit_rate_threshold,
            "groups": self.groups,
            "weights": self.weights,
            "baseline": self.baseline,
            "best": self.best,
            "dataset": self.dataset,
        }
        if self.not_applicable:
            out["not_applicable"] = dict(self.not_applicable)
        return out

    @classmethod
    def from_dict(cls, data: Mapping, path: str = "") -> References:
        """References from a parsed references file.

        Parameters
        ----------
        data : Mapping
            The JSON object: ``baseline``, ``best``, ``hit_rate_threshold`` and optionally
            ``groups``, ``weights``, ``name``, ``description``, ``dataset``,
            ``not_applicable``.
        path : str, optional
            Where it was read from, for messages.

        Returns
        -------
        References

        Raises
        ------
        DataError
            When a required key is missing or a value has the wrong type.
        """
        where = f"references {path or '(in memory)'}"
        if not isinstance(data, Mapping):
            raise DataError(f"{where}: expected a JSON object, got {type(data).__name__}.")
        missing = [k for k in ("baseline", "best", "hit_rate_threshold") if k not in data]
        if missing:
            raise DataError(
                f"{where}: missing key(s) {missing}; a references file needs 'baseline', "
                f"'best' (test name -> value) and 'hit_rate_threshold'."
            )
        for key in ("baseline", "best", "groups", "weights", "not_applicable"):
            if key in data and not isinstance(data[key], Mapping):
                raise DataError(
                    f"{where}: '{key}' must be an object (name -> value), got "
                    f"{type(data[key]).__name__}."
                )
        return cls(
            baseline={str(k): v for k, v in data["baseline"].items()},
            best={str(k): v for k, v in data["best"].items()},
            hit_rate_threshold=data["hit_rate_threshold"],
            groups={k: list(v) for k, v in data.get("groups", DEFAULT_GROUPS).items()},
            weights=dict(data.get("weights", DEFAULT_WEIGHTS)),
            name=str(data.get("name", "")),
            description=str(data.get("description", "")),
            dataset=dict(data.get("dataset") or {}),
            path=path,
            not_applicable={str(k): str(v) for k, v in data.get("not_applicable", {}).items()},
        )


def _default_groups() -> dict[str, list[str]]:
    """A copy of the challenge's groups that a References may own."""
    return {g: list(members) for g, members in DEFAULT_GROUPS.items()}


def is_finite_number(x) -> bool:
    """Whether ``x`` is a finite int or float (a bool is not a number here)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def load_references(path_or_name: str | Path) -> References:
    """Load a references file.

    Parameters
    ----------
    path_or_name : str or Path
        A path, or the name of a shipped file (``"lfm"``, ``"synthetic-tiny"``, ...).

    Returns
    -------
    References

    Raises
    ------
    ConfigError
        When the file does not exist.
    DataError
        When it is not valid JSON or not a valid references object.
    """
    path = Path(path_or_name)
    if not path.suffix and not path.exists():
        path = REFERENCES_DIR / f"{path_or_name}.json"
    if not path.is_file():
        shipped = sorted(p.stem for p in REFERENCES_DIR.glob("*.json"))
        raise ConfigError(
            f"references file {str(path)!r} does not exist. Pass a path to a references JSON "
            f"or one of the shipped names {shipped}; `python -m evaluation references SOURCE` "
            f"writes one for a synthetic dataset."
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"references file {str(path)!r} is not valid JSON: {exc}") from None
    return References.from_dict(data, path=str(path))


def references_name(source: str, scale: str | None = None) -> str | None:
    """Name of the shipped references file for a dataset.

    Parameters
    ----------
    source : str
        The dataset source (``"lfm"``, ``"synthetic"``, ...).
    scale : str, optional
        The synthetic dataset's scale.

    Returns
    -------
    str or None
        The name for :func:`load_references`, or None when no file is shipped.
    """
    if source == "lfm":
        return "lfm"
    if source == "synthetic" and scale:
        return f"synthetic-{scale}"
    return None



def build_references(
    means: Mapping[str, Mapping[str, float]],
    baseline: str = "CBOWModel",
    *,
    threshold_ratio: float = THRESHOLD_RATIO,
    name: str = "",
    dataset: Mapping | None = None,
    not_applicable: Mapping[str, str] | None = None,
) -> References:
    """References from the fold-mean test results of reference models run on the same folds.

    The best value of a test is the best (highest; every test is "higher is better") over all
    reference models. Where no model beats the baseline on a test, the best is mirrored:
    ``baseline + (baseline - worst)``, so that a model as much better than the baseline as the
    worst reference model is worse normalises to 1.

    Parameters
    ----------
    means : Mapping
        Model name -> ``{test: mean over folds}`` for every applicable leaderboard test.
    baseline : str
        The model of ``means`` that is the baseline.
    threshold_ratio : float
        The HIT_RATE gate as a share of the baseline's HIT_RATE.
    name : str
        The references' name.
    dataset : Mapping, optional
        Facts about the dataset, kept in the file with ``best_from`` and every model's means.
    not_applicable : Mapping, optional
        Test -> reason, for the leaderboard tests the dataset cannot measure: the references
        leave them out of their groups (a group left empty is dropped with its weight) and
        record why.

    Returns
    -------
    References

    Raises
    ------
    ConfigError
        When ``baseline`` is not among the models, or an accuracy test is not applicable.
    DataError
        When every model has the same value of an applicable test.
    """
    if baseline not in means:
        raise ConfigError(f"build_references: the baseline {baseline!r} is not among the "
                          f"reference models {sorted(means)}.")
    skip = dict(not_applicable or {})
    accuracy = [t for t in DEFAULT_GROUPS["accuracy"] if t in skip]
    if accuracy:
        raise ConfigError(f"build_references: the accuracy tests {accuracy} are not applicable "
                          f"({ {t: skip[t] for t in accuracy} }); references need them.")
    tests = [t for t in LEADERBOARD_TESTS if t not in skip]
    base = {t: float(means[baseline][t]) for t in tests}
    best, best_from = {}, {}
    for t in tests:
        values = {m: float(v[t]) for m, v in means.items()}
        top_model = max(values, key=lambda m: (values[m], m == baseline))
        if values[top_model] > base[t]:
            best[t], best_from[t] = values[top_model], top_model
            continue
        spread = base[t] - min(values.values())
        if spread <= 0:
            raise DataError(f"build_references: every reference model has {t} = {base[t]}; "
                            f"the normalisation needs models that differ on every test.")
        best[t], best_from[t] = base[t] + spread, f"mirror of {min(values, key=values.__getitem__)}"
    groups = {g: [t for t in members if t not in skip] for g, members in DEFAULT_GROUPS.items()}
    groups = {g: members for g, members in groups.items() if members}
    return References(
        baseline=base,
        best=best,
        hit_rate_threshold=threshold_ratio * base[HIT_RATE],
        groups=groups,
        weights={g: w for g, w in DEFAULT_WEIGHTS.items() if g in groups},
        name=name,
        description=(f"Computed by `python -m evaluation references`: baseline = {baseline}; "
                     f"best = the best reference model per test (see best_from); HIT_RATE gate "
                     f"= {threshold_ratio} x the baseline's hit rate."
                     + (f" Not applicable to the dataset, left out: {list(skip)}."
                        if skip else "")),
        dataset={**(dict(dataset) if dataset else {}), "best_from": best_from,
                 "models": {m: {t: float(v[t]) for t in tests}
                            for m, v in means.items()}},
        not_applicable=skip,
    )
