"""``report``'s work: load the runs and write their report.

Imported when the command runs (``evaluation.cli._commands``): the other commands and
``--help`` do without ``evaluation.analysis`` (pandas, Jinja2, the figures).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from evaluation.analysis import load_results, write_report
from evaluation.errors import ConfigError


def run(args: argparse.Namespace) -> int:
    """Write the report of ``args``; return the exit status."""
    paths = [Path(r) for r in args.runs]
    if args.baseline is not None:
        base = Path(args.baseline)
        keys = [_key(p) for p in paths]
        if _key(base) in keys:
            baseline = keys.index(_key(base))
        else:
            paths.insert(0, base)
            baseline = 0
    else:
        baseline = None
    if baseline is not None and len(paths) < 2:
        raise ConfigError("--baseline needs another run to compare with it; pass two or more "
                          "RUN_DIRs.")
    if len(set(map(_key, paths))) != len(paths):
        raise ConfigError(f"the same run is given twice in {[str(p) for p in paths]}; pass each "
                          f"run once.")
    runs = [load_results(p) for p in paths]
    path = write_report(runs, args.out, baseline=baseline, n_boot=args.n_boot, seed=args.seed)
    print(f"Report: {path}")
    print(f"Figures: {path.parent}")
    return 0


def _key(path: Path) -> Path:
    """The run directory ``path`` names (a results.json names its folder), resolved."""
    path = path.resolve()
    return path.parent if path.name == "results.json" else path
