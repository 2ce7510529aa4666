"""The contract between a participant's run and the leaderboard: the results reader and its
refusals, the run hash, the competition file and the one eligibility check, the submission
payload, and the translation to ``ChallengeDataset`` arguments. Hand-checked cases."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path

import pytest

from evaluation.baselines import PopularityModel
from evaluation.challenge import LEADERBOARD_TESTS
from evaluation.contract import (
    FOLD_PARAMS_KEY,
    OTHER_DATA,
    OTHER_FOLD_COUNT,
    OTHER_FOLDS,
    OTHER_HARNESS_VERSION,
    OTHER_REPEATED_ITEMS,
    RESULTS_FORMAT,
    CompetitionTarget,
    RecordRefused,
    ResultsRecord,
    body_and_key,
    dataset_arguments,
    differences,
    fold_arguments,
    load_competition_target,
    read_results,
    read_submission,
    repeated_lists,
    run_hash,
    source_arguments,
    submission_payload,
)
from evaluation.errors import ConfigError, DataError
from evaluation.runner import EvalRSRunner

REPO = Path(__file__).resolve().parents[2]
BASELINE = REPO / "competition" / "baselines" / "popularity.json"
#: Ranges wide enough for any run: the reader's range rule is tested with narrower ones.
WIDE = {t: (-2.0, 2.0) for t in LEADERBOARD_TESTS}
FP = "ab" * 32
PARAMS = {"protocol": "leave_one_out", "num_folds": 4, "seed": 42, "frac": 0.25}


@pytest.fixture(scope="module")
def payload() -> dict:
    """A submission.json the harness wrote (the example competition's Popularity baseline)."""
    return json.loads(BASELINE.read_text(encoding="utf-8"))


@pytest.fixture()
def results(payload) -> dict:
    return copy.deepcopy(payload["results"])


def refusal(data, **kwargs) -> str:
    with pytest.raises(RecordRefused) as info:
        read_results(data, **kwargs)
    return str(info.value)


# --------------------------------------------------------------------------- the run hash


def test_run_hash_is_pinned_to_a_known_run(payload):
    # the runner that made the baseline (competition/make_baselines.py) hashed these parts to
    # this value: same parts, same hash
    r = payload["results"]
    ds = r["dataset"]
    assert run_hash(ds["fingerprint"], ds["fold_params"], r["tests"], r["harness_version"]) \
        == r["run_hash"] == "0de30520841ba9546f5e746d3e7d7e732d5315224161765c239470c9c10e7d8c"


def test_run_hash_of_hand_made_parts():
    # computed by the runner's run_hash before it moved into the contract
    assert run_hash(FP, {"num_folds": 4, "seed": 42, "frac": 0.25, "when": 1.0},
                    ["MRR", "HIT_RATE"], "0.1.0") \
        == "e9a3abbb8277349683933e908e473186ccf7a8e231c1b663b877740436418737"
    # test order does not matter; a fold parameter's type does
    a = run_hash(FP, {"num_folds": 4}, ["A", "B"], "1")
    assert a == run_hash(FP, {"num_folds": 4}, ["B", "A"], "1")
    assert a != run_hash(FP, {"num_folds": 4.0}, ["A", "B"], "1")


# --------------------------------------------------------------------------- the reader


def test_a_harness_results_file_is_read_whole(results):
    record = read_results(results, leaderboard=WIDE)
    assert isinstance(record, ResultsRecord)
    assert record.format == RESULTS_FORMAT and record.run_id == results["run_id"]
    assert record.dataset.fold_params == results["dataset"][FOLD_PARAMS_KEY]
    assert record.dataset.num_folds == 4 == len(record.folds)
    assert record.tests == tuple(results["tests"])
    assert record.model.name == results["model"]["name"]
    assert record.raw is results
    assert record.fold_tests(["MRR"]) == [{"MRR": f["tests"]["MRR"]}
                                          for f in sorted(results["folds"],
                                                          key=lambda f: f["fold"])]


@pytest.mark.parametrize("change, expected", [
    (lambda r: r.update(format="evalrs-results/0"),
     "format: must be 'evalrs-results/1', the results layout this harness reads; use a run "
     "made by a harness that writes it (got 'evalrs-results/0')"),
    (lambda r: r["folds"].pop(1),
     "folds: fold(s) [1] missing; dataset.num_folds is 4 and every fold 0..3 must be present"),
    (lambda r: r["folds"][3].update(fold=0), "folds: fold 0 appears twice; a run has each fold "
                                             "0..3 once"),
    (lambda r: r["folds"][3].update(fold=9), "folds: fold 9 is outside 0..3 (dataset.num_folds "
                                             "is 4)"),
    (lambda r: r["folds"][0].update(fold=True),
     "folds[0].fold: Input should be a valid integer (got true)"),
    (lambda r: r.update(run_id="a b"),
     "run_id: String should match pattern '^[A-Za-z0-9_.-]{1,128}$' (got 'a b')"),
    (lambda r: r.pop("run_hash"), "run_hash: required field missing"),
    (lambda r: r["dataset"].update(num_folds=0),
     "dataset.num_folds: Input should be greater than or equal to 1 (got 0)"),
    (lambda r: r.update(folds=[]), "folds: List should have at least 1 item, not 0"),
    (lambda r: r.update(tests="HIT_RATE"), "tests: Input should be a valid list (got 'HIT_RATE')"),
    (lambda r: r["model"]["fingerprint"].update(sha256="x"),
     "model.fingerprint.sha256: String should match pattern '^[0-9a-f]{64}$' (got 'x')"),
    (lambda r: r.update(phase1_score="0.5"), "phase1_score: Input should be a valid number "
                                             "(got '0.5')"),
])
def test_refusals_name_the_field_the_rule_and_the_value(results, change, expected):
    change(results)
    assert refusal(results) == expected


def test_a_non_object_is_refused():
    assert refusal([1, 2]) == "Input should be a valid dictionary"
    assert refusal("x") == "Input should be a valid dictionary (got 'x')"


def test_leaderboard_reading_checks_every_test_value(results):
    ranges = {**WIDE, "HIT_RATE": (0.0, 1.0)}
    results["folds"][2]["tests"]["HIT_RATE"] = 1.5
    results["folds"][1]["tests"].pop("MRR")
    results["folds"][0]["tests"]["MRED_GENDER"] = None
    with pytest.raises(RecordRefused) as info:
        read_results(results, leaderboard=ranges, path=("results",))
    assert [str(p) for p in info.value.problems] == [
        "results.folds[0].tests.MRED_GENDER: Input should be a valid number (got null)",
        "results.folds[1].tests.MRR: required field missing",
        "results.folds[2].tests.HIT_RATE: must lie in [0, 1], the range of HIT_RATE (got 1.5)",
    ]
    # the same file read as a local run: test values are the analysis's business
    assert read_results(results).folds[2].tests["HIT_RATE"] == 1.5


def test_a_range_end_plus_slack_is_accepted(results):
    ranges = {**WIDE, "MRR": (0.0, 1.0)}
    results["folds"][0]["tests"]["MRR"] = 1.0 + 5e-10
    read_results(results, leaderboard=ranges)
    results["folds"][0]["tests"]["MRR"] = 1.0 + 5e-9
    assert "must lie in [0, 1]" in refusal(results, leaderboard=ranges)


def test_leaderboard_reading_refuses_an_ineligible_or_partial_run(results):
    ineligible = copy.deepcopy(results)
    ineligible.update(eligible_for_upload=False, not_eligible_because=["limit=5 is\npartial"])
    assert refusal(ineligible, leaderboard=WIDE) == (
        "eligible_for_upload: the run is not eligible (limit=5 is\\npartial): only runs of the "
        "official protocol can be submitted; run again without those settings (got false)")
    assert read_results(ineligible).eligible_for_upload is False
    results["not_applicable"] = {"MRED_COUNTRY": "no countries"}
    assert refusal(results, leaderboard=WIDE) == (
        "the run's dataset cannot measure the test(s) ['MRED_COUNTRY'] (not applicable): a "
        "leaderboard scores every test; run on the competition's data")


def test_many_problems_are_counted(results):
    for f in results["folds"]:
        f["tests"]["HIT_RATE"] = "x"
    message = refusal(results, leaderboard=WIDE)
    assert message.count("Input should be a valid number") == 3
    assert message.endswith("; and 1 more problem(s)")


def test_a_value_is_shown_printable_and_short(results):
    results["run_id"] = "\x1b[31m" + "r" * 500
    message = refusal(results)
    assert "\x1b" not in message and "\\x1b[31m" in message and len(message) < 200


# --------------------------------------------------------------------------- a real run


@pytest.fixture(scope="module")
def board_run(tiny, tmp_path_factory):
    """A run made for a competition on the tiny data: eligible for it."""
    board = CompetitionTarget(name="competition 'tiny'", source="synthetic:tiny",
                              fingerprint=tiny.fingerprint, fold_params=dict(tiny.fold_params))
    runner = EvalRSRunner(tiny, results_dir=tmp_path_factory.mktemp("r") / "results",
                          progress=False, verbose=False, reports=False, n_boot=0,
                          competition=board)
    return runner.evaluate(PopularityModel())


def test_what_the_runner_writes_the_reader_accepts(board_run, tiny):
    written = board_run.to_dict()
    assert written["eligible_for_upload"], written["not_eligible_because"]
    record = read_results(json.loads(json.dumps(written)), leaderboard=WIDE)
    assert record.run_id == board_run.run_id and record.run_hash == board_run.run_hash
    assert record.dataset.fingerprint == tiny.fingerprint
    assert record.dataset.fold_params == tiny.fold_params
    assert [f.tests for f in record.folds] == [f["tests"] for f in board_run.folds]
    assert record.phase1_score == board_run.phase1_score
    # the runner's hash is the contract's, of the run's parts
    assert board_run.run_hash == run_hash(tiny.fingerprint, tiny.fold_params, board_run.tests)
    # and its submission payload is one the leaderboard's structure check accepts
    sub = read_submission(json.loads(json.dumps(submission_payload(
        written, email="a@b.org", participant_id="team"))), leaderboard=WIDE)
    assert sub.run_id == board_run.run_id and sub.results.run_id == board_run.run_id
    assert sub.claimed() == {"phase1_score": board_run.phase1_score,
                             "leaderboard_score": board_run.leaderboard_score}


# --------------------------------------------------------------------------- the payload


def test_the_payload_repeats_the_runs_identity(results):
    p = submission_payload(results, email="e@x.org", participant_id="p")
    assert list(p) == ["email", "participant_id", "run_id", "run_hash", "leaderboard_score",
                       "results"]
    assert (p["run_id"], p["run_hash"], p["leaderboard_score"]) == \
        (results["run_id"], results["run_hash"], results["leaderboard_score"])
    assert p["results"] == results and p["results"] is not results


def test_body_and_key():
    body, key = body_and_key({"b": 1.5, "a": [1, None], "run_id": "M-1"}, "M-1")
    assert body == b'{"a":[1,null],"b":1.5,"run_id":"M-1"}' and key == "M-1"
    body, _ = body_and_key({"name": "音"}, "M-1")
    assert body == b'{"name":"\\u97f3"}'
    with pytest.raises(ConfigError, match=r"run_id 'x\\\\r\\\\nInjected: 1' is not a run id"):
        body_and_key({}, "x\r\nInjected: 1")
    with pytest.raises(DataError, match="NaN and infinity must be null"):
        body_and_key({"score": float("inf")}, "M-1")


@pytest.mark.parametrize("change, expected", [
    (lambda d: d.update(run_id="Other-1"),
     "run_id 'Other-1' differs from results.run_id 'PopularityModel-0929385b1ea6'; the two "
     "come from one run"),
    (lambda d: d.update(run_hash="0" * 64),
     "run_hash 000000000000... differs from results.run_hash 0de30520841b...; the two come "
     "from one run"),
    (lambda d: d.update(email="a\u200bb@x.org"),
     "email: must not contain control characters (got 'a\\u200bb@x.org')"),
    (lambda d: d.update(participant_id=""),
     "participant_id: String should have at least 1 character (got '')"),
    (lambda d: d["results"]["folds"][0].update(tests=[]),
     "results.folds[0].tests: Input should be a valid dictionary"),
])
def test_the_payload_structure_check(payload, change, expected):
    data = copy.deepcopy(payload)
    change(data)
    with pytest.raises(RecordRefused) as info:
        read_submission(data, leaderboard=WIDE)
    assert str(info.value) == expected


# --------------------------------------------------------------------------- eligibility

BOARD = CompetitionTarget(name="competition 'b'", source="synthetic:small", fingerprint=FP,
                          fold_params=PARAMS, harness_versions=("0.1.0",), path="b.toml")
OFFICIAL = CompetitionTarget(name="the official EvalRS board", source="lfm", fingerprint=None,
                             fold_params=PARAMS)


def run_on(fingerprint=FP, source="synthetic:small:seed42", folds=4, **params) -> dict:
    return {"source": source, "fingerprint": fingerprint, "num_folds": folds,
            "fold_params": {**PARAMS, **params}}


def test_a_run_on_the_competitions_data_and_folds_is_eligible():
    assert BOARD.ineligibilities(run_on(), "0.1.0") == []
    assert BOARD.not_eligible_because(run_on(), "0.1.0") == []
    assert OFFICIAL.not_eligible_because(run_on(source="lfm", fingerprint="0" * 64), "9") == []


def test_each_part_of_a_run_that_differs_is_named():
    found = BOARD.ineligibilities(run_on(fingerprint="cd" * 32, seed=7), "0.0.9")
    assert [(i.part, i.got, i.want) for i in found] == [
        (OTHER_DATA, "cd" * 32, FP),
        (OTHER_FOLDS, {**PARAMS, "seed": 7}, PARAMS),
        (OTHER_HARNESS_VERSION, "0.0.9", ("0.1.0",))]
    assert found[1].differences == "seed (7 vs 42)"
    assert BOARD.not_eligible_because(run_on(fingerprint="cd" * 32, seed=7), "0.0.9") == [
        "the data ('synthetic:small:seed42', fingerprint cdcdcdcdcdcd...) is not the "
        "competition's (synthetic:small abababababab...) named by b.toml",
        "the folds differ from competition 'b''s in seed (7 vs 42)",
        "harness version 0.0.9 is not one competition 'b' accepts (0.1.0)"]


def test_the_official_board_recognises_its_data_by_the_source():
    assert OFFICIAL.not_eligible_because(run_on(), "0.1.0") == [
        "the data is 'synthetic:small:seed42', not the official challenge data ('lfm'; "
        "--competition FILE for another board)"]


def test_the_fold_count_is_part_of_the_folds():
    # a num_folds parameter other than the competition's: other folds
    (why,) = BOARD.ineligibilities(run_on(folds=2, num_folds=2), "0.1.0")
    assert (why.part, why.differences) == (OTHER_FOLDS, "num_folds (2 vs 4)")
    # the same parameters but another count of folds (an edited file): the count
    (why,) = BOARD.ineligibilities(run_on(folds=3), "0.1.0")
    assert (why.part, why.got, why.want) == (OTHER_FOLD_COUNT, 3, 4)
    assert BOARD.not_eligible_because(run_on(folds=3), "0.1.0") == [
        "the run has 3 folds, competition 'b''s fold parameters 4"]
    # 4.0 is not 4, as the run hash sees it
    assert BOARD.ineligibilities(run_on(folds=4.0), "0.1.0")[0].part == OTHER_FOLD_COUNT


def test_a_run_without_fold_parameters():
    dataset = {"source": "x", "fingerprint": FP}
    (why,) = BOARD.ineligibilities(dataset, "0.1.0")
    assert (why.part, why.got) == (OTHER_FOLDS, None)
    assert BOARD.not_eligible_because(dataset, "0.1.0") == [
        "the run records no fold parameters, so its folds cannot be competition 'b''s"]


def test_differences_mask_unprintable_characters_and_cap_the_list():
    assert differences({"a": 1, "b": True}, {"a": 1.0, "c": "x"}) == \
        "a (1 vs 1.0), b (true vs absent), c (absent vs x)"
    assert differences({"k\x00ey\n": "v\u2028"}, {}) == "k?ey? (v? vs absent)"
    got = {f"p{i}": i for i in range(7)}
    assert differences(got, {}) == ("p0 (0 vs absent), p1 (1 vs absent), p2 (2 vs absent), "
                                    "p3 (3 vs absent) and 3 more")
    assert differences({"x": "y" * 50}, {"x": 1}) == f"x ({'y' * 40}... vs 1)"
    assert differences(PARAMS, dict(PARAMS)) == ""


def test_the_competition_file_is_read_by_the_contract(tmp_path):
    example = load_competition_target(REPO / "competition.toml")
    assert example.fingerprint and example.harness_versions
    assert example.dataset_options() == dataset_arguments(example.source, example.fold_params)
    (tmp_path / "c.toml").write_text('name = "x"\n[dataset]\nfold_params = {}\n'
                                     'fingerprint = "ab"\n')
    with pytest.raises(ConfigError, match="c.toml.*harness_versions is missing"):
        load_competition_target(tmp_path / "c.toml")


# --------------------------------------------------------------------------- dataset arguments


@pytest.mark.parametrize("source, expected", [
    ("lfm", {"source": "lfm"}),
    ("synthetic", {"source": "synthetic"}),
    ("synthetic:small", {"source": "synthetic", "scale": "small"}),
    ("synthetic:tiny:seed7", {"source": "synthetic", "scale": "tiny", "data_seed": 7}),
    ("synthetic:tiny:seedx", {"source": "synthetic", "scale": "tiny"}),
    ("synthetic::seed3", {"source": "synthetic", "data_seed": 3}),
    ("movielens:/data/ml-100k", {"source": "movielens:/data/ml-100k"}),
    ("/data/synthetic:x", {"source": "/data/synthetic:x"}),
])
def test_source_arguments(source, expected):
    assert source_arguments(source) == expected


def test_dataset_arguments_join_the_source_and_the_folds():
    assert fold_arguments(PARAMS) == {"num_folds": 4, "seed": 42, "frac": 0.25}
    assert dataset_arguments("synthetic:small:seed42", PARAMS) == {
        "num_folds": 4, "seed": 42, "frac": 0.25, "source": "synthetic", "scale": "small",
        "data_seed": 42}


def test_dataset_arguments_rebuild_a_runs_dataset(tiny):
    from evaluation.dataset import ChallengeDataset

    source = tiny.tables.source
    rebuilt = ChallengeDataset(**dataset_arguments(source, tiny.fold_params))
    assert rebuilt.fingerprint == tiny.fingerprint and rebuilt.fold_params == tiny.fold_params


# --------------------------------------------------------------------------- one home


@pytest.mark.parametrize("name", ["CompetitionTarget", "RESULTS_FORMAT",
                                  "load_competition_target", "read_competition_toml",
                                  "run_hash", "check_token", "check_url", "clean"])
def test_the_contract_names_live_in_the_contract_only(name):
    import evaluation.contract
    import evaluation.runner

    assert hasattr(evaluation.contract, name)
    assert not hasattr(evaluation.runner, name)


# --------------------------------------------------------------------------- repeated items


def test_a_competition_file_can_refuse_repeated_items(tmp_path):
    base = ('name = "x"\nharness_versions = ["0.1.0"]\n{extra}[dataset]\nfold_params = {{}}\n'
            'fingerprint = "ab"\n')
    path = tmp_path / "c.toml"
    path.write_text(base.format(extra=""))
    assert load_competition_target(path).repeated_items == "first"  # the default: as 2022
    path.write_text(base.format(extra='repeated_items = "error"\n'))
    strict = load_competition_target(path)
    assert strict.repeated_items == "error"
    path.write_text(base.format(extra='repeated_items = "last"\n'))
    with pytest.raises(ConfigError, match=r"c.toml.*repeated_items is invalid \(last\)"):
        load_competition_target(path)
    dataset = {"source": "s", "fingerprint": "ab", "fold_params": {}}
    folds = [{"fold": 0, "repeated_lists": 3}, {"fold": 1, "repeated_lists": 0},
             {"fold": 2, "repeated_lists": 4}]
    assert repeated_lists(folds) == 7
    # results made before the count was recorded read as none
    assert repeated_lists([{"fold": 0}, {"fold": 1}]) == 0
    assert repeated_lists(None) == 0 and repeated_lists([{"repeated_lists": True}, 5]) == 0
    assert strict.ineligibilities(dataset, "0.1.0") == []
    assert strict.ineligibilities(dataset, "0.1.0", [{"fold": 0}]) == []
    found = strict.ineligibilities(dataset, "0.1.0", folds)
    assert [(i.part, i.got) for i in found] == [(OTHER_REPEATED_ITEMS, 7)]
    (reason,) = strict.not_eligible_because(dataset, "0.1.0", folds)
    assert reason.startswith("7 lists recommend the same track more than once")
    assert 'repeated_items = "error" in' in reason and "c.toml" in reason
    lenient = replace(strict, repeated_items="first")
    assert lenient.ineligibilities(dataset, "0.1.0", folds) == []
