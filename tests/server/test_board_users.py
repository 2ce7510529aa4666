"""Which test users the board compares, and what an upload may make the server allocate.

The users are the competition's folds as the organizers' first trusted row gives them, never a
vote of the rows: puppet teams declaring other users move nothing, before or after a trusted
row, and only organizer-computed values get statistics. An upload declaring folds other than
the competition's is refused before its values are read: a body of a few KiB declaring
hundreds of thousands of users costs the server no memory.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("sqlalchemy")

from evaluation.challenge import MRED_TESTS, FoldUsers, UserScores, users_sha256
from evaluation.errors import ConfigError, SubmissionRejected
from evaluation.server.core import BoardSettings, load_competition
from evaluation.server.db import Database, add_team
from evaluation.server.standings import (
    NO_VALUES,
    OTHER_USERS,
    board_with_standings,
    cache_of,
    with_standings,
)
from evaluation.server.store import compared_users, load_snapshot, phase_board, submit
from tests.server._api import N_USERS, team_folds
from tests.server._helpers import (
    FakeSource,
    document,
    encode,
    open_store,
    sqlite_url,
    standings_competition,
    submit_teams,
    synthetic,
    trust_values,
    variant,
    write,
)
from tests.server._user_values import LABELS, with_user_values

#: Seconds a test asks its statistics to be up to date within (``FRESH_WAIT_S`` or more).
FRESH = 30.0


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path, competition):
    """A store on an SQLite file or on a database of its own on a real PostgreSQL."""
    url = sqlite_url(tmp_path) if request.param == "sqlite" \
        else request.getfixturevalue("postgres_migrated_database")
    opened = open_store(url, replace(competition, board=BoardSettings(n_boot=200, seed=1)))
    opened.standings_wait = FRESH
    yield opened
    opened.engine.dispose()


def elsewhere(folds: list[FoldUsers]) -> list[FoldUsers]:
    """The same values declared on other test users (another users hash per fold)."""
    return [FoldUsers(f.scores, users_sha256(np.arange(N_USERS) + 7_000), f.labels)
            for f in folds]


def upload(store: Database, name: str, seed: int, hit_rate: float, *, other: bool = False
           ) -> tuple[int, dict]:
    team, _ = add_team(store, name, f"{name.lower().replace(' ', '-')}@example.org")
    folds = team_folds(seed, hit_rate)
    doc = with_user_values(variant(f"run-{name.replace(' ', '-')}"),
                           elsewhere(folds) if other else folds)
    return submit(store, team.id, encode(doc)).submission_id, doc


def standings(store: Database) -> dict:
    return {r.team: r.standing for r in board_with_standings(store).rows if not r.is_baseline}


def test_puppets_declaring_other_users_move_nothing_before_or_after_a_trusted_row(store):
    honest = {name: upload(store, name, seed, rate)
              for name, seed, rate in (("Leader", 1, 0.6), ("Second", 2, 0.4),
                                       ("Third", 3, 0.3))}
    for i in range(4):  # more puppets than honest teams, better scores
        upload(store, f"Puppet {i}", 10 + i, 0.9, other=True)
    # no organizer-computed values yet: nobody is compared, least of all a puppet
    before = standings(store)
    assert compared_users(store, "public") is None
    assert all(s.tier is None and s.left_out == NO_VALUES for s in before.values())

    sid, doc = honest["Leader"]
    trust_values(store, sid, doc)
    users = compared_users(store, "public")
    assert users is not None and users.submission_id == sid
    assert users.fold_sizes == (N_USERS,) * 4
    after = standings(store)
    assert after["Leader"].tier == 1 and after["Leader"].left_out is None
    assert all(after[f"Puppet {i}"].tier is None and after[f"Puppet {i}"].left_out == NO_VALUES
               for i in range(4))
    for name in ("Second", "Third"):
        trust_values(store, *honest[name])
    final = standings(store)
    assert [final[n].left_out for n in ("Leader", "Second", "Third")] == [None] * 3
    assert {final[n].tier for n in ("Leader", "Second", "Third")} >= {1}
    assert all(final[f"Puppet {i}"].tier is None for i in range(4))
    # a new puppet on other users is refused now that the users are fixed
    with pytest.raises(SubmissionRejected, match="test users"):
        upload(store, "Puppet 9", 19, 0.9, other=True)
    assert compared_users(store, "public") == users
    # the statistics computed are kept in the database for a restart, on either backend
    kept = load_snapshot(store, "public", False)
    assert kept is not None and len(kept.signature) == 64 and kept.payload


def test_the_first_trusted_row_fixes_the_users_and_a_later_majority_is_left_out(rng, tmp_path):
    store = open_store(sqlite_url(tmp_path), standings_competition(), pin=False)
    ids = submit_teams(store, [("Trusted", 1.3), ("Honest", 1.25)]
                       + [(f"Puppet {i}", 1.2 - i / 100) for i in range(4)])
    source = FakeSource({ids["Trusted"]: synthetic(rng, 0.6),
                         ids["Honest"]: synthetic(rng, 0.4)})
    for i in range(4):  # trusted, yet on other users, and more of them
        source.by_id[ids[f"Puppet {i}"]] = synthetic(rng, 0.9, hashes=("x", "y"))
    board = {r.team: r.standing for r in with_standings(store, phase_board(store), source).rows}
    assert board["Trusted"].tier == 1 and board["Honest"].left_out is None
    assert all(board[f"Puppet {i}"].left_out == OTHER_USERS for i in range(4))
    assert all(board[f"Puppet {i}"].tier is None for i in range(4))
    # nothing was drawn for the users the board does not compare
    assert [r.fold_sizes for r in cache_of(store).resamples.values()] == [(60, 70)]
    store.engine.dispose()


def flat_fold(n_users: int) -> FoldUsers:
    """A fold of ``n_users`` users, every value alike: it compresses to almost nothing."""
    scores = UserScores(hit=np.zeros(n_users, bool), rr=np.zeros(n_users),
                        slices={t: np.zeros(n_users, np.int32) for t in MRED_TESTS},
                        blw=np.full(n_users, 0.5), ld=np.full(n_users, 0.1))
    return FoldUsers(scores=scores, users_sha256=users_sha256(np.arange(n_users)),
                     labels=dict(LABELS))


def _rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/status"),
                    reason="reads the resident memory from /proc")
@pytest.mark.parametrize("fixed_by", ["a trusted row", "the competition file"])
def test_an_upload_declaring_oversized_folds_costs_the_server_no_memory(tmp_path, competition,
                                                                        fixed_by):
    stated = (N_USERS,) * 4 if fixed_by == "the competition file" else None
    store = open_store(sqlite_url(tmp_path), replace(
        competition, board=BoardSettings(n_boot=1000, seed=1), fold_users=stated))
    store.standings_wait = FRESH
    if stated is None:
        trust_values(store, *upload(store, "Leader", 1, 0.6))
    # 150k users per fold, no hit: a body of a few dozen KiB
    huge = [flat_fold(150_000) for _ in range(4)]
    body = encode(with_user_values(variant("run-huge"), huge))
    del huge
    assert len(body) < 200_000
    team, _ = add_team(store, "Attacker", "attacker@example.org")
    board_with_standings(store)  # everything the board keeps, before the upload
    rss = _rss_mib()
    with pytest.raises(SubmissionRejected) as refused:
        submit(store, team.id, body)
    assert refused.value.status == 422
    assert "declares 150000 test users, the competition's fold has 300" in refused.value.reason
    board_with_standings(store)
    grown = _rss_mib() - rss
    assert grown < 8, f"the refused upload cost {grown:.1f} MiB"
    drawn = [r.fold_sizes for r in cache_of(store).resamples.values()]
    assert drawn == ([] if stated else [(N_USERS,) * 4])
    store.engine.dispose()


def test_the_competition_file_may_state_its_fold_sizes(tmp_path, competition):
    doc = document(competition)
    doc["dataset"]["fold_users"] = [N_USERS] * 4
    assert load_competition(write(tmp_path, doc)).fold_users == (N_USERS,) * 4
    assert load_competition(write(tmp_path, document(competition))).fold_users is None
    doc["dataset"]["fold_users"] = [N_USERS] * 3
    with pytest.raises(ConfigError, match=r"dataset.fold_users must name one size per fold"):
        load_competition(write(tmp_path, doc))
    doc["dataset"]["fold_users"] = [N_USERS, 0, N_USERS, N_USERS]
    with pytest.raises(ConfigError, match=r"dataset.fold_users must be a non-empty list"):
        load_competition(write(tmp_path, doc))
    # with stated sizes the first trusted row on them fixes the users
    store = open_store(sqlite_url(tmp_path), replace(
        competition, board=BoardSettings(n_boot=200, seed=1), fold_users=(N_USERS,) * 4))
    assert compared_users(store, "public") is None
    sid, doc = upload(store, "Leader", 1, 0.6)
    trust_values(store, sid, doc)
    assert compared_users(store, "public").submission_id == sid
    store.engine.dispose()


def test_untrusted_values_draw_nothing_and_get_no_statistics(tmp_path, competition):
    store = open_store(sqlite_url(tmp_path), replace(
        competition, board=BoardSettings(n_boot=200, seed=1)))
    store.standings_wait = FRESH
    upload(store, "Alone", 1, 0.6)
    board = standings(store)
    assert board["Alone"].left_out == NO_VALUES and board["Alone"].tier is None
    assert cache_of(store).resamples == {}  # nothing allocated for self-reported values
    store.engine.dispose()
