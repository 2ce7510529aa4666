"""The leaderboard's organizer endpoints that a reproduction uses, over HTTP.

- ``GET /api/v1/submissions/{id}``: the stored submission (its team, phase, scores);
- ``GET /api/v1/submissions/{id}/payload``: the exact uploaded body (results.json inside);
- ``POST /api/v1/submissions/{id}/reproduction``: the verdict, table and log tail.

All three need the organizers' admin token, sent as ``Authorization: Bearer``. Redirects are
refused (the token would follow them). Errors are ``UploadError`` (exit status 3) with what the
server said, never the token.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from evaluation.errors import UploadError
from evaluation.runner import check_token, check_url, clean, display_url

#: (connect, read) seconds.
TIMEOUT = (10.0, 120.0)
#: The most bytes of an answer read (an upload is at most 1 MiB).
MAX_ANSWER_BYTES = 4 * 1024 * 1024
#: The answer fields quoted in an error message.
_SAID = ("status", "reason", "detail", "error", "message")


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
        self.server = check_url(server.rstrip("/"), what="--server")
        self._token = check_token(token, what="the admin token")

    def __repr__(self) -> str:
        return f"LeaderboardClient({display_url(self.server)!r}, token=<hidden>)"

    def submission(self, submission_id: int) -> dict[str, Any]:
        """The stored view of submission ``submission_id``."""
        return self._call("GET", f"/api/v1/submissions/{_id(submission_id)}")

    def payload(self, submission_id: int) -> dict[str, Any]:
        """The uploaded body of submission ``submission_id``."""
        return self._call("GET", f"/api/v1/submissions/{_id(submission_id)}/payload")

    def send_reproduction(self, submission_id: int, report: Mapping[str, Any]) -> dict:
        """Record the reproduction ``report`` of submission ``submission_id``."""
        return self._call("POST", f"/api/v1/submissions/{_id(submission_id)}/reproduction",
                          body=report)

    def _call(self, method: str, path: str, body: Mapping | None = None) -> dict[str, Any]:
        import requests  # slow to import; only this command needs it

        url = self.server + path
        shown = f"{method} {display_url(url)}"
        data = None if body is None else json.dumps(body, allow_nan=False).encode()
        headers = {"Accept": "application/json", "Authorization": f"Bearer {self._token}"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        try:
            with requests.request(method, url, data=data, headers=headers, timeout=TIMEOUT,
                                  allow_redirects=False, stream=True) as response:
                status = response.status_code
                raw = response.raw.read(MAX_ANSWER_BYTES + 1, decode_content=True)
        except requests.RequestException as exc:
            raise UploadError(f"{shown}: the server is unreachable ({clean(type(exc).__name__)}:"
                              f" {clean(str(exc), self._token, 300)}). Check --server and that "
                              f"the leaderboard is running.") from None
        if len(raw) > MAX_ANSWER_BYTES:
            raise UploadError(f"{shown}: the answer is larger than {MAX_ANSWER_BYTES} bytes.")
        answer = _json(raw)
        if not 200 <= status < 300:
            said = "; ".join(f"{k}: {clean(str(answer[k]), self._token, 500)}" for k in _SAID
                             if isinstance(answer, dict) and k in answer)
            hint = {401: " Check --admin-token-file (an organizer token from `admin token "
                         "create`).",
                    404: " Check --submission and --server (the organizer endpoints answer "
                         "404 to other tokens too)."}.get(status, "")
            raise UploadError(f"{shown}: the server refused: HTTP {status}"
                              + (f" ({said})." if said else ".") + hint)
        if not isinstance(answer, dict):
            raise UploadError(f"{shown}: the answer is not a JSON object: "
                              f"{clean(raw.decode('utf-8', 'replace'), self._token, 200)}")
        return answer


def _id(submission_id: int) -> str:
    return quote(str(int(submission_id)), safe="")


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
