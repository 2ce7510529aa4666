"""The leaderboard's organizer endpoints that a reproduction uses, over HTTP.

- ``GET /api/v1/submissions/{id}``: the stored submission (its team, phase, scores);
- ``GET /api/v1/submissions/{id}/payload``: the exact uploaded body (results.json inside);
- ``GET /api/v1/submissions/{id}/predictions``: the uploaded predictions (a scoring job);
- ``POST /api/v1/submissions/{id}/reproduction``: the verdict, table and log tail;
- ``POST /api/v1/jobs/claim``, ``.../{job}/heartbeat``, ``.../{job}/finish``: the queue that
  ``python -m evaluation worker`` takes its jobs from.

All need the organizers' admin token, sent as ``Authorization: Bearer``, and go through
the leaderboard's HTTP client (``evaluation.contract.HttpClient``): retries after connection
and gateway errors, redirects refused (the token would follow them), bounded answers and
waits. Errors are ``UploadError`` (exit status 3) with what the server said, never the token.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import quote

from evaluation.contract import HttpClient, Limits, display_url
from evaluation.errors import UploadError

#: An upload is at most 1 MiB, and its payload is read back whole; the server may take its
#: time to gather a submission (up to 5 minutes for a request, its retries included).
LIMITS = Limits(read=120.0, deadline=300.0, max_bytes=4 * 1024 * 1024)
#: The predictions of a submission are read back whole: up to the largest upload a competition
#: may take (``max_upload_bytes``, at most 1 GiB).
PREDICTIONS_LIMITS = replace(LIMITS, max_bytes=1 << 30)
#: What a refusal's message adds, by HTTP status.
HINTS = {401: " Check --admin-token-file (an organizer token from `admin token create`).",
         404: " Check --submission and --server (the organizer endpoints answer 404 to other "
              "tokens too)."}


class Refused(UploadError):
    """The server answered a call with a refusal (``status``: its HTTP status)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class LostLease(Refused):
    """The server refused a heartbeat or a finish (409): the lease is no longer this worker's
    (another worker took the job over, or it was finished)."""


class LeaderboardClient:
    """Calls to one leaderboard server with an admin token.

    Parameters
    ----------
    server : str
        The server's base URL, e.g. ``http://127.0.0.1:8000``.
    token : str
        The organizers' admin token (never printed).
    """

    def __init__(self, server: str, token: str) -> None:
        self._http = HttpClient(server.rstrip("/"), token, url_name="--server",
                                token_name="the admin token", limits=LIMITS, log=_note)
        self._large = HttpClient(server.rstrip("/"), token, url_name="--server",
                                 token_name="the admin token", limits=PREDICTIONS_LIMITS,
                                 log=_note)
        self.server = self._http.url

    def __repr__(self) -> str:
        return f"LeaderboardClient({display_url(self.server)!r}, token=<hidden>)"

    def secrets(self) -> tuple[str, ...]:
        """The admin token, for scrubbing what a reproduction sends (see ``HttpClient``)."""
        return self._http.secrets()

    def submission(self, submission_id: int) -> dict[str, Any]:
        """The stored view of submission ``submission_id``."""
        return self._call("GET", f"/api/v1/submissions/{_id(submission_id)}")

    def payload(self, submission_id: int) -> dict[str, Any]:
        """The uploaded body of submission ``submission_id``."""
        return self._call("GET", f"/api/v1/submissions/{_id(submission_id)}/payload")

    def predictions(self, submission_id: int) -> bytes:
        """The uploaded predictions stream of submission ``submission_id``."""
        path = f"/api/v1/submissions/{_id(submission_id)}/predictions"
        label = f"GET {display_url(self.server + path)}"
        reply = self._large.send("GET", path, None, label=label)
        if not reply.ok:
            raise Refused(str(self._large.refusal(reply, label, HINTS)), reply.status)
        if reply.cut:
            raise UploadError(f"{label}: the predictions are larger than "
                              f"{PREDICTIONS_LIMITS.max_bytes} bytes")
        return reply.body

    def send_reproduction(self, submission_id: int, report: Mapping[str, Any]) -> dict:
        """Record the reproduction ``report`` of submission ``submission_id``."""
        return self._call("POST", f"/api/v1/submissions/{_id(submission_id)}/reproduction",
                          body=report)

    def claim(self, worker: str, lease_s: float, private: bool,
              kinds: tuple[str, ...] = ("reproduce", "score", "rescore")
              ) -> dict[str, Any] | None:
        """Claim the next job of ``kinds`` for ``lease_s`` seconds (``private``: this worker
        can evaluate the private folds); the answer, or None when no job is claimable."""
        answer = self._call("POST", "/api/v1/jobs/claim",
                            body={"worker": worker, "lease_s": lease_s, "private": private,
                                  "kinds": list(kinds)})
        return answer if answer.get("status") == "claimed" else None

    def heartbeat(self, job_id: int, lease: str, lease_s: float) -> dict[str, Any]:
        """Extend the lease of job ``job_id``; ``LostLease`` when it is no longer ours."""
        return self._call("POST", f"/api/v1/jobs/{_id(job_id)}/heartbeat",
                          body={"lease": lease, "lease_s": lease_s})

    def finish(self, job_id: int, body: Mapping[str, Any]) -> dict[str, Any]:
        """Finish job ``job_id`` (``body``: the lease and a report, failure or release);
        ``LostLease`` when the lease is no longer ours (nothing was stored)."""
        return self._call("POST", f"/api/v1/jobs/{_id(job_id)}/finish", body=body)

    def _call(self, method: str, path: str, body: Mapping | None = None) -> dict[str, Any]:
        """Send one request; return the answer's JSON object or raise ``UploadError``."""
        label = f"{method} {display_url(self.server + path)}"
        data = None if body is None else json.dumps(body, allow_nan=False).encode()
        reply = self._http.send(method, path, data, label=label)
        if not reply.ok:
            lost = reply.status == 409 and path.startswith("/api/v1/jobs/")
            raise (LostLease if lost else Refused)(
                str(self._http.refusal(reply, label, HINTS)), reply.status)
        return self._http.document(reply, label)


def _id(submission_id: int) -> str:
    """The submission id as a path segment (an int: nothing else can be put in the path)."""
    return quote(str(int(submission_id)), safe="")


def _note(message: str) -> None:
    """Print a retry notice on stderr; returns None."""
    print(message, file=sys.stderr)
