"""The 2022/2023 module path ``evaluation.EvalRSRunner``: ``EvalRSRunner`` and
``ChallengeDataset`` taking their 2022 arguments.

Kept so that code written for EvalRS 2022 and 2023 runs unchanged; using it warns once
(``DeprecationWarning``) with the modern import. See ``evaluation.compat``.
"""

from evaluation.compat import legacy_module_getattr

__getattr__ = legacy_module_getattr("evaluation.EvalRSRunner")
