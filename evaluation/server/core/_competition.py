"""The competition a leaderboard runs: its data, folds, harness versions, phases and baselines.

Organizers describe it in a TOML file (``competition.toml``)::

    name = "EvalRS 2022"
    source = "lfm"                          # informational
    harness_versions = ["0.1.0"]
    repeated_items = "error"                # optional: "first" (the default) scores lists
                                            # naming a track twice as 2022 did; "error"
                                            # refuses runs that had such lists

    [dataset]
    fingerprint = "f42c..."                 # the run's results["dataset"]["fingerprint"]
    fold_params = { num_folds = 4, seed = 42, ... }
    fold_users = [29912, 29871, 29930, 29889]  # optional: each public fold's test users (a
                                            # run's n_users): an upload declaring others is
                                            # refused at once, before any trusted row

    [[phases]]
    name = "public"
    opens = 2026-01-01T00:00:00Z            # offset datetimes; open on [opens, closes)
    closes = 2028-01-01T00:00:00Z
    references = "lfm"                      # a shipped references name, or a path
    daily_limit = 5                         # submissions per team per UTC day
    public = true                           # whether everyone sees the scores
    reproduce = "final"                     # optional: which submissions the reproduction
                                            # workers re-run: "final" (the default: the final
                                            # selections), "every" upload, or "none"
    private_folds = false                   # optional: whether those runs evaluate the
                                            # private folds too (default: not public)
    min_difference = 0.005                  # optional: overrides [board]'s for this phase
    carry_from = "warmup"                   # optional: an earlier phase whose submissions
    carry = "finals"                        # enter this one when it opens: its "finals"
                                            # (what its private ranking uses), each team's
                                            # "best", or "all"; scored again, not uploaded
    fact_sheet = "required"                 # optional: "off" (the default), "optional" or
                                            # "required": a description of the method and a
                                            # link to the code (URL + commit) at final selection

    [board]                                 # optional: how the board reads its differences
    min_difference = 0.0                    # score differences below it are ties
    level = 0.95                            # the chance of no wrong call on the whole board
    n_boot = 1000                           # paired bootstrap replicates
    seed = 0                                # of the resampling of the test users

    accept_claims = false                   # optional: whether uploads of scores only (the 2022
                                            # submission.json, no predictions) are taken, and
                                            # shown apart as unverified claims
    max_upload_bytes = 67108864             # optional: the largest predictions upload (64 MiB;
                                            # a full-scale 4-fold run is about 20-30 MB)
    count_refused = true                    # optional: whether a submission refused for the
                                            # team's own reason (invalid predictions) counts
                                            # against its daily limit (one that failed for the
                                            # platform's reason never does)

    [[baselines]]
    name = "Popularity"
    file = "competition/baselines/popularity.json"   # a submission.json made by the harness

Relative paths are read from the TOML file's folder. Every key is checked, and an unknown key
is an error, so that a misspelt one cannot pass unnoticed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from evaluation.challenge import LEADERBOARD_TESTS, References, load_references
from evaluation.contract import (
    DATASET_KEY,
    FINGERPRINT_KEY,
    FOLD_PARAMS_KEY,
    FOLDS_KEY,
    FORMAT_KEY,
    HARNESS_VERSION_KEY,
    OTHER_DATA,
    OTHER_FOLD_COUNT,
    OTHER_FOLDS,
    OTHER_REPEATED_ITEMS,
    REPEATED_ITEMS_RULES,
    RESULTS_KEY,
    RUN_HASH_KEY,
    TESTS_KEY,
    CompetitionTarget,
    Ineligibility,
    cut,
    differences,
    read_competition_toml,
    run_hash,
    submission_payload,
)
from evaluation.errors import ConfigError, EvalRSError, SubmissionRejected
from evaluation.server.core._competition_keys import (
    DEFAULT_FACT_SHEET,
    DEFAULT_FINAL_SELECTIONS,
    DEFAULT_REPRODUCE,
    DEFAULT_REPRODUCE_ATTEMPTS,
    BoardSettings,
    Where,
    board_settings,
    carry_rule,
    count_refused,
    fact_sheet_rule,
    final_selections,
    min_difference_of,
    private_folds,
    public_fold_users,
    reproduce_attempts,
    reproduce_rule,
    when,
)
from evaluation.server.core._schema import Submission, parse_submission

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_TOP_KEYS = ("name", "source", "harness_versions", "repeated_items", "dataset", "phases",
             "baselines", "reproduce_attempts", "board", "accept_claims", "max_upload_bytes",
             "count_refused")
#: The largest predictions upload by default (bytes), and the bounds of ``max_upload_bytes``.
DEFAULT_MAX_UPLOAD_BYTES = 64 << 20
MIN_UPLOAD_BYTES, MAX_UPLOAD_BYTES = 1 << 10, 1 << 30
#: The most bytes an upload's lists may inflate to, per byte of the upload: a bound on a
#: compression bomb far above what item ids compress to (about 2:1).
INFLATE_RATIO = 16
_DATASET_KEYS = (FINGERPRINT_KEY, FOLD_PARAMS_KEY, "fold_users")
_PHASE_KEYS = ("name", "opens", "closes", "references", "daily_limit", "public",
               "final_selections", "reproduce", "private_folds", "min_difference",
               "carry_from", "carry", "fact_sheet")
#: Of a phase, the keys that may be left out.
_PHASE_OPTIONAL = ("final_selections", "reproduce", "private_folds", "min_difference",
                   "carry_from", "carry", "fact_sheet")
_BASELINE_KEYS = ("name", "file")


@dataclass(frozen=True)
class Phase:
    """One phase of a competition: when it takes submissions, scored with which references.

    Attributes
    ----------
    name : str
    opens, closes : datetime
        Aware UTC times; the phase is open on ``[opens, closes)``.
    references : References
        What its leaderboard scores are normalised with.
    references_name : str
        The references as the competition file names them (a shipped name or a path).
    daily_limit : int
        Submissions per team per UTC day.
    public : bool
        Whether the board shows the scores to everyone (else to organizers only).
    final_selections : int
        How many submissions a team may mark as final; its private ranking uses those.
    reproduce : {"final", "every", "none"}
        Which of its submissions get a reproduction job: the final selections, every upload,
        or none.
    private_folds : bool
        Whether its reproduction jobs evaluate the private folds too (a phase ranked by
        private scores needs them); by default, when the phase is not public.
    min_difference : float or None
        The phase's minimum practical difference (None: the ``[board]`` one).
    carry_from : str or None
        An earlier phase whose submissions enter this one when it opens (None: none do).
    carry : {"finals", "best", "all"} or None
        Which of them: the final selections its private ranking uses, each team's best, or
        all (None when ``carry_from`` is).
    fact_sheet : {"off", "optional", "required"}
        Whether a final selection takes a fact sheet (a description of the method, the code's
        URL and commit): never, when the team gives one, or always.
    """

    name: str
    opens: datetime
    closes: datetime
    references: References = field(repr=False, hash=False)
    references_name: str
    daily_limit: int
    public: bool
    final_selections: int = DEFAULT_FINAL_SELECTIONS
    reproduce: str = DEFAULT_REPRODUCE
    private_folds: bool = False
    min_difference: float | None = None
    carry_from: str | None = None
    carry: str | None = None
    fact_sheet: str = DEFAULT_FACT_SHEET

    def is_open(self, now: datetime) -> bool:
        """Whether the phase takes submissions at ``now`` (an aware datetime)."""
        return self.opens <= _aware(now) < self.closes


@dataclass(frozen=True)
class BaselineSpec:
    """A baseline pinned on every board: its name and the run the harness made of it.

    Attributes
    ----------
    name : str
    file : Path
        A ``submission.json`` (or a ``results.json``) written by the harness.
    """

    name: str
    file: Path

    def load(self) -> Submission:
        """The baseline's run as a submission.

        Returns
        -------
        Submission
            ``file`` read with :func:`parse_submission`; a ``results.json`` is taken as the
            ``results`` of a submission with no participant.

        Raises
        ------
        SubmissionRejected
            When the file is not a valid submission (or results) of an eligible run.
        ConfigError
            When it cannot be read.
        """
        try:
            body = self.file.read_bytes()
        except OSError as exc:
            raise ConfigError(f"baseline {self.name!r}: cannot read {str(self.file)!r} "
                              f"({exc.strerror or exc}).") from None
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):
            data = None  # parse_submission says what is wrong
        if isinstance(data, dict) and RESULTS_KEY not in data and FORMAT_KEY in data:
            body = json.dumps(submission_payload(data, email=None, participant_id=None)) \
                .encode("utf-8")
        return parse_submission(body)


@dataclass(frozen=True)
class Competition:
    """A competition: the runs it accepts, its phases and its pinned baselines.

    Attributes
    ----------
    name : str
    path : Path
        The competition file.
    source : str
        The dataset, in words (informational: the fingerprint decides).
    dataset_fingerprint : str
        The content fingerprint every run must have been made on.
    fold_params : dict
        The fold parameters every run must have used.
    fold_users : tuple of int or None
        Each public fold's test users, when the file states them (``dataset.fold_users``):
        the board compares only values on folds of these sizes, and an upload declaring
        others is refused before its values are read. None: the organizers' first trusted
        values fix them.
    harness_versions : tuple of str
        The harness versions whose runs are accepted.
    phases : tuple of Phase
        In time order, not overlapping.
    baselines : tuple of BaselineSpec
    repeated_items : {"first", "error"}
        Whether runs whose lists named a track twice are accepted (scored as 2022 did) or
        refused.
    reproduce_attempts : int
        Runs of a reproduction job before it is marked failed (an infrastructure failure or
        a worker whose lease ran out ends one).
    board : BoardSettings
        How the board reads the differences between teams.
    accept_claims : bool
        Whether uploads of scores only (a ``submission.json`` without predictions) are
        taken; they are shown apart as unverified claims, never ranked or compared.
    max_upload_bytes : int
        The largest predictions upload.
    count_refused : bool
        Whether a submission refused for the team's own reason (its scoring or reproduction
        job failed on its upload) counts against the team's daily limit; one that failed for
        the platform's reason never counts.
    """

    name: str
    path: Path
    source: str
    dataset_fingerprint: str
    fold_params: dict = field(hash=False)
    harness_versions: tuple[str, ...]
    phases: tuple[Phase, ...]
    baselines: tuple[BaselineSpec, ...]
    repeated_items: str = "first"
    reproduce_attempts: int = DEFAULT_REPRODUCE_ATTEMPTS
    board: BoardSettings = field(default_factory=BoardSettings)
    fold_users: tuple[int, ...] | None = None
    accept_claims: bool = False
    max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES
    count_refused: bool = True

    def phase(self, name: str) -> Phase:
        """The phase called ``name``.

        Raises
        ------
        SubmissionRejected
            404 when there is none.
        """
        for p in self.phases:
            if p.name == name:
                return p
        raise SubmissionRejected(404, f"no phase {cut(name)!r} in competition {self.name!r}; "
                                      f"its phases are {[p.name for p in self.phases]}")

    def phase_at(self, now: datetime) -> Phase | None:
        """The phase open at ``now``, or None between and outside phases."""
        return next((p for p in self.phases if p.is_open(now)), None)

    def current_phase(self, now: datetime) -> Phase:
        """The phase to show at ``now``: the open one, else the last one that opened, else
        the first."""
        now = _aware(now)
        opened = [p for p in self.phases if p.opens <= now]
        return self.phase_at(now) or (opened[-1] if opened else self.phases[0])

    @property
    def target(self) -> CompetitionTarget:
        """The data, folds and harness versions the competition accepts, as the contract's
        eligibility check takes them."""
        return CompetitionTarget(name=f"competition {self.name!r}", source=self.source,
                                 fingerprint=self.dataset_fingerprint,
                                 fold_params=self.fold_params,
                                 harness_versions=self.harness_versions, path=str(self.path),
                                 repeated_items=self.repeated_items)

    def check_run(self, results: Mapping | Submission) -> None:
        """Check that a run belongs to this competition.

        The data, folds and harness version are judged by the contract's eligibility check
        (:meth:`evaluation.contract.CompetitionTarget.ineligibilities`), the one the runner
        uses; the first reason it finds is the refusal.

        Parameters
        ----------
        results : Mapping or Submission
            The run's ``results.json`` (a mapping), or a whole submission (a ``Submission``
            or its mapping, with ``results`` inside): then its top-level ``run_hash`` is
            checked too.

        Raises
        ------
        SubmissionRejected
            422 naming the part that differs: the dataset fingerprint ("other data"), the
            fold parameters or fold count ("other folds"), a harness version not accepted,
            lists that named a track twice when the competition refuses them, a
            leaderboard test missing from the run's tests, or a run hash other than
            ``evaluation.contract.run_hash`` of those parts.
        """
        outer_hash, results = _unwrap(results)
        dataset = results.get(DATASET_KEY)
        dataset = dataset if isinstance(dataset, Mapping) else {}
        version = results.get(HARNESS_VERSION_KEY)
        found = self.target.ineligibilities(dataset, version, results.get(FOLDS_KEY))
        if found:
            raise SubmissionRejected(422, self._refusal(found[0]))
        tests = results.get(TESTS_KEY)
        if not isinstance(tests, list) or not all(isinstance(t, str) for t in tests):
            raise SubmissionRejected(422, "tests must be the list of the run's test names")
        missing = [t for t in LEADERBOARD_TESTS if t not in tests]
        if missing:
            raise SubmissionRejected(422, f"tests lack {', '.join(missing)}: the run's RecList "
                                          f"must keep every leaderboard test")
        if not isinstance(version, str):  # never: every accepted version is text
            raise SubmissionRejected(422, "harness_version must be the text of the harness "
                                          "version that made the run")
        expected = run_hash(self.dataset_fingerprint, self.fold_params, tests, version)
        claimed = [results.get(RUN_HASH_KEY)] + ([] if outer_hash is _NONE else [outer_hash])
        if any(h != expected for h in claimed):
            raise SubmissionRejected(422, "run hash does not match its parts (data, folds, "
                                          "harness version and tests): the file was edited or "
                                          "made otherwise; submit the submission.json the "
                                          "harness wrote")

    def _refusal(self, why: Ineligibility) -> str:
        """An ineligibility as the leaderboard's refusal says it."""
        if why.part == OTHER_DATA:
            return (f"other data: dataset fingerprint {cut(why.got, 16)}, the competition's "
                    f"is {self.dataset_fingerprint[:16]}...; evaluate on the competition's "
                    f"dataset")
        if why.part == OTHER_FOLDS and why.got is None:
            return "other folds: the run records no fold_params"
        if why.part == OTHER_FOLDS:
            return (f"other folds: fold_params differ in {why.differences}; use the "
                    f"competition's fold parameters")
        if why.part == OTHER_FOLD_COUNT:
            return (f"other folds: the run has {cut(why.got)} folds, the competition's "
                    f"fold_params {why.want}")
        if why.part == OTHER_REPEATED_ITEMS:
            return (f"repeated items: {why.got} of the run's lists recommend the same track "
                    f"more than once, which this competition refuses; recommend each track "
                    f"at most once per user (pad with -1) and run again")
        return (f"harness version {cut(why.got)} is not accepted (accepted: "
                f"{', '.join(self.harness_versions)}); run again with an accepted version of "
                f"the harness")


_NONE = object()


def _unwrap(payload) -> tuple[Any, Mapping]:
    """``(top-level run hash or _NONE, results mapping)`` of a submission or results."""
    if isinstance(payload, Submission):
        return payload.run_hash, payload.results.raw
    if not isinstance(payload, Mapping):
        raise SubmissionRejected(422, f"expected the run's results as an object, got a "
                                      f"{type(payload).__name__}")
    if FORMAT_KEY not in payload and isinstance(payload.get(RESULTS_KEY), Mapping):
        return payload.get(RUN_HASH_KEY), payload[RESULTS_KEY]
    return _NONE, payload


def _aware(now: datetime) -> datetime:
    """``now``, which must be an aware datetime."""
    if not isinstance(now, datetime) or now.tzinfo is None or now.utcoffset() is None:
        raise TypeError(f"phase times are compared with aware datetimes (UTC), got {now!r}")
    return now


# --------------------------------------------------------------------------- the file


def load_competition(path) -> Competition:
    """Read and check a competition file.

    Parameters
    ----------
    path : str or os.PathLike
        The TOML file.

    Returns
    -------
    Competition

    Raises
    ------
    ConfigError
        Naming the file, the key, the rule and the fix, when the file cannot be read, is not
        TOML, misses a key, has an unknown key or a value that breaks its rule, its phases
        overlap, or a references or baseline file is missing or invalid.
    """
    path = Path(path)
    data = read_competition_toml(path)
    where = Where(path)
    where.keys(data, "", _TOP_KEYS, required=("name", "harness_versions", "dataset", "phases"))
    name = where.text(data, "name")
    source = where.text(data, "source") if "source" in data else ""
    versions = where.list_of_text(data, "harness_versions")
    dataset = where.table(data, "dataset")
    where.keys(dataset, "dataset.", _DATASET_KEYS, required=(FINGERPRINT_KEY, FOLD_PARAMS_KEY))
    fingerprint = dataset["fingerprint"]
    if not isinstance(fingerprint, str) or not _SHA256.match(fingerprint):
        where.fail("dataset.fingerprint", "must be the 64-character lowercase hex fingerprint "
                   "of the dataset", fingerprint, "copy results['dataset']['fingerprint'] of a "
                   "run on the data (or ChallengeDataset(...).fingerprint)")
    fold_params = where.table(dataset, FOLD_PARAMS_KEY, "dataset.")
    where.json_values(fold_params, f"dataset.{FOLD_PARAMS_KEY}")
    phases = _phases(where, data, fingerprint, fold_params)
    repeated = data.get("repeated_items", "first")
    if repeated not in REPEATED_ITEMS_RULES:
        where.fail("repeated_items", f"must be one of {', '.join(REPEATED_ITEMS_RULES)}",
                   repeated, 'write repeated_items = "error" to refuse lists that name a track '
                   'twice, or leave it out to score them as 2022 did')
    competition = Competition(
        name=name, path=path.resolve(), source=source, dataset_fingerprint=fingerprint,
        fold_params=dict(fold_params), harness_versions=tuple(versions), phases=phases,
        baselines=_baselines(where, data), repeated_items=repeated,
        reproduce_attempts=reproduce_attempts(where, data),
        board=board_settings(where, data), fold_users=public_fold_users(where, dataset),
        accept_claims=_accept_claims(where, data), max_upload_bytes=_max_upload_bytes(where, data),
        count_refused=count_refused(where, data))
    for i, spec in enumerate(competition.baselines):
        _check_baseline(where, competition, i, spec)
    return competition


def _accept_claims(where: Where, data: Mapping) -> bool:
    """The competition's ``accept_claims`` (default false), checked."""
    value = data.get("accept_claims", False)
    if not isinstance(value, bool):
        where.fail("accept_claims", "must be true or false (whether uploads of scores only, "
                   "without predictions, are taken as unverified claims)", value,
                   "write accept_claims = true, or leave it out to refuse them")
    return value


def _max_upload_bytes(where: Where, data: Mapping) -> int:
    """The competition's ``max_upload_bytes`` (default ``DEFAULT_MAX_UPLOAD_BYTES``), checked."""
    value = data.get("max_upload_bytes", DEFAULT_MAX_UPLOAD_BYTES)
    if not isinstance(value, int) or isinstance(value, bool) \
            or not MIN_UPLOAD_BYTES <= value <= MAX_UPLOAD_BYTES:
        where.fail("max_upload_bytes", f"must be an integer from {MIN_UPLOAD_BYTES} to "
                   f"{MAX_UPLOAD_BYTES} (the largest predictions upload, in bytes)", value,
                   f"write e.g. max_upload_bytes = {DEFAULT_MAX_UPLOAD_BYTES} (a full-scale "
                   f"4-fold run uploads about 20-30 MB)")
    return value


def _phases(where: Where, data: Mapping, fingerprint: str,
            fold_params: Mapping) -> tuple[Phase, ...]:
    """The checked phases, in time order."""
    raw = data["phases"]
    if not isinstance(raw, list) or not raw or not all(isinstance(p, dict) for p in raw):
        where.fail("phases", "must be one or more [[phases]] tables", fix="add a [[phases]] "
                   "table per phase")
    phases = []
    for i, table in enumerate(raw):
        key = f"phases[{i}]."
        where.keys(table, key, _PHASE_KEYS,
                   required=tuple(k for k in _PHASE_KEYS if k not in _PHASE_OPTIONAL))
        name = table["name"]
        if not isinstance(name, str) or not _NAME.match(name):
            where.fail(f"{key}name", "must be 1 to 64 letters, digits, '_', '.' or '-' (it "
                       "appears in URLs)", name, 'write e.g. name = "public"')
        opens = when(where, table, key, "opens")
        closes = when(where, table, key, "closes")
        if not opens < closes:
            where.fail(f"{key}closes", f"must be after opens ({opens.isoformat()})", closes,
                       "give the phase an end later than its start")
        limit = table["daily_limit"]
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            where.fail(f"{key}daily_limit", "must be an integer >= 1 (submissions per team per "
                       "UTC day)", limit, "write e.g. daily_limit = 5")
        if not isinstance(table["public"], bool):
            where.fail(f"{key}public", "must be true or false", table["public"],
                       "write public = true (scores shown to all) or false (organizers only)")
        ref_name = table["references"]
        carry_from, carry = carry_rule(where, table, key)
        phases.append(Phase(
            name=name, opens=opens, closes=closes,
            references=_references(where, f"{key}references", ref_name, fingerprint,
                                   fold_params),
            references_name=ref_name, daily_limit=limit, public=table["public"],
            final_selections=final_selections(where, table, key),
            reproduce=reproduce_rule(where, table, key),
            private_folds=private_folds(where, table, key),
            min_difference=(min_difference_of(where, table, key) if "min_difference" in table
                            else None),
            carry_from=carry_from, carry=carry, fact_sheet=fact_sheet_rule(where, table, key)))
    _check_order(where, phases)
    _check_carries(where, phases)
    return tuple(sorted(phases, key=lambda p: p.opens))


def _check_order(where: Where, phases: list[Phase]) -> None:
    """Nothing; a failure when two phases share a name or overlap in time."""
    names = [p.name for p in phases]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        where.fail("phases", f"must have distinct names; {dupes[0]!r} appears "
                   f"{names.count(dupes[0])} times", fix="rename one of them")
    ordered = sorted(phases, key=lambda p: p.opens)
    for a, b in zip(ordered, ordered[1:]):
        if b.opens < a.closes:
            where.fail("phases", f"must not overlap: {a.name!r} closes "
                       f"{a.closes.isoformat()} after {b.name!r} opens {b.opens.isoformat()}",
                       fix=f"let {b.name!r} open at or after {a.name!r} closes")


def _check_carries(where: Where, phases: list[Phase]) -> None:
    """Nothing; a failure when a phase carries from no phase of the file, from itself, from a
    phase that carries from it (a cycle), or from a phase that has not closed when it opens
    (its submissions would still change)."""
    index = {p.name: i for i, p in enumerate(phases)}
    names = ", ".join(map(repr, index))
    for i, phase in enumerate(phases):
        source = phase.carry_from
        if source is not None and source not in index:
            where.fail(f"phases[{i}].carry_from", f"names no phase of this file (its phases "
                       f"are {names})", source, "name an earlier phase exactly as its name "
                       "key spells it")
        if source == phase.name:
            where.fail(f"phases[{i}].carry_from", "names the phase itself: a phase cannot "
                       "carry its own submissions", source, "name an earlier phase, or remove "
                       "carry_from and carry")
    for i, phase in enumerate(phases):
        source = phase.carry_from
        if source is None:
            continue
        key = f"phases[{i}].carry_from"
        chain: list[str] = [phase.name]
        at: str | None = source
        while at is not None and at not in chain:
            chain.append(at)
            at = phases[index[at]].carry_from
        if at is not None:
            cycle = " -> ".join(chain[chain.index(at):] + [at])
            where.fail(key, f"makes a cycle of carries ({cycle}): each phase would wait for "
                       f"the other", source, "carry only from an earlier phase, and remove "
                       "carry_from from the earliest phase of the cycle")
        earlier = phases[index[source]]
        if earlier.closes > phase.opens:
            where.fail(key, f"must name a phase that closes before this one opens: {source!r} "
                       f"closes {earlier.closes.isoformat()}, {phase.name!r} opens "
                       f"{phase.opens.isoformat()}", source, "carry from an earlier phase")


def _references(where: Where, key: str, value: Any, fingerprint: str,
                fold_params: Mapping) -> References:
    """The references a phase names: a path (relative to the file) or a shipped name."""
    if not isinstance(value, str) or not value.strip():
        where.fail(key, "must be the name of shipped references or a path to a references "
                   "JSON file", value, 'write e.g. references = "synthetic-small"')
    candidate = where.path.parent / value
    target = candidate if (candidate.suffix or "/" in value or candidate.exists()) else value
    try:
        refs, problem = load_references(target), None
    except EvalRSError as exc:
        refs, problem = None, str(exc).rstrip(".")
    if refs is None:
        where.fail(key, f"cannot be loaded: {problem}", fix="name shipped references "
                   "(evaluation/challenge/references/) or give a path relative to the "
                   "competition file")
    recorded = refs.dataset.get(FINGERPRINT_KEY)
    if recorded and recorded != fingerprint:
        where.fail(key, f"were computed on other data (dataset fingerprint "
                   f"{cut(recorded, 16)}, the competition's is {fingerprint[:16]}...)",
                   fix="use references computed on the competition's dataset (`python -m "
                       "evaluation references`)")
    recorded = refs.dataset.get(FOLD_PARAMS_KEY)
    if recorded and differences(recorded, fold_params):
        where.fail(key, f"were computed on other folds ({differences(recorded, fold_params)})",
                   fix="use references computed on the competition's folds")
    return refs


def _baselines(where: Where, data: Mapping) -> tuple[BaselineSpec, ...]:
    """The baselines named in the file, their files resolved."""
    raw = data.get("baselines", [])
    if not isinstance(raw, list) or not all(isinstance(b, dict) for b in raw):
        where.fail("baselines", "must be [[baselines]] tables", fix="write one [[baselines]] "
                   "table (name, file) per baseline, or none")
    specs = []
    for i, table in enumerate(raw):
        key = f"baselines[{i}]."
        where.keys(table, key, _BASELINE_KEYS, required=_BASELINE_KEYS)
        name = where.text(table, "name", key)
        file = table["file"]
        if not isinstance(file, str) or not file.strip():
            where.fail(f"{key}file", "must be a path to a submission.json", file)
        resolved = (where.path.parent / file).resolve()
        if not resolved.is_file():
            where.fail(f"{key}file", f"does not exist ({str(resolved)!r})", fix="run "
                       "competition/make_baselines.py, or correct the path (relative to the "
                       "competition file)")
        specs.append(BaselineSpec(name=name, file=resolved))
    names = [s.name for s in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        where.fail("baselines", f"must have distinct names; {dupes[0]!r} appears "
                   f"{names.count(dupes[0])} times", fix="rename one of them")
    return tuple(specs)


def _check_baseline(where: Where, competition: Competition, i: int,
                    spec: BaselineSpec) -> None:
    """Nothing; a failure when a baseline's file is no valid run of this competition."""
    try:
        competition.check_run(spec.load())
        problem = None
    except SubmissionRejected as exc:
        problem = exc.reason
    if problem is not None:
        where.fail(f"baselines[{i}].file", f"({str(spec.file)!r}) is no run the competition "
                   f"accepts: {problem}", fix="regenerate the baselines with "
                   "competition/make_baselines.py (after each change of harness version, "
                   "data or folds)")
