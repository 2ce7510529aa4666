"""A team's own results under the competition's declared alternative protocols, as its
submissions listing shows them: per reproduced submission and protocol, the status, the score
and the cost, and a failure's reason.

The listing is the team's own (its token), so a failure's reason is shown: the rule of the
board's certificate (``board_robustness``: a reason is read by the organizers and by the team
whose model failed) holds. As on the board, a protocol declared ``private`` is withheld until
the phase's private scores are revealed, and the scores follow the phase's visibility rule:
none while the team's own official scores are hidden.

A score is the one the certificate ranks a team by under the protocol: the phase-2 score of
the folds' mean leaderboard tests, against the phase's references (``team_replicates``'s
point score). It is computed once per stored result and references, and kept.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from evaluation.challenge import (
    LEADERBOARD_TESTS,
    References,
    UserScores,
    metric_score,
    phase2_score,
)
from evaluation.errors import EvalRSError
from evaluation.server.core import references_sha256
from evaluation.server.store._robustness import (
    SCORED_ALTERNATIVE,
    AlternativeResult,
    alternative_metric_values,
    alternative_results,
    alternative_values,
)

if TYPE_CHECKING:  # annotations only: a function's handle on the database
    from evaluation.server.db import Database

#: Per store, each stored result's score under each references (a result is never changed:
#: a newer one is another row), so that a listing decodes each blob once per process.
_SCORES: weakref.WeakKeyDictionary[Database, dict[tuple[int, str], float | None]] = \
    weakref.WeakKeyDictionary()
_SCORES_LOCK = threading.Lock()


@dataclass(frozen=True)
class OwnAlternative:
    """One submission's latest result under one declared alternative protocol.

    Attributes
    ----------
    protocol, kind : str
    status : {"scored", "failed"}
    score : float or None
        Its score under the protocol (None when it failed, or while the phase's scores are
        hidden from the team).
    reason : str or None
        Why the model could not run under it.
    seconds, train_seconds, predict_seconds, peak_rss_mib : float or None
        Its cost: the run's wall-clock seconds, the seconds to train and to predict and the
        peak memory (MiB) measured in the sandbox (None: unknown).
    """

    protocol: str
    kind: str
    status: str
    score: float | None
    reason: str | None
    seconds: float | None
    train_seconds: float | None
    predict_seconds: float | None
    peak_rss_mib: float | None


def own_alternatives(db: Database, submissions: Sequence[tuple[int, str]],
                     shown: Mapping[str, tuple[bool, bool]]
                     ) -> dict[int, tuple[OwnAlternative, ...]]:
    """Submission id -> its results under the declared protocols, in their declared order.

    Parameters
    ----------
    db : Database
    submissions : sequence of (submission id, phase)
        The team's own submissions.
    shown : mapping
        Phase -> (its official scores are shown to the team, its private scores are
        revealed).
    """
    competition = db.competition
    if competition is None or not competition.robustness or not submissions:
        return {}
    phases: dict[str, list[int]] = {}
    for sid, phase in submissions:
        phases.setdefault(phase, []).append(sid)
    out: dict[int, tuple[OwnAlternative, ...]] = {}
    for phase, ids in phases.items():
        public, revealed = shown[phase]
        protocols = [p for p in competition.robustness if revealed or not p.private]
        results = alternative_results(db, phase, ids)
        scores = _scores(db, [r for r in results.values() if r.status == SCORED_ALTERNATIVE],
                         competition.phase(phase).references,
                         {p.name: p.kind for p in competition.robustness}) if public else {}
        for sid in ids:
            mine = tuple(_alternative(results[(sid, p.name)], p.kind, scores)
                         for p in protocols if (sid, p.name) in results)
            if mine:
                out[sid] = mine
    return out


def _alternative(result: AlternativeResult, kind: str,
                 scores: Mapping[int, float | None]) -> OwnAlternative:
    cost = result.cost

    def figure(key: str) -> float | None:
        value = cost.get(key)
        return None if value is None else float(value)

    return OwnAlternative(
        protocol=result.protocol, kind=kind, status=result.status,
        score=scores.get(result.row_id), reason=result.reason, seconds=figure("seconds"),
        train_seconds=figure("train_seconds"), predict_seconds=figure("predict_seconds"),
        peak_rss_mib=figure("peak_rss_mib"))


def _scores(db: Database, results: Collection[AlternativeResult], references: References,
            kinds: Mapping[str, str]) -> dict[int, float | None]:
    """Row id -> the score of each scored result (decoded only when not kept yet).
    ``kinds``: protocol -> kind (a sampled-negative protocol's values are one metric's)."""
    refs = references_sha256(references)
    with _SCORES_LOCK:
        kept = _SCORES.setdefault(db, {})
        found = {r.row_id: kept[(r.row_id, refs)] for r in results
                 if (r.row_id, refs) in kept}
    missing = [r for r in results if r.row_id not in found]
    sampled = [r.row_id for r in missing if kinds.get(r.protocol) == "sampled"]
    plain = [r.row_id for r in missing if kinds.get(r.protocol) != "sampled"]
    values = alternative_values(db, plain)
    made = {row_id: point_score(values.get(row_id), references) for row_id in plain}
    metric = alternative_metric_values(db, sampled)
    for row_id in sampled:
        score = metric_score(metric[row_id]) if row_id in metric else float("nan")
        made[row_id] = score if np.isfinite(score) else None
    with _SCORES_LOCK:
        _SCORES.setdefault(db, {}).update({(row_id, refs): s for row_id, s in made.items()})
    return {**found, **made}


def point_score(folds: Sequence[UserScores] | None, references: References) -> float | None:
    """The phase-2 score of the folds' mean leaderboard tests (None without values, or when
    a test cannot be computed from them)."""
    if not folds:
        return None
    try:
        per_fold = [f.tests() for f in folds]
        tests = {t: float(np.mean([p[t][0] for p in per_fold])) for t in LEADERBOARD_TESTS}
        score = float(phase2_score(tests, references))
    except (EvalRSError, KeyError):
        return None
    return score if np.isfinite(score) else None
