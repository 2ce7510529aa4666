"""The track vectors as 2022 and 2023 code reads them: gensim ``KeyedVectors`` and a folder.

2022 tests looked vectors up with ``self._dense_repr[track_ids]`` and 2023 code loaded
``KeyedVectors.load(os.path.join(dataset.path_to_dataset, "song2vec.wv"))``. Every source
gets both: the ``KeyedVectors`` are built from the dataset's own vectors (keyed by the
integer track id, so that a lookup with the ids of a DataFrame finds the track's vector), and
the folder is written once under the cache directory, named by the data's fingerprint.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from evaluation._util.paths import cache_dir
from evaluation.errors import ConfigError

#: The file name 2022 and 2023 code joins to ``path_to_dataset``.
SONG2VEC = "song2vec.wv"


def _track_vectors(dataset: Any) -> Any:
    """The dataset's ``TrackVectors``; a ``ConfigError`` when it has none."""
    vectors = getattr(dataset, "track_vectors", None)
    if vectors is None:
        raise ConfigError(
            f"the dataset {getattr(dataset, 'tables', dataset)!r} has no track vectors, so "
            f"there are no song2vec KeyedVectors to give. Fix: use a source with vectors "
            f"('synthetic', 'lfm', or a directory with track_vectors.parquet or song2vec.wv).")
    return vectors


def keyed_vectors(dataset: Any) -> Any:
    """The dataset's track vectors as gensim ``KeyedVectors`` keyed by int track id.

    Built once per dataset. ``kv[track_id]`` is that track's vector and
    ``kv.key_to_index`` holds the ids as Python ints. As in gensim itself, an int that is
    not a key is taken as a row position: check ``track_id in kv.key_to_index`` first.

    Parameters
    ----------
    dataset : ChallengeDataset
        The dataset.

    Returns
    -------
    gensim.models.KeyedVectors

    Raises
    ------
    ConfigError
        When the dataset has no track vectors.
    """
    cached = getattr(dataset, "_compat_keyed_vectors", None)
    if cached is not None:
        return cached
    tv = _track_vectors(dataset)
    from gensim.models import KeyedVectors  # a requirement; imported only when asked for

    kv = KeyedVectors(vector_size=int(tv.vectors.shape[1]))
    kv.add_vectors([int(t) for t in tv.track_ids], np.array(tv.vectors, dtype=np.float32))
    try:
        dataset._compat_keyed_vectors = kv
    except AttributeError:  # a dataset-like object without a __dict__: no cache
        pass
    return kv


def vectors_folder(dataset: Any) -> Path:
    """A folder holding ``song2vec.wv`` (the dataset's ``KeyedVectors``), written once.

    Parameters
    ----------
    dataset : ChallengeDataset
        The dataset.

    Returns
    -------
    pathlib.Path
        ``cache_dir()/song2vec/<fingerprint>/``; ``KeyedVectors.load(folder / "song2vec.wv")``
        reads the vectors back.
    """
    folder = cache_dir() / "song2vec" / dataset.fingerprint[:32]
    if (folder / SONG2VEC).exists():
        return folder
    kv = keyed_vectors(dataset)
    folder.parent.mkdir(parents=True, exist_ok=True)
    # written next to its final place and renamed: a reader never sees half a folder
    tmp = Path(tempfile.mkdtemp(prefix=".song2vec-", dir=folder.parent))
    try:
        kv.save(os.fspath(tmp / SONG2VEC))
        try:
            tmp.rename(folder)
        except OSError:  # another process wrote it first: theirs is the same content
            if not (folder / SONG2VEC).exists():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return folder
