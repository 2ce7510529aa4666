"""The upload body: the runner's ``submission.json``, read strictly.

The leaderboard reads what a participant's machine produced, so nothing in it is taken on
trust: the JSON must be strict (no NaN or infinity tokens, no duplicate keys, bounded nesting),
every leaderboard test of every fold a finite number in the test's range, every fold present
once, the run eligible. Keys the schema does not name are kept (a participant's RecList adds
tests of its own, and the results file grows with the harness). The claimed scores are read
but never used: the server recomputes them (:mod:`evaluation.server._scoring`).
"""

from __future__ import annotations

import json
import math
import unicodedata
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)

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
from evaluation.errors import SubmissionRejected
from evaluation.runner import RESULTS_FORMAT

#: The largest upload body the leaderboard reads (bytes).
MAX_BODY_BYTES = 1 << 20
#: The deepest nesting of arrays and objects a body may have (a results file has about 8).
MAX_DEPTH = 32
#: The most folds a run may have (the official protocol has 4).
MAX_FOLDS = 64
#: How many problems a rejection lists, and how much of an offending value it shows.
_SHOWN_ERRORS = 3
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
# A cosine computed in floating point may exceed 1 by a few ulps: the ranges allow that much.
_RANGE_SLACK = 1e-9

RunId = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,128}$")]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
Finite = Annotated[float, Field(allow_inf_nan=False)]
ShortText = Annotated[str, Field(min_length=1, max_length=1024)]


class _Open(BaseModel):
    """A strict model that keeps the keys it does not name (``model_dump`` gives them back)."""

    model_config = ConfigDict(extra="allow", strict=True, populate_by_name=True)


class FoldTests(_Open):
    """One fold's tests: the nine leaderboard tests, checked; any other test, kept."""

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
        if not low - _RANGE_SLACK <= value <= high + _RANGE_SLACK:
            raise ValueError(f"must lie in [{low:g}, {high:g}], the range of "
                             f"{info.field_name}")
        return value


class Fold(_Open):
    """One fold of a run: its number and its tests."""

    fold: Annotated[StrictInt, Field(ge=0)]
    tests: FoldTests


class DatasetInfo(_Open):
    """The data and folds a run used (``results["dataset"]``)."""

    fingerprint: Sha256
    fold_params: dict[str, Any]
    num_folds: Annotated[StrictInt, Field(ge=1, le=MAX_FOLDS)]
    source: ShortText | None = None


class ModelFingerprint(_Open):
    """The model's fingerprint; only its sha256 is required."""

    sha256: Sha256


class ModelInfo(_Open):
    """The model a run evaluated (``results["model"]``)."""

    name: ShortText
    class_: ShortText = Field(alias="class")
    fingerprint: ModelFingerprint


class Results(_Open):
    """A run's ``results.json``, as the runner writes it (``RunResult.to_dict()``)."""

    format: str
    run_id: RunId
    run_hash: Sha256
    harness_version: Annotated[str, Field(min_length=1, max_length=64)]
    dataset: DatasetInfo
    tests: Annotated[list[Annotated[str, Field(min_length=1, max_length=128)]],
                     Field(max_length=512)]
    folds: Annotated[list[Fold], Field(min_length=1, max_length=MAX_FOLDS)]
    # before eligible_for_upload: its check quotes the reasons
    not_eligible_because: list[str] = Field(default_factory=list)
    eligible_for_upload: StrictBool
    model: ModelInfo
    aggregate: dict[str, Any] | None = None
    phase1_score: Finite | None = None
    phase2_score: Finite | None = None
    leaderboard_score: Finite | None = None
    confidence_intervals: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _every_test_applies(cls, data: Any) -> Any:
        # a run whose dataset cannot measure some tests has no value for them: refused with
        # that reason rather than with a "not a number" per missing value
        na = data.get("not_applicable") if isinstance(data, dict) else None
        if na:
            tests = sorted(na) if isinstance(na, dict) else na
            raise ValueError(f"the run's dataset cannot measure the test(s) {_short(str(tests))} "
                             f"(not applicable): a leaderboard scores every test; run on the "
                             f"competition's data")
        return data

    @field_validator("format")
    @classmethod
    def _format(cls, value: str) -> str:
        if value != RESULTS_FORMAT:
            raise ValueError(f"must be {RESULTS_FORMAT!r}, the results layout this leaderboard "
                             f"reads; submit a run made by a harness that writes it")
        return value

    @field_validator("eligible_for_upload")
    @classmethod
    def _eligible(cls, value: bool, info) -> bool:
        if not value:
            reasons = info.data.get("not_eligible_because") or []
            why = "; ".join(_short(str(r)) for r in reasons[:3]) or "no reason given"
            raise ValueError(f"the run is not eligible ({why}): only runs of the official "
                             f"protocol can be submitted; run again without those settings")
        return value

    @field_validator("folds")
    @classmethod
    def _every_fold_once(cls, folds: list[Fold], info) -> list[Fold]:
        dataset = info.data.get("dataset")
        if dataset is None:  # itself invalid, and reported
            return folds
        n = dataset.num_folds
        seen: set[int] = set()
        for f in folds:
            if f.fold >= n:
                raise ValueError(f"fold {f.fold} is outside 0..{n - 1} (dataset.num_folds is "
                                 f"{n})")
            if f.fold in seen:
                raise ValueError(f"fold {f.fold} appears twice; a run has each fold 0..{n - 1} "
                                 f"once")
            seen.add(f.fold)
        missing = sorted(set(range(n)) - seen)
        if missing:
            raise ValueError(f"fold(s) {missing} missing; dataset.num_folds is {n} and every "
                             f"fold 0..{n - 1} must be present")
        return folds


class Submission(_Open):
    """The upload body: the runner's ``submission.json``.

    ``results`` is the run's ``results.json``. The score fields are the client's claims: read,
    compared, never trusted. ``model_dump(by_alias=True)`` gives the payload back, unknown
    keys included.
    """

    run_id: RunId
    run_hash: Sha256
    participant_id: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    email: Annotated[str, Field(min_length=3, max_length=254)] | None = None
    leaderboard_score: Finite | None = None
    results: Results

    @field_validator("participant_id", "email")
    @classmethod
    def _printable(cls, value: str | None) -> str | None:
        # shown on pages and in logs: any other character is data, kept (and escaped there)
        if value is not None and any(unicodedata.category(c).startswith("C") for c in value):
            raise ValueError("must not contain control characters")
        return value

    @model_validator(mode="after")
    def _same_run(self) -> Submission:
        if self.run_id != self.results.run_id:
            raise ValueError(f"run_id {self.run_id!r} differs from results.run_id "
                             f"{self.results.run_id!r}; the two come from one run")
        if self.run_hash != self.results.run_hash:
            raise ValueError(f"run_hash {self.run_hash[:12]}... differs from results.run_hash "
                             f"{self.results.run_hash[:12]}...; the two come from one run")
        return self

    def fold_tests(self) -> list[dict[str, float]]:
        """The nine leaderboard tests of each fold, in fold order.

        Returns
        -------
        list of dict
            ``[{test: value}]``, one per fold, fold 0 first.
        """
        folds = sorted(self.results.folds, key=lambda f: f.fold)
        return [{t: float(getattr(f.tests, t)) for t in LEADERBOARD_TESTS} for f in folds]

    def claimed(self) -> dict[str, float | None]:
        """The scores the client claims (None where it claims none).

        Returns
        -------
        dict
            ``{"phase1_score": results.phase1_score, "leaderboard_score": leaderboard_score}``.
        """
        return {"phase1_score": self.results.phase1_score,
                "leaderboard_score": self.leaderboard_score}


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
    data = _strict_json(body)
    try:
        return Submission.model_validate(data), data
    except ValidationError as exc:
        raise SubmissionRejected(422, "invalid submission: " + _describe(exc)) from None


def _strict_json(body: bytes) -> dict:
    """The JSON object in ``body``; ``SubmissionRejected`` when it is not strict JSON."""
    if isinstance(body, str):
        body = body.encode("utf-8")
    body = bytes(body)
    if len(body) > MAX_BODY_BYTES:
        raise SubmissionRejected(413, f"the body has {len(body)} bytes; at most "
                                      f"{MAX_BODY_BYTES} are accepted")
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


def _describe(exc: ValidationError) -> str:
    """The first problems of ``exc``: ``path: rule (got value)``, joined by "; "."""
    errors = exc.errors(include_url=False)
    parts = [_one(e) for e in errors[:_SHOWN_ERRORS]]
    more = len(errors) - _SHOWN_ERRORS
    return "; ".join(parts) + (f"; and {more} more problem(s)" if more > 0 else "")


def _one(error: dict) -> str:
    """One pydantic error as ``path: rule (got value)``."""
    path = _path(error["loc"])
    msg = str(error["msg"])
    msg = msg.removeprefix("Value error, ")
    if error["type"] == "missing":
        return f"{path}: required field missing"
    value = error.get("input")
    got = "" if isinstance(value, (dict, list)) else f" (got {_show(value)})"
    return f"{path}: {msg}{got}" if path else f"{msg}{got}"


def _path(loc: tuple) -> str:
    """``("results", "folds", 2, "tests")`` as ``results.folds[2].tests``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _show(value: Any) -> str:
    """A short, printable form of an offending value."""
    if isinstance(value, str):
        return _short(repr(value), _SHOWN_CHARS)
    return _short(json.dumps(value) if isinstance(value, (bool, type(None))) else repr(value),
                  _SHOWN_CHARS)


def _short(text: str, limit: int = _SHOWN_CHARS) -> str:
    """``text`` with control characters escaped, cut to ``limit`` characters."""
    text = "".join(c.encode("unicode_escape").decode("ascii")
                   if unicodedata.category(c).startswith("C") else c for c in str(text))
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _json_type(value: Any) -> str:
    """The JSON name of a parsed value's type."""
    return {list: "array", str: "string", bool: "boolean", int: "number", float: "number",
            type(None): "null"}.get(type(value), type(value).__name__)
