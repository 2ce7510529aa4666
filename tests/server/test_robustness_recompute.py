"""The robustness certificate after one new reproduction: only its team's replicates under
each protocol are computed (every other team's kept), the protocols' resamples are drawn once
per store and kept apart from the official board's, and the certificate is the one a restarted
server computes in full. On SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

import pytest

pytest.importorskip("sqlalchemy")
pytest.importorskip("fastapi")

from evaluation.server.core import BoardSettings, RobustnessProtocol
from evaluation.server.db import Database, add_team
from evaluation.server.standings import _robustness, board_robustness
from evaluation.server.standings._reading import cache_of
from evaluation.server.store import record_reproduction, submit
from tests.server._api import team_folds
from tests.server._helpers import Clock, encode, open_store, trust_values, variant
from tests.server._robustness import alternative_blob, reproduction_report
from tests.server._user_values import with_user_values

PROTOCOLS = (RobustnessProtocol(name="seed-7", kind="fold_seed", seed=7),
             RobustnessProtocol(name="cut-2018", kind="global_time",
                                cut=datetime(2018, 1, 1, tzinfo=timezone.utc)))
#: Each protocol's folds (test users): other users than the official folds, and other sizes.
SIZES = {"seed-7": (80, 90), "cut-2018": (150,)}


def _results(i: int, skill: float) -> list[dict]:
    return [{"protocol": name, "status": "scored",
             "user_values": alternative_blob(100 * k + i, skill, SIZES[name]),
             "cost": {"seconds": 5.0}} for k, name in enumerate(SIZES)]


def test_one_new_reproduction_computes_its_team_only(migrated_db_url, competition,
                                                     monkeypatch):
    settings = BoardSettings(n_boot=200, seed=1)
    store = open_store(migrated_db_url, replace(competition, board=settings,
                                                robustness=PROTOCOLS), Clock())
    draws, computed = [], []
    real_draw, real_replicates = _robustness.paired_resamples, _robustness.team_replicates
    monkeypatch.setattr(_robustness, "paired_resamples",
                        lambda *a: draws.append(a[2]) or real_draw(*a))
    monkeypatch.setattr(_robustness, "team_replicates",
                        lambda *a: computed.append(len(a[0])) or real_replicates(*a))
    try:
        docs = {}
        for i, skill in enumerate((0.5, 0.35, 0.2)):
            team, _ = add_team(store, f"T{i}", f"t{i}@example.org")
            doc = with_user_values(variant(f"run-{i}"), team_folds(i + 1, skill))
            sid = submit(store, team.id, encode(doc)).submission_id
            trust_values(store, sid, doc)
            record_reproduction(store, sid, reproduction_report(doc, _results(i, skill)))
            docs[sid] = (doc, i, skill)
        first = board_robustness(store, "public")
        assert first.state == "shown" and [p.n_compared for p in first.protocols] == [3, 3]
        # each protocol's resamples drawn once, for its own folds; the official board keeps
        # only its own
        assert sorted(draws) == sorted(SIZES.values())
        official = set(cache_of(store).resamples)
        assert all(key[2] not in SIZES.values() for key in official)
        assert sorted(computed) == [1, 1, 1, 2, 2, 2]

        # the last team's submission reproduced again (the same values): its replicates
        # under each protocol only, no resample drawn again, the same certificate
        draws.clear()
        computed.clear()
        sid, (doc, i, skill) = max(docs.items())
        record_reproduction(store, sid, reproduction_report(doc, _results(i, skill)))
        again = board_robustness(store, "public")
        assert draws == [] and sorted(computed) == [1, 2]
        assert again == first
        assert set(cache_of(store).resamples) == official
        # a restarted server computes it all, and finds the same certificate
        restarted = Database(store.engine, store.competition, Clock())
        assert board_robustness(restarted, "public") == first
        assert len(computed) == 2 + 6
    finally:
        store.engine.dispose()
