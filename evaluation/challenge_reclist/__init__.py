"""The challenge's tests as a reclist ``RecList``: ``EvalRSRecList``, to render them as
reclist's table and report folder, and to add tests of one's own (``@rec_test`` methods of a
subclass).

It stands on ``evaluation.challenge``, which scores a fold without reclist
(``FoldScorer``): every test of the RecList returns the scorer's value. Importing this package
imports reclist, which is installed apart (``requirements-reclist.txt``); a run scoring the
challenge's own tests never loads it, and the runner loads it only for a custom RecList or
reclist's report.
"""

from evaluation.challenge_reclist._reclist import EvalRSRecList

__all__ = ["EvalRSRecList"]
