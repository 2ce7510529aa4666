"""One reproduction: fetch the upload, run the checkout in its environment, compare, report.

The participant's code runs only in a subprocess of the checkout's environment, under a
wall-clock and a memory limit, in the checkout's folder; what it prints goes to a log whose
end is sent with the verdict. The admin token stays in this process (the child never sees it)
and the private seed goes to the child only in a file of a private temporary folder: neither
is printed, logged or sent.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluation._version import __version__
from evaluation.challenge import LEADERBOARD_TESTS
from evaluation.contract import DATASET_KEY, FOLD_PARAMS_KEY, source_arguments
from evaluation.errors import ConfigError, UploadError
from evaluation.reproduce._compare import NOT_REPRODUCED, REPRODUCED, Comparison, compare
from evaluation.reproduce._limits import log_tail, run_limited
from evaluation.runner import DEFAULT_N_BOOT

#: The most bytes of the log sent with the verdict.
MAX_LOG_TAIL_BYTES = 64 * 1024
#: Default limits of the evaluation subprocess.
DEFAULT_TIMEOUT_S = 3600.0
DEFAULT_MEMORY_MB = 8192
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
    answer : dict
        The server's answer to the report.
    """

    submission_id: int
    comparison: Comparison
    log_path: Path
    private_fold_tests: list[dict] | None = None
    private_problem: str | None = None
    answer: dict = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        return self.comparison.verdict

    def report(self) -> dict[str, Any]:
        """The body of ``POST /api/v1/submissions/{id}/reproduction``."""
        body = {"verdict": self.verdict, "private": self.private_fold_tests is not None,
                "table": [row.as_json() for row in self.comparison.rows],
                "log_tail": log_tail(self.log_path, MAX_LOG_TAIL_BYTES),
                "fingerprint_matches": self.comparison.fingerprint_matches,
                "harness_version": __version__}
        if self.private_fold_tests is not None:
            body["private_fold_tests"] = self.private_fold_tests
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
    settings = results.get("settings") if isinstance(results.get("settings"), Mapping) else {}
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


def check_checkout(checkout: str | os.PathLike) -> Path:
    """The checkout's folder; ``ConfigError`` when it has no ``submission/MyModel.py``."""
    path = Path(checkout).resolve()
    if not (path / MODEL_FILE).is_file():
        raise ConfigError(f"CHECKOUT {checkout}: no {MODEL_FILE} in it; give the folder of the "
                          f"participant's repository (the one with submission.py).")
    return path


def reproduce(checkout: Path, submission_id: int, client, *, python: Path,
              log_path: Path, timeout: float = DEFAULT_TIMEOUT_S,
              memory_mb: int | None = DEFAULT_MEMORY_MB, private_seed: int | None = None,
              source: str | None = None, log: Callable[[str], None] = print) -> Reproduction:
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
    timeout, memory_mb
        The limits of each evaluation subprocess (seconds; MiB of address space).
    private_seed : int, optional
        Also evaluate the model on the folds of this seed (when the public run reproduced)
        and send its per-fold test values.
    source : str, optional
        The dataset source to rebuild, when not the upload's ``dataset.source``.
    log : callable
        Receives progress lines.

    Raises
    ------
    UploadError
        When the server cannot be reached or refuses a call.
    ConfigError
        When the upload cannot be reproduced by this harness at all.
    """
    payload = client.payload(submission_id)
    results = payload.get("results")
    if not isinstance(results, Mapping) or not isinstance(results.get("folds"), list):
        raise UploadError(f"submission {submission_id}: the server's payload has no "
                          f"results.folds; is the server a leaderboard of this harness?")
    config = worker_config(results, source=source)
    config["expected_fingerprint"] = (results.get("model") or {}).get("fingerprint")
    log_path.write_bytes(b"")
    with tempfile.TemporaryDirectory(prefix="evalrs-reproduce-") as work:
        log(f"evaluating {checkout} (limits: {timeout:g} s, "
            f"{'no memory limit' if memory_mb is None else f'{memory_mb} MiB'}); log: {log_path}")
        found, problem = _run(python, checkout, config, Path(work) / "public", log_path,
                              timeout, memory_mb)
        comparison = _comparison(results, found, problem)
        outcome = Reproduction(submission_id, comparison, log_path)
        if private_seed is not None:
            _private(outcome, python, checkout, config, private_seed, Path(work) / "private",
                     log_path.with_name(log_path.name + ".private"), timeout, memory_mb)
    with open(log_path, "a", encoding="utf-8") as f:
        f.write(f"\nverdict: {outcome.verdict}\n" + "".join(
            f"  - {reason}\n" for reason in comparison.reasons))
    outcome.answer = client.send_reproduction(submission_id, outcome.report())
    return outcome


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


def _run(python: Path, checkout: Path, config: dict, work: Path, log_path: Path,
         timeout: float, memory_mb: int | None) -> tuple[dict, str | None]:
    """Run the worker once; what it wrote and why it failed (None when it did not)."""
    work.mkdir(mode=0o700)
    config = {**config, "results_dir": str(work / "results")}
    config_path, out = work / "config.json", work / "out.json"
    config_path.write_text(json.dumps(config))
    command = [str(python), "-m", "evaluation.reproduce._worker", str(config_path), str(out)]
    env = child_environment(os.environ)
    done = run_limited(command, cwd=checkout, log_path=log_path, timeout=timeout,
                       memory_mb=memory_mb, env=env)
    found = json.loads(out.read_text()) if out.is_file() else {}
    if done.timed_out:
        return found, f"the run passed the wall-clock limit of {timeout:g} s and was stopped"
    if done.returncode != 0:
        tail = log_tail(log_path, 4096)
        if memory_mb is not None and ("MemoryError" in tail or done.returncode in (-9, 137)
                                      or "Cannot allocate memory" in tail):
            return found, (f"the run exceeded the memory limit of {memory_mb} MiB (exit "
                           f"status {done.returncode})")
        if found.get("error"):
            return found, str(found["error"])
        return found, f"the run failed with exit status {done.returncode} (see the log)"
    return found, None


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
             work: Path, log_path: Path, timeout: float, memory_mb: int | None) -> None:
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
    found, problem = _run(python, checkout, private, work, log_path, timeout, memory_mb)
    folds = (found.get("results") or {}).get("folds") or []
    if problem is not None or not folds:
        outcome.private_problem = (f"the private folds could not be evaluated: "
                                   f"{problem or 'no folds'} (log: {log_path})")
        return
    outcome.private_fold_tests = [
        {test: fold["tests"][test] for test in LEADERBOARD_TESTS}
        for fold in sorted(folds, key=lambda f: f["fold"])]


def remove_env(path: Path) -> None:
    """Remove a temporary environment folder (best effort)."""
    shutil.rmtree(path, ignore_errors=True)
