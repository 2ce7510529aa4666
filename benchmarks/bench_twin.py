"""How close the synthetic data is to the challenge data (source ``lfm``): schema and shapes.

Compares the synthetic tables with the ``lfm`` source's: the columns, dtypes, index and unknown
codes of every table against the tables the ``lfm`` reading path makes of files in the
challenge's 2022 layout (``_challenge_files.py``) and against the users' columns the harness
declares for ``lfm`` (``evaluation/data/_lfm_columns.py``); then prints the distributions a
model sees: users per play-count band (the bands of a 2022 model that trained one Word2Vec per
band), play counts, rows per user and per track, and the shares of unknown values. Exits 1
when the schema differs. Usage::

    python benchmarks/bench_twin.py [--scale small] [--seed 42]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone, uninstalled
from benchmarks._challenge_files import write_2022
from evaluation.data import Tables, synthetic_tables
from evaluation.data._lfm_columns import LFM_USER_DTYPES, UNKNOWN
from evaluation.data._local import load_challenge_dir

BANDS = (-np.inf, 10, 100, 1_000, np.inf)
BAND_NAMES = ("<= 10", "11-100", "101-1,000", "> 1,000")
QUANTILES = (0.0, 0.01, 0.1, 0.5, 0.9, 0.99, 1.0)


def lfm_layout() -> Tables:
    """The tables the lfm source makes of (small) files in the challenge's 2022 layout."""
    with tempfile.TemporaryDirectory(prefix="bench-twin-") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the hand-written vectors name unknown tracks
        return load_challenge_dir(write_2022(Path(tmp) / "files"), source="lfm")


def schema_differences(synthetic: Tables, lfm: Tables) -> list[str]:
    """Every difference of columns, dtypes and index between the two, one line each."""
    problems = []
    for name in ("events", "users", "tracks"):
        ours, theirs = getattr(synthetic, name), getattr(lfm, name)
        if list(ours.columns) != list(theirs.columns):
            problems.append(f"{name}: columns {list(ours.columns)} != {list(theirs.columns)}")
        for column in theirs.columns.intersection(ours.columns):
            if ours[column].dtype != theirs[column].dtype:
                problems.append(f"{name}.{column}: dtype {ours[column].dtype} != "
                                f"{theirs[column].dtype}")
        if (ours.index.name, ours.index.dtype) != (theirs.index.name, theirs.index.dtype):
            problems.append(f"{name}: index {ours.index.name} {ours.index.dtype} != "
                            f"{theirs.index.name} {theirs.index.dtype}")
    declared = list(LFM_USER_DTYPES)
    if list(synthetic.users.columns) != declared:
        problems.append(f"users: columns differ from the declared lfm columns {declared}")
    for column, dtype in LFM_USER_DTYPES.items():
        if column in synthetic.users and synthetic.users[column].dtype != dtype:
            problems.append(f"users.{column}: dtype {synthetic.users[column].dtype} != "
                            f"declared {dtype}")
    return problems


def unknown_codes(users: pd.DataFrame) -> dict[str, float]:
    """The share of users with each unknown value, as the challenge codes it."""
    return {
        "country missing": users["country"].isna().mean(),
        "country_id == -1": (users["country_id"] == UNKNOWN).mean(),
        "gender missing": users["gender"].isna().mean(),
        "gender_id == -1": (users["gender_id"] == UNKNOWN).mean(),
        "age == -1": (users["age"] == UNKNOWN).mean(),
        "age NaN": users["age"].isna().mean(),
        "a profile statistic NaN": users.select_dtypes("float").isna().any(axis=1).mean(),
    }


def quantile_row(name: str, values) -> str:
    q = np.quantile(np.asarray(values, dtype=np.float64), QUANTILES)
    return f"{name:<28}" + "".join(f"{v:>12,.0f}" for v in q)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", default="small", help="synthetic scale: tiny|small|full")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--smoke", action="store_true",
                    help="the smallest run: checks that the benchmark works, measures nothing")
    args = ap.parse_args()
    if args.smoke:
        args.scale = "tiny"
    t0 = time.perf_counter()
    tables = synthetic_tables(args.scale, args.seed)
    print(f"synthetic {args.scale} seed {args.seed}: {len(tables.users):,} users, "
          f"{len(tables.tracks):,} tracks, {len(tables.events):,} rows "
          f"({time.perf_counter() - t0:.1f} s)")

    problems = schema_differences(tables, lfm_layout())
    print(f"\nschema against the lfm source: {'same' if not problems else 'DIFFERENT'} "
          f"({len(tables.users.columns)} user columns, index user_id "
          f"{tables.users.index.dtype})")
    for line in problems:
        print("  " + line)

    users, ev = tables.users, tables.events
    print("\nunknown values (share of users)")
    for name, share in unknown_codes(users).items():
        print(f"  {name:<26}{share:>8.4f}")

    bands = pd.cut(users["playcount"], BANDS, labels=BAND_NAMES).value_counts(sort=False)
    print("\nusers per play-count band (users.playcount)")
    for band, count in bands.items():
        print(f"  {band:<12}{count:>10,}{count / len(users):>9.2%}")

    print(f"\n{'distribution':<28}" + "".join(f"{'q' + format(q, 'g'):>12}" for q in QUANTILES))
    print(quantile_row("users.playcount", users["playcount"]))
    print(quantile_row("users.cnt_listeningevents", users["cnt_listeningevents"]))
    print(quantile_row("rows per user", ev.groupby("user_id").size()))
    print(quantile_row("plays per user (events)", ev.groupby("user_id")["user_track_count"].sum()))
    print(quantile_row("rows (users) per track", ev.groupby("track_id").size()))
    print(quantile_row("user_track_count", ev["user_track_count"]))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
