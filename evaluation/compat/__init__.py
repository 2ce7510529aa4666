"""Code written for EvalRS 2022 and 2023, run unchanged on this harness.

The old module paths (``evaluation.EvalRSRunner``, ``evaluation.EvalRSRecList``,
``evaluation.utils``), the reclist 0.x modules 2022 model files import
(``reclist.abstractions``, ``reclist.utils``, ``reclist.utils.train_w2v``, ...), the
2022/2023 constructor arguments, the RecList helpers 2022 custom tests call, the track
vectors as gensim ``KeyedVectors`` and the recognition of a copied official ``evaluation/``
folder. Each old spelling warns once per
process (``DeprecationWarning``) with its modern one; each difference from 2022 that changes
a number is said once (``UserWarning``).

This package stands above every other one: it builds on the runner, the dataset and the
RecList, and no modern module imports it at module level. Old objects are converted where
they enter, and only there is this package loaded: the old module paths import it; the
finder of ``evaluation._util.old_modules`` (``reclist.abstractions``...), ``ChallengeDataset``
(an old argument, ``song2vec``, ``path_to_dataset``) and ``EvalRSRecList`` (the 2022 and 2023
calls) import it when old code reaches them. A modern run never loads it. The 2023
last-interaction split (``folded_dataset_split=False``) lives here too, scored by the 2023
RecList with its own protocol (``PROTOCOL_2023``), apart from the leaderboard's folds.
``vendored_evaluation`` (a copied official ``evaluation/`` folder) lives in
``evaluation._util.vendored``, which imports nothing of the harness; it is offered here too.
"""

from evaluation._util.old_modules import LegacyReclistFinder
from evaluation._util.once import forget_warnings, warn_once
from evaluation._util.vendored import vendored_evaluation
from evaluation.compat._arguments import OLD_DATASET_ARGUMENTS, dataset_arguments
from evaluation.compat._helpers import RecListHelpers2022, first_hit_positions
from evaluation.compat._last_interactions import (
    PROTOCOL_2023,
    LastInteractionScorer,
    case_predictions,
)
from evaluation.compat._legacy_utils import (
    LEADERBOARD_TESTS,
    LFM_DATASET_PATH,
    TOP_K_CHALLENGE,
    decompress_zipfile,
    download_with_progress,
    get_cache_directory,
    upload_submission,
)
from evaluation.compat._modules import RecDataset, fill_old_module, old_module_name
from evaluation.compat._paths import legacy_module_getattr
from evaluation.compat._reclist_2022 import EvalRSRecList2022
from evaluation.compat._reclist_calls import Fold2022, build_reclist, unpack_call
from evaluation.compat._runner import LegacyChallengeDataset, LegacyEvalRSRunner
from evaluation.compat._simple_model import EvalRSSimpleModel
from evaluation.compat._vectors import keyed_vectors, vectors_folder

__all__ = [
    "EvalRSRecList2022",
    "EvalRSSimpleModel",
    "Fold2022",
    "LEADERBOARD_TESTS",
    "LFM_DATASET_PATH",
    "LastInteractionScorer",
    "LegacyChallengeDataset",
    "LegacyEvalRSRunner",
    "LegacyReclistFinder",
    "OLD_DATASET_ARGUMENTS",
    "PROTOCOL_2023",
    "RecDataset",
    "RecListHelpers2022",
    "TOP_K_CHALLENGE",
    "build_reclist",
    "case_predictions",
    "dataset_arguments",
    "decompress_zipfile",
    "download_with_progress",
    "fill_old_module",
    "first_hit_positions",
    "forget_warnings",
    "get_cache_directory",
    "keyed_vectors",
    "legacy_module_getattr",
    "old_module_name",
    "unpack_call",
    "upload_submission",
    "vectors_folder",
    "vendored_evaluation",
    "warn_once",
]
