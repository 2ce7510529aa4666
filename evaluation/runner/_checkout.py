"""A participant's checkout run through the folds: its ``MyModel`` (loaded by path, see
:func:`evaluation.participant.load_model_class`) built for the runner's data and evaluated.

``submission.py`` runs a checkout this way; the reproduction's sandboxed worker loads the
model the same way (``python -m evaluation.participant``). What the participant's code raises
while it is built is left as it is, so that its traceback starts in their code
(``evaluation.cli.guarded`` shows it from there).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from evaluation.participant import load_model_class
from evaluation.runner._loop import EvalRSRunner
from evaluation.runner._result import RunResult


def run_checkout(checkout: str | os.PathLike, runner: EvalRSRunner,
                 params: dict[str, Any] | None = None, *,
                 ready: Callable[[Any], bool] | None = None,
                 **evaluate: Any) -> RunResult | None:
    """Build the checkout's ``MyModel`` for ``runner``'s data and run it through the folds.

    Parameters
    ----------
    checkout : str or os.PathLike
        The folder that holds ``submission/MyModel.py``.
    runner : EvalRSRunner
        The runner: its dataset's tracks and its ``k`` are the model's ``items`` and ``top_k``.
    params : dict, optional
        The model's other constructor arguments.
    ready : callable, optional
        Called with the model once built, before any training; when it returns False the
        model is not evaluated.
    **evaluate
        The arguments of ``runner.evaluate`` besides the model (``seed``, ``limit``...).

    Returns
    -------
    RunResult or None
        The run's result (None when ``ready`` stopped it).
    """
    model_class = load_model_class(checkout)
    model = model_class(items=runner.dataset.df_tracks, top_k=runner.k, **(params or {}))
    if ready is not None and not ready(model):
        return None
    return runner.evaluate(model, **evaluate)
