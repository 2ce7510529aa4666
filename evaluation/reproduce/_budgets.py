"""The budgets of a sandboxed run, and the per-run cgroup that holds its whole process tree to
them where the machine allows (cgroup v2 first, else v1's pids and memory controllers)."""

from __future__ import annotations

import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

#: Bytes in a mebibyte.
MIB = 1024 * 1024


@dataclass(frozen=True)
class Budgets:
    """What the whole process tree of one run may use.

    Attributes
    ----------
    wall_s : float
        Seconds of wall-clock time; then the sandbox is killed.
    memory_mb : int, optional
        MiB of memory for the tree (None: no limit).
    processes : int
        Processes (and threads, where a cgroup counts them) at once.
    scratch_mb : int
        MiB of the scratch tmpfs (the only writable place).
    output_bytes : int
        Bytes of stdout and stderr kept in the log; the rest is counted and dropped.
    result_bytes : int
        Bytes the result channel may carry; past them the run is stopped.
    """

    wall_s: float = 3600.0
    memory_mb: int | None = 8192
    processes: int = 256
    scratch_mb: int = 2048
    output_bytes: int = 16 * MIB
    result_bytes: int = 1024 * MIB


class Cgroup:
    """A cgroup of one run with the memory and pids controllers where they could be had."""

    def __init__(self, budgets: Budgets) -> None:
        self.dirs: list[Path] = []  # each one to enter and to remove
        self.memory: tuple[str, Path] | None = None  # version, folder
        self.pids: tuple[str, Path] | None = None
        name = f"evalrs-sandbox-{uuid.uuid4().hex[:12]}"
        self._make_v2(name)
        if self.memory is None or self.pids is None:
            self._make_v1(name)
        self._set(budgets)

    def _own(self, controller: str) -> str | None:
        """This process's cgroup path in ``controller``'s hierarchy ("" for v2)."""
        try:
            lines = Path("/proc/self/cgroup").read_text().splitlines()
        except OSError:
            return None
        for line in lines:
            _, controllers, path = line.split(":", 2)
            if controllers.split(",") == [controller] or (controller == "" and not controllers):
                return path
        return None

    def _make_v2(self, name: str) -> None:
        own = self._own("")
        for root in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified")):
            if own is None or not (root / "cgroup.controllers").is_file():
                continue
            folder = root / own.lstrip("/") / name
            try:
                folder.mkdir()
            except OSError:
                continue
            if (folder / "memory.max").is_file():
                self.memory = ("v2", folder)
            if (folder / "pids.max").is_file():
                self.pids = ("v2", folder)
            if self.memory is None and self.pids is None:  # no controller delegated here
                folder.rmdir()
                continue
            self.dirs.append(folder)
            return

    def _make_v1(self, name: str) -> None:
        for controller, limit in (("memory", "memory.limit_in_bytes"), ("pids", "pids.max")):
            if getattr(self, controller) is not None:
                continue
            own = self._own(controller)
            base = Path("/sys/fs/cgroup") / controller
            if own is None or not (base / "cgroup.procs").is_file():
                continue
            folder = base / own.lstrip("/") / name
            try:
                folder.mkdir()
            except OSError:
                continue
            self.dirs.append(folder)
            if (folder / limit).is_file():
                setattr(self, controller, ("v1", folder))

    def _set(self, budgets: Budgets) -> None:
        try:
            if self.pids is not None:
                (self.pids[1] / "pids.max").write_text(str(budgets.processes))
            if self.memory is not None and budgets.memory_mb is not None:
                limit = str(budgets.memory_mb * MIB)
                version, folder = self.memory
                if version == "v2":
                    (folder / "memory.max").write_text(limit)
                    if (folder / "memory.swap.max").is_file():
                        (folder / "memory.swap.max").write_text("0")
                else:
                    (folder / "memory.limit_in_bytes").write_text(limit)
                    if (folder / "memory.memsw.limit_in_bytes").is_file():
                        (folder / "memory.memsw.limit_in_bytes").write_text(limit)
        except OSError:  # a controller that refuses its limit is not in force
            self.memory = self.pids = None

    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files the sandbox enters (before bwrap starts)."""
        used = {folder for _, folder in filter(None, (self.memory, self.pids))}
        return [str(folder / "cgroup.procs") for folder in self.dirs if folder in used]

    def mechanisms(self) -> dict[str, str]:
        found = {}
        if self.memory is not None:
            found["memory"] = ("cgroup v2 memory.max" if self.memory[0] == "v2"
                               else "cgroup v1 memory.limit_in_bytes")
        if self.pids is not None:
            found["processes"] = f"cgroup {self.pids[0]} pids.max"
        return found

    def hits(self) -> tuple[bool, bool]:
        """Whether the memory and the pids limits were hit."""
        memory = pids = False
        if self.memory is not None:
            version, folder = self.memory
            if version == "v2":
                memory = _event(folder / "memory.events", "oom_kill") > 0 or \
                    _event(folder / "memory.events", "max") > 0
            else:
                memory = _event(folder / "memory.oom_control", "oom_kill") > 0 or \
                    _number(folder / "memory.failcnt") > 0
        if self.pids is not None:
            pids = _event(self.pids[1] / "pids.events", "max") > 0
        return memory, pids

    def kill_and_remove(self) -> None:
        """SIGKILL whatever is left in the cgroups, then remove them."""
        for folder in self.dirs:
            for _ in range(50):
                pids = _pids(folder / "cgroup.procs")
                if not pids:
                    break
                for pid in pids:
                    with quiet():
                        os.kill(pid, signal.SIGKILL)
                time.sleep(0.02)
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


class quiet:
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, value, tb) -> bool:
        return kind is not None and issubclass(kind, OSError)


def _pids(path: Path) -> list[int]:
    try:
        return [int(x) for x in path.read_text().split()]
    except OSError:
        return []


def _number(path: Path) -> int:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def _event(path: Path, name: str) -> int:
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == name:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0
