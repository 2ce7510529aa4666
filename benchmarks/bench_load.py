"""Loading a dataset directory: ``read_tables`` next to a plain pandas/pyarrow reference.

Reads the cached synthetic dataset (generated first if absent) with ``read_tables`` and, as
the reference, the same tables from default parquet files (snappy, dictionary encoding, many
row groups, as ``DataFrame.to_parquet`` writes them) with ``pd.read_parquet``. Every
measurement runs in a fresh process, so peak memory (max RSS) is the load's own; the best of
``--repeat`` runs is reported. Usage::

    python benchmarks/bench_load.py [--scale full] [--seed 42] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a clone, uninstalled

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


def _run(code: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", default="full")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    path = synthetic_cache_path(args.scale, args.seed)
    if not path.is_dir():
        print(f"generating the {args.scale} dataset (seed {args.seed}) into {path} ...")
        t0 = time.perf_counter()
        _run(f"from evaluation.data import synthetic_tables; "
             f"synthetic_tables({args.scale!r}, {args.seed})")
        print(f"  generated in {time.perf_counter() - t0:.1f} s (one process, with the write)")

    # Everything big happens in child processes: a child inherits its parent's peak RSS.
    with tempfile.TemporaryDirectory() as tmp:
        ref = Path(tmp)
        subprocess.run([sys.executable, "-c", _REFERENCE_FILES, str(path), tmp], cwd=REPO,
                       check=True)
        base = _run(_BASELINE)["peak"]
        _run(_MEASURE, "reference", str(ref))  # warm the page cache for both sides
        _run(_MEASURE, "ours", str(path))
        ours = [_run(_MEASURE, "ours", str(path)) for _ in range(args.repeat)]
        theirs = [_run(_MEASURE, "reference", str(ref)) for _ in range(args.repeat)]
        rows = ours[0]["rows"]

    def best(runs, key):
        return min(r[key] for r in runs)

    gib = 1024**3
    t_ours, t_ref = best(ours, "seconds"), best(theirs, "seconds")
    c_ours, c_ref = best(ours, "cpu"), best(theirs, "cpu")
    m_ours, m_ref = best(ours, "peak"), best(theirs, "peak")
    print(f"\n{args.scale} synthetic, seed {args.seed}: {rows:,} event rows, "
          f"best of {args.repeat} fresh processes (interpreter + imports: {base / gib:.2f} GiB)")
    print(f"{'':34}{'wall s':>10}{'CPU s':>10}{'peak RSS':>12}")
    print(f"{'read_tables (ours)':34}{t_ours:>10.2f}{c_ours:>10.2f}{m_ours / gib:>9.2f} GiB")
    print(f"{'pd.read_parquet, default files':34}{t_ref:>10.2f}{c_ref:>10.2f}"
          f"{m_ref / gib:>9.2f} GiB")
    print(f"\nspeed-up {t_ref / t_ours:.1f}x wall, {c_ref / c_ours:.1f}x CPU; "
          f"peak memory {m_ref / m_ours:.2f}x lower")


if __name__ == "__main__":
    main()
