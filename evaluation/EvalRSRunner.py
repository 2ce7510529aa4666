"""The 2022/2023 module path ``evaluation.EvalRSRunner``: ``EvalRSRunner`` and
``ChallengeDataset`` taking their 2022 arguments.

Kept so that code written for EvalRS 2022 and 2023 runs unchanged; using it warns once
(``DeprecationWarning``) with the modern import. An entry point of ``evaluation.compat``:
it goes with that package.
"""

from evaluation import compat, legacy

__getattr__ = compat.legacy_module_getattr(
    "evaluation.EvalRSRunner",
    {"ChallengeDataset": compat.LegacyChallengeDataset,
     "EvalRSRunner": compat.LegacyEvalRSRunner,
     "EvalRSRecList": compat.EvalRSRecList2022, "EvalRSDataset": legacy.RecDataset,
     "LEADERBOARD_TESTS": compat.LEADERBOARD_TESTS,
     "TOP_K_CHALLENGE": compat.TOP_K_CHALLENGE},
    "from evaluation import EvalRSRunner, ChallengeDataset (and EvalRSRunner(dataset,"
    " upload=UploadSettings(...)))")

# the offered names come from __getattr__ only, so that using them warns
del compat, legacy
