"""The 2022 module path ``evaluation.EvalRSRecList``: ``EvalRSRecList`` (subclass it for
custom tests) and ``EvalRSDataset``.

Kept so that code written for EvalRS 2022 runs unchanged; using it warns once
(``DeprecationWarning``) with the modern import. See ``evaluation.compat``.
"""

from evaluation.compat import legacy_module_getattr

#: name -> (the module that defines it, its attribute there), looked up on first use
_OFFERED = {
    "EvalRSRecList": ("evaluation.challenge", "EvalRSRecList2022"),
    "EvalRSDataset": ("evaluation.compat._modules", "RecDataset"),
    "TOP_K_CHALLENGE": ("evaluation.compat._legacy_utils", "TOP_K_CHALLENGE"),
    "rec_test": ("reclist.reclist", "rec_test"),
    "RecList": ("reclist.reclist", "RecList"),
}
#: what the warning names instead
_MODERN = (
    "from evaluation import EvalRSRecList (tests: from reclist.reclist import "
    "rec_test)"
)

__getattr__ = legacy_module_getattr("evaluation.EvalRSRecList", _OFFERED, _MODERN)
