"""The refusal of an upload past the team's daily limit, with when to try again.

The limit counts a team's submissions of a phase in the UTC day, less those whose scoring or
reproduction job failed for the platform's reason (and, where the competition says
``count_refused = false``, for the team's own): see ``_submissions``.
"""

from __future__ import annotations

from evaluation.errors import SubmissionRejected
from evaluation.server.core import Competition
from evaluation.server.store._job_requests import PLATFORM, TEAM


class LimitReached(SubmissionRejected):
    """The team has used its submissions of the day: HTTP 429, ``retry_after`` seconds to wait.
    """

    def __init__(self, reason: str, retry_after: int) -> None:
        super().__init__(429, reason)
        self.retry_after = retry_after


def given_back(competition: Competition) -> list[str]:
    """The causes of a failed job whose submission does not count against the daily limit:
    the platform's always, the team's own unless the competition says ``count_refused``."""
    return [PLATFORM] if competition.count_refused else [PLATFORM, TEAM]
