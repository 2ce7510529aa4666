"""``python -m evaluation submit``: upload a saved ``submission.json`` to the leaderboard, or
submit a finished run to a competition it belongs to without computing it again."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console

from evaluation import analysis
from evaluation.cli import EXIT_NOT_ELIGIBLE, EXIT_UPLOAD_FAILED
from evaluation.contract import (
    clean,
    display_url,
    load_competition_target,
    read_predictions,
    with_claim,
)
from evaluation.errors import ConfigError, DataError, UploadError
from evaluation.runner import (
    PREDICTIONS_FILE,
    load_settings,
    post,
    post_predictions,
    retarget,
    submit_run,
)

#: The longest ``--description``.
MAX_DESCRIPTION = 200


def register(subparsers) -> None:
    """Add the ``submit`` command to ``subparsers``."""
    p = subparsers.add_parser(
        "submit",
        help="upload a saved submission (results/<run id>/submission.json)",
        description="Upload a submission that `python submission.py --upload` saved (for "
                    "instance after a failed upload) to UPLOAD_URL, with the settings of "
                    "upload.env or the environment. What is sent is the run's predictions "
                    f"({PREDICTIONS_FILE}, beside submission.json: every fold's top-k lists, "
                    "which the leaderboard scores with the organizers' data), with "
                    "submission.json as the team's claim; a run without them sends "
                    "submission.json alone, which only a competition with accept_claims = "
                    "true takes. The file is sent as it is, with the same "
                    "idempotency key as the first attempt, so a submission the server already "
                    "has is not counted twice. With --competition, FILE is a finished run "
                    "(results/<run id>/): when its data, folds and harness version are the "
                    "competition's, it is submitted there as it is, without computing it "
                    "again.",
    )
    p.add_argument("file", metavar="FILE",
                   help="the submission.json of a run; with --competition, the run directory "
                        "(or its results.json)")
    p.add_argument("--competition", default=None, metavar="TOML",
                   help="the competition file of the board to submit the finished run FILE to")
    p.add_argument("--description", default=None, metavar="TEXT",
                   help="a label stored with the upload and shown in `python -m evaluation "
                        f"submissions` (at most {MAX_DESCRIPTION} printable characters; it is "
                        "part of the body: give the same one when sending the file again)")
    p.add_argument("--env-file", default=None, metavar="PATH",
                   help="settings file (default: ./upload.env, if present; environment "
                        "variables win)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Upload the submission file ``args.file``.

    Parameters
    ----------
    args : argparse.Namespace
        ``file`` and ``env_file`` (None: ``./upload.env`` if present).

    Returns
    -------
    int
        0 when uploaded; ``EXIT_NOT_ELIGIBLE`` when the run is not eligible.

    Raises
    ------
    ConfigError
        When the file or ``UPLOAD_URL`` is missing, or a setting is malformed.
    DataError
        When the file is not a submission.
    UploadError
        When the upload fails or the server refuses it.
    """
    if args.competition is not None:
        return _submit_run(args)
    path = Path(args.file)
    if path.is_dir():
        raise ConfigError(f"{path} is a directory: pass its submission.json, or submit the "
                          f"finished run to a competition with: python -m evaluation submit "
                          f"{path} --competition FILE")
    if not path.is_file():
        raise ConfigError(f"submission file {path} not found; `python submission.py --upload` "
                          f"writes results/<run id>/submission.json.")
    try:
        payload = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise DataError(f"{path} is not a submission file (UTF-8 JSON written by "
                        f"submission.py --upload): {clean(str(exc))}") from None
    results = payload.get("results") if isinstance(payload, dict) else None
    if not isinstance(results, dict) or "run_id" not in payload:
        raise DataError(f"{path} is not a submission file: it needs the keys 'run_id' and "
                        f"'results' that submission.py --upload writes.")
    if results.get("eligible_for_upload") is not True:
        reasons = results.get("not_eligible_because") or ["eligible_for_upload is not true"]
        print(f"error: not uploaded: the run in {path} is not eligible ("
              + "; ".join(clean(str(r)) for r in reasons) + ")", file=sys.stderr)
        return EXIT_NOT_ELIGIBLE
    if getattr(args, "description", None) is not None:
        payload["description"] = _description(args.description)
    env_file = args.env_file or "upload.env"
    settings = load_settings(env_file, required=args.env_file is not None)
    if not settings.url:
        raise ConfigError(f"UPLOAD_URL is not set (in {env_file} or the environment): "
                          f"there is nowhere to send {path}. Copy upload.env.example to "
                          f"upload.env and fill in the endpoint the organizers gave you.")
    predictions = path.with_name(PREDICTIONS_FILE)
    try:
        if predictions.is_file():
            answer = post_predictions(settings.url, _predictions_body(predictions, payload),
                                      str(payload["run_id"]), token=settings.token, log=_note)
        else:
            print(f"note: no {PREDICTIONS_FILE} beside {path.name}: only the claim is sent, "
                  f"which only a competition with accept_claims = true takes", file=sys.stderr)
            answer = post(settings.url, payload, token=settings.token, log=_note)
    except UploadError as exc:
        raise UploadError(f"{str(exc).rstrip('.')}. The submission is still at {path}.") from None
    print(f"uploaded {path} to {display_url(settings.url)}: {answer.describe()}")
    return 0


def _submit_run(args: argparse.Namespace) -> int:
    """Submit the finished run ``args.file`` to the competition ``args.competition``.

    The run is read back and verified as ``compare`` reads it (its folds' checksums), its
    eligibility is decided again relative to the competition, and its ``submission.json`` is
    saved in the run directory and uploaded when ``UPLOAD_URL`` is set.
    """
    loaded = analysis.load_results(args.file)
    competition = load_competition_target(args.competition)
    results = retarget(loaded.results, competition)
    if not results["eligible_for_upload"]:
        print(f"error: not submitted: run {loaded.run_id} does not belong to "
              f"{competition.name} (" + "; ".join(results["not_eligible_because"])
              + "); run the model with --competition FILE to make a run that does",
              file=sys.stderr)
        return EXIT_NOT_ELIGIBLE
    env_file = args.env_file or "upload.env"
    settings = load_settings(env_file, required=args.env_file is not None)
    console = Console(highlight=False, soft_wrap=True)
    console.print(f"run {loaded.run_id} belongs to {competition.name} (run hash "
                  f"{loaded.run_hash[:16]}...): submitted without computing it again",
                  markup=False)
    outcome = submit_run(results, loaded.run_dir, settings, console)
    return EXIT_UPLOAD_FAILED if outcome["outcome"] == "failed" else 0


def _predictions_body(path: Path, payload: dict) -> bytes:
    """The saved predictions upload ``path``, its claim ``payload`` (submission.json, less
    its per-user values, with the description given now)."""
    body = path.read_bytes()
    try:
        read_predictions(body, max_bytes=len(body), max_inflated=1 << 40)
    except DataError as exc:
        raise DataError(f"{path} is not the predictions upload the harness writes ({exc}); "
                        f"submit the run again with --competition") from None
    claim = {k: v for k, v in payload.items() if k != "user_values"}
    return with_claim(body, claim)


def _description(text: str) -> str:
    """``text`` as an upload's description; ConfigError when it is empty, too long or holds
    control characters."""
    if not text.strip() or len(text) > MAX_DESCRIPTION or not text.isprintable():
        raise ConfigError(f"--description '{clean(text, limit=60)}' must be 1 to "
                          f"{MAX_DESCRIPTION} printable characters (got {len(text)}, "
                          f"{'with' if not text.isprintable() else 'without'} control "
                          f"characters); shorten it or drop the line breaks.")
    return text


def _note(message: str) -> None:
    """Print a retry notice on stderr; returns None."""
    print(message, file=sys.stderr)
