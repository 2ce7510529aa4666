"""What the server's tests share: the example competition and runs, a clock, databases,
the command line, competition files and reproduction reports."""

from __future__ import annotations

import atexit
import copy
import dataclasses
import functools
import json
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import sqlalchemy as sa

from evaluation.challenge import LEADERBOARD_TESTS, aggregate
from evaluation.cli import main
from evaluation.server.core import BoardSettings, load_competition
from evaluation.server.db import (
    Database,
    SubmissionRow,
    UserValuesRow,
    add_team,
    make_engine,
    sqlite_path,
    upgrade,
)
from evaluation.server.store import (
    ComparedUsers,
    FoldCost,
    UserValues,
    pin_baselines,
    record_reproduction,
    submit,
)
from tests._stats_reference import fold_users

SIZES = (60, 70)


@dataclass
class FakeSource:
    """Per-user values by submission id; counts what it was asked."""

    by_id: dict[int, UserValues] = field(default_factory=dict)
    asked: list[list[int]] = field(default_factory=list)
    listed: int = 0

    def versions(self, phase, ids, private):
        self.listed += 1
        return {i: self.by_id[i].trusted for i in ids if i in self.by_id}

    def values(self, phase, ids, private):
        self.asked.append(sorted(ids))
        return {i: self.by_id[i] for i in ids if i in self.by_id}

    def users(self, phase, private):
        """The users of the first trusted values (by submission id), as the store's first
        trusted row fixes them."""
        first = next((i for i in sorted(self.by_id) if self.by_id[i].trusted), None)
        if first is None:
            return None
        found = self.by_id[first]
        return ComparedUsers(users_sha256=tuple(found.user_hashes),
                             fold_sizes=tuple(len(f) for f in found.folds), submission_id=first)


def synthetic(rng, skill: float, trusted: bool = True, sizes=SIZES,
              hashes=("a", "b")) -> UserValues:
    codes = np.random.default_rng(5)  # the users' groups: the same for every team
    shared = [{t: codes.integers(-2, 3, n).astype(np.int32) for t in
               ("MRED_COUNTRY", "MRED_USER_ACTIVITY", "MRED_TRACK_POPULARITY",
                "MRED_ARTIST_POPULARITY", "MRED_GENDER")} for n in sizes]
    folds = [fold_users(rng, n, skill, c) for n, c in zip(sizes, shared)]
    costs = [FoldCost(10.0 + i, 2.0, 512.0) for i in range(len(sizes))]
    return UserValues(folds=folds, user_hashes=list(hashes), trusted=trusted,
                      labels=[{} for _ in folds], costs=costs, costs_trusted=trusted)


def trust_values(store, submission_id: int, document: dict) -> None:
    """Make the per-user values of ``document`` (the upload stored as ``submission_id``)
    trusted by the store's own trusted path: the organizers' reproduction of its public folds,
    every fold test reproduced, sends the same values. The tests' one way to give a board
    organizer-computed values (the statistics read no others)."""
    table = [{"test": t, "fold": i, "uploaded": v, "reproduced": v, "difference": 0.0,
              "within": True}
             for i, tests in enumerate(fold_tests(document)) for t, v in tests.items()]
    body = {"verdict": "reproduced", "private": False, "table": table, "log_tail": "",
            "fingerprint_matches": True, "harness_version": "0.1.0",
            "user_values": document["user_values"]}
    record_reproduction(store, submission_id, json.dumps(body).encode())
    with store.engine.begin() as conn:  # the organizers computed it: a ranked row, no claim
        conn.execute(sa.update(SubmissionRow).values(computed=True)
                     .where(SubmissionRow.id == submission_id))


def example_competition():
    """The example competition, accepting claims (the tests upload made-up runs; see
    ``computed``)."""
    return replace(load_competition(EXAMPLE), accept_claims=True)


def claims_competition_file(folder: Path) -> Path:
    """The example competition file, accepting claims, its baselines by absolute path: for a
    ``serve`` of made-up runs. Returns the file (in ``folder``)."""
    text = EXAMPLE.read_text()
    for name in ("popularity", "random"):
        text = text.replace(f'"competition/baselines/{name}.json"',
                            json.dumps(str(REPO / "competition" / "baselines" / f"{name}.json")))
    path = folder / "competition-claims.toml"
    path.write_text("accept_claims = true\n" + text)
    return path


def standings_competition():
    competition = without_baseline_values(example_competition())
    return replace(competition, board=BoardSettings(n_boot=200, seed=3, min_difference=0.0))


def submit_teams(store, names_scales):
    ids = {}
    for name, scale in names_scales:
        team, _ = add_team(store, name, f"{len(ids)}@example.org")
        ids[name] = submit(store, team.id, encode(variant(f"run-{len(ids)}", scale))).submission_id
    computed(store, *ids.values())  # as the scoring jobs would
    return ids


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    """Run ``python -m evaluation ARGV`` in process; returns (exit status, stdout, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


UTC = timezone.utc


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(value)


def toml_text(doc: dict) -> str:
    """A TOML document: plain keys, then tables, then arrays of tables (values inline)."""
    lines = [f"{k} = {toml_value(v)}" for k, v in doc.items()
             if not isinstance(v, dict) and not (isinstance(v, list) and v
                                                 and isinstance(v[0], dict))]
    for k, v in doc.items():
        if isinstance(v, dict):
            lines += [f"[{k}]"] + [f"{kk} = {toml_value(vv)}" for kk, vv in v.items()]
    for k, v in doc.items():
        if isinstance(v, list) and v and isinstance(v[0], dict):
            for table in v:
                lines += [f"[[{k}]]"] + [f"{kk} = {toml_value(vv)}" for kk, vv in table.items()]
    return "\n".join(lines) + "\n"


def phase(name, opens, closes, **extra) -> dict:
    return {"name": name, "opens": opens, "closes": closes, "references": "synthetic-small",
            "daily_limit": 3, "public": True, **extra}


JAN = datetime(2030, 1, 1, tzinfo=UTC)


def document(example) -> dict:
    """A valid competition document (without baselines: fast to load); it accepts claims, as
    the tests of the board's mechanics upload made-up runs."""
    return {
        "name": "Test competition",
        "accept_claims": True,
        "source": "synthetic:small",
        "harness_versions": list(example.harness_versions),
        "dataset": {"fingerprint": example.dataset_fingerprint,
                    "fold_params": dict(example.fold_params)},
        "phases": [phase("warmup", JAN, JAN + timedelta(days=10)),
                   phase("main", JAN + timedelta(days=20), JAN + timedelta(days=30))],
    }


def write(tmp_path: Path, doc: dict | str, name: str = "competition.toml") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else toml_text(doc), encoding="utf-8")
    return path


def with_phases(competition, **changes):
    """``competition`` with every phase changed by ``changes`` (e.g. reproduce="every")."""
    return dataclasses.replace(competition, phases=tuple(
        dataclasses.replace(p, **changes) for p in competition.phases))


def private_folds(document: dict, hit: float, mrr: float) -> list[dict]:
    """The run's per-fold tests with HIT_RATE and MRR scaled: the model on other folds."""
    folds = copy.deepcopy(fold_tests(document))
    for f in folds:
        f["HIT_RATE"] *= hit
        f["MRR"] *= mrr
    return folds


def private_report(folds: list[dict]) -> dict:
    return {"verdict": "reproduced", "private": True, "table": [], "log_tail": "",
            "fingerprint_matches": True, "private_fold_tests": folds}


REPO = Path(__file__).resolve().parents[2]


EXAMPLE = REPO / "competition.toml"


#: The newest migration: what a fresh or upgraded database says it is at.
HEAD_REVISION = "0014"


BASELINES = REPO / "competition" / "baselines"


@functools.cache
def _baseline_without_values(file: Path) -> Path:
    """A copy of the baseline run ``file`` without its per-user values (removed at exit)."""
    folder = Path(tempfile.mkdtemp(prefix="evalrs-baseline-"))
    atexit.register(shutil.rmtree, folder, True)
    document = json.loads(file.read_text(encoding="utf-8"))
    document.pop("user_values", None)
    copied = folder / file.name
    copied.write_text(json.dumps(document), encoding="utf-8")
    return copied


def without_baseline_values(competition):
    """``competition`` with baselines that carry no per-user values. The tests upload per-user
    values of synthetic test users, which the server refuses next to a run of the same hash
    whose values are of other users (the baselines' are of the real folds' users)."""
    specs = tuple(replace(spec, file=_baseline_without_values(spec.file))
                  for spec in competition.baselines)
    return replace(competition, baselines=specs)


#: Inside the example's public phase (2026-01-01 to 2028-01-01), at noon UTC.
NOON = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)


class Clock:
    """A clock the test moves: ``clock()`` is the time, ``clock.now`` sets it."""

    def __init__(self, now: datetime = NOON) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def baseline_document(name: str = "popularity") -> dict:
    """A baseline file of the example competition: a valid submission for any team."""
    return json.loads((BASELINES / f"{name}.json").read_text())


@functools.cache
def _baseline_run() -> dict:
    """The Popularity baseline's file read once a process, less its per-user values: what
    ``variant`` copies (never changed itself)."""
    document = baseline_document()
    document.pop("user_values", None)
    return document


def fold_tests(document: dict) -> list[dict]:
    folds = sorted(document["results"]["folds"], key=lambda f: f["fold"])
    return [{t: f["tests"][t] for t in LEADERBOARD_TESTS} for f in folds]


def variant(run_id: str, scale: float = 1.0, references=None, base: dict | None = None) -> dict:
    """Another valid run: the baseline with ``run_id`` and every fold's HIT_RATE times
    ``scale``; its claimed scores are the harness's (``aggregate``) when ``references`` are
    given, else removed (a claim of None claims nothing)."""
    # the changed hit rates no longer add up from the baseline's per-user values: a run
    # without them (as runs before they were uploaded); they are left out before the copy,
    # which is most of the file
    doc = copy.deepcopy({key: value for key, value in (base or _baseline_run()).items()
                         if key != "user_values"})
    doc["run_id"] = doc["results"]["run_id"] = run_id
    for fold in doc["results"]["folds"]:
        fold["tests"]["HIT_RATE"] = min(1.0, fold["tests"]["HIT_RATE"] * scale)
    results = doc["results"]
    if references is None:
        doc["leaderboard_score"] = None
        for key in ("leaderboard_score", "phase1_score", "phase2_score"):
            results[key] = None
        for key in ("phase1_score", "phase2_score"):
            results["aggregate"].pop(key, None)
    else:
        agg = aggregate(fold_tests(doc), references)
        doc["leaderboard_score"] = results["leaderboard_score"] = agg["phase2_score"]
        results["phase2_score"] = results["aggregate"]["phase2_score"] = agg["phase2_score"]
        results["phase1_score"] = results["aggregate"]["phase1_score"] = agg["phase1_score"]
    return doc


def computed(store, *submission_ids: int) -> None:
    """Mark submissions (every one of the store's when none is named) as scored by the
    organizers, their uploaded per-user values as the scoring job's: what a scoring job does
    to a predictions upload. For the tests of the board's mechanics, whose runs are made up
    (claims); the tests of the trust itself (``test_scoring_jobs.py``) upload predictions and
    run the real scoring job."""
    rows = sa.update(SubmissionRow).values(computed=True)
    values = sa.update(UserValuesRow).values(trusted=True, source="scored").where(
        UserValuesRow.source == "upload")
    if submission_ids:
        rows = rows.where(SubmissionRow.id.in_(submission_ids))
        values = values.where(UserValuesRow.submission_id.in_(submission_ids))
    with store.engine.begin() as conn:
        conn.execute(rows)
        conn.execute(values)


def encode(document: dict) -> bytes:
    return json.dumps(document).encode("utf-8")


def sqlite_url(folder: Path) -> str:
    return f"sqlite:///{folder / 'leaderboard.db'}"


@functools.cache
def _migrated_sqlite_file() -> Path:
    """An SQLite database at the newest migration, migrated once per test process (removed at
    exit): the original of ``migrated_sqlite_url``'s copies."""
    folder = Path(tempfile.mkdtemp(prefix="evalrs-migrated-"))
    atexit.register(shutil.rmtree, folder, True)
    path = folder / "leaderboard.db"
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    # the last connection closed checkpoints the write-ahead log into the file and removes the
    # log: the file alone is the whole database
    engine.dispose()
    assert not path.with_name(path.name + "-wal").exists(), "the migrated database kept its log"
    return path


def migrated_sqlite_url(folder: Path, name: str = "leaderboard.db") -> str:
    """URL of the SQLite database ``folder/name``; when there is none yet, it is made with its
    schema at the newest migration, as ``upgrade`` leaves an empty one: a copy of one database
    migrated once per test process. Running the migrations costs ~0.1 s of CPU a database,
    and hundreds of tests open one; the tests of the migrations themselves start from an
    empty file (``sqlite_url``). An existing file is left as it is (a restart opens it again)."""
    path = folder / name
    if not path.exists():
        shutil.copyfile(_migrated_sqlite_file(), path)
    return f"sqlite:///{path}"


def open_store(url: str, competition, clock=None, pin: bool = True) -> Database:
    """The store of the database ``url``, its schema migrated (and the baselines pinned
    unless ``pin`` is False). A new SQLite file starts as a copy of a migrated database
    (``migrated_sqlite_url``): the same schema, without running the migrations again."""
    path = sqlite_path(url)
    if path is not None and path.name != ":memory:" and not path.exists() \
            and path.parent.is_dir():
        migrated_sqlite_url(path.parent, path.name)
    engine = make_engine(url)
    upgrade(engine)
    store = Database(engine, competition, clock or Clock())
    if pin:
        pin_baselines(store)
    return store
