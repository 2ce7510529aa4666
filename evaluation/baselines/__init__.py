"""Reference models: real, tested recommenders used for the phase-2 references and tutorials."""

from evaluation.baselines._bias import BiasModel
from evaluation.baselines._cbow import CBOWModel
from evaluation.baselines._popularity import PopularityModel
from evaluation.baselines._random import RandomModel

__all__ = ["BiasModel", "CBOWModel", "PopularityModel", "RandomModel"]
