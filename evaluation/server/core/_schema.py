"""The upload body: the runner's ``submission.json``, read strictly.

The leaderboard reads what a participant's machine produced, so nothing in it is taken on
trust. Here the body is read as strict JSON (bounded size, no NaN or infinity tokens, no
duplicate keys, bounded nesting, no NUL or lone surrogate in a string); the contract
(:func:`evaluation.contract.read_submission`, given the range of each leaderboard test) then
checks the payload: every leaderboard test of every fold a finite number in the test's range,
every fold present once, the run eligible. Keys the contract does not name are kept (a
participant's RecList adds tests of its own, and the results file grows with the harness). The
claimed scores are read but never used: the server recomputes them
(:mod:`evaluation.server.core._scoring`).
"""

from __future__ import annotations

import copy
import json
import math
import unicodedata
from dataclasses import dataclass, fields
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evaluation.challenge import (
    BEING_LESS_WRONG,
    BIAS_WEIGHT,
    DIVERSITY_WEIGHT,
    HIT_RATE,
    LATENT_DIVERSITY,
    LEADERBOARD_TESTS,
    MRED_TESTS,
    MRR,
)
from evaluation.contract import (
    RANGE_SLACK,
    RUN_ID_PATTERN,
    SHA256_PATTERN,
    Problem,
    RecordRefused,
    SubmissionRecord,
)
from evaluation.contract import read_submission as read_contract_submission
from evaluation.errors import SubmissionRejected

#: The largest upload body the leaderboard reads (bytes): 2 MiB, a full-scale run's per-user
#: values (about 1.1 to 1.5 MiB of base64 for 4 folds of ~30k users) with its results.
MAX_BODY_BYTES = 2 << 20
#: The largest reproduction report (bytes): two such blobs (public and private folds) and one
#: per declared alternative protocol (at most 8; a time cut's single fold may hold every user).
MAX_REPORT_BYTES = 20 << 20
#: The deepest nesting of arrays and objects a body may have (a results file has about 8).
MAX_DEPTH = 32
#: How much of an offending value a rejection shows.
_SHOWN_CHARS = 60

#: The range of each leaderboard test, from its definition in ``evaluation.challenge``:
#: rates in [0, 1]; an MRED is ``-mean_g |MR_g - MR|``; BEING_LESS_WRONG a mean cosine;
#: LATENT_DIVERSITY ``DIVERSITY_WEIGHT * diversity - BIAS_WEIGHT * bias`` with diversity and
#: bias (one minus a cosine) each in [0, 2].
TEST_RANGES: dict[str, tuple[float, float]] = {
    HIT_RATE: (0.0, 1.0),
    MRR: (0.0, 1.0),
    **{t: (-1.0, 0.0) for t in MRED_TESTS},
    BEING_LESS_WRONG: (-1.0, 1.0),
    LATENT_DIVERSITY: (-2.0 * BIAS_WEIGHT, 2.0 * DIVERSITY_WEIGHT),
}

Finite = Annotated[float, Field(allow_inf_nan=False)]


class FoldTests(BaseModel):
    """One fold's tests as a reproduction report sends them: the nine leaderboard tests,
    checked as the contract checks an upload's; any other test, kept."""

    model_config = ConfigDict(extra="allow", strict=True)

    HIT_RATE: Finite
    MRR: Finite
    MRED_COUNTRY: Finite
    MRED_USER_ACTIVITY: Finite
    MRED_TRACK_POPULARITY: Finite
    MRED_ARTIST_POPULARITY: Finite
    MRED_GENDER: Finite
    BEING_LESS_WRONG: Finite
    LATENT_DIVERSITY: Finite

    @field_validator(*LEADERBOARD_TESTS)
    @classmethod
    def _in_range(cls, value: float, info) -> float:
        low, high = TEST_RANGES[info.field_name]
        if not low - RANGE_SLACK <= value <= high + RANGE_SLACK:
            raise ValueError(f"must lie in [{low:g}, {high:g}], the range of "
                             f"{info.field_name}")
        return value


@dataclass(frozen=True)
class Submission(SubmissionRecord):
    """The upload body, checked: the runner's ``submission.json``
    (:class:`evaluation.contract.SubmissionRecord`, read with the leaderboard tests' ranges).

    ``results`` is the run's ``results.json`` (a :class:`evaluation.contract.ResultsRecord`).
    The score fields are the client's claims: read, compared, never trusted.
    """

    def fold_tests(self, tests: tuple[str, ...] | list[str] = LEADERBOARD_TESTS,
                   ) -> list[dict[str, float]]:
        """The leaderboard tests of each fold, in fold order.

        Returns
        -------
        list of dict
            ``[{test: value}]``, one per fold, fold 0 first.
        """
        return super().fold_tests(tests)

    def model_dump(self, **_options: Any) -> dict:
        """The payload as it was read, unknown keys included (a copy; the options of the
        pydantic model this replaces are accepted and change nothing: it is JSON already)."""
        return copy.deepcopy(self.raw)

    @classmethod
    def model_json_schema(cls, **_options: Any) -> dict:
        """The JSON schema of the payload's top level, for the API's documentation."""
        return SUBMISSION_JSON_SCHEMA


#: The payload's top level as the API documents it; the results are checked by the contract.
SUBMISSION_JSON_SCHEMA: dict = {
    "title": "Submission", "type": "object",
    "required": ["run_id", "run_hash", "results"],
    "properties": {
        "run_id": {"type": "string", "pattern": RUN_ID_PATTERN},
        "run_hash": {"type": "string", "pattern": SHA256_PATTERN},
        "participant_id": {"anyOf": [{"type": "string", "minLength": 1, "maxLength": 128},
                                     {"type": "null"}]},
        "email": {"anyOf": [{"type": "string", "minLength": 3, "maxLength": 254},
                            {"type": "null"}]},
        "leaderboard_score": {"anyOf": [{"type": "number"}, {"type": "null"}]},
        "results": {"type": "object", "description": "the run's results.json"},
        "user_values": {"type": "string", "description": (
            "optional: every fold's per-user values, base64 of the blob "
            "evaluation.challenge.encode_user_values makes; checked to add up to the folds' "
            "tests")},
    },
}


# --------------------------------------------------------------------------- parsing


class _BadJson(ValueError):
    """A JSON body the strict reader refuses (raised from the decoder's hooks)."""


def parse_submission(body: bytes) -> Submission:
    """Read and check an upload body.

    Parameters
    ----------
    body : bytes
        The request body: UTF-8 JSON, the runner's ``submission.json``.

    Returns
    -------
    Submission

    Raises
    ------
    SubmissionRejected
        413 when the body exceeds ``MAX_BODY_BYTES``; otherwise 422 with a reason naming the
        field (``results.folds[2].tests.HIT_RATE``), the rule and the offending value, cut
        short: invalid JSON, NaN or infinity, numbers out of range, strings or booleans where
        numbers belong, missing or duplicate folds, an ineligible run, nesting deeper than
        ``MAX_DEPTH`` ...
    """
    return read_submission(body)[0]


def read_submission(body: bytes) -> tuple[Submission, dict]:
    """``parse_submission``, also returning the parsed JSON document (read once).

    Returns
    -------
    (Submission, dict)
        The checked submission and the JSON object it was read from (not to be changed).

    Raises
    ------
    SubmissionRejected
        As ``parse_submission``.
    """
    data = strict_json(body)
    try:
        record = read_contract_submission(data, leaderboard=TEST_RANGES)
    except RecordRefused as exc:
        raise SubmissionRejected(422, "invalid submission: " + exc.describe()) from None
    return Submission(**{f.name: getattr(record, f.name) for f in fields(record)}), data


def strict_json(body: bytes, limit: int = MAX_BODY_BYTES) -> dict:
    """The JSON object in ``body``; ``SubmissionRejected`` when it is not strict JSON or has
    more than ``limit`` bytes."""
    if isinstance(body, str):
        body = body.encode("utf-8")
    body = bytes(body)
    if len(body) > limit:
        raise SubmissionRejected(413, f"the body has {len(body)} bytes; at most "
                                      f"{limit} are accepted")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SubmissionRejected(422, f"the body is not UTF-8 text (byte {exc.start}); send "
                                      f"the submission.json the runner wrote") from None
    try:
        data = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float,
                          parse_int=_bounded_int, object_pairs_hook=_unique_keys)
    except RecursionError:
        raise SubmissionRejected(422, f"the JSON is nested too deeply (more than "
                                      f"{MAX_DEPTH} levels)") from None
    except _BadJson as exc:
        raise SubmissionRejected(422, f"the body is not strict JSON: {exc}") from None
    except ValueError as exc:  # JSONDecodeError, and int() on absurdly long digit strings
        raise SubmissionRejected(422, f"the body is not valid JSON: {_short(str(exc), 120)}") \
            from None
    if not isinstance(data, dict):
        raise SubmissionRejected(422, f"the body must be a JSON object (the submission.json the "
                                      f"runner wrote), got a JSON {_json_type(data)}")
    _check_depth(data)
    if "\\u" in text:
        # only an escape sequence puts a NUL or a surrogate into a string: the decoded UTF-8
        # holds no surrogate, and strict JSON refuses raw control characters
        _check_depth_and_text(data)
    return data


def _no_constant(token: str):
    raise _BadJson(f"{token} is not a number in JSON; a missing value is null")


def _finite_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise _BadJson(f"the number {_short(token, 24)} is out of the floating-point range")
    return value


def _bounded_int(token: str) -> int:
    if len(token.lstrip("-")) > 30:
        raise _BadJson(f"the integer {_short(token, 24)} has {len(token.lstrip('-'))} digits; "
                       f"no field of a submission needs more than 30")
    return int(token)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    # Two parsers may keep different copies of a duplicated key: refuse the ambiguity.
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _BadJson(f"the key {_short(key, 40)!r} appears twice in one object")
        out[key] = value
    return out


def _check_depth(data: Any) -> None:
    """Nothing; ``SubmissionRejected`` when ``data`` nests deeper than ``MAX_DEPTH``.

    Level by level, looking only at the containers (``_check_depth_and_text`` looks at
    every value).
    """
    level, depth = [data], 1
    while level:
        if depth > MAX_DEPTH:
            raise SubmissionRejected(422, f"the JSON is nested too deeply (more than "
                                          f"{MAX_DEPTH} levels)")
        inner = []
        for value in level:
            values = value.values() if value.__class__ is dict else value
            inner += [v for v in values if v.__class__ in _CONTAINERS]
        level, depth = inner, depth + 1


#: What JSON parses into that can nest (``object_pairs_hook`` gives plain dicts).
_CONTAINERS = (dict, list)


def _check_depth_and_text(data: Any) -> None:
    """Nothing; ``SubmissionRejected`` when ``data`` nests deeper than ``MAX_DEPTH`` or a
    string holds what cannot be stored or shown: a NUL character (PostgreSQL's text and JSON
    columns refuse it) or half of a UTF-16 surrogate pair (no UTF-8 page can show it)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > MAX_DEPTH:
                raise SubmissionRejected(422, f"the JSON is nested too deeply (more than "
                                              f"{MAX_DEPTH} levels)")
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(key, str):
                    _check_text(key, "a key")
                stack.append((item, depth + 1))
        elif isinstance(value, str):
            _check_text(value, "a string")


def _check_text(text: str, what: str) -> None:
    """Nothing; ``SubmissionRejected`` when ``text`` holds a NUL or a lone surrogate."""
    if "\x00" in text:
        raise SubmissionRejected(422, f"{what} holds a NUL character (\\u0000)")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise SubmissionRejected(422, f"{what} holds a lone UTF-16 surrogate "
                                      f"(\\u{ord(text[exc.start]):04x}), which is no "
                                      f"character") from None


# --------------------------------------------------------------------------- the reason


def describe_invalid(exc: ValidationError) -> str:
    """The first problems of a pydantic error, said as the contract says its refusals:
    ``path: rule (got value)``, joined by "; "."""
    problems = []
    for error in exc.errors(include_url=False):
        loc = tuple(error["loc"])
        if error["type"] == "missing":
            problems.append(Problem(loc, "required field missing"))
        else:
            rule = str(error["msg"]).removeprefix("Value error, ")
            problems.append(Problem(loc, rule, error.get("input")))
    return RecordRefused(problems).describe()


def _short(text: str, limit: int = _SHOWN_CHARS) -> str:
    """``text`` with control characters escaped, cut to ``limit`` characters."""
    text = "".join(c.encode("unicode_escape").decode("ascii")
                   if unicodedata.category(c).startswith("C") else c for c in str(text))
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _json_type(value: Any) -> str:
    """The JSON name of a parsed value's type."""
    return {list: "array", str: "string", bool: "boolean", int: "number", float: "number",
            type(None): "null"}.get(type(value), type(value).__name__)


def canonical_json(document: Any) -> str:
    """``document`` as canonical JSON: sorted keys, no spaces, ASCII only (escapes kept)."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)
