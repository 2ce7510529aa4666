"""The public names of the 2022 ``evaluation/utils.py``, on this harness.

The constants keep their 2022 values; the download helpers work as they did (a URL to a
file, a zip to a folder, the cache folder); the S3 upload of 2022 no longer exists and says
what replaced it.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

from evaluation._util.paths import cache_dir
from evaluation.errors import ConfigError

__all__ = ["LEADERBOARD_TESTS", "LFM_DATASET_PATH", "TOP_K_CHALLENGE", "decompress_zipfile",
           "download_with_progress", "get_cache_directory", "upload_submission"]

#: The 2022 dataset's address (``source="lfm"`` downloads and verifies it).
LFM_DATASET_PATH = "https://evarl-2022-public-dataset.s3.us-east-1.amazonaws.com/evalrs_dataset.zip"
#: Length of the scored lists.
TOP_K_CHALLENGE = 100
#: The nine tests of the 2022 leaderboard, in the 2022 order.
LEADERBOARD_TESTS = ["HIT_RATE", "MRR", "MRED_COUNTRY", "MRED_USER_ACTIVITY",
                     "MRED_TRACK_POPULARITY", "MRED_ARTIST_POPULARITY", "MRED_GENDER",
                     "BEING_LESS_WRONG", "LATENT_DIVERSITY"]


def download_with_progress(url: str, destination: str | os.PathLike) -> None:
    """Download ``url`` to the file ``destination`` (with a progress bar)."""
    import requests
    from tqdm.auto import tqdm

    with requests.get(url, stream=True, timeout=60) as response:
        response.raise_for_status()
        total = int(response.headers.get("content-length", 0))
        with open(destination, "wb") as out, tqdm(total=total, unit="B", unit_scale=True,
                                                  desc=url.rsplit("/", 1)[-1]) as bar:
            for chunk in response.iter_content(chunk_size=1 << 16):
                out.write(chunk)
                bar.update(len(chunk))


def decompress_zipfile(file: str | os.PathLike, outfile: str | os.PathLike) -> None:
    """Extract the zip ``file`` into the folder ``outfile`` (no path outside it)."""
    target = Path(outfile).resolve()
    with zipfile.ZipFile(file) as zf:
        for member in zf.namelist():
            if not (target / member).resolve().is_relative_to(target):
                raise ConfigError(f"{file}: the zip member {member!r} would be written outside "
                                  f"{target}; refusing to extract it")
        zf.extractall(target)


def get_cache_directory() -> str:
    """The harness's cache folder (created), where 2022 code kept the dataset."""
    path = cache_dir()
    path.mkdir(parents=True, exist_ok=True)
    return os.fspath(path)


def upload_submission(local_file: str, aws_access_key_id: str | None = None,
                      aws_secret_access_key: str | None = None,
                      participant_id: str | None = None, bucket_name: str | None = None) -> None:
    """The 2022 S3 upload, which no longer exists: always a ``ConfigError`` saying what to do."""
    raise ConfigError(
        f"upload_submission({local_file!r}, ...): the 2022 S3 bucket of the challenge is closed, "
        f"so AWS keys and bucket names no longer upload anything. Fix: run with "
        f"`python submission.py --upload` (leaderboard settings in upload.env), or send a "
        f"saved submission with `python -m evaluation submit PATH`.")
