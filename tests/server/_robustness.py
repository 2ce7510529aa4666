"""Helpers of the tests of the alternative protocols on the server: a team's per-user values
under an alternative, and a reproduction's report that carries its alternatives' results."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from evaluation.challenge import encode_user_values
from evaluation.server.core import RobustnessProtocol
from tests.server._helpers import fold_tests
from tests.server._user_values import K, synthetic_fold

#: Three declared protocols: another fold seed, a global time cut and a private fold seed.
PROTOCOLS = (RobustnessProtocol(name="seed-7", kind="fold_seed", seed=7),
             RobustnessProtocol(name="cut-2018", kind="global_time",
                                cut=datetime(2018, 1, 1, tzinfo=timezone.utc)),
             RobustnessProtocol(name="secret", kind="fold_seed", seed=9, private=True))


def alternative_blob(seed: int, hit_rate: float, sizes=(80, 90)) -> str:
    """A team's per-user values under an alternative: folds of other users than the
    official ones (the same users for every team)."""
    return encode_user_values([synthetic_fold(seed * 10 + f, n, hit_rate=hit_rate)
                               for f, n in enumerate(sizes)], K)


def reproduction_report(doc: dict, alternatives: list[dict]) -> bytes:
    """The report of a reproduction of ``doc`` that reproduced every fold test, with the
    results under the alternatives."""
    table = [{"test": t, "fold": i, "uploaded": v, "reproduced": v, "difference": 0.0,
              "within": True}
             for i, tests in enumerate(fold_tests(doc)) for t, v in tests.items()]
    return json.dumps({"verdict": "reproduced", "private": False, "table": table,
                       "log_tail": "", "fingerprint_matches": True,
                       "harness_version": "0.1.0", "alternatives": alternatives}).encode()
