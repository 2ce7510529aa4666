"""Which leaderboard tests a dataset can measure: the tests that are not applicable, and why.

A test is **not applicable** when the dataset lacks its inputs: it would score a constant (the
same value for every model) and tell nothing. The decision is made once per dataset, from its
tables alone (never from a fold or a model), so it is the same for every fold of a run:

- a slice test whose slice has fewer than two groups among the dataset's users (the attribute
  is missing for every user, e.g. MovieLens has no country, or every user has the same value):
  an MRED over one group is 0 for any model;
- a slice test that groups users by the same quantity as a test listed before it in
  ``MRED_TESTS`` (the earlier one stays): MRED_ARTIST_POPULARITY when every artist has exactly
  one track (MovieLens: each movie is its own artist), so that an artist's plays are its
  track's plays;
- BEING_LESS_WRONG and LATENT_DIVERSITY when the dataset has no track vectors.

The count slices (user activity, track popularity) are binned from each fold's training plays
and are always applicable.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping

import numpy as np
import pandas as pd

from evaluation._util.arrays import sorted_unique
from evaluation.challenge._fold import Slice, country_slice, gender_slice
from evaluation.challenge._spec import (
    BEING_LESS_WRONG,
    LATENT_DIVERSITY,
    LEADERBOARD_TESTS,
    MISSING_COUNTRY,
    MRED_ARTIST_POPULARITY,
    MRED_COUNTRY,
    MRED_GENDER,
    MRED_SLICES,
    MRED_TRACK_POPULARITY,
)

#: One dataset's decision, kept with the dataset object while it lives.
_DECIDED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def not_applicable_tests(users: pd.DataFrame, tracks: pd.DataFrame,
                         vectors) -> dict[str, str]:
    """The leaderboard tests a dataset cannot measure, each with the reason.

    Parameters
    ----------
    users : pandas.DataFrame
        The users table (``country``, ``gender``), indexed by ``user_id`` or with that column:
        every user the folds can draw a test user from.
    tracks : pandas.DataFrame
        The tracks table (``artist_id``), indexed by ``track_id``.
    vectors : TrackVectors or None
        The track vectors.

    Returns
    -------
    dict of str to str
        Test -> one line saying why it is not applicable, in the order of
        ``LEADERBOARD_TESTS``; empty when every test applies.

    Raises
    ------
    DataError
        When a table lacks a column a slice needs.
    """
    reasons: dict[str, str] = {}
    if "user_id" in users.columns and users.index.name != "user_id":
        users = users.set_index("user_id")
    user_ids = users.index.to_numpy()
    for test, build in ((MRED_COUNTRY, country_slice), (MRED_GENDER, gender_slice)):
        reason = _one_group_reason(build(users, user_ids), MRED_SLICES[test])
        if reason:
            reasons[test] = reason
    if _one_track_per_artist(tracks):
        reasons[MRED_ARTIST_POPULARITY] = (
            f"same slices as {MRED_TRACK_POPULARITY}: every artist has exactly one track, so "
            f"an artist's plays are its track's plays (only the bin edges differ)")
    if vectors is None or len(vectors.track_ids) == 0:
        for test in (BEING_LESS_WRONG, LATENT_DIVERSITY):
            reasons[test] = "the dataset has no track vectors"
    return {t: reasons[t] for t in LEADERBOARD_TESTS if t in reasons}


def dataset_not_applicable(dataset) -> dict[str, str]:
    """:func:`not_applicable_tests` of a ``ChallengeDataset``, decided once per dataset object.

    Parameters
    ----------
    dataset : ChallengeDataset
        Anything with ``df_users``, ``df_tracks`` and ``track_vectors``.

    Returns
    -------
    dict of str to str
        A copy of the decision (test -> reason).
    """
    try:
        found = _DECIDED.get(dataset)
    except TypeError:  # not weakly referable or not hashable: decide without keeping it
        found = None
    if found is None:
        found = not_applicable_tests(dataset.df_users, dataset.df_tracks,
                                     dataset.track_vectors)
        try:
            _DECIDED[dataset] = found
        except TypeError:
            pass
    return dict(found)


def applicable_tests(not_applicable: Mapping[str, str] | None = None) -> list[str]:
    """The leaderboard tests that apply, in the order of ``LEADERBOARD_TESTS``."""
    skip = not_applicable or {}
    return [t for t in LEADERBOARD_TESTS if t not in skip]


def _one_group_reason(s: Slice, name: str) -> str | None:
    """Why a slice with fewer than two groups among the users is not applicable (else None)."""
    codes = np.asarray(s.codes)
    if s.considered is not None:
        codes = codes[np.asarray(s.considered, dtype=bool)]
    groups = sorted_unique(codes[codes >= 0])
    if len(groups) >= 2:
        return None
    if len(groups) == 0:
        return (f"no user is in a group of the {name!r} slice (the attribute is missing for "
                f"every user): the MRED is undefined")
    label = s.labels[int(groups[0])]
    why = f"no user has a {name}: " if label == MISSING_COUNTRY else ""
    return (f"{why}every user is in the one group {label!r} of the {name!r} slice, and an MRED "
            f"over one group is 0 for any model")


def _one_track_per_artist(tracks: pd.DataFrame) -> bool:
    """Whether every track has an artist and no two tracks share one."""
    if tracks.index.name != "track_id" and "track_id" in tracks.columns:
        tracks = tracks.set_index("track_id")
    if "artist_id" not in tracks.columns or len(tracks) < 2:
        return False
    artists = tracks["artist_id"]
    return bool(artists.notna().all() and artists.is_unique)
