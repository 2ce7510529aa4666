"""Command-line interface. Each command lives in its own module with a ``register(subparsers)``."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import sysconfig
import traceback
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

from evaluation._util.vendored import vendored_evaluation
from evaluation._version import __version__
from evaluation.errors import (
    EvalRSError,
    PredictionWarning,
    RunWarning,
    ScoringWarning,
    UploadError,
)

# modules under evaluation.cli that add commands
COMMAND_MODULES: list[str] = ["data", "score", "references", "submit", "submissions", "final",
                              "serve", "admin", "reproduce", "worker", "report", "compare"]

# Exit statuses of submission.py and of every `python -m evaluation` command.
EXIT_OK = 0
EXIT_EXCEPTION = 1
EXIT_BAD_INPUT = 2
EXIT_UPLOAD_FAILED = 3
EXIT_NOT_ELIGIBLE = 4
EXIT_INTERRUPTED = 130

EXIT_STATUS_HELP = """\
exit status:
  0    done (with --upload: uploaded, or saved locally when no UPLOAD_URL is set)
  1    the model raised an exception (its traceback is printed), or an unexpected error
  2    bad arguments, settings or data (the message says what and how to fix it)
  3    the upload failed or the server refused it; the submission is saved locally
  4    upload asked for, but the run is not eligible; the submission is saved locally
  130  interrupted (Ctrl-C); finished folds are kept and a new run resumes after them
"""


def official_copy_problem(root: str | os.PathLike) -> str | None:
    """What is wrong when ``root/evaluation`` holds official EvalRS 2022/2023 files, or None.

    A participant's repository carries the official ``evaluation/`` folder of its year;
    copied over (or found before) the harness it would shadow it. The message names the files
    and says what to do (see ``evaluation.compat``).
    """
    return vendored_evaluation(root)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Return the parser of ``python -m evaluation``, with a subcommand per ``COMMAND_MODULES``
    (only the command ``only`` when it is one: its module alone is imported, so that a light
    command such as ``admin`` does not wait for the imports of the others; none for
    ``--version``, which prints the version and exits before a command is read).
    """
    parser = argparse.ArgumentParser(
        prog="python -m evaluation", description="EvalRS evaluation harness.",
        epilog=EXIT_STATUS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"evalrs {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    names = ([] if only == "--version" else [only] if only in COMMAND_MODULES
             else COMMAND_MODULES)
    for name in names:
        # importlib: this package's command modules, by COMMAND_MODULES; only those asked for
        importlib.import_module(f"evaluation.cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the command; harness errors print a message, not a traceback."""
    words = sys.argv[1:] if argv is None else argv
    args = build_parser(words[0] if words else None).parse_args(argv)
    return guarded(lambda: args.func(args))


def guarded(run: Callable[[], int | None], interrupted: str = "interrupted") -> int:
    """Call ``run`` and turn what it raises into a message on stderr and an exit status.

    ``UploadError`` gives 3 and any other ``EvalRSError`` 2, with the message alone. Any other
    exception gives 1 and its traceback from the first frame of the participant's code (the
    model), which they can fix; the whole traceback when no such frame exists.
    ``interrupted`` is printed on Ctrl-C (exit status 130). The harness's own warnings are
    shown in its words while ``run`` runs (see ``plain_warnings``).
    """
    try:
        with plain_warnings():
            return int(run() or 0)
    except KeyboardInterrupt:
        print(interrupted, file=sys.stderr)
        return EXIT_INTERRUPTED
    except UploadError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UPLOAD_FAILED
    except EvalRSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:
        tb = _participant_frames(exc.__traceback__)
        what = f"{type(exc).__name__}: {exc}"
        if tb is None:
            traceback.print_exception(type(exc), exc, exc.__traceback__)
            print(f"error: unexpected {what} (the full traceback is above)", file=sys.stderr)
        else:
            traceback.print_exception(type(exc), exc, tb)
            print(f"error: the model raised {what}\n(the traceback above starts in the "
                  f"model's code)", file=sys.stderr)
        return EXIT_EXCEPTION


# The harness's own warning classes: their message is the whole story (the line of the harness
# that raised them tells a participant nothing), so they are shown as "warning: <message>".
HARNESS_WARNINGS: tuple[type[Warning], ...] = (PredictionWarning, RunWarning, ScoringWarning)


@contextlib.contextmanager
def plain_warnings() -> Iterator[None]:
    """Within the block, show each harness warning as ``warning: <message>`` on stderr, once.

    A message already shown is not repeated (the same warning of every fold says nothing new).
    Other warnings (of libraries, of the participant's code) are shown as Python shows them,
    with their source line, which is where their fix is.
    """
    shown: set[str] = set()
    previous = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        if not issubclass(category, HARNESS_WARNINGS):
            previous(message, category, filename, lineno, file, line)
            return
        text = f"warning: {message}"
        if text not in shown:
            shown.add(text)
            print(text, file=file if file is not None else sys.stderr, flush=True)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = previous


_HARNESS = (str(Path(__file__).resolve().parents[1]) + os.sep,)
_LIBRARIES = tuple({str(Path(p).resolve()) + os.sep for key in ("stdlib", "platstdlib",
                                                               "purelib", "platlib")
                    if (p := sysconfig.get_paths().get(key))})


def _participant_frames(tb):
    """The traceback from its first frame in the participant's code, or None.

    That is the first frame neither in the harness nor in the standard library or an installed
    package (contextlib's frames, for one, sit between the runner and the model).
    """
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        # "<frozen importlib._bootstrap>" and the like: never the participant's
        if not filename.startswith("<"):
            filename = os.path.realpath(filename)
            if not (filename.startswith(_HARNESS + _LIBRARIES)
                    or Path(filename).name == "submission.py"):
                return tb
        tb = tb.tb_next
    return None


__all__ = [
    "COMMAND_MODULES",
    "EXIT_BAD_INPUT",
    "EXIT_EXCEPTION",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_ELIGIBLE",
    "EXIT_OK",
    "EXIT_STATUS_HELP",
    "EXIT_UPLOAD_FAILED",
    "HARNESS_WARNINGS",
    "build_parser",
    "guarded",
    "main",
    "official_copy_problem",
    "plain_warnings",
]
