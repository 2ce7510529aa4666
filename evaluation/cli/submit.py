"""``python -m evaluation submit``: upload a saved ``submission.json`` to the leaderboard."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "submit",
        help="upload a saved submission (results/<run id>/submission.json)",
        description="Upload a submission that `python submission.py --upload` saved (for "
                    "instance after a failed upload) to UPLOAD_URL, with the settings of "
                    "upload.env or the environment. The file is sent as it is, with the same "
                    "idempotency key as the first attempt, so a submission the server already "
                    "has is not counted twice.",
    )
    p.add_argument("file", metavar="FILE", help="the submission.json of a run")
    p.add_argument("--env-file", default=None, metavar="PATH",
                   help="settings file (default: ./upload.env, if present; environment "
                        "variables win)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from evaluation.cli import EXIT_NOT_ELIGIBLE
    from evaluation.errors import ConfigError, DataError, UploadError
    from evaluation.runner import _submit as _upload

    path = Path(args.file)
    if not path.is_file():
        raise ConfigError(f"submission file {path} not found; `python submission.py --upload` "
                          f"writes results/<run id>/submission.json.")
    try:
        payload = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise DataError(f"{path} is not a submission file (UTF-8 JSON written by "
                        f"submission.py --upload): {_upload.clean(str(exc))}") from None
    results = payload.get("results") if isinstance(payload, dict) else None
    if not isinstance(results, dict) or "run_id" not in payload:
        raise DataError(f"{path} is not a submission file: it needs the keys 'run_id' and "
                        f"'results' that submission.py --upload writes.")
    if results.get("eligible_for_upload") is not True:
        reasons = results.get("not_eligible_because") or ["eligible_for_upload is not true"]
        print(f"error: not uploaded: the run in {path} is not eligible ("
              + "; ".join(_upload.clean(str(r)) for r in reasons) + ")", file=sys.stderr)
        return EXIT_NOT_ELIGIBLE
    env_file = args.env_file or "upload.env"
    settings = _upload.load_settings(env_file, required=args.env_file is not None)
    if not settings.url:
        raise ConfigError(f"UPLOAD_URL is not set (in {env_file} or the environment): "
                          f"there is nowhere to send {path}. Copy upload.env.example to "
                          f"upload.env and fill in the endpoint the organizers gave you.")
    try:
        answer = _upload.post(settings.url, payload, token=settings.token, log=_note)
    except UploadError as exc:
        raise UploadError(f"{str(exc).rstrip('.')}. The submission is still at {path}.") from None
    print(f"uploaded {path} to {_upload.display_url(settings.url)}: {answer.describe()}")
    return 0


def _note(message: str) -> None:
    print(message, file=sys.stderr)
