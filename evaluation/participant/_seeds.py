"""The seeds of a run's folds, and the global generators a model may draw from seeded with them."""

from __future__ import annotations

import random
import sys

import numpy as np


def fold_seed(seed: int, fold: int) -> int:
    """The seed of fold ``fold`` of a run seeded with ``seed``."""
    return (int(seed) * 1_000_003 + fold) % 2**32


def seed_global_generators(seed: int) -> None:
    """Seed the generators a model might draw from without a seed of its own."""
    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002 - participants' models may use the legacy global API
    torch = sys.modules.get("torch")  # seeded only if the model imported it
    if torch is not None:
        torch.manual_seed(seed)
