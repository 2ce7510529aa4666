"""The embedded tiny data with ties at users' latest timestamps, so that the 2023
last-interaction split has users with one, two and three targets."""

from dataclasses import replace

import numpy as np

from evaluation.data import Tables, load_source


def tiny_with_ties() -> Tables:
    """Tiny synthetic tables where a user with ``user_id % 3 == 0`` has their three latest
    events at one timestamp, ``% 3 == 1`` their two latest, the others one latest event."""
    tables = load_source("synthetic", scale="tiny")
    events = tables.events.copy()
    order = np.lexsort((-events["timestamp"].to_numpy(), events["user_id"].to_numpy()))
    users = events["user_id"].to_numpy()[order]
    starts = np.r_[0, np.flatnonzero(users[1:] != users[:-1]) + 1]
    position = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    latest = np.repeat(events["timestamp"].to_numpy()[order][starts],
                       np.diff(np.r_[starts, len(order)]))
    tied = position < np.where(users % 3 == 0, 3, np.where(users % 3 == 1, 2, 1))
    times = events["timestamp"].to_numpy().copy()
    times[order[tied]] = latest[tied]
    events["timestamp"] = times
    return replace(tables, events=events, source="synthetic:tiny-ties", _fingerprint=None)
