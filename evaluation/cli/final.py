"""``python -m evaluation final``: mark one of the team's submissions as a final selection (or
unmark it); the private ranking of its phase uses the final selections."""

from __future__ import annotations

import argparse

from evaluation.cli.team import SUBMISSIONS_PATH, add_team_arguments, team_client
from evaluation.errors import ConfigError, UploadError


def register(subparsers) -> None:
    """Add the ``final`` command to ``subparsers``."""
    p = subparsers.add_parser(
        "final", help="mark a submission as one of your team's final selections",
        description="Mark submission ID (see `python -m evaluation submissions`) as one of the "
                    "final selections of its phase, with the token UPLOAD_TOKEN (upload.env or "
                    "the environment); --unmark takes the mark back. The phase's private "
                    "ranking uses a team's final selections, or its best public submissions "
                    "when it marked none. Exit status 3 when the server refuses (not your "
                    "submission, the phase has closed or was revealed, the limit is "
                    "reached).")
    p.add_argument("id", metavar="SUBMISSION_ID", type=int)
    p.add_argument("--unmark", action="store_true", help="take the final mark back")
    add_team_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Mark (or unmark) the final selection; 0 when the server did it.

    Raises
    ------
    ConfigError
        When the server or the token is not set, or the id is not positive.
    UploadError
        When the server refuses or cannot be reached (its reason is shown).
    """
    if args.id < 1:
        raise ConfigError(f"SUBMISSION_ID must be a positive submission id (got {args.id}); "
                          f"`python -m evaluation submissions` lists yours.")
    client = team_client(args, "a final selection is made with the team's token")
    reply = client.send("DELETE" if args.unmark else "PUT",
                        f"{SUBMISSIONS_PATH}/{args.id}/final")
    answer = reply.json()
    if not reply.ok or not isinstance(answer, dict) or "message" not in answer:
        reason = answer.get("reason") if isinstance(answer, dict) else None
        raise UploadError(f"the server did not mark submission {args.id} (HTTP "
                          f"{reply.status}): "
                          f"{client.show(str(reason or reply.body.decode('utf-8', 'replace')))}")
    print(client.show(str(answer["message"])))
    return 0
