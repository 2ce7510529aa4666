"""The competition a run is made for: the official EvalRS board unless a competition file (or
target) is given.

The competition file and the eligibility check are the contract's
(:class:`evaluation.contract.CompetitionTarget`); what is here is the runner's default, the
official board with the default folds, which needs the dataset's fold parameters.
"""

from __future__ import annotations

import os

from evaluation.contract import OFFICIAL_SOURCE, CompetitionTarget, load_competition_target
from evaluation.dataset import FoldParams
from evaluation.errors import ConfigError

#: The official EvalRS board: the real challenge data with the default folds.
OFFICIAL_COMPETITION = CompetitionTarget(
    name="the official EvalRS board", source=OFFICIAL_SOURCE, fingerprint=None,
    fold_params=FoldParams().as_dict())


def resolve_competition(competition) -> CompetitionTarget:
    """The ``CompetitionTarget`` of ``competition``: None (the official board), a target, or
    the path of a competition file (read with ``load_competition_target``)."""
    if competition is None:
        return OFFICIAL_COMPETITION
    if isinstance(competition, CompetitionTarget):
        return competition
    if isinstance(competition, (str, os.PathLike)):
        return load_competition_target(competition)
    raise ConfigError(f"competition must be None (the official board), a CompetitionTarget or "
                      f"the path of a competition TOML file; got a {type(competition).__name__}.")
