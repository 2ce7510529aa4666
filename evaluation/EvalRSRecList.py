"""The 2022 module path ``evaluation.EvalRSRecList``: ``EvalRSRecList`` (subclass it for
custom tests) and ``EvalRSDataset``.

Kept so that code written for EvalRS 2022 runs unchanged; using it warns once
(``DeprecationWarning``) with the modern import. See ``evaluation.compat``.
"""

from evaluation.compat import legacy_module_getattr

__getattr__ = legacy_module_getattr("evaluation.EvalRSRecList")
