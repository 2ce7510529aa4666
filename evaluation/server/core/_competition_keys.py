"""The checks of single keys of a competition file, each failing with the file, the key, the
rule, the value and the fix; the ``[board]`` settings and the defaults of optional keys."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timezone
from pathlib import Path
from typing import Any, NoReturn

from evaluation.contract import cut
from evaluation.errors import ConfigError

BOARD_KEYS = ("min_difference", "level", "n_boot", "seed", "tie_break")
#: How teams in one tier are ordered: by score (the official order), or by measured cost.
TIE_BREAKS = ("score", "cost")
#: A phase's final selections per team when the competition file does not say.
DEFAULT_FINAL_SELECTIONS = 2
#: Which submissions of a phase get a reproduction job: its final selections (the default),
#: every upload, or none.
REPRODUCE_RULES = ("final", "every", "none")
DEFAULT_REPRODUCE = "final"
#: Runs of a reproduction job (an infrastructure failure or a lost worker ends one) before
#: it is marked failed, when the competition file does not say.
DEFAULT_REPRODUCE_ATTEMPTS = 3
MAX_REPRODUCE_ATTEMPTS = 20
#: Which submissions of the phase named by ``carry_from`` enter a phase when it opens: the
#: final selections (those its private ranking uses), each team's best one, or all.
CARRY_RULES = ("finals", "best", "all")
#: Whether a phase takes a fact sheet (a short description of the method and a link to its
#: code) at final selection: not at all (the default), if the team gives one, or always.
FACT_SHEET_RULES = ("off", "optional", "required")
DEFAULT_FACT_SHEET = "off"


@dataclass(frozen=True)
class BoardSettings:
    """How the board reads the differences between its teams (the ``[board]`` table).

    The official ranking is the board's order by score, whatever these say; they decide
    which differences the board calls real.

    Attributes
    ----------
    min_difference : float
        The minimum practical difference: score differences smaller than it are ties however
        significant (0: every real difference counts).
    level : float
        Joint coverage of the intervals of every pairwise difference: the chance that the
        board tells any two teams apart wrongly is at most ``1 - level``.
    n_boot : int
        Paired bootstrap replicates.
    seed : int
        Seed of the resampling of the test users (the same for every team).
    tie_break : str
        How the teams of one tier are ordered (one of ``TIE_BREAKS``): ``"score"``, the
        official order; ``"cost"``, by measured reproduction time, then peak memory (teams
        without measured costs last in their tier).
    """

    min_difference: float = 0.0
    level: float = 0.95
    n_boot: int = 1000
    seed: int = 0
    tie_break: str = "score"

    def for_phase(self, own: float | None) -> float:
        """The minimum practical difference of a phase whose own is ``own`` (None: it has
        none, the board's counts)."""
        return self.min_difference if own is None else own


class Where:
    """Checks of a competition file's values, failing with the file and key in the message."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, key: str, rule: str, value: Any = None, fix: str = "") -> NoReturn:
        # strings in quotes, as in the file; dates as the file writes them
        text = value.isoformat() if isinstance(value, (date, time)) \
            else json.dumps(value, default=str, ensure_ascii=False)
        shown = "" if value is None else f", got {cut(text, 60)}"
        raise ConfigError(f"competition file {str(self.path)!r}: {key} {rule}{shown}."
                          + (f" Fix: {fix}." if fix else ""))

    def keys(self, table: Mapping, prefix: str, known: tuple[str, ...],
             required: tuple[str, ...]) -> None:
        unknown = [k for k in table if k not in known]
        if unknown:
            self.fail(f"{prefix}{unknown[0]}", "is not a key of the competition file here",
                      fix=f"the keys {'of ' + prefix.rstrip('.') if prefix else 'at the top'} "
                          f"are {', '.join(known)}: correct the spelling or remove it")
        for k in required:
            if k not in table:
                self.fail(f"{prefix}{k}", "is missing", fix=f"add {k} = ... (see the example "
                          f"competition.toml)")

    def text(self, table: Mapping, key: str, prefix: str = "") -> str:
        value = table[key]
        if not isinstance(value, str) or not value.strip() or len(value) > 200:
            self.fail(f"{prefix}{key}", "must be a non-empty string of at most 200 characters",
                      value, f'write {key} = "..."')
        return value

    def list_of_text(self, table: Mapping, key: str) -> list[str]:
        value = table[key]
        if not isinstance(value, list) or not value \
                or not all(isinstance(v, str) and v.strip() for v in value):
            self.fail(key, "must be a non-empty list of version strings", value,
                      f'write {key} = ["0.1.0"] (evaluation.__version__ of the harness the '
                      f'participants use)')
        return value

    def table(self, table: Mapping, key: str, prefix: str = "") -> dict:
        value = table[key]
        if not isinstance(value, dict):
            self.fail(f"{prefix}{key}", "must be a table", value,
                      f"write it as [{prefix}{key}] with keys under it")
        return value

    def json_values(self, value: Any, key: str) -> None:
        """Nothing; a failure when ``value`` holds what JSON cannot (dates, non-finite)."""
        if isinstance(value, dict):
            for k, v in value.items():
                self.json_values(v, f"{key}.{k}")
        elif isinstance(value, list):
            for i, v in enumerate(value):
                self.json_values(v, f"{key}[{i}]")
        elif isinstance(value, float) and not math.isfinite(value) \
                or isinstance(value, (date, time)):
            self.fail(key, "must be a string, number, boolean, array or table, as in the "
                      "run's results.json", value, "copy the value from a run's results.json")


#: The most test users a fold may state (``dataset.fold_users``).
MAX_FOLD_USERS = 10_000_000


def public_fold_users(where: Where, dataset: Mapping) -> tuple[int, ...] | None:
    """``dataset.fold_users`` (each public fold's test users), checked; None when left out."""
    value = dataset.get("fold_users")
    if value is None:
        return None
    folds = dataset.get("fold_params", {}).get("num_folds") \
        if isinstance(dataset.get("fold_params"), dict) else None
    if not isinstance(value, list) or not value or not all(
            isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= MAX_FOLD_USERS
            for n in value):
        where.fail("dataset.fold_users", f"must be a non-empty list of integers from 1 to "
                   f"{MAX_FOLD_USERS} (each public fold's test users)", value,
                   "copy each fold's n_users from a run's results.json, fold 0 first, or "
                   "leave the key out")
    if isinstance(folds, int) and len(value) != folds:
        where.fail("dataset.fold_users", f"must name one size per fold: fold_params has "
                   f"num_folds = {folds}", value, "copy each fold's n_users from a run's "
                   "results.json")
    return tuple(value)


def final_selections(where: Where, table: Mapping, key: str) -> int:
    """A phase's ``final_selections`` (default ``DEFAULT_FINAL_SELECTIONS``), checked."""
    count = table.get("final_selections", DEFAULT_FINAL_SELECTIONS)
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= 100:
        where.fail(f"{key}final_selections", "must be an integer from 1 to 100 (the "
                   "submissions a team may mark as final)", count,
                   "write e.g. final_selections = 2")
    return count


def reproduce_rule(where: Where, table: Mapping, key: str) -> str:
    """A phase's ``reproduce`` rule (default ``DEFAULT_REPRODUCE``), checked."""
    rule = table.get("reproduce", DEFAULT_REPRODUCE)
    if rule not in REPRODUCE_RULES:
        where.fail(f"{key}reproduce", f"must be one of {', '.join(map(repr, REPRODUCE_RULES))} "
                   f"(which submissions the reproduction workers re-run)", rule,
                   'write reproduce = "final" (the final selections), "every" (every upload) '
                   'or "none"')
    return rule


def private_folds(where: Where, table: Mapping, key: str) -> bool:
    """A phase's ``private_folds`` (default: the phase is not public), checked."""
    value = table.get("private_folds", table.get("public") is False)
    if not isinstance(value, bool):
        where.fail(f"{key}private_folds", "must be true or false (whether the phase's "
                   "reproductions evaluate the private folds too)", value,
                   "write private_folds = true, or leave it out (true when public = false)")
    return value


def carry_rule(where: Where, table: Mapping, key: str) -> tuple[str | None, str | None]:
    """A phase's ``carry_from`` and ``carry`` (both None when it carries nothing), checked one
    by one; whether ``carry_from`` names another, earlier phase is checked with all phases."""
    source, rule = table.get("carry_from"), table.get("carry")
    if source is None and rule is None:
        return None, None
    if source is None:
        where.fail(f"{key}carry", "needs carry_from (the phase whose submissions are carried)",
                   rule, 'add carry_from = "<an earlier phase>", or remove carry')
    if not isinstance(source, str) or not source.strip():
        where.fail(f"{key}carry_from", "must be the name of an earlier phase of this file",
                   source, 'write e.g. carry_from = "public"')
    if rule is None:
        where.fail(f"{key}carry", "is missing: carry_from needs it", fix=f"add carry = "
                   f"{' | '.join(map(repr, CARRY_RULES))} (which submissions of {source!r} "
                   f"enter the phase when it opens)")
    if rule not in CARRY_RULES:
        where.fail(f"{key}carry", f"must be one of {', '.join(map(repr, CARRY_RULES))} (the "
                   f"final selections, each team's best submission, or all of them)", rule,
                   'write e.g. carry = "finals"')
    return source, rule


def fact_sheet_rule(where: Where, table: Mapping, key: str) -> str:
    """A phase's ``fact_sheet`` (default ``DEFAULT_FACT_SHEET``), checked."""
    rule = table.get("fact_sheet", DEFAULT_FACT_SHEET)
    if rule not in FACT_SHEET_RULES:
        where.fail(f"{key}fact_sheet", f"must be one of {', '.join(map(repr, FACT_SHEET_RULES))}"
                   f" (whether a final selection takes a description of the method and a link "
                   f"to its code)", rule, 'write fact_sheet = "required", "optional" or "off"')
    return rule


def reproduce_attempts(where: Where, data: Mapping) -> int:
    """The competition's ``reproduce_attempts`` (default ``DEFAULT_REPRODUCE_ATTEMPTS``)."""
    count = data.get("reproduce_attempts", DEFAULT_REPRODUCE_ATTEMPTS)
    if not isinstance(count, int) or isinstance(count, bool) \
            or not 1 <= count <= MAX_REPRODUCE_ATTEMPTS:
        where.fail("reproduce_attempts", f"must be an integer from 1 to "
                   f"{MAX_REPRODUCE_ATTEMPTS} (runs of a reproduction job before it is "
                   f"marked failed)", count, "write e.g. reproduce_attempts = 3")
    return count


def count_refused(where: Where, data: Mapping) -> bool:
    """The competition's ``count_refused`` (default true): whether a submission refused for
    the team's own reason (its scoring job found the predictions invalid, or on other data)
    counts against the team's daily limit. True by default: a refused upload still took a
    worker's time, and a team must not be able to probe the scorer past its daily limit
    with uploads it knows to be refused; a submission that failed for the platform's reason
    never counts, whatever this key says."""
    value = data.get("count_refused", True)
    if not isinstance(value, bool):
        where.fail("count_refused", "must be true or false (whether a submission refused for "
                   "the team's own reason, e.g. invalid predictions, counts against its daily "
                   "limit)", value,
                   "write count_refused = false to give such submissions back, or leave it out "
                   "to count them")
    return value


def min_difference_of(where: Where, table: Mapping, key: str) -> float:
    """A ``min_difference`` (in ``[board]`` or a phase), checked: a finite number >= 0."""
    value = table["min_difference"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value < 0:
        where.fail(f"{key}min_difference", "must be a number >= 0 (score differences below "
                   "it are ties)", value, "write e.g. min_difference = 0.005, or 0 to count "
                   "every real difference")
    return float(value)


def board_settings(where: Where, data: Mapping) -> BoardSettings:
    """The ``[board]`` table, checked (its keys may each be left out)."""
    if "board" not in data:
        return BoardSettings()
    table = where.table(data, "board")
    where.keys(table, "board.", BOARD_KEYS, required=())
    defaults = BoardSettings()
    level = table.get("level", defaults.level)
    if isinstance(level, bool) or not isinstance(level, (int, float)) \
            or not 0.5 <= level < 1:
        where.fail("board.level", "must be a number from 0.5 up to (not including) 1 (the "
                   "chance of no wrong call on the whole board)", level,
                   "write e.g. level = 0.95")
    n_boot = table.get("n_boot", defaults.n_boot)
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or not 100 <= n_boot <= 10000:
        where.fail("board.n_boot", "must be an integer from 100 to 10000 (paired bootstrap "
                   "replicates; each costs memory per fold and time per team)", n_boot,
                   "write e.g. n_boot = 1000")
    seed = table.get("seed", defaults.seed)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        where.fail("board.seed", "must be an integer >= 0", seed, "write e.g. seed = 0")
    tie_break = table.get("tie_break", defaults.tie_break)
    if tie_break not in TIE_BREAKS:
        where.fail("board.tie_break", "must be \"score\" (teams in one tier in the order of "
                   "their scores) or \"cost\" (in the order of their measured costs)",
                   tie_break, 'write e.g. tie_break = "cost"')
    min_difference = (min_difference_of(where, table, "board.") if "min_difference" in table
                      else defaults.min_difference)
    return BoardSettings(min_difference=min_difference, level=float(level), n_boot=n_boot,
                         seed=seed, tie_break=tie_break)


def when(where: Where, table: Mapping, key: str, name: str) -> datetime:
    """The aware UTC datetime of ``table[name]``."""
    value = table[name]
    if not isinstance(value, datetime) or value.tzinfo is None:
        where.fail(f"{key}{name}", "must be a TOML offset date-time", value,
                   f"write e.g. {name} = 2026-01-01T00:00:00Z (Z = UTC, or an offset like "
                   f"+02:00)")
    return value.astimezone(timezone.utc)


#: The kinds of declared alternative protocol (``[[robustness.protocols]]``): leave-one-out
#: folds drawn with another fold seed, or one global time cut (train before it, test each
#: user's first interaction at or after it), or the official folds scored with sampled
#: negatives and a Krichene-Rendle correction.
ROBUSTNESS_KINDS = ("fold_seed", "global_time", "sampled")
ROBUSTNESS_KEYS = ("protocols",)
ROBUSTNESS_PROTOCOL_KEYS = ("name", "kind", "seed", "cut", "private", "n_negatives",
                            "correction", "metric")
#: ``sampled``: the parameters a protocol of that kind takes, and their defaults (the
#: metric's cutoff, when it names none, is the run's ``k``).
SAMPLED_KEYS = ("seed", "n_negatives", "correction", "metric")
SAMPLED_DEFAULTS = {"seed": 42, "n_negatives": 100, "correction": "rank", "metric": "ndcg"}
#: ``sampled``: the most negatives per test user (each is one more score per user that the
#: model computes and the sandbox sends back), the corrections and the metrics.
MAX_SAMPLED_NEGATIVES = 1000
SAMPLED_CORRECTIONS = ("rank", "bv")
SAMPLED_METRICS = ("hit_rate", "ndcg")
#: ``sampled``: the largest cutoff a metric may name.
MAX_SAMPLED_CUTOFF = 1000
#: The most alternatives a competition may declare (each is one more run of every reproduced
#: model).
MAX_ROBUSTNESS_PROTOCOLS = 8
_PROTOCOL_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                 "0123456789_.-")


@dataclass(frozen=True)
class RobustnessProtocol:
    """One declared alternative protocol: the reproduction workers also run every reproduced
    model under it, and the board compares its ranking with the official one.

    Attributes
    ----------
    name : str
        Its name on the board (letters, digits, ``_ . -``; at most 64).
    kind : {"fold_seed", "global_time", "sampled"}
    seed : int or None
        ``fold_seed``: the fold seed of its leave-one-out folds (not the official one);
        ``sampled``: the seed of the negatives' sampler.
    cut : datetime or None
        ``global_time``: the cut (aware UTC): events before it train, each user's first event
        at or after it is the user's test target.
    private : bool
        Its results are shown only once the phase's private scores are revealed (e.g. a
        fold seed the organizers keep to themselves).
    n_negatives : int or None
        ``sampled``: the negatives drawn for each test user (1 to ``MAX_SAMPLED_NEGATIVES``).
    correction : {"rank", "bv"} or None
        ``sampled``: the Krichene-Rendle estimator of the full-ranking metric.
    metric : str or None
        ``sampled``: ``"hit_rate"`` or ``"ndcg"``, with ``"@K"`` for a cutoff other than
        the run's ``k``.
    """

    name: str
    kind: str
    seed: int | None = None
    cut: datetime | None = None
    private: bool = False
    n_negatives: int | None = None
    correction: str | None = None
    metric: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The protocol as a reproduction worker receives it (plain JSON values)."""
        out: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.seed is not None:
            out["seed"] = self.seed
        if self.cut is not None:
            out["cut"] = self.cut.isoformat().replace("+00:00", "Z")
        for key in ("n_negatives", "correction", "metric"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


def robustness_protocols(where: Where, data: Mapping, official_seed: Any
                         ) -> tuple[RobustnessProtocol, ...]:
    """The ``[robustness]`` table's declared protocols, checked (none when it is left out).

    ``official_seed`` is ``dataset.fold_params.seed``: a ``fold_seed`` protocol with that
    seed would be the official protocol again.
    """
    if "robustness" not in data:
        return ()
    table = where.table(data, "robustness")
    where.keys(table, "robustness.", ROBUSTNESS_KEYS, required=("protocols",))
    entries = table["protocols"]
    if not isinstance(entries, list) or not entries \
            or len(entries) > MAX_ROBUSTNESS_PROTOCOLS:
        where.fail("robustness.protocols", f"must be a list of 1 to "
                   f"{MAX_ROBUSTNESS_PROTOCOLS} tables (the alternative protocols)",
                   None if isinstance(entries, list) and entries else entries,
                   'write one [[robustness.protocols]] table per alternative, e.g. name = '
                   '"seed-7", kind = "fold_seed", seed = 7')
    protocols: list[RobustnessProtocol] = []
    for i, entry in enumerate(entries):
        key = f"robustness.protocols[{i}]."
        if not isinstance(entry, dict):
            where.fail(key.rstrip("."), "must be a table", entry,
                       "write it as [[robustness.protocols]] with keys under it")
        where.keys(entry, key, ROBUSTNESS_PROTOCOL_KEYS, required=("name", "kind"))
        protocols.append(_protocol(where, entry, key, official_seed))
        names = [p.name for p in protocols]
        if names.count(names[-1]) > 1:
            where.fail(f"{key}name", "must differ from the other protocols' names",
                       names[-1], "give each alternative its own name")
    return tuple(protocols)


def _protocol(where: Where, entry: Mapping, key: str, official_seed: Any
              ) -> RobustnessProtocol:
    """One ``[[robustness.protocols]]`` table, checked."""
    name = entry["name"]
    if not isinstance(name, str) or not 1 <= len(name) <= 64 \
            or not set(name) <= _PROTOCOL_NAME_CHARS:
        where.fail(f"{key}name", "must be 1 to 64 letters, digits, '_', '.' or '-' (the "
                   "protocol's name on the board)", name, 'write e.g. name = "temporal-2021"')
    kind = entry["kind"]
    if kind not in ROBUSTNESS_KINDS:
        where.fail(f"{key}kind", f"must be one of {', '.join(map(repr, ROBUSTNESS_KINDS))}",
                   kind, 'write kind = "fold_seed" (leave-one-out with another fold seed), '
                   'kind = "global_time" (one time cut for every user) or kind = "sampled" '
                   '(sampled negatives with a correction)')
    private = entry.get("private", False)
    if not isinstance(private, bool):
        where.fail(f"{key}private", "must be true or false (whether the protocol's results "
                   "wait for the phase's reveal)", private,
                   "write private = true, or leave it out")
    if kind == "sampled":
        return _sampled_protocol(where, entry, key, name, private)
    for sampled_key in SAMPLED_KEYS[1:]:
        if sampled_key in entry:
            where.fail(f"{key}{sampled_key}", f"is not a parameter of kind {kind!r}",
                       entry[sampled_key], "remove it (only kind 'sampled' takes it)")
    needed, other = ("seed", "cut") if kind == "fold_seed" else ("cut", "seed")
    if other in entry:
        where.fail(f"{key}{other}", f"is not a parameter of kind {kind!r}", entry[other],
                   f"remove it (kind {kind!r} takes {needed})")
    if needed not in entry:
        where.fail(f"{key}{needed}", f"is missing (kind {kind!r} needs it)",
                   fix="add seed = 7 (another fold seed than the official one)"
                   if needed == "seed" else "add cut = 2021-06-01T00:00:00Z")
    if kind == "fold_seed":
        seed = entry["seed"]
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31:
            where.fail(f"{key}seed", "must be an integer from 0 to 2**31 - 1 (a fold seed)",
                       seed, "write e.g. seed = 7")
        if seed == official_seed:
            where.fail(f"{key}seed", "must differ from dataset.fold_params.seed (that is the "
                       "official protocol)", seed, "choose another fold seed")
        return RobustnessProtocol(name=name, kind=kind, seed=seed, private=private)
    return RobustnessProtocol(name=name, kind=kind, cut=when(where, entry, key, "cut"),
                              private=private)


def _sampled_protocol(where: Where, entry: Mapping, key: str, name: str, private: bool
                      ) -> RobustnessProtocol:
    """A ``kind = "sampled"`` protocol's parameters, checked (defaults where left out)."""
    if "cut" in entry:
        where.fail(f"{key}cut", "is not a parameter of kind 'sampled'", entry["cut"],
                   f"remove it (kind 'sampled' takes {', '.join(SAMPLED_KEYS)})")
    found = {k: entry.get(k, SAMPLED_DEFAULTS[k]) for k in SAMPLED_KEYS}
    seed = found["seed"]
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31:
        where.fail(f"{key}seed", "must be an integer from 0 to 2**31 - 1 (the seed of the "
                   "negatives' sampler)", seed, "write e.g. seed = 7, or leave it out (42)")
    n_negatives = found["n_negatives"]
    if isinstance(n_negatives, bool) or not isinstance(n_negatives, int) \
            or not 1 <= n_negatives <= MAX_SAMPLED_NEGATIVES:
        where.fail(f"{key}n_negatives", f"must be an integer from 1 to "
                   f"{MAX_SAMPLED_NEGATIVES} (negatives drawn per test user)", n_negatives,
                   "write e.g. n_negatives = 100")
    correction = found["correction"]
    if correction not in SAMPLED_CORRECTIONS:
        where.fail(f"{key}correction", f"must be one of "
                   f"{', '.join(map(repr, SAMPLED_CORRECTIONS))} (the Krichene-Rendle "
                   f"estimator of the full-ranking metric)", correction,
                   'write correction = "rank" (the unbiased rank estimate) or correction = '
                   '"bv" (bias-variance; slower on a large catalog)')
    metric = found["metric"]
    base, _, cutoff = str(metric).partition("@")
    if not isinstance(metric, str) or base not in SAMPLED_METRICS or (
            "@" in metric and not (cutoff.isdigit() and cutoff.isascii()
                                   and 1 <= int(cutoff) <= MAX_SAMPLED_CUTOFF)):
        where.fail(f"{key}metric", f"must be {' or '.join(map(repr, SAMPLED_METRICS))}, "
                   f"optionally with a cutoff @1 to @{MAX_SAMPLED_CUTOFF} (else the run's k)",
                   metric, 'write e.g. metric = "ndcg" or metric = "hit_rate@10"')
    return RobustnessProtocol(name=name, kind="sampled", seed=seed, private=private,
                              n_negatives=n_negatives, correction=correction, metric=metric)
