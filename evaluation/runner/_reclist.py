"""The challenge's RecList, ``EvalRSRecList``, loaded when a run first needs it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evaluation.challenge_reclist import EvalRSRecList


def reclist_base() -> type[EvalRSRecList]:
    """``EvalRSRecList``: the class a custom RecList subclasses, and the one that renders
    reclist's report. Importing it imports reclist."""
    # Deferred on purpose: reclist is an optional library, installed apart
    # (requirements-reclist.txt); a run that scores the challenge's own tests without reclist's
    # report never loads it. Only a custom RecList (whose module imported reclist already)
    # or a report asks for this class. (The RecList stands below the runner: no circle.)
    from evaluation.challenge_reclist import EvalRSRecList

    return EvalRSRecList
