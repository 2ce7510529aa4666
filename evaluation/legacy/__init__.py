"""The 2022/2023 spellings that the modern classes take where old code hands them in,
converted to the modern ones.

Old code reaches two modern classes directly: ``ChallengeDataset`` (the 2022/2023 keyword
arguments, :func:`dataset_arguments`; the attributes ``song2vec`` and ``path_to_dataset``,
:func:`keyed_vectors` and :func:`vectors_folder`) and ``EvalRSRecList`` (the 2023 call without
a fold and the 2022 call ``(model, dataset, y_preds)`` of a custom RecList, :func:`unpack_call`
and :func:`build_reclist`, with the 2022 fold container :class:`RecDataset`). Each converter
warns once with the modern spelling, or refuses, saying why, where there is none.

This package stands low, on the foundation alone (``errors`` and ``_util``), so that the
dataset and the RecList call it at the point where an old object enters. The old classes and
modules themselves (the 2022 runner and dataset, the 2022 RecList with its helpers, the
reclist 0.x modules) are ``evaluation.compat``'s, on top of the harness; nothing here imports
that layer or reclist.
"""

from evaluation.legacy._arguments import OLD_DATASET_ARGUMENTS, dataset_arguments
from evaluation.legacy._rec_dataset import RecDataset
from evaluation.legacy._reclist_calls import Fold2022, build_reclist, unpack_call
from evaluation.legacy._vectors import keyed_vectors, vectors_folder

__all__ = [
    "Fold2022",
    "OLD_DATASET_ARGUMENTS",
    "RecDataset",
    "build_reclist",
    "dataset_arguments",
    "keyed_vectors",
    "unpack_call",
    "vectors_folder",
]
