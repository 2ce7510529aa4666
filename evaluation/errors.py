"""Every exception and warning the harness raises, and a helper to show offending values."""

from __future__ import annotations

from collections.abc import Iterable


class EvalRSError(Exception):
    """Base class of every error the harness raises on purpose."""


class ConfigError(EvalRSError, ValueError):
    """An argument or option has an invalid value."""


class DataError(EvalRSError, ValueError):
    """A dataset file or table breaks the EvalRS schema."""


class DownloadError(EvalRSError, OSError):
    """A dataset could not be downloaded or the download is corrupt."""


class PredictionError(EvalRSError, ValueError):
    """What a model's ``predict`` returned cannot be scored."""


class UploadError(EvalRSError):
    """A submission could not be uploaded, or the leaderboard server refused it."""


class SubmissionRejected(EvalRSError):
    """A submission the leaderboard refuses: ``status`` is the HTTP status, ``reason`` says why.

    Parameters
    ----------
    status : int
        The HTTP status the leaderboard answers with (422: the payload is invalid or belongs to
        another competition, 404: no such phase, ...).
    reason : str
        Why, in words a participant can act on; ``str(exc)`` is the reason.
    """

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


# ---------------------------------------------------------------------------- warnings


class ScoringWarning(UserWarning):
    """A test had nobody to average over and returned its documented fallback value."""


class RunWarning(UserWarning):
    """A run directory holds something that cannot be reused: it is recomputed instead."""


class PredictionWarning(UserWarning):
    """Predictions are valid but probably not what the model intended.

    Parameters
    ----------
    *args
        The message, as for any warning.
    counts : dict, optional
        What the warning counted, for a caller that sums it over folds (the training-items
        warning of ``validate_predictions``: ``{"items": ..., "lists": ...}``).
    """

    def __init__(self, *args, counts: dict | None = None) -> None:
        super().__init__(*args)
        self.counts = dict(counts or {})


class SyntheticCacheWarning(UserWarning):
    """The cached synthetic dataset was damaged and is being regenerated."""


class FoldCacheWarning(UserWarning):
    """A cached fold could not be trusted (or written): the fold is computed instead."""


def show_values(values: Iterable, limit: int = 5) -> str:
    """Format the first ``limit`` values of ``values`` for an error message."""
    values = list(values)
    shown = ", ".join(repr(v.item() if hasattr(v, "item") else v) for v in values[:limit])
    more = f" ... ({len(values)} in all)" if len(values) > limit else ""
    return f"[{shown}{more}]"
