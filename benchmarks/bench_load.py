"""Loading a dataset directory: ``read_tables`` next to a plain pandas/pyarrow reference.

Reads the cached synthetic dataset (generated first if absent) with ``read_tables`` and, as
the reference, the same tables from default parquet files (snappy, dictionary encoding, many
row groups, as ``DataFrame.to_parquet`` writes them) with ``pd.read_parquet``. ``read_tables``
runs twice: as a load usually does (a file whose stat signature is unchanged since it was last
found right is not hashed again) and with ``EVALRS_VERIFY=full`` (every file's sha256 computed
again). Every measurement runs in a fresh process, so peak memory (max RSS) is the load's own;
the three sides run interleaved ``--repeat`` times (medians with min-max). Usage::

    python benchmarks/bench_load.py [--scale full] [--seed 42] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a clone, uninstalled

from benchmarks._here import run_here  # noqa: E402
from evaluation.data._synthetic import synthetic_cache_path  # noqa: E402

_MEASURE = r"""
import json, resource, sys, time
import numpy, pandas, pyarrow, pyarrow.parquet  # imports are not part of the load
ru0 = resource.getrusage(resource.RUSAGE_SELF)
cpu0 = ru0.ru_utime + ru0.ru_stime
t0 = time.perf_counter()
mode, path = sys.argv[1], sys.argv[2]
if mode == "ours":
    from evaluation.data import read_tables
    t = read_tables(path)
    rows = len(t.events)
else:
    import numpy as np, pandas as pd
    from pathlib import Path
    p = Path(path)
    events = pd.read_parquet(p / "events.parquet")
    users = pd.read_parquet(p / "users.parquet")
    tracks = pd.read_parquet(p / "tracks.parquet")
    vectors = np.load(p / "track_vectors.npy")
    rows = len(events)
elapsed = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": elapsed, "cpu": ru.ru_utime + ru.ru_stime - cpu0,
                  "peak": ru.ru_maxrss * 1024, "rows": rows}))
"""

_BASELINE = r"""
import json, resource, sys
import numpy, pandas, pyarrow, pyarrow.parquet  # what every load imports anyway
print(json.dumps({"peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""

_REFERENCE_FILES = r"""
import sys
from pathlib import Path
import numpy as np
from evaluation.data import read_tables
tables, ref = read_tables(sys.argv[1]), Path(sys.argv[2])
tables.events.to_parquet(ref / "events.parquet", index=False)
tables.users.to_parquet(ref / "users.parquet")
tables.tracks.to_parquet(ref / "tracks.parquet")
np.save(ref / "track_vectors.npy", tables.track_vectors.vectors)
"""


def _run(code: str, *args: str, env: dict | None = None) -> dict:
    out = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, check=True,
                         capture_output=True, text=True,
                         env={**os.environ, **(env or {})}).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", default="full")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--smoke", action="store_true",
                    help="the smallest run: checks that the benchmark works, measures nothing")
    args = ap.parse_args()
    if args.smoke:
        args.scale, args.repeat = "tiny", 1

    path = synthetic_cache_path(args.scale, args.seed)
    if not path.is_dir():
        print(f"generating the {args.scale} dataset (seed {args.seed}) into {path} ...")
        t0 = time.perf_counter()
        # the child prints a JSON line, as _run reads one
        _run(f"from evaluation.data import synthetic_tables; "
             f"synthetic_tables({args.scale!r}, {args.seed}); print('{{}}')")
        print(f"  generated in {time.perf_counter() - t0:.1f} s (one process, with the write)")

    # Everything big happens in child processes: a child inherits its parent's peak RSS.
    with tempfile.TemporaryDirectory() as tmp:
        ref = Path(tmp)
        if args.smoke:
            # the smoke run: the reference files and the imports' baseline made in this process
            # (the same code, without two interpreters' starts); the first side stays fresh
            run_here(_REFERENCE_FILES + "print('{}')\n", str(path), tmp)
            base = run_here(_BASELINE)["peak"]
        else:
            subprocess.run([sys.executable, "-c", _REFERENCE_FILES, str(path), tmp], cwd=REPO,
                           check=True)
            base = _run(_BASELINE)["peak"]
        if not args.smoke:  # warm the page cache for both sides
            _run(_MEASURE, "reference", str(ref))
            _run(_MEASURE, "ours", str(path))
        sides = {"read_tables (ours)": ("ours", path, {}),
                 "read_tables, EVALRS_VERIFY=full": ("ours", path, {"EVALRS_VERIFY": "full"}),
                 "pd.read_parquet, default files": ("reference", ref, {})}
        runs: dict[str, list[dict]] = {name: [] for name in sides}
        for rep in range(args.repeat):
            for name, (mode, where, env) in sides.items():
                # the smoke run: the first side in a fresh process (a measured run's path), the
                # others in this one (the same code, without an interpreter's start each)
                fresh = not args.smoke or (rep == 0 and name == next(iter(sides)))
                runs[name].append(_run(_MEASURE, mode, str(where), env=env) if fresh
                                  else run_here(_MEASURE, mode, str(where), env=env))
        rows = runs["read_tables (ours)"][0]["rows"]

    gib = 1024**3
    print(f"\n{args.scale} synthetic, seed {args.seed}: {rows:,} event rows, medians of "
          f"{args.repeat} interleaved fresh processes (min-max); interpreter + imports: "
          f"{base / gib:.2f} GiB; load average {os.getloadavg()[0]:.2f}")
    print(f"{'':34}{'wall s':>18}{'CPU s':>18}{'peak RSS GiB':>20}")
    for name, found in runs.items():
        print(f"{name:34}" + "".join(f"{_spread([r[key] / scale for r in found]):>18}"
                                     for key, scale in (("seconds", 1), ("cpu", 1),
                                                        ("peak", gib))))
    ours, ref = runs["read_tables (ours)"], runs["pd.read_parquet, default files"]
    t_ours, t_ref = (statistics.median(r["seconds"] for r in x) for x in (ours, ref))
    m_ours, m_ref = (statistics.median(r["peak"] for r in x) for x in (ours, ref))
    print(f"\nours {t_ref / t_ours:.1f}x faster than the reference; peak memory "
          f"{m_ref / m_ours:.2f}x lower")


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"

if __name__ == "__main__":
    main()
