"""Command-line interface. Each command lives in its own module with a ``register(subparsers)``."""

from __future__ import annotations

import argparse
import importlib
import sys

from evaluation._version import __version__
from evaluation.errors import EvalRSError

# modules under evaluation.cli that add commands
COMMAND_MODULES: list[str] = ["data", "score", "references"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m evaluation", description="EvalRS evaluation harness."
    )
    parser.add_argument("--version", action="version", version=f"evalrs {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"evaluation.cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the command; harness errors print a message, not a traceback."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except EvalRSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
