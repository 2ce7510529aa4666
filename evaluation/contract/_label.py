"""How a run is named wherever it is shown (the console, compare, the report, a board): its own
name, else its model's, and the model's parameters (from its settings, else from its model's
record)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

#: Most characters of the parameters shown beside a run (the rest is cut with "...").
MAX_PARAMS_SHOWN = 80


def run_name(results: Mapping[str, Any]) -> str:
    """The run's name: ``results.json``'s ``name``, else its model's name, else its run id.

    Parameters
    ----------
    results : mapping
        A run's ``results.json``.

    Returns
    -------
    str
    """
    name = results.get("name")
    if isinstance(name, str) and name:
        return name
    model = results.get("model")
    if isinstance(model, Mapping) and model.get("name"):
        return str(model["name"])
    return str(results.get("run_id", "?"))


def run_params(results: Mapping[str, Any]) -> dict:
    """The model's parameters the run was asked for: ``settings.params`` (the parameters
    given to ``submission.py``), else ``model.params`` (those the model showed when the run
    started: a run of the Python API or a baseline); empty without either.

    Parameters
    ----------
    results : mapping
        A run's ``results.json``.

    Returns
    -------
    dict
    """
    settings = results.get("settings")
    params = settings.get("params") if isinstance(settings, Mapping) else None
    if not isinstance(params, Mapping):
        model = results.get("model")
        params = model.get("params") if isinstance(model, Mapping) else None
    return dict(params) if isinstance(params, Mapping) else {}


def params_text(params: Mapping[str, Any]) -> str:
    """``params`` as ``name=value, ...`` (values as JSON), cut to ``MAX_PARAMS_SHOWN``."""
    text = ", ".join(f"{k}={json.dumps(v, separators=(',', ':'))}"
                     for k, v in sorted(params.items()))
    return text if len(text) <= MAX_PARAMS_SHOWN else text[:MAX_PARAMS_SHOWN - 3] + "..."


def run_label(results: Mapping[str, Any]) -> str:
    """The run's name followed by its parameters in parentheses (when it has any)."""
    params = params_text(run_params(results))
    return run_name(results) + (f" ({params})" if params else "")
