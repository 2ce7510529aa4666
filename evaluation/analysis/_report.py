"""The report of one or more runs: one self-contained HTML file and the same figures as PNGs.

The HTML embeds its images as ``data:`` URIs and loads nothing else, so it can be mailed or
attached as it is. Every string that comes from a run (model names, run ids, group labels) is
escaped. With several runs the report also compares them to a baseline (:func:`compare`).
Every file is written atomically; the same runs give the same bytes (no timestamps).
"""

from __future__ import annotations

import base64
import html
import math
import os
import re
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from string import Template

import pandas as pd

from evaluation._util import atomic as _atomic
from evaluation.analysis._compare import compare, left_out_note
from evaluation.analysis._groups import slice_table
from evaluation.analysis._plots import (
    RunData,
    draw_score,
    draw_slices,
    figure_replicates,
    forest_plot,
    interval_level,
    plot_tests,
    png_bytes,
    run_data,
)
from evaluation.analysis._results import load_results
from evaluation.analysis._tiers import standings_heading
from evaluation.challenge import LEADERBOARD_TESTS
from evaluation.contract import params_text, run_params
from evaluation.errors import ConfigError

#: The report's file name inside the output directory.
REPORT_FILE = "report.html"


def write_report(runs, out: str | os.PathLike | None = None, *, baseline=None,
                 n_boot: int | None = None, seed: int | None = None) -> Path:
    """Write ``report.html`` and the figures' PNGs of one run, or of several and their comparison.

    Parameters
    ----------
    runs : LoadedRun, path, or a sequence of them
        The runs (``load_results`` results or run directories).
    out : str or os.PathLike, optional
        Output directory (created if missing); default ``<first run>/report``.
    baseline : LoadedRun, path or int, optional
        With several runs, the run the others are compared to (default: the first).
    n_boot, seed : int, optional
        Replicates and seed of the figures' bootstrap (default: each run's own settings, which
        repeat the run's resamples). With several runs they are also the comparison's.

    Returns
    -------
    Path
        The path of ``report.html``.

    Raises
    ------
    ConfigError
        When a run cannot be read, the runs cannot be compared, or ``out`` is not writable.
    """
    many = isinstance(runs, Sequence) and not isinstance(runs, (str, bytes))
    loaded = [_load(r) for r in (runs if many else [runs])]
    if not loaded:
        raise ConfigError("write_report needs at least one run, got none.")
    data = [run_data(r) for r in loaded]
    out = Path(out) if out is not None else _default_out(data[0])
    if out.exists() and not out.is_dir():
        raise ConfigError(f"report output {str(out)!r} is a file, not a directory; pass --out "
                          f"with a directory.")
    # the folder first: a place the report cannot be written is refused before the seconds
    # the figures take to draw
    _writing(out, out.mkdir, parents=True, exist_ok=True)
    files: dict[str, bytes] = {}
    sections = []
    for i, d in enumerate(data):
        prefix = "" if len(data) == 1 else f"{i + 1}_{_safe(d.run_id)}_"
        sections.append(_run_section(d, prefix, files, n_boot, seed))
    if len(loaded) > 1:
        sections.insert(0, _comparison_section(loaded, baseline, files, n_boot, seed))
    text = _page(data, sections)
    for name, content in files.items():
        _writing(out, _atomic.write_bytes, out / name, content)
    _writing(out, _atomic.write_text, out / REPORT_FILE, text)
    return out / REPORT_FILE


def _writing(out: Path, write: Callable[..., object], *args: object, **kwargs: object) -> None:
    """``write(*args, **kwargs)``, an OSError told as the report's output that cannot be written."""
    try:
        write(*args, **kwargs)
    except OSError as exc:
        raise ConfigError(f"cannot write the report into {str(out)!r} "
                          f"({exc.strerror or exc}); pass --out with a writable "
                          f"directory.") from exc


def _load(run):
    """``run`` loaded (a path is read with ``load_results``)."""
    return load_results(run) if isinstance(run, (str, os.PathLike)) else run


def _default_out(data: RunData) -> Path:
    """``<run dir>/report``; a run without a directory needs an explicit one."""
    if data.run_dir is None:
        raise ConfigError("write_report: the run has no directory; pass out=DIR.")
    return Path(data.run_dir) / "report"


def _safe(name: str) -> str:
    """``name`` reduced to characters safe in a file name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:80] or "run"


def _e(value) -> str:
    """``value`` as escaped HTML text."""
    return html.escape(str(value), quote=True)


def _num(value, digits: int = 4) -> str:
    """A number for a table cell: 4 significant digits, "n/a" when absent."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) \
            or math.isnan(value):
        return "n/a"
    return f"{value:.{digits}g}"


def _image(files: dict[str, bytes], name: str, fig, alt: str) -> str:
    """Render ``fig`` into ``files[name]`` and return an ``<img>`` with it as a data URI."""
    png = png_bytes(fig)
    files[name] = png
    uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    return f'<p><img src="{uri}" alt="{_e(alt)}"></p>'


# --------------------------------------------------------------------------- one run


def _run_section(data: RunData, prefix: str, files: dict[str, bytes], n_boot, seed) -> str:
    """The HTML of one run: its table of tests and its three figures."""
    parts = [f"<h2>{_e(data.label)} <span class='note'>run {_e(data.run_id)}</span></h2>",
             _run_facts(data), "<h3>The nine leaderboard tests</h3>", _tests_table(data),
             _image(files, f"{prefix}tests.png", plot_tests(data),
                    f"{data.name}: the nine tests per fold and overall")]
    folds = data.results.get("folds") or []
    if not folds:
        parts.append("<p class='note'>The run has no folds: no per-user figures.</p>")
        return "\n".join(parts)
    reps = figure_replicates(data, n_boot, seed)
    level = interval_level(data, None)
    parts += ["<h3>Miss rate per group</h3>",
              "<p class='note'>Each group's miss rate (mean over the folds where it has test "
              "users) with a percentile bootstrap interval over test users within folds; the "
              "dashed line is all users of the slice. A group whose interval lies wholly above "
              "it is one the model fails more often.</p>"]
    try:
        parts.append(_image(files, f"{prefix}slices.png", draw_slices(data, reps, level),
                            f"{data.name}: miss rate per slice group"))
        parts.append(_slices_table(slice_table(reps, level)))
    except ConfigError as exc:
        parts.append(f"<p class='note'>{_e(exc)}</p>")
    parts += ["<h3>Bootstrap distribution of the score</h3>",
              _image(files, f"{prefix}score_distribution.png", draw_score(data, reps),
                     f"{data.name}: bootstrap distribution of the score")]
    return "\n".join(parts)


def _run_facts(data: RunData) -> str:
    """A short list of what the run is: scores, folds, seed, harness, eligibility."""
    r = data.results
    ci = data.intervals
    flagged = set(ci.get("bias_dominated", []))
    params = params_text(run_params(r))
    facts = [("model class", (r.get("model") or {}).get("class")),
             ("parameters", params or "none recorded"),
             ("leaderboard score", _with_interval(r.get("phase2_score"), ci.get("phase2_score"),
                                                  "phase2_score" in flagged)),
             ("phase-1 score", _with_interval(r.get("phase1_score"), ci.get("phase1_score"),
                                              "phase1_score" in flagged)),
             ("folds", len(r.get("folds") or [])), ("seed", r.get("seed")),
             ("users per fold", "all" if r.get("limit") == 0 else r.get("limit")),
             ("k", r.get("k")), ("harness", r.get("harness_version")),
             ("run hash", str(r.get("run_hash", ""))[:16]),
             ("references", (r.get("references") or {}).get("note"))]
    rows = "".join(f"<tr><th>{_e(k)}</th><td class='text'>{_e(v)}</td></tr>" for k, v in facts)
    return f"<table>{rows}</table>"


def _with_interval(value, interval, unreliable: bool = False) -> str:
    """``value [low, high]`` (the interval when there is one, flagged when unreliable)."""
    if value is None:
        return "n/a"
    if not interval:
        return _num(value)
    return (_num(value) + f" [{_num(interval[0])}, {_num(interval[1])}]"
            + (" (interval unreliable: resampling bias exceeds the spread)" if unreliable
               else ""))


def _tests_table(data: RunData) -> str:
    """The table of the nine tests: mean, 95% interval and each fold's value."""
    folds = data.results.get("folds") or []
    mean = data.results["aggregate"]["mean"]
    ci = data.intervals
    flagged = set(ci.get("bias_dominated", []))
    level = ci.get("level", 0.95)
    head = "".join(f"<th>fold {_e(f['fold'])}</th>" for f in folds)
    rows = []
    for t in LEADERBOARD_TESTS:
        interval = (ci.get("tests") or {}).get(t)
        cells = [_num(mean.get(t)),
                 f"[{_num(interval[0])}, {_num(interval[1])}]" + (" *" if t in flagged else "")
                 if interval else "n/a",
                 *(_num(f["tests"].get(t)) for f in folds)]
        rows.append(f"<tr><td>{_e(t)}</td>" + "".join(f"<td>{_e(c)}</td>" for c in cells)
                    + "</tr>")
    note = ("<p class='note'>* resampling bias exceeds the spread (small groups): the interval "
            "is unreliable.</p>" if flagged & set(LEADERBOARD_TESTS) else "")
    return (f"<table><thead><tr><th>test</th><th>mean</th><th>{level:.0%} interval</th>{head}"
            f"</tr></thead><tbody>{''.join(rows)}</tbody></table>{note}")


def _slices_table(table: pd.DataFrame) -> str:
    """The per-group miss rates as a collapsed HTML table."""
    rows = "".join(
        f"<tr><td>{_e(r.test)}</td><td class='text'>{_e(r.label)}</td><td>{r.n_users}</td>"
        f"<td>{_num(r.miss_rate)}</td><td>[{_num(r.ci_low)}, {_num(r.ci_high)}]</td></tr>"
        for r in table.itertuples())
    return ("<details><summary>Table of the miss rates per group</summary><table><thead><tr>"
            "<th>test</th><th>group</th><th>test users</th><th>miss rate</th><th>interval</th>"
            f"</tr></thead><tbody>{rows}</tbody></table></details>")


# --------------------------------------------------------------------------- comparison


def _comparison_section(loaded: list, baseline, files: dict[str, bytes], n_boot,
                        seed) -> str:
    """The HTML of the comparison: its forest plot and its table."""
    kwargs = {k: v for k, v in (("n_boot", n_boot), ("seed", seed)) if v is not None}
    comparison = compare(loaded, baseline=0 if baseline is None else baseline, **kwargs)
    frame = comparison.to_frame()
    family = getattr(comparison, "family", "")
    parts = ["<h2>Comparison with the baseline</h2>",
             f"<p class='note'>Differences are model minus baseline (every test: higher is "
             f"better), paired over the same test users. {_e(family)}</p>",
             _image(files, "forest.png", forest_plot(comparison),
                    "differences to the baseline per test"),
             _comparison_table(frame)]
    board = getattr(comparison, "standings", None)
    if board:
        parts += ["<h3>Tiers and rank intervals</h3>",
                  f"<p class='note'>{_e(standings_heading(board))}</p>",
                  _standings_table(board, {r.run_id: r.label
                                           for r in (comparison.baseline, *comparison.runs)})]
    left_out = getattr(comparison, "left_out", None)
    if left_out:
        parts.append(f"<p class='note'>{_e(left_out_note(left_out))}</p>")
    return "\n".join(parts)


def _standings_table(board: dict, labels: dict[str, str]) -> str:
    """The runs in board order: tier, place, rank interval, run and score."""
    rows = []
    for row in board["rows"]:
        best, worst = row["rank_interval"]
        ranks = str(best) if best == worst else f"{best}-{worst}"
        label = labels.get(row["run_id"], row["run_id"])
        rows.append(f"<tr><td>{row['tier']}</td><td>{row['place']}</td><td>{ranks}</td>"
                    f"<td class='text'>{_e(label)} [{_e(row['run_id'])}]</td>"
                    f"<td>{_e(_num(row['score']))}</td></tr>")
    return ("<table class='standings'><thead><tr><th>tier</th><th>place</th><th>ranks</th>"
            f"<th>run</th><th>{_e(board['score'])}</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _comparison_table(frame: pd.DataFrame) -> str:
    """The comparison's rows as an HTML table (significant rows in bold)."""
    columns = [c for c in ("model", "test", "estimate", "baseline_estimate", "difference",
                           "ci_low", "ci_high", "p_bootstrap", "p_permutation", "p", "p_holm",
                           "p_bh", "significant") if c in frame.columns]
    # the first column says which run a row is: its name, parameters and run id
    frame = frame.assign(run=[_row_run(r) for r in frame.to_dict("records")])
    columns = ["run", *columns]
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    rows = []
    for r in frame[columns].to_dict("records"):
        cells = "".join(
            f"<td class='text'>{_e(r[c])}</td>" if c in ("run", "model", "test") else
            f"<td>{'yes' if r[c] else 'no'}</td>" if c == "significant" else
            f"<td>{_e(_num(r[c]))}</td>" for c in columns)
        css = " class='significant'" if r.get("significant") else ""
        rows.append(f"<tr{css}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


# --------------------------------------------------------------------------- the page


def _row_run(row: dict) -> str:
    """The run of a comparison row: its name and parameters, and its run id."""
    name, params = row.get("name"), row.get("params")
    name = name if isinstance(name, str) else str(row.get("model"))
    params = params if isinstance(params, str) else ""
    return name + (f" ({params})" if params else "") + f" [{row.get('run_id')}]"


def _page(data: list[RunData], sections: list[str]) -> str:
    """The whole HTML page."""
    names = ", ".join(d.label for d in data)
    title = f"EvalRS report: {names}"
    summary = (f"{len(data)} run{'s' if len(data) > 1 else ''}: "
               + "; ".join(f"{d.label} ({d.run_id})" for d in data)
               + ". Intervals: bootstrap over test users within folds.")
    template = Template(resources.files("evaluation.analysis").joinpath(
        "templates/report.html").read_text(encoding="utf-8"))
    return template.substitute(title=_e(title), summary=_e(summary), body="\n".join(sections))
