"""How numbers and times read on the board's page: 4 decimals, UTC to the second or minute."""

from __future__ import annotations

import math
from datetime import datetime, timezone

from evaluation.challenge import GATED_SCORE


def fixed(value: float | None) -> str:
    """A number with 4 decimals ("\u2014" when missing; no "-0.0000")."""
    if value is None:
        return "\u2014"
    if not math.isfinite(value):
        return "n/a"
    text = f"{value:.4f}"
    return "0.0000" if text == "-0.0000" else text


def interval_text(interval: tuple[float, float]) -> str:
    """An interval as "[low, high]", both ends with 4 decimals."""
    low, high = interval
    return f"[{fixed(low)}, {fixed(high)}]"


def is_gated(score: float | None) -> bool:
    """Whether a score is the gate's fixed score (HIT_RATE below the references' threshold)."""
    return score is not None and score <= GATED_SCORE


def _utc(moment: datetime) -> datetime:
    """An aware UTC datetime (a naive one, as SQLite returns them, is taken as UTC)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def iso(moment: datetime) -> str:
    """Machine-readable UTC time for a ``<time datetime=...>`` attribute."""
    return _utc(moment).strftime("%Y-%m-%dT%H:%M:%SZ")


def minutes(moment: datetime) -> str:
    """UTC time to the minute, ISO 8601."""
    return _utc(moment).strftime("%Y-%m-%dT%H:%MZ")
