"""Code written for EvalRS 2022 and 2023, run unchanged on this harness.

The old module paths (``evaluation.EvalRSRunner``, ``evaluation.EvalRSRecList``,
``evaluation.utils``), the reclist 0.x modules 2022 model files import
(``reclist.abstractions``, ``reclist.utils``, ``reclist.utils.train_w2v``, ...), the 2022
runner and dataset with their signatures, the 2022 RecList with the helpers 2022 custom tests
call, the 2023 last-interaction split and its protocol, and the recognition of a copied
official ``evaluation/`` folder. Each old spelling warns once per process
(``DeprecationWarning``) with its modern one; each difference from 2022 that changes a number
is said once (``UserWarning``).

This package stands on top of the harness: it builds on the runner, the dataset, the RecList
(``evaluation.challenge_reclist``) and the converters of ``evaluation.legacy``, and no module
below it imports it. Only its entry points load it: the old module paths, and the finder of
``evaluation._old_modules`` (``reclist.abstractions``...) when old code imports such a
module. A modern run never loads it. What the modern classes take from old code where it
enters (``ChallengeDataset``'s old arguments and attributes, ``EvalRSRecList``'s 2022 and
2023 calls) is converted by ``evaluation.legacy``, below the dataset and the RecList. The 2023
last-interaction split (``folded_dataset_split=False``) lives here, scored by the 2023 RecList
with its own protocol (``PROTOCOL_2023``), apart from the leaderboard's folds.
``vendored_evaluation`` (a copied official ``evaluation/`` folder) lives in
``evaluation._util.vendored``, which imports nothing of the harness; it is offered here too.
"""

from evaluation._util.once import forget_warnings, warn_once
from evaluation._util.vendored import vendored_evaluation
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
from evaluation.compat._modules import fill_old_module, old_module_name
from evaluation.compat._paths import legacy_module_getattr
from evaluation.compat._reclist_2022 import EvalRSRecList2022
from evaluation.compat._runner import LegacyChallengeDataset, LegacyEvalRSRunner
from evaluation.compat._simple_model import EvalRSSimpleModel

__all__ = [
    "EvalRSRecList2022",
    "EvalRSSimpleModel",
    "LEADERBOARD_TESTS",
    "LFM_DATASET_PATH",
    "LastInteractionScorer",
    "LegacyChallengeDataset",
    "LegacyEvalRSRunner",
    "PROTOCOL_2023",
    "RecListHelpers2022",
    "TOP_K_CHALLENGE",
    "case_predictions",
    "decompress_zipfile",
    "download_with_progress",
    "fill_old_module",
    "first_hit_positions",
    "forget_warnings",
    "get_cache_directory",
    "legacy_module_getattr",
    "old_module_name",
    "upload_submission",
    "vendored_evaluation",
    "warn_once",
]
