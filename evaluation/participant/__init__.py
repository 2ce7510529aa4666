"""A participant's model on its own: its class loaded by path from their checkout
(``submission/MyModel.py``), its fingerprint (its code, the checkout's files that code imports,
its parameters before training, the checkout's requirements) and how two fingerprints differ,
the seeds of a run's folds and the peak memory of the process that trains it.

The runner stands on it, and so does the reproduction's worker, which is this package run as a
program inside the sandbox: ``python -P -m evaluation.participant /inputs`` trains and predicts
each fold and sends what the model returned through the result channel (see
``evaluation/participant/_worker.py``). It imports NumPy and pandas and nothing of the harness
above the foundation, so that the sandboxed process starts with no more than the model needs.
"""

from evaluation.participant._checkout_code import (
    REQUIREMENTS_FILE,
    checkout_files,
    loaded_checkout_modules,
)
from evaluation.participant._fingerprint import (
    PART_LABELS,
    PARTS,
    changed_files,
    changed_parts,
    compared_code,
    content_hash,
    fingerprint_differences,
    model_fingerprint,
)
from evaluation.participant._memory import PeakMemory
from evaluation.participant._model_class import (
    MODEL_ARGUMENTS,
    MODEL_CLASS,
    MODEL_MODULE,
    MODEL_PACKAGE,
    load_model_class,
)
from evaluation.participant._seeds import fold_seed, seed_global_generators

__all__ = [
    "MODEL_ARGUMENTS",
    "MODEL_CLASS",
    "MODEL_MODULE",
    "MODEL_PACKAGE",
    "PARTS",
    "PART_LABELS",
    "PeakMemory",
    "REQUIREMENTS_FILE",
    "changed_files",
    "changed_parts",
    "checkout_files",
    "compared_code",
    "content_hash",
    "fingerprint_differences",
    "fold_seed",
    "load_model_class",
    "loaded_checkout_modules",
    "model_fingerprint",
    "seed_global_generators",
]
