"""``python -m evaluation final``: mark one of the team's submissions as a final selection (or
unmark it); the private ranking of its phase uses the final selections. Where the phase takes a
fact sheet, the mark carries it: a short description of the method, the code's URL and
commit (the server checks them; the board shows them once the phase is revealed)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

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
                    "when it marked none. Where the phase takes a fact sheet (its competition "
                    "file's fact_sheet), give --description (or --description-file), "
                    "--code-url and --commit with the mark; marking again with new ones "
                    "replaces them. Exit status 3 when the server refuses (not your "
                    "submission, the phase has closed or was revealed, the limit is "
                    "reached, a fact sheet missing where required or invalid).")
    p.add_argument("id", metavar="SUBMISSION_ID", type=int)
    p.add_argument("--unmark", action="store_true", help="take the final mark back")
    sheet = p.add_argument_group("fact sheet (where the phase takes one)")
    text = sheet.add_mutually_exclusive_group()
    text.add_argument("--description", metavar="TEXT", default=None,
                      help="the method in a short paragraph of plain text (at most 2000 "
                           "characters, no HTML, no control characters but line breaks)")
    text.add_argument("--description-file", metavar="FILE", type=Path, default=None,
                      help="read the description from FILE (UTF-8)")
    sheet.add_argument("--code-url", metavar="URL", default=None,
                       help="the link to the code (http or https)")
    sheet.add_argument("--commit", metavar="SHA", default=None,
                       help="the commit of the code that made the submission (7 to 40 hex "
                            "digits: git rev-parse HEAD)")
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
    sheet = _fact_sheet(args)
    client = team_client(args, "a final selection is made with the team's token")
    body = None if sheet is None else json.dumps({"fact_sheet": sheet}).encode("utf-8")
    reply = client.send("DELETE" if args.unmark else "PUT",
                        f"{SUBMISSIONS_PATH}/{args.id}/final", body)
    answer = reply.json()
    if not reply.ok or not isinstance(answer, dict) or "message" not in answer:
        reason = answer.get("reason") if isinstance(answer, dict) else None
        raise UploadError(f"the server did not mark submission {args.id} (HTTP "
                          f"{reply.status}): "
                          f"{client.show(str(reason or reply.body.decode('utf-8', 'replace')))}")
    print(client.show(str(answer["message"])))
    return 0


def _fact_sheet(args: argparse.Namespace) -> dict[str, str] | None:
    """The fact sheet the options give (None when none is given); the server checks it.

    Raises
    ------
    ConfigError
        When only some of its parts are given, with --unmark, or the description file cannot
        be read as UTF-8.
    """
    description = getattr(args, "description", None)
    path = getattr(args, "description_file", None)
    if path is not None:
        try:
            description = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"--description-file {str(path)!r} cannot be read as UTF-8 "
                              f"text ({exc}); give the description in a text file or with "
                              f"--description.") from None
    given = {"description": description, "code_url": getattr(args, "code_url", None),
             "commit": getattr(args, "commit", None)}
    if all(v is None for v in given.values()):
        return None
    missing = [f"--{k.replace('_', '-')}" for k, v in given.items() if v is None]
    if missing:
        raise ConfigError(f"a fact sheet needs --description (or --description-file), "
                          f"--code-url and --commit together; {', '.join(missing)} missing.")
    if args.unmark:
        raise ConfigError("--unmark takes no fact sheet: give it with the mark.")
    return {k: v for k, v in given.items() if v is not None}
