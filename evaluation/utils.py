"""The 2022/2023 module path ``evaluation.utils``: the 2022 constants and download helpers.

Kept so that code written for EvalRS 2022 and 2023 runs unchanged; using it warns once
(``DeprecationWarning``) with the modern import. See ``evaluation.compat``.
"""

from evaluation.compat import legacy_module_getattr

__getattr__ = legacy_module_getattr("evaluation.utils")
