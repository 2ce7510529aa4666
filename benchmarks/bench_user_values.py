"""Per-user values at full scale: the size of an upload's blob and the time to encode, decode
and check it.

Builds the per-user values of a full-scale run (4 folds of ~29.9k test users, k=100) with
realistic distributions: about 5 % hits with ranks skewed to the top of the list, BEING_LESS_WRONG
cosines for the misses, LATENT_DIVERSITY for almost every user, five slices shaped like the
challenge's (countries with most users outside the list, activity quartiles, popularity
bins, genders with some unknown). Prints the base64 blob's size (the bytes an upload adds,
to compare with the server's ``MAX_BODY_BYTES``) and the median of ``--repeat`` timings of
encoding it, decoding it, and the server's whole check (decode and recompute the nine tests
of every fold). Also prints the size per user of a real run of the example competition
(synthetic data at scale "small") when ``--real`` is given, and with ``--board N`` the time
the leaderboard takes to read N teams' values for a board (``Database.phase_user_values`` on
SQLite: cold, every blob read and decoded; again, from memory as far as the server keeps
decoded values). Usage::

    python benchmarks/bench_user_values.py [--users 29900] [--folds 4] [--repeat 3] [--real]
                                           [--board 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a clone, uninstalled

from evaluation.challenge import (  # noqa: E402
    MRED_TESTS,
    FoldUsers,
    UserScores,
    decode_user_values,
    encode_user_values,
    user_values_bytes,
    users_sha256,
)
from evaluation.server.core import MAX_BODY_BYTES  # noqa: E402
from evaluation.server.store import (  # noqa: E402
    DECODED_CACHE_BYTES,
    phase_user_values,
)

K = 100
#: Per slice: the share of users in each group, then IN_MR_ONLY (-1), then LEFT_OUT (-2).
SLICE_SHAPES = {
    "MRED_COUNTRY": [0.16, 0.12, 0.1, 0.08, 0.06, 0.05, 0.04, 0.03, 0.03, 0.03, 0.0, 0.3],
    "MRED_USER_ACTIVITY": [0.25, 0.25, 0.25, 0.25, 0.0, 0.0],
    "MRED_TRACK_POPULARITY": [0.5, 0.35, 0.15, 0.0, 0.0],
    "MRED_ARTIST_POPULARITY": [0.45, 0.4, 0.13, 0.02, 0.0],
    "MRED_GENDER": [0.55, 0.33, 0.02, 0.1, 0.0],
}


def realistic_fold(seed: int, n: int) -> FoldUsers:
    """One fold's per-user values, shaped like a full-scale run's."""
    rng = np.random.default_rng(seed)
    hit = rng.random(n) < 0.05
    ranks = np.where(hit, np.minimum(rng.geometric(0.08, n), K), 0)
    rr = np.zeros(n)
    rr[hit] = 1.0 / ranks[hit]
    blw = np.where(hit | (rng.random(n) < 0.02), np.nan,
                   np.clip(rng.normal(0.3, 0.15, n), -1, 1))
    ld = np.where(rng.random(n) < 0.01, np.nan, rng.normal(0.05, 0.03, n))
    slices = {}
    for test in MRED_TESTS:
        shares = np.array(SLICE_SHAPES[test])
        codes = np.r_[np.arange(len(shares) - 2), -1, -2]
        slices[test] = rng.choice(codes, size=n, p=shares / shares.sum()).astype(np.int32)
    labels = {t: tuple(f"g{i}" for i in range(len(SLICE_SHAPES[t]) - 2)) for t in MRED_TESTS}
    return FoldUsers(UserScores(hit=hit, rr=rr, slices=slices, blw=blw, ld=ld),
                     users_sha256(rng.permutation(10 * n)[:n]), labels)


def median_seconds(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def check(text: str, counts: list[int]) -> None:
    """The server's work on an upload's blob: decode it and recompute every fold's tests."""
    for fold in decode_user_values(text, counts, k=K):
        fold.scores.tests()


def real_bytes_per_user() -> float:
    """Base64 bytes per test user of a real run of the example competition."""
    from evaluation import ChallengeDataset, EvalRSRunner
    from evaluation.baselines import PopularityModel
    from evaluation.runner import run_user_values

    with tempfile.TemporaryDirectory() as results_dir:
        runner = EvalRSRunner(ChallengeDataset(scale="small"), results_dir=results_dir,
                              progress=False, verbose=False, reports=False, n_boot=0)
        result = runner.evaluate(PopularityModel(), model_name="pop")
        blob, _ = run_user_values(result.to_dict(), Path(str(result.path)).parent)
    return len(blob or "") / sum(f["n_users"] for f in result.folds)


def board_seconds(n_teams: int, folds: list[FoldUsers]) -> tuple[float, float]:
    """Seconds to read ``n_teams`` teams' values for a board: cold, then warm."""
    import zlib
    from datetime import datetime, timezone

    from sqlalchemy import create_engine, insert

    from evaluation.server.db import Database, UserValuesRow, upgrade
    from evaluation.server.store._user_values import _CACHE, blob_sha256

    raw = zlib.decompress(user_values_bytes(encode_user_values(folds, K)))
    now = datetime.now(timezone.utc)
    with tempfile.TemporaryDirectory() as folder:
        # a plain engine: SQLite's foreign keys stay off, so no submission rows are needed
        engine = create_engine(f"sqlite:///{folder}/board.db")
        upgrade(engine)
        store = Database(engine)
        rows = []
        for team in range(n_teams):
            # a distinct blob per team (decoded values are kept by content): the team's number
            # in binary as the gender codes (0 or 1) of the last 16 users
            bits = bytes((team >> b) & 1 for b in range(16))
            blob = zlib.compress(raw[:-16] + bits, 1)
            rows.append(dict(submission_id=team + 1, source="upload", private=False,
                             trusted=False, phase="public", run_hash="0" * 64, k=K,
                             n_users=[len(f) for f in folds],
                             users_sha256=[f.users_sha256 for f in folds], blob=blob,
                             blob_sha256=blob_sha256(blob), costs=None, recorded_at=now))
        with engine.begin() as conn:
            conn.execute(insert(UserValuesRow), rows)
        ids = list(range(1, n_teams + 1))
        _CACHE.clear()
        t0 = time.perf_counter()
        phase_user_values(store, "public", ids)
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        phase_user_values(store, "public", ids)
        warm = time.perf_counter() - t0
        engine.dispose()
    return cold, warm


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=29_900)
    parser.add_argument("--folds", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--real", action="store_true")
    parser.add_argument("--board", type=int, default=0, metavar="N")
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest run: checks that the benchmark works, measures nothing")
    args = parser.parse_args(argv)
    if args.smoke:
        args.users, args.repeat, args.board = 1_000, 1, 3
    folds = [realistic_fold(f, args.users) for f in range(args.folds)]
    counts = [args.users] * args.folds
    text = encode_user_values(folds, K)
    users = args.users * args.folds
    print(f"{args.folds} folds x {args.users} users, k={K}: blob {len(text)} bytes of base64 "
          f"({len(text) / 2**20:.2f} MiB, {len(text) / users:.2f} bytes per user); "
          f"MAX_BODY_BYTES {MAX_BODY_BYTES} ({MAX_BODY_BYTES / 2**20:.0f} MiB)")
    print(f"  encode {median_seconds(lambda: encode_user_values(folds, K), args.repeat):.3f} s, "
          f"decode {median_seconds(lambda: decode_user_values(text, counts, k=K), args.repeat):.3f}"
          f" s, server check (decode + tests) "
          f"{median_seconds(lambda: check(text, counts), args.repeat):.3f} s "
          f"(medians of {args.repeat})")
    if args.real:
        per_user = real_bytes_per_user()
        print(f"  a real run (synthetic 'small', popularity): {per_user:.2f} bytes per user, "
              f"{per_user * users / 2**20:.2f} MiB at this scale")
    if args.board:
        cold, warm = board_seconds(args.board, folds)
        print(f"  a board of {args.board} teams' values: {cold:.2f} s cold (read and decode "
              f"every blob), {warm:.3f} s again (decoded values kept in memory up to "
              f"{DECODED_CACHE_BYTES >> 20} MiB; the board keeps replicates instead)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
