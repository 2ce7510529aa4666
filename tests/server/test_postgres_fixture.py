"""The throwaway PostgreSQL server of the server's tests and benchmark (benchmarks/_postgres.py)."""

from __future__ import annotations

import os
import socket
import stat
import tempfile

import pytest

from benchmarks import _postgres
from benchmarks._postgres import PostgresUnavailable, find_bin_dir, start_postgres

sa = pytest.importorskip("sqlalchemy")
pytest.importorskip("psycopg")


def _needs_binaries() -> None:
    if find_bin_dir() is None:
        pytest.skip("no PostgreSQL binaries on this machine (apt-get install postgresql)")


def test_postgres_url_is_a_real_server_on_loopback(postgres_url):
    assert postgres_url.startswith("postgresql+psycopg://")
    engine = sa.create_engine(postgres_url)
    try:
        with engine.begin() as conn:
            assert conn.execute(sa.text("SELECT 40 + 2")).scalar_one() == 42
            assert conn.execute(sa.text("SELECT current_database()")).scalar_one() == "leaderboard"
            # on the loopback address only, durable defaults kept (commits are fsynced)
            assert conn.execute(sa.text("SELECT host(inet_server_addr())")).scalar_one() == (
                "127.0.0.1")
            assert conn.execute(sa.text("SHOW fsync")).scalar_one() == "on"
            assert conn.execute(sa.text("SHOW synchronous_commit")).scalar_one() == "on"
            conn.execute(sa.text("CREATE TEMP TABLE t (x int PRIMARY KEY, s text)"))
            conn.execute(sa.text("INSERT INTO t VALUES (1, 'ä<b>'), (2, 'z')"))
            rows = conn.execute(sa.text("SELECT x, s FROM t ORDER BY x DESC")).all()
        assert [tuple(r) for r in rows] == [(2, "z"), (1, "ä<b>")]
    finally:
        engine.dispose()


def test_postgres_database_is_empty_and_separate(postgres_url, postgres_database):
    assert sa.make_url(postgres_database).database != sa.make_url(postgres_url).database
    own, shared = sa.create_engine(postgres_database), sa.create_engine(postgres_url)
    try:
        with own.begin() as conn:
            assert sa.inspect(conn).get_table_names() == []
            conn.execute(sa.text("CREATE TABLE only_here (x int)"))
        with shared.connect() as conn:
            assert "only_here" not in sa.inspect(conn).get_table_names()
    finally:
        own.dispose()
        shared.dispose()


def test_stop_shuts_the_server_down_and_removes_its_files(postgres_initdb_cache):
    _needs_binaries()
    # a copy of the run's cluster (the session's server made it, or this start does)
    with start_postgres("other", initdb_cache=postgres_initdb_cache) as server:
        directory, port = server.directory, server.port
        assert (directory / "data" / "PG_VERSION").exists()
        assert (postgres_initdb_cache / "data" / "PG_VERSION").exists()
        # the server's files belong to the user it runs as, never root (the copy's too)
        assert os.stat(directory / "data").st_uid != 0
        assert os.stat(directory / "data" / "PG_VERSION").st_uid != 0
        assert str(server.port) in server.url and server.url.endswith("/other")
        assert "password" not in repr(server) and server.url not in repr(server)
        engine = sa.create_engine(server.url)
        try:
            with engine.connect() as conn:
                assert conn.execute(sa.text("SELECT current_database()")).scalar_one() == "other"
        finally:
            engine.dispose()
    assert not directory.exists()
    # the cluster kept for the next servers stays
    assert (postgres_initdb_cache / "data" / "PG_VERSION").exists()
    with socket.socket() as s, pytest.raises(ConnectionRefusedError):
        s.connect(("127.0.0.1", port))


def test_a_server_that_cannot_start_reports_why_with_its_log(monkeypatch):
    # a start of its own, initdb included (the benchmarks' start: no cache)
    _needs_binaries()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        monkeypatch.setattr(_postgres, "_free_port", lambda: taken.getsockname()[1])
        # Only the folders this start makes are watched: another test process may be starting
        # its own server in the shared temporary directory at the same time.
        made: list[str] = []
        real_mkdtemp = tempfile.mkdtemp

        def mkdtemp(*args, **kwargs) -> str:
            made.append(real_mkdtemp(*args, **kwargs))
            return made[-1]

        monkeypatch.setattr(_postgres.tempfile, "mkdtemp", mkdtemp)
        with pytest.raises(PostgresUnavailable) as info:
            start_postgres()
    message = str(info.value)
    assert "PostgreSQL did not start" in message
    assert "could not bind" in message or "Address already in use" in message
    # nothing left behind
    assert made and not any(os.path.exists(path) for path in made)


def test_missing_binaries_are_a_stated_reason(monkeypatch):
    monkeypatch.setattr(_postgres, "find_bin_dir", lambda: None)
    with pytest.raises(PostgresUnavailable, match=r"no PostgreSQL binaries.*initdb"):
        start_postgres()


def test_the_newest_complete_version_is_chosen(tmp_path, monkeypatch):
    def fake(version: str, names=("initdb", "pg_ctl", "createdb")) -> str:
        bin_dir = tmp_path / "postgresql" / version / "bin"
        bin_dir.mkdir(parents=True)
        for name in names:
            (bin_dir / name).write_text("#!/bin/sh\n")
            (bin_dir / name).chmod(stat.S_IRWXU)
        return str(bin_dir / "initdb")

    # 16 lacks createdb; 9.6 sorts after 15 as text but is older
    found = [fake("9.6"), fake("15"), fake("16", names=("initdb", "pg_ctl"))]
    monkeypatch.setattr(_postgres.glob, "glob", lambda pattern: list(found))
    assert find_bin_dir() == tmp_path / "postgresql" / "15" / "bin"
    monkeypatch.setattr(_postgres.glob, "glob", lambda pattern: [])
    monkeypatch.setattr(_postgres.shutil, "which", lambda name: None)
    assert find_bin_dir() is None
