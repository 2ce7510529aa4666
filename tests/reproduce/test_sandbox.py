"""The bubblewrap sandbox of ``reproduce``: each attack of a hostile participant's code, tried
for real inside it, does no harm, and the budgets hold for the whole process tree.

These tests need bubblewrap (``make test`` installs Debian's package when it runs as root);
without it they skip and say why.
"""

from __future__ import annotations

import os
import socket
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from evaluation.errors import ConfigError
from evaluation.reproduce import _sandbox
from evaluation.reproduce._budgets import Budgets
from evaluation.reproduce._sandbox import Bind, run_sandboxed, sandbox_problem

PROBLEM = sandbox_problem()
needs_sandbox = pytest.mark.skipif(PROBLEM is not None, reason=f"no sandbox: {PROBLEM}")
ENV = {"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}


def _python(tmp_path: Path, code: str, *, budgets: Budgets | None = None,
            binds: tuple[Bind, ...] = (), result: bool = False, **options):
    """Run ``code`` with this test's interpreter in the sandbox; the report and the log."""
    script = tmp_path / "attack.py"
    script.write_text(textwrap.dedent(code))
    log = tmp_path / "sandbox.log"
    # this test's environment at /venv, as a reproduction binds its environment at /env: its
    # host path may be anywhere, /tmp included (inside, /tmp is the scratch)
    report = run_sandboxed(
        ["/venv/bin/python", "/inputs/attack.py"],
        binds=(Bind(Path(sys.prefix), "/venv"), Bind(tmp_path, "/inputs"), *binds),
        env=ENV, budgets=budgets or Budgets(wall_s=60, memory_mb=512, processes=64,
                                            scratch_mb=16),
        log_path=log, result_path=tmp_path / "result" if result else None,
        python=sys.executable, **options)
    return report, log.read_text(errors="replace")


@needs_sandbox
def test_an_honest_command_runs_and_its_channels_come_back(tmp_path):
    report, log = _python(tmp_path, """
        import os
        print("uid", os.getuid(), "home", os.environ["HOME"], sorted(os.environ))
        with open(os.path.join(os.environ["TMPDIR"], "x"), "w") as f:
            f.write("scratch works")
        os.write(int(os.environ["EVALRS_RESULT_FD"]), b"the result")
    """, result=True)
    assert report.returncode == 0 and report.sandboxed, log
    assert "uid 65534 home /scratch" in log
    assert (tmp_path / "result").read_bytes() == b"the result"
    assert report.mechanisms["isolation"].startswith("bubblewrap")
    assert set(report.mechanisms) >= {"memory", "processes", "disk", "wall clock"}


@needs_sandbox
def test_the_organizers_environment_processes_and_files_are_out_of_reach(tmp_path, monkeypatch):
    secret_dir = tmp_path / "organizer"
    secret_dir.mkdir()
    (secret_dir / "admin.token").write_text("organizer-token-abc")
    monkeypatch.setenv("EVALRS_ADMIN_TOKEN", "organizer-token-abc")
    own_cmdline = Path("/proc/self/cmdline").read_bytes()
    report, log = _python(tmp_path, f"""
        import os, glob
        found = []
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                for what in ("environ", "cmdline"):
                    try:
                        found.append(open(f"/proc/{{pid}}/{{what}}", "rb").read())
                    except OSError:
                        pass
                try:
                    found.append(os.readlink(f"/proc/{{pid}}/cwd").encode())
                except OSError:
                    pass
        for path in ({str(secret_dir / 'admin.token')!r}, "/root/.bash_history", "/etc/shadow"):
            try:
                found.append(open(path, "rb").read())
            except OSError as exc:
                print("refused", path, type(exc).__name__)
        print("pids", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
        print("token seen" if any(b"organizer-token-abc" in x for x in found) else "no token")
        print("parent seen" if any(x == {own_cmdline!r} for x in found) else "no parent")
        print("root", sorted(os.listdir("/")))
    """)
    assert report.returncode == 0, log
    assert "no token" in log and "no parent" in log, log
    assert "refused" in log and str(secret_dir) in log
    pids = eval(log.split("pids ")[1].splitlines()[0])
    assert max(pids) < 10  # its own PID namespace: bwrap's init, the command
    assert "EVALRS_ADMIN_TOKEN" not in log


@needs_sandbox
def test_no_network_reaches_a_listener_on_localhost(tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    accepted = []
    finished = threading.Event()

    def accept() -> None:
        # listens until the sandboxed run is over, and once more after it (short waits
        # instead of a fixed 5 s at the end)
        server.settimeout(0.1)
        while True:
            try:
                accepted.append(server.accept())
            except OSError:
                if finished.is_set():
                    return

    thread = threading.Thread(target=accept)
    thread.start()
    try:
        report, log = _python(tmp_path, f"""
            import socket
            for host in ("127.0.0.1", "10.0.2.2", "1.1.1.1"):
                try:
                    socket.create_connection((host, {port}), timeout=2)
                    print("connected", host)
                except OSError as exc:
                    print("refused", host, type(exc).__name__)
        """)
    finally:
        finished.set()
        thread.join()
        server.close()
    assert report.returncode == 0, log
    assert "connected" not in log and not accepted
    assert log.count("refused") == 3


@needs_sandbox
def test_a_setsid_daemon_does_not_outlive_the_run(tmp_path):
    marker = f"{time.time_ns() % 10**9}.25"
    report, log = _python(tmp_path, f"""
        import subprocess
        subprocess.Popen(["setsid", "sleep", "{marker}"], start_new_session=True)
        subprocess.Popen(["sh", "-c", "sleep {marker} & disown"], start_new_session=True)
        print("daemons started")
    """)
    assert "daemons started" in log
    time.sleep(0.3)
    alive = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                alive.append(pid)
        except OSError:
            pass
    assert alive == []


@needs_sandbox
@pytest.mark.parametrize("use_cgroups", [True, False], ids=["cgroup", "watchdog"])
def test_a_fork_bomb_is_stopped_at_the_process_budget(tmp_path, use_cgroups):
    report, log = _python(tmp_path, """
        import os, time
        children = 0
        for _ in range(150):
            try:
                if os.fork() == 0:
                    time.sleep(20)
                    os._exit(0)
                children += 1
            except OSError as exc:
                print("fork refused after", children, type(exc).__name__, flush=True)
                break
        print("forked", children, flush=True)
        if children == 150:
            time.sleep(20)
    """, budgets=Budgets(wall_s=15, memory_mb=1024, processes=64, scratch_mb=16),
        use_cgroups=use_cgroups)
    if report.mechanisms["processes"].startswith("cgroup"):
        assert "forked 150" not in log
        assert "fork refused after" in log and report.processes_hit
        forked = int(log.split("fork refused after ")[1].split()[0])
        assert forked < 64
    else:  # the watchdog may see the tree only once it is whole: then it kills it
        assert report.stopped == "processes"
    assert report.seconds < 14  # the watchdog or the failed fork ended it, not the clock


@needs_sandbox
@pytest.mark.parametrize("use_cgroups", [True, False], ids=["cgroup", "watchdog"])
def test_memory_held_across_processes_is_bounded_for_the_tree(tmp_path, use_cgroups):
    # 3 x 120 MiB in three processes, each under the per-process address-space limit; the
    # first child stopped ends the attempt (the others need not hold their blocks longer)
    report, log = _python(tmp_path, """
        import os, signal, time
        children = []
        for _ in range(3):
            pid = os.fork()
            if pid == 0:
                block = bytearray(120 * 1024 * 1024)
                for i in range(0, len(block), 4096):
                    block[i] = 1
                print("holding", flush=True)
                time.sleep(3)
                os._exit(0)
            children.append(pid)
        statuses = []
        for _ in children:
            statuses.append(os.wait()[1])
            if statuses[-1] != 0:
                for pid in children:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                break
        print("all held" if statuses == [0, 0, 0] else f"not held: {statuses}")
    """, budgets=Budgets(wall_s=30, memory_mb=256, processes=64, scratch_mb=16),
        use_cgroups=use_cgroups)
    assert "all held" not in log
    if report.mechanisms["memory"].startswith("cgroup"):
        assert report.memory_hit
    else:
        assert report.stopped == "memory"
    assert report.seconds < 25


@needs_sandbox
def test_writing_outside_fails_and_the_scratch_is_bounded(tmp_path):
    report, log = _python(tmp_path, """
        import os
        for path in ("/inputs/planted", "/venv/lib/evil.pth", "/usr/evil", "/evil"):
            try:
                open(path, "w").write("x")
                print("wrote", path)
            except OSError as exc:
                print("refused", path, type(exc).__name__)
        try:
            with open("/scratch/fill", "wb") as f:
                for _ in range(64):
                    f.write(b"0" * (1024 * 1024))
            print("filled")
        except OSError as exc:
            print("disk full", type(exc).__name__)
    """)
    assert "wrote" not in log and log.count("refused") == 4
    assert "disk full" in log and "filled" not in log
    assert not (tmp_path / "planted").exists()


@needs_sandbox
def test_the_wall_clock_kills_the_sandbox(tmp_path):
    report, log = _python(tmp_path, """
        import time
        print("sleeping", flush=True)
        time.sleep(60)
    """, budgets=Budgets(wall_s=2, memory_mb=256, processes=16, scratch_mb=16))
    assert report.timed_out and report.seconds < 10 and "sleeping" in log


@needs_sandbox
def test_output_past_its_budget_is_dropped_and_a_flooded_result_stops_the_run(tmp_path):
    report, log = _python(tmp_path, """
        import os, sys
        sys.stdout.write("x" * 200_000)
        sys.stdout.flush()
        os.write(int(os.environ["EVALRS_RESULT_FD"]), b"y" * 300_000)
    """, budgets=Budgets(wall_s=30, memory_mb=256, processes=16, scratch_mb=16,
                         output_bytes=50_000, result_bytes=100_000), result=True)
    assert len(log) == 50_000 and report.output_dropped == 150_000
    assert report.stopped == "result"
    assert (tmp_path / "result").stat().st_size == 100_000


def test_without_a_sandbox_it_refuses_unless_told_to_run_unsafe(tmp_path, monkeypatch):
    monkeypatch.setattr(_sandbox, "find_bwrap", lambda: None)
    monkeypatch.setattr(_sandbox, "_PROBE", {})
    with pytest.raises(ConfigError, match="bubblewrap.*not installed.*apt-get install "
                                          "bubblewrap.*--unsafe-no-sandbox"):
        _python(tmp_path, "print('ran')")
    report, log = _python(tmp_path, "print('ran')", unsafe_no_sandbox=True)
    assert "ran" in log and not report.sandboxed
    assert report.warnings and report.warnings[0].startswith("UNSAFE")
    assert report.mechanisms["isolation"] == "none (unsafe)"
