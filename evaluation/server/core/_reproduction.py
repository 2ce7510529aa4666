"""The organizers' reproduction report: the body of ``POST /api/v1/submissions/{id}/reproduction``.

``python -m evaluation reproduce`` runs a participant's model again and sends what it found: a
verdict, the test-by-test comparison with the uploaded values, the end of its log, whether the
model's fingerprint matched the upload, and, when it ran the organizers' private folds, the
per-fold test values there; and the per-user values it computed from the model's predictions
(``user_values``, and ``private_user_values`` with the private folds: the upload's blob format)
with each public fold's costs measured in the sandbox (``costs``). The body is read with the
upload's strict JSON reader (no NaN or infinity, no duplicate keys, at most
``MAX_REPORT_BYTES``, bounded nesting) and checked here; the private folds are checked like an
upload's folds (the same ranges, one per fold of the submission).
"""

from __future__ import annotations

from typing import Annotated, Literal

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

from evaluation.contract import MAX_FOLDS
from evaluation.errors import SubmissionRejected
from evaluation.server.core._schema import (
    MAX_REPORT_BYTES,
    FoldTests,
    describe_invalid,
    strict_json,
)

#: The verdicts a reproduction can send (the board's badge shows them; "pending" is the rest).
VERDICTS = ("reproduced", "not reproduced")
#: The longest log tail kept, in bytes of UTF-8.
MAX_LOG_TAIL_BYTES = 64 * 1024
#: The most rows of the comparison table (9 tests x 64 folds, with room for means).
MAX_TABLE_ROWS = 2048

Finite = Annotated[float, Field(allow_inf_nan=False)]


class TableRow(BaseModel):
    """One line of the comparison: a test on a fold (``fold`` None for the mean over folds)."""

    model_config = ConfigDict(extra="allow", strict=True)

    test: Annotated[str, Field(min_length=1, max_length=128)]
    fold: Annotated[StrictInt, Field(ge=0, lt=MAX_FOLDS)] | None = None
    uploaded: Finite | None
    reproduced: Finite | None
    difference: Finite | None
    within: StrictBool


class FoldCostReport(BaseModel):
    """One fold's costs as the sandbox measured them (None: unknown)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    train_seconds: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    predict_seconds: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    peak_rss_mib: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None


#: The most alternative protocols a report may carry (a competition declares at most as many).
MAX_ALTERNATIVES = 8
#: The longest reason of a failed alternative kept (characters).
MAX_ALTERNATIVE_REASON = 2000
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class AlternativeCost(BaseModel):
    """What running the model under one alternative protocol cost: the run's wall-clock
    seconds and, over its folds, the seconds to train and to predict and the peak memory
    (MiB), measured in the sandbox (None: unknown)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    seconds: NonNegative | None = None
    train_seconds: NonNegative | None = None
    predict_seconds: NonNegative | None = None
    peak_rss_mib: NonNegative | None = None


class AlternativeReport(BaseModel):
    """The model's result under one declared alternative protocol: "scored" with the
    per-user values of the protocol's folds (the blob format, base64), or "failed" with the
    reason (it raised, ran out of a budget, predicted malformed lists, or the protocol could
    not be cut); its cost either way."""

    model_config = ConfigDict(extra="forbid", strict=True)

    protocol: Annotated[str, Field(min_length=1, max_length=64)]
    status: Literal["scored", "failed"]
    reason: Annotated[str, Field(max_length=MAX_ALTERNATIVE_REASON)] | None = None
    user_values: str | None = None
    cost: AlternativeCost = Field(default_factory=AlternativeCost)

    @model_validator(mode="after")
    def _values_or_reason(self) -> AlternativeReport:
        if self.status == "scored" and (self.user_values is None or self.reason is not None):
            raise ValueError("a scored alternative sends its user_values and no reason")
        if self.status == "failed" and (self.user_values is not None or not self.reason):
            raise ValueError("a failed alternative sends its reason and no user_values")
        return self


class ReproductionReport(BaseModel):
    """A reproduction's report, checked.

    Attributes
    ----------
    verdict : str
        "reproduced" or "not reproduced".
    private : bool
        Whether the run also evaluated the private folds; then ``private_fold_tests`` holds
        one ``{test: value}`` per fold, in fold order, each checked like an upload's fold.
    table : list of TableRow
    log_tail : str
        At most ``MAX_LOG_TAIL_BYTES`` bytes of UTF-8.
    fingerprint_matches : bool
    harness_version : str or None
    user_values, private_user_values : str or None
        The per-user values the reproduction computed (base64 blobs), of the public folds and
        of the private ones (only with ``private``).
    costs : list of FoldCostReport or None
        Each public fold's costs, measured in the sandbox.
    alternatives : list of AlternativeReport or None
        The model's result under each of the competition's declared alternative protocols
        (once each).
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    verdict: Literal["reproduced", "not reproduced"]
    private: StrictBool = False
    table: Annotated[list[TableRow], Field(max_length=MAX_TABLE_ROWS)]
    log_tail: str = ""
    fingerprint_matches: StrictBool
    harness_version: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    private_fold_tests: Annotated[list[FoldTests],
                                  Field(min_length=1, max_length=MAX_FOLDS)] | None = None
    user_values: str | None = None
    private_user_values: str | None = None
    costs: Annotated[list[FoldCostReport], Field(min_length=1, max_length=MAX_FOLDS)] | None \
        = None
    alternatives: Annotated[list[AlternativeReport],
                            Field(max_length=MAX_ALTERNATIVES)] | None = None

    @field_validator("log_tail")
    @classmethod
    def _short_log(cls, value: str) -> str:
        size = len(value.encode("utf-8"))
        if size > MAX_LOG_TAIL_BYTES:
            raise ValueError(f"has {size} bytes; send at most the last {MAX_LOG_TAIL_BYTES} "
                             f"bytes of the log")
        return value

    @model_validator(mode="after")
    def _private_folds_with_private(self) -> ReproductionReport:
        if self.private and self.private_fold_tests is None:
            raise ValueError("private is true but private_fold_tests is missing: send the "
                             "per-fold tests of the private folds")
        if not self.private and self.private_fold_tests is not None:
            raise ValueError("private_fold_tests is given but private is false: set private "
                             "to true, or leave the private folds out")
        if self.private_user_values is not None and self.private_fold_tests is None:
            raise ValueError("private_user_values is given without private_fold_tests: send "
                             "the private folds' tests with their per-user values")
        names = [a.protocol for a in self.alternatives or ()]
        if len(set(names)) != len(names):
            raise ValueError("alternatives name a protocol twice: send one result per "
                             "protocol")
        return self

    def reproduced_tests(self) -> dict[int, dict[str, float]]:
        """The reproduced value of each test of each fold in the table (fold rows only)."""
        out: dict[int, dict[str, float]] = {}
        for row in self.table:
            if row.fold is not None and row.reproduced is not None:
                out.setdefault(row.fold, {})[row.test] = row.reproduced
        return out

    def private_tests(self) -> list[dict[str, float]] | None:
        """The private folds' leaderboard tests as plain dicts (None without private folds)."""
        if self.private_fold_tests is None:
            return None
        return [f.model_dump() for f in self.private_fold_tests]


def parse_reproduction(body: bytes, num_folds: int) -> ReproductionReport:
    """Read and check a reproduction report for a submission of ``num_folds`` folds.

    Parameters
    ----------
    body : bytes
        The request body (JSON).
    num_folds : int
        The submission's folds: ``private_fold_tests`` must have as many.

    Returns
    -------
    ReproductionReport

    Raises
    ------
    SubmissionRejected
        413 for a body over the limit; 422 naming the field, the rule and the value
        otherwise (an unknown verdict, a non-finite number, a log tail over 64 KiB, private
        folds out of range or of another count ...).
    """
    return check_reproduction(strict_json(body, MAX_REPORT_BYTES), num_folds)


def check_reproduction(data: object, num_folds: int) -> ReproductionReport:
    """Check a reproduction report already read from JSON (see ``parse_reproduction``)."""
    try:
        report = ReproductionReport.model_validate(data)
    except ValidationError as exc:
        raise SubmissionRejected(422, "invalid reproduction report: " + describe_invalid(exc)) \
            from None
    if report.private_fold_tests is not None and len(report.private_fold_tests) != num_folds:
        raise SubmissionRejected(
            422, f"invalid reproduction report: private_fold_tests has "
                 f"{len(report.private_fold_tests)} fold(s); the submission has {num_folds}: "
                 f"send one {{test: value}} per fold, fold 0 first")
    if report.costs is not None and len(report.costs) != num_folds:
        raise SubmissionRejected(
            422, f"invalid reproduction report: costs has {len(report.costs)} fold(s); the "
                 f"submission has {num_folds}")
    return report
