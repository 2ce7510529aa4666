"""Top-k from embeddings at full LFM fold scale, and next to a dense-mask reference.

1. The full fold shape: 29.7k users x 820,998 tracks x 64 dims (float32), k=100, ~230 excluded
   training items per user; reports wall time, users/s and the peak resident memory of the
   process (target: within 2 GiB).
2. A size whose full score matrix fits (default 2,000 x 100,000): the chunked path next to the
   dense reference (whole score matrix, a dense boolean mask set to -inf, ``np.argpartition`` +
   sort), both results checked equal; prints the time and memory ratios. Torch CPU is added when
   torch is installed, CUDA when a GPU is visible.

Each measurement runs in its own process so that peak memory is its own. Usage::

    python benchmarks/bench_topk.py [--users 29700] [--items 820998] [--skip-full]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a clone, uninstalled


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


def dense_reference(user_emb, item_emb, k, exclude) -> np.ndarray:
    scores = user_emb @ item_emb.T
    scores[exclude.toarray() != 0] = -np.inf
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1, kind="stable")
    return np.take_along_axis(top, order, axis=1)


def child(args) -> None:
    from evaluation.topk import topk_from_embeddings

    user_emb, item_emb, exclude = make_case(args.users, args.items, args.dim, args.excluded)
    if args.device != "numpy":  # import torch and touch the device outside the timing
        topk_from_embeddings(user_emb[:1], item_emb[:10], 1, device=args.device)
    base = rss_mib("VmRSS")
    start = time.perf_counter()
    if args.mode == "dense":
        result = dense_reference(user_emb, item_emb, args.k, exclude)
    else:
        result = topk_from_embeddings(user_emb, item_emb, args.k, exclude=exclude,
                                      device=args.device).to_numpy()
    seconds = time.perf_counter() - start
    if args.save:
        np.save(args.save, result)
    print(json.dumps({"seconds": seconds, "users_per_s": args.users / seconds,
                      "peak_rss_mib": rss_mib("VmHWM"), "inputs_rss_mib": base,
                      "excluded_per_user": exclude.nnz / args.users}))


def run(mode: str, users: int, items: int, args, device: str = "numpy", save: str = "") -> dict:
    cmd = [sys.executable, __file__, "--child", "--mode", mode, "--users", str(users),
           "--items", str(items), "--dim", str(args.dim), "--k", str(args.k),
           "--excluded", str(args.excluded), "--device", device, "--save", save]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=29_700)
    parser.add_argument("--items", type=int, default=820_998)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--excluded", type=int, default=230)
    parser.add_argument("--ref-users", type=int, default=2_000)
    parser.add_argument("--ref-items", type=int, default=100_000)
    parser.add_argument("--skip-full", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="chunked", help=argparse.SUPPRESS)
    parser.add_argument("--device", default="numpy", help=argparse.SUPPRESS)
    parser.add_argument("--save", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return

    devices = ["numpy"]
    try:
        import torch

        devices.append("cpu")
        if torch.cuda.is_available():
            devices.append("cuda")
    except ImportError:
        pass

    header = f"{'case':<44}{'time (s)':>10}{'users/s':>10}{'peak RSS (MiB)':>16}"
    print(header)
    if not args.skip_full:
        full = run("chunked", args.users, args.items, args)
        label = f"full fold {args.users}x{args.items}x{args.dim} k={args.k} numpy"
        print(f"{label:<44}{full['seconds']:>10.1f}{full['users_per_s']:>10.0f}"
              f"{full['peak_rss_mib']:>16.0f}")
        print(f"  inputs alone: {full['inputs_rss_mib']:.0f} MiB; excluded per user "
              f"{full['excluded_per_user']:.0f}; within 2 GiB: {full['peak_rss_mib'] <= 2048}")
    tmp = Path("/tmp") / f"bench_topk_{__import__('os').getpid()}"
    tmp.mkdir(exist_ok=True)
    ref = run("dense", args.ref_users, args.ref_items, args, save=str(tmp / "dense.npy"))
    size = f"{args.ref_users}x{args.ref_items}"
    print(f"{'dense-mask reference ' + size:<44}{ref['seconds']:>10.2f}"
          f"{ref['users_per_s']:>10.0f}{ref['peak_rss_mib']:>16.0f}")
    expected = np.load(tmp / "dense.npy")
    user_emb, item_emb, _ = make_case(args.ref_users, args.ref_items, args.dim, args.excluded)
    for device in devices:
        got = run("chunked", args.ref_users, args.ref_items, args, device=device,
                  save=str(tmp / f"{device}.npy"))
        result = np.load(tmp / f"{device}.npy")
        same = float((result == expected).mean())
        # float32 products differ in the last bit between BLAS block sizes, which can swap
        # near-tied items: compare the lists' exact (float64) scores too.
        rescore = [np.einsum("ud,ukd->uk", user_emb.astype(np.float64),
                             item_emb[ids].astype(np.float64)) for ids in (result, expected)]
        close = bool(np.allclose(*rescore, rtol=0, atol=1e-4))
        print(f"{'chunked ' + device + ' ' + size:<44}{got['seconds']:>10.2f}"
              f"{got['users_per_s']:>10.0f}{got['peak_rss_mib']:>16.0f}   "
              f"speed x{ref['seconds'] / got['seconds']:.2f}, memory "
              f"x{ref['peak_rss_mib'] / got['peak_rss_mib']:.2f} vs dense; identical slots "
              f"{same:.4%}, same scores (1e-4): {close}")
    for path in tmp.iterdir():
        path.unlink()
    tmp.rmdir()


if __name__ == "__main__":
    main()
