"""One entry point for every data source: ``load_source``."""

from __future__ import annotations

import os
from pathlib import Path

from evaluation.data._lfm import load_lfm
from evaluation.data._local import load_local
from evaluation.data._movielens import load_movielens
from evaluation.data._schema import validate_tables
from evaluation.data._synthetic import synthetic_tables
from evaluation.data._tables import Tables
from evaluation.errors import ConfigError

SOURCE_FORMS = (
    "'synthetic' (the embedded generator; see scale and seed)",
    "'lfm' (the real 2022 challenge data, downloaded once and cached)",
    "'lfm2023' (the real 2023 challenge data, downloaded once and cached)",
    "a path to a directory of events/users/tracks parquet or CSV files",
    "'movielens:PATH' (a MovieLens ml-100k, ml-1m or ml-latest folder)",
)


def load_source(source: str | os.PathLike = "synthetic", *, scale: str = "small",
                seed: int = 42, cache_dir: str | os.PathLike | None = None,
                url: str | None = None, sha256: str | None = None,
                progress: bool = True) -> Tables:
    """Load a dataset in the EvalRS schema, validated and with canonical dtypes.

    ``source`` is one of: ``"synthetic"`` (``scale`` "tiny" | "small" | "full", ``seed``),
    ``"lfm"`` (the 2022 challenge zip from ``url``, ``$EVALRS_LFM_URL`` or the challenge
    bucket, checked against ``sha256`` if given, cached under ``cache_dir`` or
    ``cache_dir()/lfm``; ``progress`` shows a download bar), ``"lfm2023"`` (the same for the
    2023 zip, ``$EVALRS_LFM2023_URL``), a directory path, or ``"movielens:PATH"``. ``scale``
    and ``seed`` only matter for the synthetic source; :func:`source_options` lists the
    keyword arguments each source uses.

    Parameters
    ----------
    source : str or path
        ``"synthetic"``, ``"lfm"``, ``"lfm2023"``, a directory, or ``"movielens:PATH"``.
    scale, seed
        Scale and generator seed of the synthetic source.
    cache_dir : str or path, optional
        Where the challenge data is cached.
    url, sha256 : str, optional
        The challenge zip's address and expected checksum.
    progress : bool, default True
        Show a download bar.

    Returns
    -------
    Tables
        The validated dataset.

    Raises
    ------
    ConfigError
        On a source in none of these forms.
    DataError, DownloadError
        When the data cannot be read or fetched.
    """
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str) or not source.strip():
        raise ConfigError(f"source: expected a string, got {source!r}. Accepted forms: "
                          + "; ".join(SOURCE_FORMS))
    if source == "synthetic":
        return validate_tables(synthetic_tables(scale, seed))
    if source in ("lfm", "lfm2023"):
        return load_lfm(url=url, sha256=sha256, cache_dir=cache_dir, progress=progress,
                        source=source)
    if source.startswith("movielens:"):
        movielens_path = source[len("movielens:"):]
        if not movielens_path:
            raise ConfigError("source 'movielens:': the path is missing. Fix: write "
                              "'movielens:PATH', e.g. 'movielens:data/ml-100k'")
        return load_movielens(movielens_path)
    path = Path(source).expanduser()
    if path.is_dir():
        return load_local(path)
    reason = "no such directory" if not path.exists() else "not a directory"
    raise ConfigError(f"source {source!r}: unknown source ({reason}). Accepted forms: "
                      + "; ".join(SOURCE_FORMS))


#: The keyword arguments of ``load_source`` each kind of source uses.
_OPTIONS = {
    "synthetic": ("scale", "seed"),
    "lfm": ("url", "sha256", "cache_dir", "progress"),
    "movielens": (),
    "directory": (),
}


def source_options(source: str | os.PathLike) -> tuple[str, ...]:
    """The keyword arguments of :func:`load_source` that ``source`` uses (others are ignored).

    Parameters
    ----------
    source : str or path
        A source as :func:`load_source` takes it.

    Returns
    -------
    tuple of str
        The keyword names.
    """
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if source == "synthetic":
        return _OPTIONS["synthetic"]
    if source in ("lfm", "lfm2023"):
        return _OPTIONS["lfm"]
    if isinstance(source, str) and source.startswith("movielens:"):
        return _OPTIONS["movielens"]
    return _OPTIONS["directory"]
