"""The checks of ``EvalRSRunner``'s and ``evaluate()``'s arguments.

Each returns the checked value (or nothing) and raises a ``ConfigError`` naming the argument,
the rule, the value and the fix, before any fold is computed.
"""

from __future__ import annotations

import json
import os
from typing import Any

from evaluation._util.validation import check_int, check_seed
from evaluation.errors import ConfigError
from evaluation.runner._ray import check_resources, import_ray

#: Where the folds run: in the runner's process, or as Ray tasks.
EXECUTORS = ("local", "ray")


def not_a_dataset(dataset: Any) -> str:
    """The message for a ``dataset`` argument that is not a ``ChallengeDataset``."""
    got = type(dataset).__name__
    shown = f" ({dataset!r})" if isinstance(dataset, (str, os.PathLike)) else ""
    hint = {
        "Tables": "wrap the tables: EvalRSRunner(ChallengeDataset(tables))",
        "DataFrame": "build the dataset from its events, users and tracks tables: "
                     "EvalRSRunner(ChallengeDataset(Tables(events, users, tracks)))",
    }.get(got, "pass ChallengeDataset(source) (source: 'synthetic', 'lfm', a directory, "
               "'movielens:PATH') or None")
    return (f"EvalRSRunner expects a ChallengeDataset as its dataset, or None for the default "
            f"(the synthetic dataset); got a {got}{shown}. Fix: {hint}.")


def output_level(verbose: Any, quiet: Any) -> str:
    """What a run prints: ``"silent"``, ``"quiet"``, ``"default"`` or ``"verbose"``."""
    for name, value in (("verbose", verbose), ("quiet", quiet)):
        if not (value is None or isinstance(value, bool)) or (name == "quiet" and value is None):
            raise ConfigError(f"EvalRSRunner: {name} must be True or False"
                              + (" or None" if name == "verbose" else "") + f"; got {value!r}.")
    if quiet and verbose:
        raise ConfigError("EvalRSRunner: verbose=True and quiet=True contradict each other; "
                          "pass one of them.")
    if quiet:
        return "quiet"
    return {None: "default", True: "verbose", False: "silent"}[verbose]


def check_executor(executor: Any, resources: Any) -> tuple[str, dict | None]:
    """The executor and its Ray resources, checked (Ray imported only for ``"ray"``)."""
    if executor not in EXECUTORS:
        raise ConfigError(f"EvalRSRunner: executor must be one of {list(EXECUTORS)}; got "
                          f"{executor!r}.")
    if executor == "local":
        if resources is not None:
            raise ConfigError("EvalRSRunner: ray_resources applies to executor='ray' only; "
                              "drop it or pass executor='ray'.")
        return executor, None
    import_ray()  # fails here, with the install hint, rather than after the first fold
    return executor, check_resources(resources)


def check_n_boot(n_boot: Any) -> int:
    """``n_boot`` if it is 0 or an int >= 2; else a ``ConfigError``."""
    n_boot = check_int("n_boot", n_boot, minimum=0, owner="EvalRSRunner")
    if n_boot == 1:
        raise ConfigError("The 'n_boot' parameter of EvalRSRunner must be 0 (no confidence "
                          "intervals) or an int >= 2. Got 1 instead.")
    return n_boot


def check_run_seed(seed: Any) -> int:
    """``seed`` as an int if it is one in [0, 2**32 - 1]; else a ``ConfigError``."""
    return check_seed("seed", seed, owner="EvalRSRunner.evaluate")


def check_model(model: Any) -> None:
    """Nothing; raises unless ``model`` has ``train`` and ``predict`` methods."""
    for method in ("train", "predict"):
        if not callable(getattr(model, method, None)):
            raise ConfigError(f"the model {type(model).__name__} has no {method}() method; "
                              f"subclass evaluation.RecModel and implement train() and "
                              f"predict().")


def check_run_settings(settings: Any) -> dict:
    """``settings`` as JSON data (a copy); a ``ConfigError`` when it is not JSON."""
    if not isinstance(settings, dict):
        raise ConfigError(f"evaluate(settings=...) must be a dict of JSON values; got a "
                          f"{type(settings).__name__}.")
    try:
        return json.loads(json.dumps(settings, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"evaluate(settings=...) must hold JSON values only (strings, "
                          f"numbers, booleans, lists, dicts): {exc}.") from None


#: Most characters of a run's name (the server shows it on the board).
MAX_RUN_NAME = 80


def check_run_name(name: Any) -> str | None:
    """``name`` stripped, or None when not given; a ``ConfigError`` when it is not a short,
    printable text."""
    if name is None:
        return None
    if not isinstance(name, str):
        raise ConfigError(f"evaluate(name=...) must be a str; got a {type(name).__name__}. "
                          f"Pass e.g. name=\"als-64-factors\".")
    text = name.strip()
    if not text or len(text) > MAX_RUN_NAME or not text.isprintable():
        raise ConfigError(f"evaluate(name=...) must be 1 to {MAX_RUN_NAME} printable "
                          f"characters; got {name[:MAX_RUN_NAME + 1]!r}"
                          f"{'...' if len(name) > MAX_RUN_NAME + 1 else ''}. Pass a short "
                          f"label such as \"als-64-factors\".")
    return text


def reclist_tests(reclist_class: type) -> list[str]:
    """List the tests of a RecList class.

    Parameters
    ----------
    reclist_class : type
        A RecList class (``EvalRSRecList`` or a subclass).

    Returns
    -------
    list of str
        The sorted names of its ``@rec_test`` tests, as reclist reports them.
    """
    names = set()
    for klass in reclist_class.__mro__:
        for value in vars(klass).values():
            if getattr(value, "is_test", False):
                names.add(value.test_type)
    return sorted(names)
