"""Reading NumPy's ``.npy`` and ``.npz`` files from several threads at once.

NumPy parses a file's header with ``ast.literal_eval``, and CPython 3.11 can fail when two
threads build syntax trees at the same time (see ``syntax_trees``). The harness reads arrays
in threads (the events' columns in parallel, the rows of a batch of reproductions side by
side), so it reads its files through here: headers are parsed one thread at a time, while the
data of a ``.npy`` file is read in parallel.
"""

from __future__ import annotations

import math
import os
from typing import BinaryIO

import numpy as np

from evaluation._util.syntax_trees import SYNTAX_TREES


def load_npy(path: str | os.PathLike) -> np.ndarray:
    """The array of a ``.npy`` file, as ``np.load(path)`` gives it (no pickled objects).

    Raises ``ValueError`` when the file is not a ``.npy`` array of a format version NumPy's
    writers use (1.0, 2.0) or is truncated, ``OSError``/``EOFError`` when it cannot be read.
    """
    with open(path, "rb") as f:
        with SYNTAX_TREES:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            elif version == (2, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
            else:
                raise ValueError(f"format version {version} of a .npy file is not read here "
                                 f"(1.0 and 2.0 are what np.save writes)")
        if dtype.hasobject:
            raise ValueError("the array holds Python objects, which are not read (they would "
                             "need pickle)")
        count = math.prod(shape)
        array = np.fromfile(f, dtype=dtype, count=count)
    if array.size != count:
        raise ValueError(f"the file is truncated: {array.size} of {count} values")
    return array.reshape(shape[::-1]).transpose() if fortran else array.reshape(shape)


def load_npz(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Every array of a ``.npz`` archive by name (no pickled objects), read whole."""
    with SYNTAX_TREES, np.load(path, allow_pickle=False) as npz:
        return {name: npz[name] for name in npz.files}


def read_array(stream: BinaryIO) -> np.ndarray:
    """The next array of a stream of ``.npy`` records (no pickled objects)."""
    with SYNTAX_TREES:
        return np.lib.format.read_array(stream, allow_pickle=False)
