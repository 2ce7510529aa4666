"""The refusal of an upload past the team's daily limit, with when to try again.

The limit counts a team's submissions of a phase in the UTC day, less those whose scoring or
reproduction job failed for the platform's reason (and, where the competition says
``count_refused = false``, for the team's own): see ``_submissions``.
"""

from __future__ import annotations

from evaluation.errors import SubmissionRejected


class LimitReached(SubmissionRejected):
    """The team has used its submissions of the day: HTTP 429, ``retry_after`` seconds to wait.
    """

    def __init__(self, reason: str, retry_after: int) -> None:
        super().__init__(429, reason)
        self.retry_after = retry_after
