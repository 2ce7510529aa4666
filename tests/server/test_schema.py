"""The upload schema: the runner's submission.json is read strictly, and hostile bodies are
refused with a reason that names the field, the rule and the value (never a traceback)."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path

import pytest

for _module in ("pydantic", "fastapi", "sqlalchemy"):  # the server extra
    pytest.importorskip(_module, reason="the server extra is not installed (pip install "
                                        ".[server])")

from evaluation.challenge import LEADERBOARD_TESTS  # noqa: E402
from evaluation.contract import RESULTS_FORMAT  # noqa: E402
from evaluation.errors import SubmissionRejected  # noqa: E402
from evaluation.server.core import MAX_BODY_BYTES, MAX_DEPTH, TEST_RANGES, parse_submission  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
BASELINE = REPO / "competition" / "baselines" / "popularity.json"


@pytest.fixture(scope="module")
def payload() -> dict:
    """A submission.json the harness wrote (the example competition's Popularity baseline)."""
    return json.loads(BASELINE.read_text(encoding="utf-8"))


def encode(data) -> bytes:
    return json.dumps(data).encode("utf-8")


def edited(payload: dict, change) -> bytes:
    """The body of a copy of ``payload`` after ``change(copy)``."""
    data = copy.deepcopy(payload)
    change(data)
    return encode(data)


def rejected(body: bytes) -> SubmissionRejected:
    with pytest.raises(SubmissionRejected) as info:
        parse_submission(body)
    assert str(info.value) == info.value.reason
    return info.value


def set_test(fold: int, test: str, value):
    return lambda d: d["results"]["folds"][fold]["tests"].__setitem__(test, value)


# --------------------------------------------------------------------------- what is accepted


def test_a_harness_submission_is_read_whole(payload):
    sub = parse_submission(BASELINE.read_bytes())
    assert sub.run_id == payload["run_id"] == sub.results.run_id
    assert sub.results.format == RESULTS_FORMAT
    # every key is kept, the ones the schema does not name too ("class" under its own name)
    assert sub.model_dump(by_alias=True) == payload
    assert sub.claimed() == {"phase1_score": payload["results"]["phase1_score"],
                             "leaderboard_score": payload["leaderboard_score"]}


def test_fold_tests_are_the_nine_tests_in_fold_order(payload):
    data = copy.deepcopy(payload)
    data["results"]["folds"].reverse()
    data["results"]["folds"][0]["tests"]["MY_OWN_TEST"] = 0.5  # a participant's extra test
    sub = parse_submission(encode(data))
    expected = [{t: f["tests"][t] for t in LEADERBOARD_TESTS}
                for f in sorted(payload["results"]["folds"], key=lambda f: f["fold"])]
    assert sub.fold_tests() == expected
    assert sub.results.folds[0].tests["MY_OWN_TEST"] == 0.5
    assert "stats" in sub.results.folds[0].tests  # the harness's report-only test


def test_unicode_and_html_are_kept_as_data(payload):
    name = "<script>alert(1)</script> Ünïcødé 音楽 🎵 & \"quotes\""
    email = "<b>ü</b>@exämple.org"
    sub = parse_submission(edited(payload, lambda d: d.update(participant_id=name,
                                                              email=email)))
    assert sub.participant_id == name
    assert sub.email == email


@pytest.mark.parametrize("test", LEADERBOARD_TESTS)
def test_each_range_end_is_accepted_and_beyond_it_refused(payload, test):
    low, high = TEST_RANGES[test]
    for value in (low, high):
        parse_submission(edited(payload, set_test(2, test, value)))
    for value in (low - 1e-6, high + 1e-6):
        exc = rejected(edited(payload, set_test(2, test, value)))
        assert exc.status == 422
        assert f"results.folds[2].tests.{test}" in exc.reason
        assert f"[{low:g}, {high:g}]" in exc.reason


def test_ranges_follow_the_test_definitions():
    # rates; MRED = -mean |MR_g - MR|; a mean cosine; 0.3 * diversity - 0.7 * bias with both
    # in [0, 2]
    assert TEST_RANGES["HIT_RATE"] == TEST_RANGES["MRR"] == (0.0, 1.0)
    assert TEST_RANGES["MRED_GENDER"] == (-1.0, 0.0)
    assert TEST_RANGES["BEING_LESS_WRONG"] == (-1.0, 1.0)
    assert TEST_RANGES["LATENT_DIVERSITY"] == pytest.approx((-1.4, 0.6))


# --------------------------------------------------------------------------- hostile bodies


def _replace_number(payload: dict, token: str) -> bytes:
    """The body with fold 1's MRR written as ``token`` (a raw JSON token)."""
    data = copy.deepcopy(payload)
    data["results"]["folds"][1]["tests"]["MRR"] = "@@MRR@@"
    return encode(data).replace(b'"@@MRR@@"', token.encode())


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_tokens_are_refused(payload, token):
    exc = rejected(_replace_number(payload, token))
    assert exc.status == 422
    assert f"{token} is not a number in JSON" in exc.reason


def test_a_number_beyond_the_float_range_is_refused(payload):
    exc = rejected(_replace_number(payload, "1e400"))
    assert "1e400 is out of the floating-point range" in exc.reason


def test_1e308_is_out_of_the_test_range(payload):
    exc = rejected(edited(payload, set_test(1, "HIT_RATE", 1e308)))
    assert exc.reason == ("invalid submission: results.folds[1].tests.HIT_RATE: must lie in "
                          "[0, 1], the range of HIT_RATE (got 1e+308)")


@pytest.mark.parametrize("value, shown", [
    ("0.5", "'0.5'"), ("NaN", "'NaN'"), (True, "true"), (None, "null"), ([0.5], None),
    ({"value": 0.5}, None),
])
def test_only_numbers_are_test_values(payload, value, shown):
    exc = rejected(edited(payload, set_test(3, "MRR", value)))
    assert "results.folds[3].tests.MRR: Input should be a valid number" in exc.reason
    if shown:
        assert f"(got {shown})" in exc.reason


def test_a_missing_leaderboard_test_is_named(payload):
    exc = rejected(edited(payload, lambda d: d["results"]["folds"][0]["tests"].pop("MRED_GENDER")))
    assert "results.folds[0].tests.MRED_GENDER: required field missing" in exc.reason


@pytest.mark.parametrize("change, expected", [
    (lambda d: d["results"]["folds"].pop(2),
     "results.folds: fold(s) [2] missing; dataset.num_folds is 4"),
    (lambda d: d["results"]["folds"].__setitem__(2, copy.deepcopy(d["results"]["folds"][1])),
     "results.folds: fold 1 appears twice"),
    (lambda d: d["results"]["folds"][2].__setitem__("fold", 4),
     "results.folds: fold 4 is outside 0..3"),
    (lambda d: d["results"]["folds"][2].__setitem__("fold", -1),
     "results.folds[2].fold: Input should be greater than or equal to 0 (got -1)"),
    (lambda d: d["results"]["folds"][2].__setitem__("fold", "2"),
     "results.folds[2].fold: Input should be a valid integer (got '2')"),
    (lambda d: d["results"].__setitem__("folds", []),
     "results.folds: List should have at least 1 item"),
    (lambda d: d["results"]["dataset"].__setitem__("num_folds", 5),
     "results.folds: fold(s) [4] missing; dataset.num_folds is 5"),
])
def test_every_fold_once(payload, change, expected):
    exc = rejected(edited(payload, change))
    assert exc.status == 422
    assert expected in exc.reason


def test_an_ineligible_run_is_refused_with_its_reasons(payload):
    def change(d):
        d["results"]["eligible_for_upload"] = False
        d["results"]["not_eligible_because"] = ["limit=50 scores only part of the test users"]
    exc = rejected(edited(payload, change))
    assert "results.eligible_for_upload: the run is not eligible (limit=50 scores only part " \
           "of the test users)" in exc.reason


def test_another_results_format_is_refused(payload):
    exc = rejected(edited(payload, lambda d: d["results"].update(format="evalrs-results/0")))
    assert f"results.format: must be {RESULTS_FORMAT!r}" in exc.reason
    assert "(got 'evalrs-results/0')" in exc.reason


@pytest.mark.parametrize("change, expected", [
    (lambda d: d.update(run_id="SomeoneElse-0123456789ab"),
     "run_id 'SomeoneElse-0123456789ab' differs from results.run_id"),
    (lambda d: d.update(run_hash="0" * 64), "run_hash 000000000000... differs from results"),
    (lambda d: d.update(run_id="../../etc/passwd"),
     "run_id: String should match pattern"),
    (lambda d: d.update(run_hash="ABC"), "run_hash: String should match pattern"),
    (lambda d: d.pop("results"), "results: required field missing"),
    (lambda d: d.update(participant_id="x" * 129),
     "participant_id: String should have at most 128 characters"),
    (lambda d: d.update(email="a@" + "b" * 260), "email: String should have at most 254"),
    (lambda d: d.update(participant_id="two\nlines"),
     "participant_id: must not contain control characters (got 'two\\nlines')"),
    (lambda d: d.update(leaderboard_score="0.9"),
     "leaderboard_score: Input should be a valid number"),
    (lambda d: d["results"]["dataset"].update(fingerprint="f" * 63),
     "results.dataset.fingerprint: String should match pattern"),
    (lambda d: d["results"].update(tests="HIT_RATE"),
     "results.tests: Input should be a valid list"),
])
def test_identity_fields_are_checked(payload, change, expected):
    exc = rejected(edited(payload, change))
    assert exc.status == 422
    assert expected in exc.reason


@pytest.mark.parametrize("body, expected", [
    (b"", "not valid JSON"),
    (b"{", "not valid JSON"),
    (b"[1, 2]", "must be a JSON object"),
    (b'"text"', "must be a JSON object"),
    (b"\xff\xfe{}", "not UTF-8 text"),
    (b'{"run_id": "a", "run_id": "b"}', "the key 'run_id' appears twice"),
    (b'{"n": ' + b"9" * 5000 + b"}", "has 5000 digits"),
    (b'{"a": "nul\\u0000byte"}', "NUL character"),
    (b'{"nul\\u0000key": 1}', "NUL character"),
    (b'{"participant_id": "half \\ud800 pair"}', "lone UTF-16 surrogate (\\ud800)"),
    (b'{"a": {"\\udfff": 1}}', "lone UTF-16 surrogate (\\udfff)"),
])
def test_bodies_that_are_not_strict_json(body, expected):
    exc = rejected(body)
    assert exc.status == 422
    assert expected in exc.reason


def test_a_depth_bomb_is_refused_quickly():
    started = time.perf_counter()
    for body in (b"[" * MAX_BODY_BYTES, b'{"a":' + b"[" * 5000 + b"]" * 5000 + b"}"):
        exc = rejected(body)
        assert exc.status == 422
        assert "nested too deeply" in exc.reason
    assert time.perf_counter() - started < 5


def test_nesting_is_bounded_inside_a_valid_submission(payload):
    def nest(depth):
        value = 1
        for _ in range(depth):
            value = [value]
        return value
    # the extra key sits at depth 2 (the object, then the results object)
    parse_submission(edited(payload, lambda d: d["results"].update(extra=nest(MAX_DEPTH - 3))))
    exc = rejected(edited(payload, lambda d: d["results"].update(extra=nest(MAX_DEPTH))))
    assert "nested too deeply" in exc.reason


def test_a_body_over_the_limit_is_413():
    exc = rejected(b" " * (MAX_BODY_BYTES + 1))
    assert exc.status == 413
    assert str(MAX_BODY_BYTES) in exc.reason


def test_a_long_value_is_shown_cut(payload):
    exc = rejected(edited(payload, set_test(0, "HIT_RATE", "9" * 10_000)))
    assert "results.folds[0].tests.HIT_RATE" in exc.reason
    assert len(exc.reason) < 300


def test_many_problems_are_summed_up(payload):
    def change(d):
        for f in d["results"]["folds"]:
            f["tests"]["HIT_RATE"] = "x"
    exc = rejected(edited(payload, change))
    assert "and 1 more problem(s)" in exc.reason
