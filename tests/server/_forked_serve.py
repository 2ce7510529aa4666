"""``serve`` in a process of its own forked from the test's process, optionally in a private
mount namespace.

The tests of a read-only or full disk need ``serve`` on a file system of their own (a tmpfs in
a mount namespace that only its process sees) and look at what the process says and answers.
A new interpreter would import the server's libraries again (about 3 CPU-s of each start's
3.5); a child forked from the test's process (``benchmarks/_preloaded.py``), which has imported
them already, runs ``python -m evaluation serve`` (its checks, its messages, its exit status)
in a process of its own, which the test stops, kills or enters (``nsenter``) as it would the
interpreter. The start of ``python -m evaluation serve`` as a new interpreter is the load
test's (``benchmarks/_serve.py``, ``serve --workers``); the crash test kills a forked one
(without a namespace of its own).
"""

from __future__ import annotations

from pathlib import Path

from benchmarks._preloaded import Child, PreloadedStarter

#: Forks ``serve`` from the test's process as it is. The test runner set logging and warnings
#: up for itself: the child has a new interpreter's. A test process has threads of its own
#: (pytest-xdist's channel, earlier tests' servers and clients): none holds a lock that
#: ``serve`` takes (the fork renews the import and logging locks), so the fork is allowed.
STARTER = PreloadedStarter(("evaluation.cli",), method="fork", new_interpreter=True,
                           allow_threads=True)


def fork_serve(setup: str | None, args: list[str], log: Path) -> Child:
    """``python -m evaluation serve *args``, forked from this process; ``setup`` (shell, ``set
    -e``: mounts, copies) runs first in a mount namespace of the child's own (None: ``serve``
    at once, in the test's mount namespace).

    The child's standard output and error (``setup``'s too) are appended to ``log``; it exits
    with the command's exit status (the shell's when ``setup`` fails, 1 on anything
    unexpected, with its traceback in ``log``).
    """
    return STARTER.start(["-m", "evaluation", "serve", *args], cwd=Path.cwd(), stdout=log,
                         setup=setup)
