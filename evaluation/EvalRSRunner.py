"""The 2022/2023 module path ``evaluation.EvalRSRunner``: ``EvalRSRunner`` and
``ChallengeDataset`` taking their 2022 arguments.

Kept so that code written for EvalRS 2022 and 2023 runs unchanged; using it warns once
(``DeprecationWarning``) with the modern import. See ``evaluation.compat``.
"""

from evaluation.compat import legacy_module_getattr

#: name -> (the module that defines it, its attribute there), looked up on first use
_OFFERED = {
    "ChallengeDataset": ("evaluation.runner", "LegacyChallengeDataset"),
    "EvalRSRunner": ("evaluation.runner", "LegacyEvalRSRunner"),
    "EvalRSRecList": ("evaluation.challenge", "EvalRSRecList2022"),
    "EvalRSDataset": ("evaluation.compat._modules", "RecDataset"),
    "LEADERBOARD_TESTS": ("evaluation.compat._legacy_utils", "LEADERBOARD_TESTS"),
    "TOP_K_CHALLENGE": ("evaluation.compat._legacy_utils", "TOP_K_CHALLENGE"),
}
#: what the warning names instead
_MODERN = (
    "from evaluation import EvalRSRunner, ChallengeDataset (and EvalRSRunner(dataset,"
    " upload=UploadSettings(...)))"
)

__getattr__ = legacy_module_getattr("evaluation.EvalRSRunner", _OFFERED, _MODERN)
