"""The names of the keys of ``results.json`` and of the submission payload, spelled once."""

from __future__ import annotations

#: Version of the results file layout.
RESULTS_FORMAT = "evalrs-results/1"

# results.json, top level
FORMAT_KEY = "format"
RUN_ID_KEY = "run_id"
RUN_HASH_KEY = "run_hash"
#: the run's own name (optional: runs made without one have none)
RUN_NAME_KEY = "name"
MODEL_KEY = "model"
HARNESS_VERSION_KEY = "harness_version"
SEED_KEY = "seed"
LIMIT_KEY = "limit"
K_KEY = "k"
DATASET_KEY = "dataset"
TESTS_KEY = "tests"
AGGREGATE_KEY = "aggregate"
NOT_APPLICABLE_KEY = "not_applicable"
PHASE1_SCORE_KEY = "phase1_score"
PHASE2_SCORE_KEY = "phase2_score"
LEADERBOARD_SCORE_KEY = "leaderboard_score"
CONFIDENCE_INTERVALS_KEY = "confidence_intervals"
REFERENCES_KEY = "references"
ELIGIBLE_KEY = "eligible_for_upload"
NOT_ELIGIBLE_BECAUSE_KEY = "not_eligible_because"
COMPETITION_KEY = "competition"
SETTINGS_KEY = "settings"
FOLDS_KEY = "folds"
# results.json, under "dataset" (and a competition file's [dataset])
SOURCE_KEY = "source"
FINGERPRINT_KEY = "fingerprint"
FOLD_PARAMS_KEY = "fold_params"
NUM_FOLDS_KEY = "num_folds"
# results.json, in each of "folds"
FOLD_KEY = "fold"
#: How many of the fold's lists named a track twice (scored by first position); absent in
#: runs made before it was recorded, which read as 0.
REPEATED_LISTS_KEY = "repeated_lists"
# the submission payload (its "results" is results.json; run_id, run_hash and
# leaderboard_score repeat the results' keys)
EMAIL_KEY = "email"
PARTICIPANT_ID_KEY = "participant_id"
RESULTS_KEY = "results"
#: The fold's stage timings: ``{stage: {"seconds", "peak_rss_mib"}}`` (stages "data", "train",
#: "predict", "validate", "score"); the peak is the process's resident set size during the
#: stage (Linux: VmHWM, reset before each stage; elsewhere ``getrusage``'s ``ru_maxrss``, the
#: peak so far). What a fold cost is read from it (``fold_cost``).
RUNTIME_KEY = "runtime"
SECONDS_KEY = "seconds"
PEAK_RSS_MIB_KEY = "peak_rss_mib"
TRAIN_STAGE = "train"
PREDICT_STAGE = "predict"
#: What a fold cost, as a leaderboard keeps it: seconds to train and to predict, and the peak
#: resident memory of the fold (MiB) under ``PEAK_RSS_MIB_KEY``.
TRAIN_SECONDS_KEY = "train_seconds"
PREDICT_SECONDS_KEY = "predict_seconds"
#: The sha256 of the fold's test user ids in the fold's order (``users_sha256``) and each MRED
#: test's group labels (absent in runs made before they were recorded: such a run uploads
#: without per-user values).
TEST_USERS_SHA256_KEY = "test_users_sha256"
SLICE_LABELS_KEY = "slice_labels"
# the submission payload, optional: the per-user values of every fold (base64 of the blob
# ``evaluation.challenge.encode_user_values`` makes); absent from older clients
USER_VALUES_KEY = "user_values"
