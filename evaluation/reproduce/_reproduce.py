"""One reproduction: fetch the upload, run the checkout's model in a sandbox, score, compare.

The checkout is checked first (no link leading out of it, not too large) and copied for each
run. The participant's code runs only inside the bubblewrap sandbox (``_sandbox``), with the
checkout's environment read-only, and only trains and predicts: it receives what a model
receives and sends back each fold's predictions, which this process validates and scores with
the harness's own code and the test targets that never left it (``_predict``). What the model
prints goes to a log whose end is sent with the verdict, with the admin token and the private
seed scrubbed from it in every written form. The token and the seed never enter the sandbox:
the private folds are cut here, and the model gets their training frames only.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluation._version import __version__
from evaluation.challenge import LEADERBOARD_TESTS
from evaluation.contract import COST_KEYS, DATASET_KEY, FOLD_PARAMS_KEY, source_arguments
from evaluation.dataset import ChallengeDataset, TimeCutDataset
from evaluation.errors import ConfigError, PredictionError, UploadError
from evaluation.reproduce import _predict
from evaluation.reproduce._alternatives import (
    Alternative,
    alternative_config,
    read_alternatives,
)
from evaluation.reproduce._budgets import Budgets
from evaluation.reproduce._checkout import (
    DEFAULT_MAX_CHECKOUT_BYTES,
    copy_checkout,
    inspect_checkout,
    vendored_warning,
)
from evaluation.reproduce._compare import (
    NOT_REPRODUCED,
    REPRODUCED,
    Comparison,
    compare,
    fingerprint_differences,
)
from evaluation.reproduce._declared import alternative_score
from evaluation.reproduce._env import remove_tree
from evaluation.reproduce._sampled_alternative import SampledScorer
from evaluation.reproduce._sandbox import require_sandbox
from evaluation.reproduce._scrub import client_secrets, log_tail, scrub
from evaluation.runner import DEFAULT_N_BOOT

#: The most bytes of the log sent with the verdict.
MAX_LOG_TAIL_BYTES = 64 * 1024
#: Default limits of the evaluation subprocess.
DEFAULT_TIMEOUT_S = 3600.0
DEFAULT_MEMORY_MB = 8192
#: Default process budget and scratch size (MiB) of the sandbox.
DEFAULT_PROCESSES = 512
DEFAULT_SCRATCH_MB = 4096
#: Where the model's class is looked for in the checkout.
MODEL_FILE = Path("submission") / "MyModel.py"
#: The environment variables the evaluation subprocess gets (the participant's code runs
#: there: the organizer's credentials and the parent's PYTHONPATH stay out), by name ...
_CHILD_VARIABLES = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ",
                    "TMPDIR", "XDG_CACHE_HOME", "CUDA_VISIBLE_DEVICES")
#: ... and by prefix (thread counts of the numeric libraries, the harness's own settings)
_CHILD_PREFIXES = ("OMP_", "MKL_", "OPENBLAS_", "NUMEXPR_", "RECLIST_", "EVALRS_")
#: Never passed, whatever the prefix.
_SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "KEY", "CREDENTIAL")


@dataclass
class Reproduction:
    """What a reproduction found.

    Attributes
    ----------
    submission_id : int
    comparison : Comparison
        The rows, the fingerprint check and the reasons against the verdict.
    log_path : Path
        The evaluation's log (stdout and stderr of the subprocess).
    private_fold_tests : list of dict, optional
        The leaderboard tests per private fold, when ``--private`` ran.
    private_problem : str, optional
        Why the private folds were not evaluated, when they were asked for.
    user_values, private_user_values : str, optional
        The per-user values of the public (private) folds, computed here from the model's
        predictions (base64 blob of ``evaluation.challenge.encode_user_values``).
    costs : list of dict, optional
        Each public fold's seconds to train and to predict and peak memory, measured in the
        sandbox.
    alternatives : list of dict, optional
        One result per declared alternative protocol, when the competition declares some and
        the submission reproduced: ``{"protocol", "status": "scored" | "failed", "reason",
        "user_values", "cost"}`` (see :func:`run_alternative`).
    alternative_scores : dict, optional
        Protocol -> its score (``alternative_score``: None when it failed or cannot be
        scored here), for the output and the log; the server scores the values itself.
    answer : dict
        The server's answer to the report.
    """

    submission_id: int
    comparison: Comparison
    log_path: Path
    private_fold_tests: list[dict] | None = None
    private_problem: str | None = None
    user_values: str | None = None
    private_user_values: str | None = None
    costs: list[dict] | None = None
    alternatives: list[dict] | None = None
    alternative_scores: dict[str, float | None] = field(default_factory=dict)
    answer: dict = field(default_factory=dict)
    sandbox: dict = field(default_factory=dict)
    secrets: tuple = field(default=(), repr=False)

    @property
    def verdict(self) -> str:
        return self.comparison.verdict

    def report(self) -> dict[str, Any]:
        """The body of ``POST /api/v1/submissions/{id}/reproduction``."""
        body = {"verdict": self.verdict, "private": self.private_fold_tests is not None,
                "table": [row.as_json() for row in self.comparison.rows],
                "log_tail": scrub(log_tail(self.log_path, MAX_LOG_TAIL_BYTES), self.secrets),
                "fingerprint_matches": self.comparison.fingerprint_matches,
                "harness_version": __version__}
        if self.private_fold_tests is not None:
            body["private_fold_tests"] = self.private_fold_tests
        if self.private_fold_tests is not None and self.private_user_values is not None:
            body["private_user_values"] = self.private_user_values
        if self.user_values is not None:
            body["user_values"] = self.user_values
        if self.costs is not None:
            body["costs"] = self.costs
        if self.alternatives is not None:
            body["alternatives"] = [
                {**a, "reason": None if a["reason"] is None else scrub(a["reason"], self.secrets)}
                for a in self.alternatives]
        return body


def read_private_seed(path: str | os.PathLike) -> int:
    """The integer in the file ``path``; errors never show the file's content."""
    try:
        text = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--private-seed-file {path}: cannot be read "
                          f"({type(exc).__name__}); give a file holding one integer.") from None
    if not re.fullmatch(r"[0-9]{1,18}", text):
        raise ConfigError(f"--private-seed-file {path}: must hold one non-negative integer "
                          f"(its content is not shown); write e.g. the output of `python -c "
                          f"'import secrets; print(secrets.randbelow(2**31))'` into it.")
    return int(text)


def worker_config(results: Mapping, *, source: str | None = None) -> dict[str, Any]:
    """The worker's configuration that rebuilds the upload's dataset, folds and run settings.

    Raises
    ------
    ConfigError
        When the uploaded results lack what a reproduction needs.
    """
    dataset = results.get(DATASET_KEY)
    if not isinstance(dataset, Mapping) or not isinstance(dataset.get(FOLD_PARAMS_KEY), Mapping):
        raise ConfigError("the uploaded results have no dataset.fold_params: this submission "
                          "cannot be reproduced (was it made by this harness?).")
    name, options = _source(source or dataset.get("source"))
    intervals = results.get("confidence_intervals") or {}
    # what submission.py was told (--param, --reclist): the model is rebuilt the same way
    recorded = results.get("settings")
    settings: Mapping[str, Any] = recorded if isinstance(recorded, Mapping) else {}
    params = settings.get("params") or {}
    if not isinstance(params, Mapping):
        raise ConfigError("the uploaded results' settings.params is not a mapping of model "
                          "parameters: this submission cannot be reproduced.")
    return {"source": name, "data_options": options,
            "params": dict(params), "reclist": settings.get("reclist"),
            FOLD_PARAMS_KEY: dict(dataset[FOLD_PARAMS_KEY]),
            "dataset_fingerprint": dataset.get("fingerprint"),
            "seed": int(results.get("seed", dataset[FOLD_PARAMS_KEY].get("seed", 42))),
            "k": int(results.get("k", 100)),
            "n_boot": int(intervals.get("n_boot", DEFAULT_N_BOOT))}


def _source(source: Any) -> tuple[str, dict]:
    """``ChallengeDataset``'s source and its other data options (``scale``, ``data_seed``)
    from a results.json ``dataset.source``."""
    if not isinstance(source, str) or not source:
        raise ConfigError("the uploaded results do not name their dataset source "
                          "(dataset.source); give it with --source.")
    options = source_arguments(source)
    return options.pop("source"), options


def check_checkout(checkout: str | os.PathLike,
                   max_bytes: int = DEFAULT_MAX_CHECKOUT_BYTES) -> Path:
    """The checkout's folder; ``ConfigError`` when it has no ``submission/MyModel.py``, holds
    a link leading outside it or a special file, or is larger than ``max_bytes``."""
    path = Path(checkout).resolve()
    if not path.is_dir():
        raise ConfigError(f"CHECKOUT {checkout}: no such folder; give the folder of the "
                          f"participant's repository (the one with submission.py).")
    inspect_checkout(path, max_bytes)
    if not (path / MODEL_FILE).is_file():
        raise ConfigError(f"CHECKOUT {checkout}: no {MODEL_FILE} in it; give the folder of the "
                          f"participant's repository (the one with submission.py).")
    return path


def reproduce(checkout: Path, submission_id: int, client, *, python: Path,
              log_path: Path, timeout: float = DEFAULT_TIMEOUT_S,
              memory_mb: int | None = DEFAULT_MEMORY_MB, private_seed: int | None = None,
              source: str | None = None, log: Callable[[str], None] = print,
              processes: int = DEFAULT_PROCESSES, scratch_mb: int = DEFAULT_SCRATCH_MB,
              unsafe_no_sandbox: bool = False,
              protocols: Sequence[Mapping[str, object]] = ()) -> Reproduction:
    """Reproduce submission ``submission_id`` from ``checkout`` and send the verdict.

    Parameters
    ----------
    checkout : Path
        The participant's repository (``submission/MyModel.py``).
    submission_id : int
    client : LeaderboardClient
        The server, with the admin token.
    python : Path
        The interpreter of the checkout's environment (with the harness installed).
    log_path : Path
        Where the evaluation's output goes (replaced).
    timeout, memory_mb, processes, scratch_mb
        The budgets of each sandboxed run: seconds of wall clock, MiB of memory for the
        whole process tree, processes at once, MiB of scratch disk.
    private_seed : int, optional
        Also evaluate the model on the folds of this seed (when the public run reproduced)
        and send its per-fold test values.
    source : str, optional
        The dataset source to rebuild, when not the upload's ``dataset.source``.
    log : callable
        Receives progress lines.
    unsafe_no_sandbox : bool
        Where no sandbox can be made, run the model unconfined (a warning goes to the log,
        whose end is sent) instead of refusing.
    protocols : sequence of mapping
        The competition's declared alternative protocols (a claim's ``robustness``): when
        the submission reproduced, the model also runs under each, in the same sandbox with
        the same budgets, and each one's per-user values and cost (or why it could not run)
        are sent with the verdict. Their logs stay on this machine.

    Raises
    ------
    SandboxUnavailable
        When no sandbox can be made and ``unsafe_no_sandbox`` is not set (before the server
        is called).
    UploadError
        When the server cannot be reached or refuses a call.
    ConfigError
        When the upload cannot be reproduced by this harness at all.
    """
    warning = require_sandbox(unsafe_no_sandbox)
    check_checkout(checkout)
    # a copied 2022/2023 evaluation/ folder: named in the log before anything runs
    vendored = vendored_warning(checkout)
    budgets = Budgets(wall_s=timeout, memory_mb=memory_mb, processes=processes,
                      scratch_mb=scratch_mb)
    secrets = client_secrets(client, private_seed)
    payload = client.payload(submission_id)
    results = payload.get("results")
    if not isinstance(results, Mapping) or not isinstance(results.get("folds"), list):
        raise UploadError(f"submission {submission_id}: the server's payload has no "
                          f"results.folds; is the server a leaderboard of this harness?")
    config = worker_config(results, source=source)
    config["expected_fingerprint"] = (results.get("model") or {}).get("fingerprint")
    alternatives = read_alternatives(list(protocols) or None)
    log_path.write_bytes(b"")
    for note in (warning, vendored):
        if note:
            log(note)
            with open(log_path, "a", encoding="utf-8") as f:
                f.write(note + "\n")
    with tempfile.TemporaryDirectory(prefix="evalrs-reproduce-") as work:
        log(f"evaluating {checkout} in a sandbox (budgets: {timeout:g} s, "
            f"{'no memory limit' if memory_mb is None else f'{memory_mb} MiB'}, {processes} "
            f"processes, {scratch_mb} MiB scratch); log: {log_path}")
        found, problem, sandbox = _run(python, checkout, config, Path(work) / "public",
                                       log_path, budgets, unsafe_no_sandbox)
        comparison = _comparison(results, found, problem)
        outcome = Reproduction(submission_id, comparison, log_path, sandbox=sandbox,
                               secrets=secrets, user_values=found.get("user_values"),
                               costs=found.get("costs"))
        log(f"sandbox: {', '.join(f'{k}: {v}' for k, v in sandbox.get('mechanisms', {}).items())}")
        if private_seed is not None:
            _private(outcome, python, checkout, config, private_seed, Path(work) / "private",
                     log_path.with_name(log_path.name + ".private"), budgets,
                     unsafe_no_sandbox)
        if alternatives and outcome.verdict == REPRODUCED:
            outcome.alternatives = []
            for i, alternative in enumerate(alternatives):
                log(f"alternative protocol {alternative.name!r} ({alternative.kind})")
                outcome.alternatives.append(run_alternative(
                    alternative, python, checkout, config, Path(work) / f"alternative-{i}",
                    log_path.with_name(f"{log_path.name}.alternative-{i}"), budgets,
                    unsafe_no_sandbox))
            outcome.alternative_scores = {
                a["protocol"]: alternative_score(a, results, kind=alternative.kind)
                for a, alternative in zip(outcome.alternatives, alternatives)}
    mechanisms = outcome.sandbox.get("mechanisms", {})
    with open(log_path, "a", encoding="utf-8") as f:
        # which limit was in force, for whoever reads the verdict's log on the server
        f.write("\nsandbox: " + "; ".join(f"{k}: {v}" for k, v in mechanisms.items()) + "\n")
        f.write(f"verdict: {outcome.verdict}\n" + "".join(
            f"  - {reason}\n" for reason in comparison.reasons))
    outcome.answer = client.send_reproduction(submission_id, outcome.report())
    if outcome.alternatives:
        # after the report: its log's end reaches the team, and the alternatives' scores and
        # a private protocol's results wait for the board's reveal
        with open(log_path, "a", encoding="utf-8") as f:
            f.write("".join(f"{line}\n" for line in alternative_lines(outcome)))
    return outcome


def alternative_lines(outcome: Reproduction) -> list[str]:
    """One line per alternative protocol the reproduction ran: its status, score and cost,
    and a failed one's reason (nothing when none ran)."""
    lines = []
    for a in outcome.alternatives or ():
        cost = a.get("cost") or {}
        score = outcome.alternative_scores.get(a["protocol"])
        spent = ", ".join(f"{label} {_figure(cost.get(key), unit)}" for key, label, unit in (
            ("seconds", "run", " s"), ("train_seconds", "train", " s"),
            ("predict_seconds", "predict", " s"), ("peak_rss_mib", "peak", " MiB")))
        lines.append(f"alternative {a['protocol']}: {a['status']}, score "
                     f"{'-' if score is None else f'{score:.6f}'} ({spent})"
                     + ("" if a.get("reason") is None else f"; reason: {a['reason']}"))
    return lines


def _figure(value: Any, unit: str) -> str:
    """A cost as the lines show it ('?' when unknown)."""
    return "?" if value is None else f"{float(value):.1f}{unit}"


def _comparison(results: Mapping, found: dict, problem: str | None) -> Comparison:
    """Compare the upload with what the run produced, with the run's problem as a reason.

    A run that ended before its model was built has no fingerprint to compare: then the
    problem alone is the reason (its fingerprint is not known to match).
    """
    if "fingerprint" not in found:
        comparison = compare(results, {}, LEADERBOARD_TESTS)
        return Comparison(rows=comparison.rows, fingerprint_matches=False,
                          reasons=[problem or "the run ended without results (see the log)"])
    reproduced = found.get("results") or {"model": {"fingerprint": found["fingerprint"]}}
    comparison = compare(results, reproduced, LEADERBOARD_TESTS)
    if problem is None and "results" not in found and comparison.fingerprint_matches:
        problem = "the run ended without results (see the log)"
    if "results" not in found:  # every value is missing: the problem or the fingerprint says why
        comparison.reasons[:] = [r for r in comparison.reasons if "values neither" not in r]
    if problem is not None:
        comparison.reasons.insert(0, problem)
    return comparison


def run_alternative(alternative: Alternative, python: Path, checkout: Path, config: dict,
                    work: Path, log_path: Path, budgets: Budgets,
                    unsafe_no_sandbox: bool) -> dict:
    """Run the model under one alternative protocol in the sandbox and score it here.

    Returns
    -------
    dict
        ``{"protocol", "status", "reason", "user_values", "cost"}``: status "scored" with the
        per-user values of its folds, or "failed" with the reason (the model raised, ran out
        of a budget, sent malformed predictions or scores, has no ``score_items`` for a
        sampled protocol, or the protocol cannot be cut from the data); ``cost`` the run's
        wall-clock seconds and, summed over its folds, the seconds to train and to predict
        (to score the candidates, for a sampled protocol) measured in the sandbox, with the
        peak memory (MiB). A sampled protocol's per-user values are a
        ``evaluation.challenge.MetricValues`` blob (its corrected metric per test user of
        the official folds), the others' the challenge's per-user values.
    """
    started = time.monotonic()
    log_path.write_bytes(b"")
    os.chmod(log_path, 0o600)
    found: dict = {}
    try:
        dataset: ChallengeDataset | None = None
        scorer: SampledScorer | None = None
        if alternative.kind == "global_time":
            base, problem = _predict.rebuild_dataset(config)
            dataset = None if base is None else TimeCutDataset(base,
                                                               float(alternative.cut or 0))
        elif alternative.kind == "sampled":
            # the official folds, checked against the upload's; the catalog is theirs
            dataset, problem = _predict.rebuild_dataset(config)
            if dataset is not None:
                scorer = SampledScorer(alternative, dataset.df_tracks.index.to_numpy(),
                                       int(config["k"]))
        if alternative.kind == "fold_seed" or dataset is not None:
            found, problem, _ = _run(python, checkout, alternative_config(config, alternative),
                                     work, log_path, budgets, unsafe_no_sandbox,
                                     dataset=dataset, scorer=scorer)
    except Exception as exc:  # the alternative's failure, never the reproduction's
        problem = f"{type(exc).__name__}: {exc}"
    if problem is None and not found.get("user_values"):
        problem = "the run ended without per-user values (see the worker's log)"
    costs = found.get("costs") or []

    def total(key: str) -> float | None:
        values = [c.get(key) for c in costs]
        return None if not values or None in values else round(sum(values), 3)

    peaks = [c["peak_rss_mib"] for c in costs if c.get("peak_rss_mib") is not None]
    return {"protocol": alternative.name, "status": "failed" if problem else "scored",
            "reason": None if problem is None else problem[:2000],
            "user_values": None if problem else found["user_values"],
            "cost": {"seconds": round(time.monotonic() - started, 3),
                     "train_seconds": total("train_seconds"),
                     "predict_seconds": total("predict_seconds"),
                     "peak_rss_mib": max(peaks) if peaks else None}}


def _run(python: Path, checkout: Path, config: dict, work: Path, log_path: Path,
         budgets: Budgets, unsafe_no_sandbox: bool, *,
         dataset: ChallengeDataset | None = None,
         scorer: SampledScorer | None = None) -> tuple[dict, str | None, dict]:
    """Run the model once in the sandbox and score what it predicted here.

    ``dataset``: the folds to run on (an alternative's cut); by default the configuration's,
    rebuilt and checked against it. ``scorer``: a sampled-negative protocol's candidates,
    which the model scores instead of predicting lists (then only ``user_values`` is found,
    no results).

    Returns what was found (``fingerprint``, ``results``), why it failed (None when it did
    not) and the sandbox's report (its mechanisms and warnings).
    """
    work.mkdir(mode=0o700)
    if dataset is None:
        dataset, problem = _predict.rebuild_dataset(config)
        if dataset is None:
            return {}, problem, {}
    users = _predict.write_inputs(work / "inputs", dataset, config,
                                  candidates=None if scorer is None else scorer.draw)
    copy = copy_checkout(checkout, work / "checkout")
    run = _predict.run_model(python=python, checkout_copy=copy, inputs=work / "inputs",
                             work=work, log_path=log_path, budgets=budgets,
                             unsafe_no_sandbox=unsafe_no_sandbox)
    sandbox = run.report.as_json() if run.report is not None else {}
    found: dict = {} if run.fingerprint is None else {"fingerprint": run.fingerprint}
    if run.problem is not None:
        return found, run.problem, sandbox
    expected = config.get("expected_fingerprint")
    if expected is not None and fingerprint_differences(expected, run.fingerprint):
        return found, None, sandbox  # not evaluated: the fingerprint says why
    try:
        if scorer is None:
            found["results"], found["user_values"] = _predict.score(dataset, run, users,
                                                                    config, work / "results")
        else:
            found["user_values"] = scorer.user_values(run.scores, run.errors, users)
    except PredictionError as exc:
        what = "predictions" if scorer is None else "scores of the sampled candidates"
        return found, f"the model's {what} are not valid: {exc}", sandbox
    found["costs"] = [run.costs.get(f, {k: None for k in COST_KEYS})
                      for f in sorted(users)]
    return found, None, sandbox


def child_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of the evaluation subprocess: the allowed variables of ``environ``.

    Nothing named like a secret, no ``PYTHONPATH`` (the checkout's environment alone decides
    what is imported), and unbuffered output (the log's end is what a killed run printed
    last).
    """
    env = {k: v for k, v in environ.items()
           if (k in _CHILD_VARIABLES or k.startswith(_CHILD_PREFIXES))
           and not any(word in k.upper() for word in _SECRET_WORDS)}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _private(outcome: Reproduction, python: Path, checkout: Path, config: dict, seed: int,
             work: Path, log_path: Path, budgets: Budgets, unsafe_no_sandbox: bool) -> None:
    """Evaluate the model on the private seed's folds; fills ``outcome``'s private fields.

    Only a reproduced submission is run there: a private score is the organizers' run of the
    very code that was shown to give the uploaded numbers. Its log stays on this machine.
    """
    if outcome.verdict != REPRODUCED:
        outcome.private_problem = (f"the private folds were not evaluated: the submission is "
                                   f"{NOT_REPRODUCED}")
        return
    log_path.write_bytes(b"")
    os.chmod(log_path, 0o600)
    private = {**config, FOLD_PARAMS_KEY: {**config[FOLD_PARAMS_KEY], "seed": seed}}
    # the same data: only the folds change, so the fingerprint check is by construction
    private["dataset_fingerprint"] = config["dataset_fingerprint"]
    found, problem, _ = _run(python, checkout, private, work, log_path, budgets,
                             unsafe_no_sandbox)
    folds = (found.get("results") or {}).get("folds") or []
    if problem is not None or not folds:
        outcome.private_problem = (f"the private folds could not be evaluated: "
                                   f"{problem or 'no folds'} (log: {log_path})")
        return
    outcome.private_fold_tests = [
        {test: fold["tests"][test] for test in LEADERBOARD_TESTS}
        for fold in sorted(folds, key=lambda f: f["fold"])]
    outcome.private_user_values = found.get("user_values")


def remove_env(path: Path) -> None:
    """Remove a temporary (read-only) environment folder (best effort)."""
    remove_tree(path)
