"""Top-k from embeddings at full LFM fold scale: each path next to the bare matrix product.

The full fold shape: 29.7k users x 820,998 tracks x 64 dims (float32), k=100, ~230 excluded
training items per user. Sides, run in interleaved rounds (median of ``--rounds`` with min-max):

- ``matmul``: the float32 products ``user_chunk @ item_emb.T`` of the same chunks into one
  reused buffer and nothing else (the hardware's ceiling for any exact top-k);
- ``reference``: the reference NumPy path (whole score matrix per chunk, exclusions set to
  ``-inf``, one selection pass);
- ``numpy``: the blocked kernel (``topk_from_embeddings``' default);
- ``faiss``: ``device="faiss"``, when faiss-cpu is installed.

Every side runs in its own process so that its peak memory (VmHWM) is its own; the results of
``numpy`` and ``faiss`` are checked identical (ids and order) to ``reference``'s. Prints users/s,
the ratio to ``matmul`` and to ``reference``, and the load average. Usage::

    python benchmarks/bench_topk.py [--users 29700] [--items 820998] [--rounds 3]
                                    [--sides matmul,reference,numpy,faiss]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a clone, uninstalled

SIDES = ("matmul", "reference", "numpy", "faiss")


def rss_mib(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def make_case(n_users: int, n_items: int, dim: int, n_excluded: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    user_emb = rng.standard_normal((n_users, dim), dtype=np.float32)
    item_emb = rng.standard_normal((n_items, dim), dtype=np.float32)
    # popularity-skewed training items, ~n_excluded distinct per user
    p = 1.0 / np.arange(1, n_items + 1) ** 0.7
    p /= p.sum()
    cols = rng.choice(n_items, size=(n_users, n_excluded), p=p)
    rows = np.repeat(np.arange(n_users), n_excluded)
    exclude = sp.csr_array((np.ones(rows.size, dtype=np.float32), (rows, cols.ravel())),
                           shape=(n_users, n_items))
    exclude.sum_duplicates()
    return user_emb, item_emb, exclude


def bare_matmul(user_emb: np.ndarray, item_emb: np.ndarray) -> None:
    """The products of the chunks ``topk_from_embeddings`` uses by default, nothing else."""
    from evaluation.topk import DEFAULT_MEMORY_BUDGET

    n_items = item_emb.shape[0]
    batch = max(1, DEFAULT_MEMORY_BUDGET // (n_items * 16))  # the chunk of the default budget
    item_t = np.ascontiguousarray(item_emb.T)
    buffer = np.empty((batch, n_items), dtype=np.float32)
    for start in range(0, len(user_emb), batch):
        chunk = user_emb[start : start + batch]
        np.matmul(chunk, item_t, out=buffer[: len(chunk)])


def child(args) -> None:
    from evaluation.topk import reference_topk, topk_from_embeddings

    user_emb, item_emb, exclude = make_case(args.users, args.items, args.dim, args.excluded)
    if args.side == "faiss":  # import faiss outside the timing
        topk_from_embeddings(user_emb[:1], item_emb[:10], 1, device="faiss")
    base = rss_mib("VmRSS")
    start = time.perf_counter()
    result = None
    if args.side == "matmul":
        bare_matmul(user_emb, item_emb)
    elif args.side == "reference":
        result = reference_topk(user_emb, item_emb, args.k, exclude=exclude).to_numpy()
    else:
        device = "faiss" if args.side == "faiss" else "numpy"
        result = topk_from_embeddings(user_emb, item_emb, args.k, exclude=exclude,
                                      device=device).to_numpy()
    seconds = time.perf_counter() - start
    if args.save and result is not None:
        np.save(args.save, result)
    print(json.dumps({"seconds": seconds, "users_per_s": args.users / seconds,
                      "peak_rss_mib": rss_mib("VmHWM"), "inputs_rss_mib": base,
                      "excluded_per_user": exclude.nnz / args.users}))


def run(side: str, args, save: str = "", fresh: bool = True) -> dict:
    """One run of ``side``: in a fresh process, or (``fresh`` false: the smoke run's later
    sides, whose figures mean nothing) ``child`` in this one."""
    if not fresh:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            child(argparse.Namespace(**{**vars(args), "side": side, "save": save}))
        return json.loads(printed.getvalue().strip().splitlines()[-1])
    cmd = [sys.executable, __file__, "--child", "--side", side, "--users", str(args.users),
           "--items", str(args.items), "--dim", str(args.dim), "--k", str(args.k),
           "--excluded", str(args.excluded), "--save", save]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def faiss_installed() -> bool:
    probe = [sys.executable, "-c", "import faiss"]
    return subprocess.run(probe, capture_output=True).returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=29_700,
                        help="users scored (fewer runs faster, e.g. on a busy machine)")
    parser.add_argument("--items", type=int, default=820_998)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--excluded", type=int, default=230)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sides", default=",".join(SIDES))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--side", default="numpy", help=argparse.SUPPRESS)
    parser.add_argument("--save", default="", help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest run: checks that the benchmark works, measures nothing")
    args = parser.parse_args()
    if args.smoke:
        args.users, args.items, args.excluded, args.rounds = 200, 5_000, 20, 1
    if args.child:
        child(args)
        return

    sides = [s for s in args.sides.split(",") if s]
    unknown = sorted(set(sides) - set(SIDES))
    if unknown:
        parser.error(f"unknown sides {unknown}; choose among {','.join(SIDES)}")
    if "faiss" in sides and not faiss_installed():
        print("faiss-cpu is not installed (make faiss): no faiss side")
        sides.remove("faiss")
    print(f"{args.users} users x {args.items} items x {args.dim} dims float32, k={args.k}, "
          f"{args.rounds} interleaved rounds; load average before: {os.getloadavg()}")
    runs: dict[str, list[dict]] = {side: [] for side in sides}
    with tempfile.TemporaryDirectory(prefix="bench_topk_") as tmp:
        for round_ in range(args.rounds):
            for side in sides:
                save = str(Path(tmp) / f"{side}.npy") if round_ == 0 else ""
                # the smoke run: the first side in a fresh process (a measured run's path),
                # the others in this one (the same ``child``, without an interpreter's start)
                fresh = not args.smoke or (round_ == 0 and side == sides[0])
                runs[side].append(run(side, args, save=save, fresh=fresh))
        results = {side: np.load(Path(tmp) / f"{side}.npy") for side in sides
                   if side != "matmul"}
    identical = {side: bool(np.array_equal(result, results["reference"]))
                 for side, result in results.items() if "reference" in results}
    speed = {side: statistics.median(r["users_per_s"] for r in rs) for side, rs in runs.items()}
    first = next(iter(runs.values()))[0]
    print(f"excluded per user {first['excluded_per_user']:.0f}; inputs alone "
          f"{first['inputs_rss_mib']:.0f} MiB; load average after: {os.getloadavg()}")
    print(f"{'side':<11}{'users/s (min-max)':>24}{'x matmul':>10}{'x reference':>13}"
          f"{'peak RSS MiB':>14}  identical to reference")
    for side, rs in runs.items():
        rates = [r["users_per_s"] for r in rs]
        span = f"{speed[side]:.0f} ({min(rates):.0f}-{max(rates):.0f})"
        to_matmul = f"{speed[side] / speed['matmul']:.2f}" if "matmul" in speed else "-"
        to_ref = f"{speed[side] / speed['reference']:.2f}" if "reference" in speed else "-"
        peak = statistics.median(r["peak_rss_mib"] for r in rs)
        same = {True: "yes", False: "NO"}.get(identical.get(side), "-")
        print(f"{side:<11}{span:>24}{to_matmul:>10}{to_ref:>13}{peak:>14.0f}  {same}")
    if not all(identical.values()):
        sys.exit("a path's result differs from the reference path's")


if __name__ == "__main__":
    main()
