"""The users table of the 2022 challenge data (source ``lfm``) as the harness gives it.

The challenge's ``evalrs_users.csv`` holds LFM-1b's user file (country, age, gender, playcount,
registration time) joined with LFM-1b's listening-profile statistics and two integer codes.
Read through :func:`evaluation.data.validate_tables`, every column keeps its name, in the
order below (the schema's columns first): text as pandas' ``str`` (missing when unknown),
integers as int32 (``-1`` when unknown) and the other statistics as float64 (NaN where LFM-1b
lacks one for a user). The synthetic source generates exactly this table, so that model code
written against one reads the other.
"""

from __future__ import annotations

import numpy as np

#: The code of an unknown ``age``, ``country_id`` or ``gender_id``.
UNKNOWN = -1

#: LFM-1b's listening-profile statistics, in the challenge file's order.
PROFILE_COLUMNS: tuple[str, ...] = (
    "novelty_artist_avg_month", "novelty_artist_avg_6months", "novelty_artist_avg_year",
    "mainstreaminess_avg_month", "mainstreaminess_avg_6months", "mainstreaminess_avg_year",
    "mainstreaminess_global", "cnt_listeningevents", "cnt_distinct_tracks",
    "cnt_distinct_artists", "cnt_listeningevents_per_week",
    *(f"relative_le_per_weekday{d}" for d in range(1, 8)),
    *(f"relative_le_per_hour{h}" for h in range(24)),
)
#: The profile statistics that are counts (integers); the others are shares and averages.
PROFILE_COUNTS: tuple[str, ...] = (
    "cnt_listeningevents", "cnt_distinct_tracks", "cnt_distinct_artists")

#: Column -> dtype of the users table (index ``user_id``, int32), in the order it has.
LFM_USER_DTYPES: dict[str, object] = {
    "country": "str", "age": np.dtype(np.int32), "gender": "str",
    "playcount": np.dtype(np.int32), "registered_unixtime": np.dtype(np.int32),
    **{c: np.dtype(np.int32 if c in PROFILE_COUNTS else np.float64) for c in PROFILE_COLUMNS},
    "country_id": np.dtype(np.int32), "gender_id": np.dtype(np.int32),
}
#: The users table's columns, in order.
LFM_USER_COLUMNS: tuple[str, ...] = tuple(LFM_USER_DTYPES)
#: ``gender`` -> ``gender_id`` (a missing gender has :data:`UNKNOWN`).
GENDER_IDS: dict[str, int] = {"m": 0, "f": 1, "n": 2}
