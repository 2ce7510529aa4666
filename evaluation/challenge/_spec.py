"""What the EvalRS challenge is: its tests, their groups and weights, the slices, the gate.

Every other module of :mod:`evaluation.challenge` (the RecList, the per-fold state, the
references, the scores and the bootstrap) takes these names and numbers from here.

The leaderboard has two scores. The phase-1 score is the mean of the nine leaderboard tests,
each averaged over folds. The phase-2 score is :data:`GATED_SCORE` when HIT_RATE is below the
references' threshold; otherwise each test is normalised as ``(x - baseline) / (best -
baseline)`` and the groups are combined as the weighted mean of their members' means:
``(1 * mean(HR, MRR) + 1.5 * mean(five MREDs) + 1.5 * mean(BLW, LD)) / 4``.

A test the dataset cannot measure is not applicable (see ``not_applicable_tests``): it is left
out of both scores, its phase-2 group averaging the remaining tests, and a group without any
dropped with the other groups' weights scaled to keep the total.
"""

from __future__ import annotations

HIT_RATE = "HIT_RATE"
MRR = "MRR"
MRED_COUNTRY = "MRED_COUNTRY"
MRED_USER_ACTIVITY = "MRED_USER_ACTIVITY"
MRED_TRACK_POPULARITY = "MRED_TRACK_POPULARITY"
MRED_ARTIST_POPULARITY = "MRED_ARTIST_POPULARITY"
MRED_GENDER = "MRED_GENDER"
BEING_LESS_WRONG = "BEING_LESS_WRONG"
LATENT_DIVERSITY = "LATENT_DIVERSITY"
#: The report-only test: users scored and predictions per user; no part of any score.
STATS = "stats"

#: The five miss-rate equality difference (MRED) tests, in the 2022 order.
MRED_TESTS: tuple[str, ...] = (
    MRED_COUNTRY, MRED_USER_ACTIVITY, MRED_TRACK_POPULARITY, MRED_ARTIST_POPULARITY, MRED_GENDER,
)
#: The nine tests that enter the leaderboard scores, in the 2022 order.
LEADERBOARD_TESTS: tuple[str, ...] = (HIT_RATE, MRR, *MRED_TESTS, BEING_LESS_WRONG,
                                      LATENT_DIVERSITY)
#: Every test of the challenge's RecList, in report order.
TESTS: tuple[str, ...] = (*LEADERBOARD_TESTS, STATS)

#: Test groups of the phase-2 score (the default of a references file without ``groups``).
DEFAULT_GROUPS: dict[str, list[str]] = {
    "accuracy": [HIT_RATE, MRR],
    "fairness": list(MRED_TESTS),
    "behavioural": [BEING_LESS_WRONG, LATENT_DIVERSITY],
}
#: Group weights of the phase-2 score (the default of a references file without ``weights``).
DEFAULT_WEIGHTS: dict[str, float] = {"accuracy": 1.0, "fairness": 1.5, "behavioural": 1.5}
#: Phase-2 score of a submission whose HIT_RATE is below the references' threshold.
GATED_SCORE = -100.0
#: HIT_RATE gate of a computed references file, as a share of the baseline's hit rate
#: (the 2022 gate, 0.015, is 0.8 times the CBOW baseline's 0.018763).
THRESHOLD_RATIO = 0.8

#: MRED test -> name of its slice (the per-user group codes a scored fold keeps).
MRED_SLICES: dict[str, str] = {
    MRED_COUNTRY: "country",
    MRED_USER_ACTIVITY: "user_activity",
    MRED_TRACK_POPULARITY: "track_popularity",
    MRED_ARTIST_POPULARITY: "artist_popularity",
    MRED_GENDER: "gender",
}
#: Countries of MRED_COUNTRY (2022 challenge); users without a country form their own group,
#: users from any other country are left out of the slice.
COUNTRIES: tuple[str, ...] = (
    "US", "RU", "DE", "UK", "PL", "BR", "FI", "NL", "ES", "SE", "UA", "CA", "FR",
)
#: Label of the MRED_COUNTRY group of users without a country.
MISSING_COUNTRY = "missing"
#: Bin edges of the count slices (training plays of the user, of the target track, of the
#: target's artist); a value belongs to the bin of its lower edge, values below the first
#: edge to bin "0".
USER_ACTIVITY_EDGES: tuple[int, ...] = (1, 100, 1000)
TRACK_POPULARITY_EDGES: tuple[int, ...] = (1, 10, 100, 1000)
ARTIST_POPULARITY_EDGES: tuple[int, ...] = (1, 100, 1000, 10000)
#: Slice name -> bin edges, for the slices that bin a play count.
SLICE_EDGES: dict[str, tuple[int, ...]] = {
    MRED_SLICES[MRED_USER_ACTIVITY]: USER_ACTIVITY_EDGES,
    MRED_SLICES[MRED_TRACK_POPULARITY]: TRACK_POPULARITY_EDGES,
    MRED_SLICES[MRED_ARTIST_POPULARITY]: ARTIST_POPULARITY_EDGES,
}

#: LATENT_DIVERSITY looks at the first ``LATENT_TOP`` predictions and scores
#: ``DIVERSITY_WEIGHT * diversity - BIAS_WEIGHT * bias``.
LATENT_TOP = 20
DIVERSITY_WEIGHT = 0.3
BIAS_WEIGHT = 0.7
