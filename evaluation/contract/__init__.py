"""What the harness and the leaderboard server agree on, and how they talk: the HTTP client."""

from evaluation.contract._endpoint import check_token, check_url
from evaluation.contract._exchange import Limits
from evaluation.contract._http import LIMITS, RETRY_STATUSES, SHOWN_KEYS, HttpClient, Reply
from evaluation.contract._shown import MAX_SHOWN, clean, display_url

__all__ = [
    "HttpClient",
    "LIMITS",
    "Limits",
    "MAX_SHOWN",
    "RETRY_STATUSES",
    "Reply",
    "SHOWN_KEYS",
    "check_token",
    "check_url",
    "clean",
    "display_url",
]
