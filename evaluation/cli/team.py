"""What the team's own commands (``submissions``, ``final``) share: where the server is, the
team's token, and the client that talks to it."""

from __future__ import annotations

import argparse
import re
import sys

from evaluation.contract import HttpClient
from evaluation.errors import ConfigError
from evaluation.runner import load_settings

#: The team's submissions on the server, below its base URL.
SUBMISSIONS_PATH = "/api/v1/submissions"
#: The end of an upload URL (``UPLOAD_URL``) after the server's base: the submissions, or a
#: phase's (``/api/v1/phases/<phase>/submissions``).
_UPLOAD_PATH = re.compile(r"/api/v1(/phases/[^/?#]+)?/submissions/?$")


def add_team_arguments(parser: argparse.ArgumentParser) -> None:
    """``--server`` and ``--env-file``, as every team command takes them."""
    parser.add_argument("--server", default=None, metavar="URL",
                        help="the leaderboard's base URL (default: UPLOAD_URL without its "
                             f"{SUBMISSIONS_PATH} or /api/v1/phases/PHASE/submissions)")
    parser.add_argument("--env-file", default=None, metavar="PATH",
                        help="settings file (default: ./upload.env, if present; environment "
                             "variables win)")


def team_client(args: argparse.Namespace, why: str) -> HttpClient:
    """The client of the team's server, with the team's token.

    Parameters
    ----------
    args : argparse.Namespace
        With ``server`` and ``env_file`` (:func:`add_team_arguments`).
    why : str
        What the token is needed for, for the message when it is missing.

    Raises
    ------
    ConfigError
        When neither ``--server`` nor ``UPLOAD_URL`` says where the server is, or no
        ``UPLOAD_TOKEN`` is set.
    """
    env_file = args.env_file or "upload.env"
    settings = load_settings(env_file, required=args.env_file is not None)
    base = args.server or _UPLOAD_PATH.sub("", settings.url or "")
    if not base:
        raise ConfigError(f"no server: give --server URL, or set UPLOAD_URL (in {env_file} or "
                          f"the environment).")
    if not settings.token:
        raise ConfigError(f"UPLOAD_TOKEN is not set (in {env_file} or the environment): {why}.")
    return HttpClient(base.removesuffix("/"), settings.token, url_name="--server",
                      log=lambda line: print(line, file=sys.stderr))
