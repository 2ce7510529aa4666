"""A throwaway PostgreSQL server for the tests and benchmarks of the leaderboard service.

Starts a real server from the PostgreSQL binaries the machine has (Debian's
``/usr/lib/postgresql/<version>/bin``, the newest version, else ``initdb`` on the PATH) in a
fresh temporary directory, listening on 127.0.0.1 on a free port with a random password, and
removes everything again on :meth:`LocalPostgres.stop`. PostgreSQL refuses to run as root: run
as root, the server runs as the ``postgres`` system user (which Debian's package creates).
Standard library only, so a machine without the server's Python packages can still start it.

The benchmarks import this module; ``tests/server/conftest.py`` imports it too (the repository
root is on pytest's ``pythonpath``), so the tests and the benchmark measure the same server
set-up.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import glob
import os
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

#: Seconds ``pg_ctl`` waits for the server to accept connections (or to stop).
START_TIMEOUT = 60


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server could be started here; the message says why."""


@dataclass
class LocalPostgres:
    """A running throwaway server; :meth:`stop` shuts it down and deletes its files."""

    url: str = field(repr=False)  # holds the password
    port: int
    database: str
    directory: Path
    bin_dir: Path
    _owner: tuple[int, int] | None = field(default=None, repr=False)
    _stopped: bool = field(default=False, repr=False)

    def stop(self) -> None:
        """Stop the server (fast shutdown: open sessions are ended) and remove its directory."""
        if self._stopped:
            return
        self._stopped = True
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            _run(self._owner, [self.bin_dir / "pg_ctl", "-D", self.directory / "data",
                               "-m", "fast", "-w", "-t", str(START_TIMEOUT), "stop"],
                 cwd=self.directory, timeout=START_TIMEOUT + 10)
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> LocalPostgres:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def find_bin_dir() -> Path | None:
    """The directory of the newest ``initdb``/``pg_ctl``/``createdb``, or None when absent."""

    def version(path: str) -> tuple[int, ...]:
        found = re.search(r"/postgresql/([\d.]+)/bin/", path)
        return tuple(int(p) for p in found.group(1).split(".") if p) if found else ()

    for initdb in sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=version,
                         reverse=True):
        if _complete(Path(initdb).parent):
            return Path(initdb).parent
    on_path = shutil.which("initdb")
    if on_path and _complete(Path(on_path).resolve().parent):
        return Path(on_path).resolve().parent
    return None


def start_postgres(database: str = "leaderboard", *,
                   initdb_cache: Path | None = None) -> LocalPostgres:
    """Start a server with one empty database and return it; the caller must ``stop`` it.

    ``initdb_cache``: a folder (made when missing) that keeps one new cluster (``initdb``'s
    files and its password) for the servers started with it, which copy it instead of running
    ``initdb`` each (about a second of CPU); the processes that share it take turns through a
    lock file in it. The caller removes it. Without it, each server runs ``initdb``.

    Raises
    ------
    PostgresUnavailable
        When there are no binaries, no user to run them as, or the server does not start
        (the message then ends with the tail of PostgreSQL's own log).
    """
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise PostgresUnavailable(
            "no PostgreSQL binaries: neither /usr/lib/postgresql/*/bin/initdb nor initdb on "
            "the PATH (Debian: apt-get install postgresql; `make test` does it as root)")
    owner = _owner()
    directory = Path(tempfile.mkdtemp(prefix="evalrs-postgres-"))
    server = None
    try:
        if owner is not None:
            os.chown(directory, *owner)
        server = _init_and_start(bin_dir, directory, owner, database, initdb_cache)
    finally:
        if server is None:
            shutil.rmtree(directory, ignore_errors=True)
    atexit.register(server.stop)  # also when the caller dies before its own stop
    return server


def _complete(bin_dir: Path) -> bool:
    return all(os.access(bin_dir / name, os.X_OK) for name in ("initdb", "pg_ctl", "createdb"))


def _owner() -> tuple[int, int] | None:
    """(uid, gid) to run the server as when this is root (PostgreSQL refuses root), else None."""
    if os.geteuid() != 0:
        return None
    import pwd

    try:
        entry = pwd.getpwnam("postgres")
    except KeyError:
        raise PostgresUnavailable(
            "running as root and there is no 'postgres' user to run PostgreSQL as (PostgreSQL "
            "refuses root; Debian's postgresql package creates that user)") from None
    return entry.pw_uid, entry.pw_gid


def _run(owner: tuple[int, int] | None, argv: list, *, cwd: Path, timeout: float,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    kwargs = {} if owner is None else {"user": owner[0], "group": owner[1], "extra_groups": []}
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, check=True, **kwargs)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: The superuser of the servers (``initdb -U``).
USER = "evalrs"


def _initdb(bin_dir: Path, directory: Path, owner: tuple[int, int] | None) -> str:
    """A new cluster in ``directory / "data"`` (owned by ``owner``); returns its password."""
    password = secrets.token_urlsafe(24)
    pwfile = directory / "password"
    pwfile.write_text(password + "\n")
    if owner is not None:
        os.chown(pwfile, *owner)
    try:
        # --no-sync: initdb skips its one-time flush of the new files; the server itself keeps
        # every default (fsync on, full_page_writes on), so commits are as durable as anywhere.
        _run(owner, [bin_dir / "initdb", "-D", directory / "data", "-U", USER,
                     f"--pwfile={pwfile}", "--auth=scram-sha-256", "-E", "UTF8", "--no-locale",
                     "--no-sync"], cwd=directory, timeout=120, env={**os.environ, "LC_ALL": "C"})
    except subprocess.CalledProcessError as exc:
        raise PostgresUnavailable(f"initdb failed: {_tail(exc.stderr or exc.stdout)}") from None
    finally:
        pwfile.unlink()
    return password


def _copy_of_cached_cluster(bin_dir: Path, directory: Path, owner: tuple[int, int] | None,
                            cache: Path) -> str:
    """``directory / "data"``: a copy of the cluster kept in ``cache`` (made there first when
    it is not yet, by a new cluster in ``directory`` moved there); returns its password."""
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one initdb for all who share the cache
        if not (cache / "data" / "PG_VERSION").exists():
            password = _initdb(bin_dir, directory, owner)
            shutil.rmtree(cache / "data.new", ignore_errors=True)  # left by a failed copy
            # as root, the copy keeps the files' owner (the server's user); mv would too, but
            # the cache may be on another file system
            subprocess.run(["cp", "-a", str(directory / "data"), str(cache / "data.new")],
                           check=True, capture_output=True, timeout=120)
            shutil.rmtree(directory / "data")
            (cache / "password").write_text(password)
            os.replace(cache / "data.new", cache / "data")
    subprocess.run(["cp", "-a", str(cache / "data"), str(directory / "data")], check=True,
                   capture_output=True, timeout=120)
    return (cache / "password").read_text()


def _init_and_start(bin_dir: Path, directory: Path, owner: tuple[int, int] | None,
                    database: str, initdb_cache: Path | None = None) -> LocalPostgres:
    user = USER
    data, log = directory / "data", directory / "postgres.log"
    if initdb_cache is None:
        password = _initdb(bin_dir, directory, owner)
    else:
        password = _copy_of_cached_cluster(bin_dir, directory, owner, initdb_cache)
    env = {**os.environ, "PGPASSWORD": password, "LC_ALL": "C"}
    for attempt in range(3):
        port, seen = _free_port(), log.stat().st_size if log.exists() else 0
        with open(data / "postgresql.conf", "a") as conf:
            # Only the loopback address; the Unix socket in the private temporary directory (the
            # package's default /var/run/postgresql may be missing or not writable). A later
            # line overrides an earlier one, so a retry just appends its new port.
            conf.write(f"\nlisten_addresses = '127.0.0.1'\nport = {port}\n"
                       f"unix_socket_directories = '{directory}'\n")
        try:
            _run(owner, [bin_dir / "pg_ctl", "-D", data, "-l", log, "-w", "-t",
                         str(START_TIMEOUT), "start"], cwd=directory, timeout=START_TIMEOUT + 10,
                 env=env)
            _run(owner, [bin_dir / "createdb", "-h", "127.0.0.1", "-p", str(port), "-U", user,
                         database], cwd=directory, timeout=60, env=env)
            break
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            log_text = log.read_bytes()[seen:].decode(errors="replace") if log.exists() else ""
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                _run(owner, [bin_dir / "pg_ctl", "-D", data, "-m", "immediate", "stop"],
                     cwd=directory, timeout=30)
            if "could not bind" in log_text and attempt < 2:
                continue  # another program took the free port in the meantime: try another
            raise PostgresUnavailable(
                f"PostgreSQL did not start ({Path(str(exc.cmd[0])).name}: "
                f"{_tail(getattr(exc, 'stderr', '') or '')}); its log ends: {_tail(log_text)}"
            ) from None
    url = f"postgresql+psycopg://{user}:{password}@127.0.0.1:{port}/{database}"
    return LocalPostgres(url=url, port=port, database=database, directory=directory,
                         bin_dir=bin_dir, _owner=owner)


def _tail(text: str, lines: int = 15) -> str:
    return " | ".join(line for line in text.strip().splitlines()[-lines:]) or "(empty)"
