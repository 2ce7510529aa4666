"""The 2022 module path ``evaluation.EvalRSRecList``: ``EvalRSRecList`` (subclass it for
custom tests) and ``EvalRSDataset``.

Kept so that code written for EvalRS 2022 runs unchanged; using it warns once
(``DeprecationWarning``) with the modern import. An entry point of ``evaluation.compat``:
it goes with that package.
"""

from reclist.reclist import RecList, rec_test

from evaluation import compat, legacy

__getattr__ = compat.legacy_module_getattr(
    "evaluation.EvalRSRecList",
    {"EvalRSRecList": compat.EvalRSRecList2022, "EvalRSDataset": legacy.RecDataset,
     "TOP_K_CHALLENGE": compat.TOP_K_CHALLENGE, "rec_test": rec_test, "RecList": RecList},
    "from evaluation import EvalRSRecList (tests: from reclist.reclist import rec_test)")

# the offered names come from __getattr__ only, so that using them warns
del RecList, rec_test, compat, legacy
