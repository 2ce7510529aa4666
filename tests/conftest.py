"""Fixtures every test folder shares: seeded RNG, the tiny synthetic dataset, per-session
caches, a headless Chromium (``driver``, skipped with the reason when Chromium or its driver
is missing), a local Ray (``local_ray``, shared by consecutive tests, skipped when Ray
is not installed), and the
leaderboard server's (tests/server and tests/reproduce): its example
competition, a throwaway PostgreSQL server (skipped with the reason when none can be started)
and a fresh database, SQLite or PostgreSQL, per test (empty, or at the newest migration as a
copy of one migrated once a session). The real datasets are found by
``tests._shared_data.shared_dataset``."""

from __future__ import annotations

import importlib.util
import itertools
import os
import sys
from pathlib import Path

import numpy as np
import pytest

# The same PostgreSQL set-up as benchmarks/bench_server.py (the repository root is on pythonpath).
from benchmarks._postgres import PostgresUnavailable, start_postgres
from evaluation import ChallengeDataset
from tests._browser import _chromium, driver  # noqa: F401  (fixtures of the page tests)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20221121)


@pytest.fixture(scope="module")
def tiny() -> ChallengeDataset:
    """The synthetic dataset at scale "tiny" (4 folds of 150 test users), one per module."""
    return ChallengeDataset(source="synthetic", scale="tiny")


# scipy.stats, sklearn.metrics and reclist's standard metrics (which import both) are what tests
# check the harness against, never what a run imports: as fixtures, a test process imports them
# when a test asks (~1.5 CPU-s), not while it collects every test module.
@pytest.fixture(scope="session")
def scipy_stats():
    """The ``scipy.stats`` module."""
    return importlib.import_module("scipy.stats")


@pytest.fixture(scope="session")
def scipy_optimize():
    """The ``scipy.optimize`` module."""
    return importlib.import_module("scipy.optimize")


@pytest.fixture(scope="session")
def sklearn_metrics():
    """The ``sklearn.metrics`` module."""
    return importlib.import_module("sklearn.metrics")


@pytest.fixture(scope="session")
def reclist_metrics():
    """reclist's ``reclist.metrics.standard_metrics`` module."""
    return importlib.import_module("reclist.metrics.standard_metrics")


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory):
    """Each test session caches generated/downloaded data in its own temporary directory.

    Set for the whole session, before any fixture runs: the module- and session-scoped ones
    (a shared dataset, a run shared by several tests) use it too; a test that changes either
    variable with ``monkeypatch`` gets the session's value back after it.
    """
    base = tmp_path_factory.getbasetemp()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVALRS_CACHE_DIR", str(base / "evalrs-cache"))
        patch.setenv("RECLIST_META_DATA_FOLDER", str(base / ".reclist"))
        yield


#: The repository's root: Ray's workers import the tests' modules from it.
REPO = Path(__file__).resolve().parents[1]


#: The fixture of the tests that run Ray tasks.
LOCAL_RAY = "local_ray"


@pytest.fixture
def local_ray():
    """A local Ray (2 CPUs, no dashboard); yields the ``ray`` module. Every test that runs Ray
    tasks uses this one: it is started by the first of them and kept while this process's next
    test needs it too, then shut down (``pytest_runtest_teardown`` below): starting Ray costs
    seconds, and a Ray kept to the end of the session costs its daemons' idle CPU all along.

    Its workers import the tests' modules (tasks' functions and models are pickled by
    reference to them): the raylet that starts them is given this repository on
    ``PYTHONPATH``, which this process gets back as it was once Ray is up.
    """
    ray = pytest.importorskip("ray", reason="Ray is an optional extra (make ray)")
    if not ray.is_initialized():
        old = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO)] + ([old] if old else []))
        try:
            ray.init(address="local", num_cpus=2, include_dashboard=False,
                     log_to_driver=False, configure_logging=False)
        finally:
            if old is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = old
    return ray


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After a test with ``local_ray`` (its own fixtures torn down first): Ray is shut down
    unless this process's next test uses it too (so the Ray tests of a module share one)."""
    yield
    if LOCAL_RAY not in getattr(item, "fixturenames", ()):
        return
    if nextitem is not None and LOCAL_RAY in getattr(nextitem, "fixturenames", ()):
        return
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()


# ---------------------------------------------------------------------------- the server's


@pytest.fixture(scope="session")
def competition():
    """The example competition (competition.example.toml), loaded once: a frozen value that the
    tests change only through copies (``dataclasses.replace``).

    It accepts claims (uploads of scores only, ``accept_claims``): the board's mechanics are
    tested with made-up runs, which ``tests.server._helpers.computed`` marks as if a scoring
    job had scored them; the tests of the trust itself (``test_scoring_jobs.py``) use
    predictions and the real scoring job."""
    pytest.importorskip("pydantic")
    from dataclasses import replace

    from evaluation.server.core import load_competition  # the server extra is optional
    from tests.server._helpers import EXAMPLE, without_baseline_values

    # the baselines without their per-user values: the tests upload values of their own users
    return replace(without_baseline_values(load_competition(EXAMPLE)), accept_claims=True)


@pytest.fixture(scope="session")
def postgres_initdb_cache(tmp_path_factory) -> Path:
    """The folder of the one new PostgreSQL cluster that the test session's servers copy
    (``start_postgres``'s ``initdb_cache``): shared by the xdist workers of one run (their
    temporary folders' parent), removed with the run's temporary folders."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "postgres-initdb"


@pytest.fixture(scope="session")
def postgres_url(postgres_initdb_cache):
    """SQLAlchemy URL (``postgresql+psycopg://...``) of an empty database on a real PostgreSQL.

    One server for the whole session, started from the machine's PostgreSQL binaries in a
    temporary directory on 127.0.0.1 and removed at the end; the tests skip with the reason
    (and the tail of PostgreSQL's log) when there are no binaries or it does not start. Its
    cluster is a copy of the run's one (``postgres_initdb_cache``): one ``initdb`` a run, not
    one per worker.
    """
    try:
        server = start_postgres(initdb_cache=postgres_initdb_cache)
    except PostgresUnavailable as exc:
        pytest.skip(f"no PostgreSQL server for this test: {exc}")
    try:
        yield server.url
    finally:
        server.stop()


_DATABASE_NUMBERS = itertools.count(1)


@pytest.fixture
def postgres_database(postgres_url):
    """URL of a new, empty database of its own on the session's PostgreSQL server, dropped after.

    For tests that must not see what other tests stored through ``postgres_url``.
    """
    pytest.importorskip("psycopg")
    yield from _database_of_its_own(postgres_url, template=None)


def _database_of_its_own(postgres_url: str, template: str | None):
    """Create a database named for one test (a copy of ``template``, else empty), yield its
    URL, drop it after."""
    sa = pytest.importorskip("sqlalchemy")
    name = f"test_{next(_DATABASE_NUMBERS)}"
    copy = "" if template is None else f' TEMPLATE "{template}"'
    admin = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"{copy}'))
        yield sa.make_url(postgres_url).set(database=name).render_as_string(hide_password=False)
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    """An empty database: an SQLite file, or a database of its own on a real PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'leaderboard.db'}"
    return request.getfixturevalue("postgres_database")


@pytest.fixture(scope="session")
def postgres_migrated_template(postgres_url):
    """Name of a database on the session's PostgreSQL whose schema is at the newest migration,
    migrated once: the template that ``postgres_migrated_database`` copies (nothing connects
    to it afterwards, as ``CREATE DATABASE ... TEMPLATE`` requires)."""
    sa = pytest.importorskip("sqlalchemy")
    pytest.importorskip("psycopg")
    from evaluation.server.db import make_engine, upgrade  # the server extra is optional

    name = "migrated_template"
    admin = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    finally:
        admin.dispose()
    engine = make_engine(sa.make_url(postgres_url).set(database=name)
                         .render_as_string(hide_password=False))
    try:
        upgrade(engine)
    finally:
        engine.dispose()
    return name


@pytest.fixture
def postgres_migrated_database(postgres_url, postgres_migrated_template):
    """URL of a new database of its own on the session's PostgreSQL, its schema at the newest
    migration (a copy of ``postgres_migrated_template``: the migrations run once a session, not
    once a test), dropped after."""
    yield from _database_of_its_own(postgres_url, template=postgres_migrated_template)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def module_migrated_db_url(request, tmp_path_factory):
    """As ``migrated_db_url``, one database per test module: for a server that the module's
    tests share (tests that leave each other's state alone)."""
    if request.param == "sqlite":
        from tests.server._helpers import migrated_sqlite_url  # the server extra is optional

        yield migrated_sqlite_url(tmp_path_factory.mktemp("module-db"))
        return
    yield from _database_of_its_own(request.getfixturevalue("postgres_url"),
                                    template=request.getfixturevalue("postgres_migrated_template"))


@pytest.fixture(params=["sqlite", "postgresql"])
def migrated_db_url(request, tmp_path):
    """A database of its own whose schema is at the newest migration, as ``upgrade`` leaves an
    empty one: an SQLite file, or a database on a real PostgreSQL. Copies of a database
    migrated once a session, for the tests that open a store or an app (which migrate it
    anyway); the tests of the migrations themselves take ``db_url``."""
    if request.param == "sqlite":
        from tests.server._helpers import migrated_sqlite_url  # the server extra is optional

        return migrated_sqlite_url(tmp_path)
    return request.getfixturevalue("postgres_migrated_database")



@pytest.fixture(scope="module")
def submission_script():
    """``submission.py`` loaded as a module, to call its ``main`` in the test's process (under
    another name: ``submission`` is the model package's)."""
    spec = importlib.util.spec_from_file_location("_submission_script",
                                                  Path(__file__).resolve().parents[1]
                                                  / "submission.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
