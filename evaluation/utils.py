"""The 2022/2023 module path ``evaluation.utils``: the 2022 constants and download helpers.

Kept so that code written for EvalRS 2022 and 2023 runs unchanged; using it warns once
(``DeprecationWarning``) with the modern import. See ``evaluation.compat``.
"""

from evaluation.compat import legacy_module_getattr

#: name -> (the module that defines it, its attribute there), looked up on first use
_OFFERED = {name: ("evaluation.compat._legacy_utils", name)
           for name in ("LEADERBOARD_TESTS", "LFM_DATASET_PATH", "TOP_K_CHALLENGE",
                        "decompress_zipfile", "download_with_progress", "get_cache_directory",
                        "upload_submission")}
#: what the warning names instead
_MODERN = (
    "evaluation.load_source('lfm') downloads and verifies the data; "
    "evaluation.challenge.LEADERBOARD_TESTS lists the tests"
)

__getattr__ = legacy_module_getattr("evaluation.utils", _OFFERED, _MODERN)
