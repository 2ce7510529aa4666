"""The 2022/2023 module path ``evaluation.utils``: the 2022 constants and download helpers.

Kept so that code written for EvalRS 2022 and 2023 runs unchanged; using it warns once
(``DeprecationWarning``) with the modern import. An entry point of ``evaluation.compat``:
it goes with that package.
"""

from evaluation import compat

__getattr__ = compat.legacy_module_getattr(
    "evaluation.utils",
    {name: getattr(compat, name)
     for name in ("LEADERBOARD_TESTS", "LFM_DATASET_PATH", "TOP_K_CHALLENGE",
                  "decompress_zipfile", "download_with_progress", "get_cache_directory",
                  "upload_submission")},
    "evaluation.load_source('lfm') downloads and verifies the data; "
    "evaluation.challenge.LEADERBOARD_TESTS lists the tests")

# the offered names come from __getattr__ only, so that using them warns
del compat
