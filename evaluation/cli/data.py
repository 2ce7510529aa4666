"""``python -m evaluation data generate|info|folds``: make, describe and export datasets/folds."""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from evaluation._util.atomic import atomic_path, write_json
from evaluation._version import __version__
from evaluation.contract import FOLD_PARAMS_KEY
from evaluation.data import synthetic_tables, write_tables
from evaluation.dataset import ChallengeDataset
from evaluation.errors import ConfigError
from evaluation.splits import DEFAULT_SEED, SAMPLERS, SPLITS


def register(subparsers) -> None:
    parser = subparsers.add_parser("data", help="generate, describe or export datasets and folds",
                                   description="Generate, describe or export datasets and folds.")
    sub = parser.add_subparsers(dest="data_command", required=True, metavar="ACTION")

    gen = sub.add_parser("generate", help="write a synthetic dataset as a dataset directory",
                         description="Write a synthetic dataset (events, users, tracks, track "
                                     "vectors) as a dataset directory: the events a .npy file "
                                     "per column, users and tracks as parquet.")
    gen.add_argument("--scale", default="small", help="tiny | small | full (default: small)")
    gen.add_argument("--data-seed", type=int, default=None,
                     help=f"seed of the synthetic generator (default: {DEFAULT_SEED})")
    gen.add_argument("--out", required=True, type=Path, help="output directory")
    gen.set_defaults(func=_generate)

    info = sub.add_parser("info", help="row counts, users, tracks and per-fold statistics",
                          description="Describe a dataset and the folds it would be cut into.")
    _add_source_args(info)
    _add_fold_args(info)
    info.add_argument("--no-folds", action="store_true", help="skip the per-fold statistics")
    info.set_defaults(func=_info)

    folds = sub.add_parser("folds", help="write each fold's train/test sets as parquet",
                           description="Write each fold's train and test sets as parquet files, "
                                       "plus manifest.json with the fold parameters and the "
                                       "dataset fingerprint, so other tools use the same folds.")
    _add_source_args(folds)
    _add_fold_args(folds)
    folds.add_argument("--out", required=True, type=Path, help="output directory")
    folds.set_defaults(func=_folds)


def _add_source_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", nargs="?", default="synthetic",
                        help="synthetic (default) | lfm | a directory | movielens:PATH")
    parser.add_argument("--scale", default="small",
                        help="synthetic scale: tiny | small | full (default: small)")
    parser.add_argument("--data-seed", type=int, default=DEFAULT_SEED,
                        help=f"seed of the synthetic generator (default: {DEFAULT_SEED})")


def _add_fold_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED,
                        help=f"fold seed (default: {DEFAULT_SEED})")
    parser.add_argument("--num-folds", type=int, default=4, help="number of folds (default: 4)")
    parser.add_argument("--frac", type=float, default=0.25,
                        help="share of users per fold (default: 0.25)")
    parser.add_argument("--k-core", type=int, default=10, help="k of the k-core (default: 10)")
    parser.add_argument("--max-rounds", type=int, default=10,
                        help="most k-core rounds (default: 10)")
    parser.add_argument("--sampler", default="pandas", choices=SAMPLERS,
                        help="pandas: the 2022 folds exactly (default); generator: vectorised")
    parser.add_argument("--split", default="bootstrap", choices=SPLITS,
                        help="bootstrap: random target per user (default); last: latest event")


def _dataset(args: argparse.Namespace) -> ChallengeDataset:
    """The dataset and folds that the source and fold options describe."""
    return ChallengeDataset(
        args.source, scale=args.scale, data_seed=args.data_seed, seed=args.seed,
        num_folds=args.num_folds, frac=args.frac, k_core=args.k_core,
        max_rounds=args.max_rounds, sampler=args.sampler, split=args.split,
    )


def _generate(args: argparse.Namespace) -> int:
    seed = DEFAULT_SEED if args.data_seed is None else args.data_seed
    tables = synthetic_tables(args.scale, seed)
    write_tables(tables, args.out)
    print(f"wrote synthetic scale={args.scale} seed={seed} to {args.out}: "
          f"{len(tables.events):,} events, {len(tables.users):,} users, "
          f"{len(tables.tracks):,} tracks")
    return 0


def _info(args: argparse.Namespace) -> int:
    # rich loads only for the one command that draws tables, not at CLI start-up
    from rich.console import Console
    from rich.table import Table

    ds = _dataset(args)
    console = Console()
    events = ds.df_events
    summary = Table(title=f"dataset {ds.tables.source or args.source}", show_header=False)
    summary.add_column("what")
    summary.add_column("value", justify="right")
    per_user = events.groupby("user_id", sort=False).size()
    per_track = events.groupby("track_id", sort=False).size()
    rows: list[tuple[str, Any]] = [
        ("events (user-track rows)", f"{len(events):,}"),
        ("users (table / in events)", f"{len(ds.df_users):,} / {len(per_user):,}"),
        ("tracks (table / in events)", f"{len(ds.df_tracks):,} / {len(per_track):,}"),
        ("rows per user (median / mean / max)",
         f"{per_user.median():.0f} / {per_user.mean():.1f} / {per_user.max():,}"),
        ("users per track (median / mean / max)",
         f"{per_track.median():.0f} / {per_track.mean():.1f} / {per_track.max():,}"),
    ]
    vectors = ds.track_vectors
    rows.append(("track vectors", f"{len(vectors):,} x {vectors.dim}" if vectors else "none"))
    rows.append(("fingerprint", ds.fingerprint[:16]))
    for what, value in rows:
        summary.add_row(what, str(value))
    console.print(summary)
    if not args.no_folds:
        stats = ds.fold_statistics()
        params = ", ".join(f"{k}={v}" for k, v in ds.fold_params.items() if k != "protocol")
        table = Table(title=f"folds ({params})")
        table.add_column("fold", justify="right", no_wrap=True, min_width=4)
        for col in stats.columns:
            table.add_column(_LABELS.get(col, col), justify="right", no_wrap=True)
        for fold, row in stats.iterrows():
            table.add_row(str(fold), *(_fmt(v) for v in row.tolist()))
        console.print(table)
    return 0


_LABELS = {"sampled_users": "sampled", "test_users": "test users", "train_rows": "train rows",
           "kcore_rounds": "rounds", "kcore_converged": "k-core", "train_tracks": "tracks",
           "train_rows_per_user": "rows/user"}


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _folds(args: argparse.Namespace) -> int:
    out: Path = args.out
    stale = _check_out_dir(out)  # before any computation
    ds = _dataset(args)
    files = []
    for fold in ds.compute_folds():
        for part, frame in (("train", ds.get_train_set(fold.index)),
                            ("test", ds.get_test_set(fold.index))):
            name = f"fold_{fold.index}_{part}.parquet"
            with atomic_path(out / name, suffix=".parquet") as tmp:
                pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp)
            files.append({"fold": fold.index, "part": part, "file": name, "rows": len(frame)})
        print(f"fold {fold.index}: {fold.n_test_users:,} test users, "
              f"{len(fold.train_rows):,} train rows")
    manifest = {
        "source": ds.tables.source or str(args.source),
        "fingerprint": ds.fingerprint,
        FOLD_PARAMS_KEY: ds.fold_params,
        "harness_version": __version__,
        "folds": [f.stats() for f in ds.compute_folds()],
        "files": files,
    }
    manifest["written_by"] = _WRITER
    write_json(out / "manifest.json", manifest)
    # Fold files an earlier run wrote here and this one did not (e.g. fold_3_* after a 4-fold
    # run, re-run with 3 folds) would pass for folds of this run: remove them.
    removed = sorted(stale - {f["file"] for f in files})
    for name in removed:
        (out / name).unlink(missing_ok=True)
    print(f"wrote {len(files)} files and manifest.json to {out}"
          + (f"; removed {len(removed)} stale fold files of an earlier run" if removed else ""))
    return 0


_WRITER = "python -m evaluation data folds"


def _check_out_dir(out: Path) -> set[str]:
    """Refuse an ``--out`` that cannot or must not hold the folds; return the fold files an
    earlier run of this command recorded in its manifest (to remove what this run does not
    rewrite). Raises ConfigError (exit 2) before any fold is computed."""
    for parent in [out, *out.parents]:
        if parent.exists() and not parent.is_dir():
            raise ConfigError(f"--out {str(out)!r}: {str(parent)!r} is a file, not a directory. "
                              "Fix: pass a new or empty directory")
        if parent.exists():
            break
    if not out.exists():
        try:
            out.mkdir(parents=True)
        except OSError as exc:
            raise ConfigError(f"--out {str(out)!r}: cannot create the directory ({exc}). Fix: "
                              "pass a writable location") from None
        return set()
    try:  # a read-only directory fails here, not after the folds are computed
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as exc:
        raise ConfigError(f"--out {str(out)!r}: the directory is not writable ({exc}). Fix: "
                          "pass a writable directory") from None
    entries = sorted(os.listdir(out))
    if not entries:
        return set()
    manifest = out / "manifest.json"
    recorded = None
    if manifest.is_file():
        try:
            data = json.loads(manifest.read_text())
            if data.get("written_by") == _WRITER:
                recorded = {f["file"] for f in data.get("files", [])
                            if isinstance(f, dict) and isinstance(f.get("file"), str)
                            and "/" not in f["file"] and f["file"].startswith("fold_")}
        except (OSError, ValueError, AttributeError, TypeError):
            recorded = None
    if recorded is None:
        more = " ..." if len(entries) > 5 else ""
        raise ConfigError(f"--out {str(out)!r}: the directory is not empty and was not written "
                          f"by this command (found {entries[:5]}{more}). Fix: pass a new or "
                          "empty directory, or the folder of an earlier 'data folds' run to "
                          "replace its folds")
    others = [e for e in entries if e != "manifest.json" and e not in recorded]
    if others:
        raise ConfigError(f"--out {str(out)!r}: holds files an earlier 'data folds' run did not "
                          f"write: {others[:5]}. Fix: move them away or pass another directory")
    return recorded
