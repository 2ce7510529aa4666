"""Commands whose work is imported when they run, not when the parser is built.

The server's commands (``serve``, ``admin``) need the server extra (FastAPI, SQLAlchemy, ...),
which ``--help`` and every other command do without: their parsers name a module of this
package and a function in it (``command``), imported when the command runs; a missing extra
is then a ``ConfigError`` that says what to install.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable

from evaluation.errors import ConfigError

#: What a server command needs that the harness does not: (what, extra, make target).
SERVER_EXTRA = ("the leaderboard server", "server", "server")


def command(module: str, name: str, extra: tuple[str, str, str] | None = None
            ) -> Callable[[argparse.Namespace], int]:
    """The command ``name`` of ``evaluation.cli.<module>``, imported when it runs.

    ``extra`` (what, extra, make target) turns a missing third-party package into a
    ``ConfigError`` naming the extra to install.
    """

    def run(args: argparse.Namespace) -> int:
        try:
            # importlib: imported when run, not at parse time: the module needs an
            # optional extra
            target = importlib.import_module(f"evaluation.cli.{module}")
        except ImportError as exc:
            if extra is None or (exc.name or "").split(".")[0] == "evaluation":
                raise
            what, name_, make_target = extra
            raise ConfigError(f"{what} needs its extra dependencies ({exc.name or exc} is "
                              f"missing): install the {name_} extra, evalrs-harness[{name_}] "
                              f"(`make {make_target}` in the harness's clone).") from None
        return getattr(target, name)(args)

    run.__name__ = name
    return run
