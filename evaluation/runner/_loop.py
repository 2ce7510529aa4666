"""``EvalRSRunner``: the fold loop, the results files, the run hash and the summary.

For every fold the runner trains the model, asks it for the fold's test users, validates what
it returned, scores it with the RecList and writes the fold's results atomically. It then
aggregates the folds into the leaderboard scores (``evaluation.challenge``), prints a summary
and writes the final results file. A run that was killed resumes at its first unfinished fold.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import io
import json
import os
import platform
import random
import re
import sys
import tempfile
import time
import warnings
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evaluation._util import atomic as _atomic
from evaluation._util.jsonable import to_jsonable
from evaluation._version import __version__
from evaluation.challenge import (
    LEADERBOARD_TESTS,
    MRED_TESTS,
    REFERENCES_DIR,
    References,
    UserScores,
    aggregate,
    bootstrap,
    load_references,
    references_name,
)
from evaluation.errors import ConfigError, RunWarning
from evaluation.runner._fingerprint import PART_LABELS, changed_parts, model_fingerprint

#: Version of the results file layout.
RESULTS_FORMAT = "evalrs-results/1"
#: Fold count of the official protocol; other counts are not eligible for upload.
OFFICIAL_NUM_FOLDS = 4
DEFAULT_K = 100
DEFAULT_N_BOOT = 500
#: Per-run manifest: the sha256 of each finished fold's files, recorded when the fold finished.
CHECKSUMS_FILE = "checksums.json"


@dataclass
class _Stage:
    seconds: float = 0.0
    peak_rss_bytes: int | None = None


@dataclass
class _FoldRuntime:
    stages: dict[str, _Stage] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {name: {"seconds": s.seconds, "peak_rss_mib": _mib(s.peak_rss_bytes)}
                for name, s in self.stages.items()}


def _mib(n: int | None) -> float | None:
    return None if n is None else round(n / 2**20, 1)


class _PeakMemory:
    """Peak resident memory of this process per stage (Linux: VmHWM, reset between stages)."""

    def __init__(self) -> None:
        self.resettable = self._reset()

    @staticmethod
    def _reset() -> bool:
        try:
            with open("/proc/self/clear_refs", "w") as fh:
                fh.write("5")  # resets the peak RSS (VmHWM) counter
            return True
        except OSError:
            return False

    def reset(self) -> None:
        if self.resettable:
            self._reset()

    @staticmethod
    def read() -> int | None:
        try:
            with open("/proc/self/status") as fh:
                for line in fh:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        try:
            import resource

            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            return rss if sys.platform == "darwin" else rss * 1024
        except (ImportError, OSError):
            return None


def run_hash(dataset_fingerprint: str, fold_params: dict, tests: list[str],
             harness_version: str = __version__) -> str:
    """sha256 over the dataset fingerprint, fold parameters, harness version and test list."""
    payload = {
        "dataset_fingerprint": dataset_fingerprint,
        "fold_params": fold_params,
        "harness_version": harness_version,
        "tests": sorted(tests),
    }
    return hashlib.sha256(_canonical(payload)).hexdigest()


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str).encode()


def reclist_tests(reclist_class: type) -> list[str]:
    """Names of the ``@rec_test`` tests of a RecList class (as reclist reports them)."""
    names = set()
    for klass in reclist_class.__mro__:
        for value in vars(klass).values():
            if getattr(value, "is_test", False):
                names.add(value.test_type)
    return sorted(names)


def environment() -> dict:
    """Versions of Python, the platform and the libraries that affect results."""
    import importlib.metadata as md

    libs = {}
    for name in ("numpy", "pandas", "pyarrow", "scipy", "scikit-learn", "gensim", "reclist"):
        try:
            libs[name] = md.version(name)
        except md.PackageNotFoundError:
            libs[name] = None
    return {"python": platform.python_version(), "platform": platform.platform(),
            "machine": platform.machine(), "cpu_count": os.cpu_count(), "libraries": libs}


def _not_a_dataset(dataset) -> str:
    got = type(dataset).__name__
    shown = f" ({dataset!r})" if isinstance(dataset, (str, os.PathLike)) else ""
    hint = {
        "Tables": "wrap the tables: EvalRSRunner(ChallengeDataset(tables))",
        "DataFrame": "build the dataset from its events, users and tracks tables: "
                     "EvalRSRunner(ChallengeDataset(Tables(events, users, tracks)))",
    }.get(got, "pass ChallengeDataset(source) (source: 'synthetic', 'lfm', a directory, "
               "'movielens:PATH') or None")
    return (f"EvalRSRunner expects a ChallengeDataset as its dataset, or None for the default "
            f"(the synthetic dataset); got a {got}{shown}. Fix: {hint}.")


def check_results_dir(results_dir: str | os.PathLike) -> Path:
    """``results_dir`` as a Path, if run directories can be created in it (ConfigError if not).

    The directory need not exist yet; the nearest existing folder on its path must be a
    writable directory. Write access is tried by creating (and removing) a temporary file,
    since ``os.access`` says yes to root even on a read-only or immutable directory.
    """
    try:
        path = Path(results_dir)
    except TypeError:
        raise ConfigError(f"The 'results_dir' parameter of EvalRSRunner must be a path (str or "
                          f"os.PathLike); got a {type(results_dir).__name__}.") from None
    if path.exists() and not path.is_dir():
        raise ConfigError(f"results_dir {str(path)!r} is an existing file, not a directory: "
                          f"run directories cannot go there. Pass a directory path (it is "
                          f"created if missing).")
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"results_dir {str(path)!r} lies under {str(existing)!r}, which is a "
                          f"file, not a directory, so it cannot be created. Pass a path that "
                          f"is not under a file.")
    reason = None
    if not os.access(existing, os.W_OK | os.X_OK):
        reason = "no write permission"
    else:
        try:
            fd, probe = tempfile.mkstemp(prefix=".evalrs-write-test-", dir=existing)
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
    if reason is not None:
        where = "" if existing == path else f" (its nearest existing folder {str(existing)!r})"
        raise ConfigError(f"results_dir {str(path)!r}{where} is not writable ({reason}): the "
                          f"run's results cannot be saved. Pass a writable directory or change "
                          f"its permissions.")
    return path


class EvalRSRunner:
    """Runs a model through every fold of a ``ChallengeDataset`` and scores it.

    ``results_dir``: where run directories go (``results/<run id>/``). ``references``: the
    phase-2 references (a ``References``, a file path, a shipped name such as ``"lfm"``,
    ``"auto"`` to pick the shipped file of the dataset, or None for no phase-2 score).
    ``k``: length of the recommendation lists. ``n_boot``: bootstrap replicates for the
    confidence intervals (0 turns them off). ``progress``/``verbose``: progress bars and the
    printed tables. ``reports``: run reclist's own loop per fold (its table, plots and report
    folder under the run directory); False computes the same tests without them.
    ``email``, ``participant_id``, ``upload_url``, ``upload_token``: the leaderboard
    submission settings (see ``submission.py``).
    """

    def __init__(
        self,
        dataset=None,
        *,
        results_dir: str | os.PathLike = "results",
        references: References | str | os.PathLike | None = "auto",
        k: int = DEFAULT_K,
        n_boot: int = DEFAULT_N_BOOT,
        progress: bool = True,
        verbose: bool = True,
        reports: bool = True,
        email: str | None = None,
        participant_id: str | None = None,
        upload_url: str | None = None,
        upload_token: str | None = None,
    ) -> None:
        from evaluation.dataset import ChallengeDataset

        if dataset is not None and not isinstance(dataset, ChallengeDataset):
            raise ConfigError(_not_a_dataset(dataset))
        # checked before the default dataset is loaded: a bad path fails at once
        self.results_dir = check_results_dir(results_dir)
        if dataset is None:
            dataset = ChallengeDataset()
        self.dataset = dataset
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ConfigError(f"The 'k' parameter of EvalRSRunner must be an int in the range "
                              f"[1, inf). Got {k!r} instead.")
        if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 0 \
                or n_boot == 1:
            raise ConfigError(f"The 'n_boot' parameter of EvalRSRunner must be 0 (no confidence "
                              f"intervals) or an int >= 2. Got {n_boot!r} instead.")
        self.k = int(k)
        self.n_boot = n_boot
        self.progress = progress
        self.verbose = verbose
        self.reports = reports
        self.email = email
        self.participant_id = participant_id
        # checked here, before the run, so that a bad setting does not wait for the last fold
        from evaluation.runner import _submit as _upload

        self.upload_url = _upload.check_url(upload_url, "upload_url") if upload_url else None
        self.upload_token = (_upload.check_token(upload_token, "upload_token")
                             if upload_token else None)
        self.references, self.references_note = self._resolve_references(references)

    # ------------------------------------------------------------------ configuration

    def _resolve_references(self, references) -> tuple[References | None, str]:
        if isinstance(references, References):
            return references, "given"
        if references is None:
            return None, "no references: phase-2 score not computed"
        if str(references) != "auto":
            return load_references(references), "given"
        tables = getattr(self.dataset, "tables", None)
        source = getattr(tables, "source", "") or ""
        scale = None
        m = re.fullmatch(r"synthetic(?::|-|/)?(\w+)?.*", source)
        if m:
            scale = m.group(1) or getattr(self.dataset, "scale", None)
            source = "synthetic"
        name = references_name(source, scale)
        if name is None or not (REFERENCES_DIR / f"{name}.json").exists():
            return None, (f"no references shipped for dataset source {source!r}: phase-2 score "
                          f"not computed (`python -m evaluation references` writes them)")
        refs = load_references(name)
        expected = refs.dataset.get("fingerprint")
        if expected and expected != self.dataset.fingerprint:
            return None, (f"references {name!r} were computed on other data (fingerprint "
                          f"{expected[:12]}...): phase-2 score not computed")
        expected_folds = refs.dataset.get("fold_params")
        if expected_folds and expected_folds != self.dataset.fold_params:
            return refs, (f"references {name!r} were computed on other folds "
                          f"({expected_folds}); the phase-2 score is indicative")
        return refs, f"references {name!r}"

    def _reclist_class(self, custom_RecList):
        from evaluation.challenge import EvalRSRecList

        if custom_RecList is None:
            return EvalRSRecList
        if not (isinstance(custom_RecList, type) and issubclass(custom_RecList, EvalRSRecList)):
            raise ConfigError(f"custom_RecList must be a subclass of EvalRSRecList (so that it "
                              f"keeps the leaderboard tests); got {custom_RecList!r}.")
        return custom_RecList

    # ------------------------------------------------------------------ the run

    def evaluate(
        self,
        model,
        seed: int | None = None,
        limit: int = 0,
        custom_RecList=None,
        upload: bool = False,
        *,
        resume: bool = True,
        model_name: str | None = None,
        **train_kwargs: Any,
    ) -> dict:
        """Train, predict, validate and score ``model`` on every fold; aggregate; save.

        ``seed`` (default: the dataset's seed) seeds Python's and NumPy's global generators
        before each fold (for models that draw from them) and the bootstrap. ``limit`` > 0
        scores only the first ``limit`` test users of each fold (for quick iterations; such a
        run is not eligible for upload). ``custom_RecList``: a subclass of ``EvalRSRecList``
        with extra tests. ``resume``: reuse the finished folds of an earlier run with the same
        configuration. ``**train_kwargs`` go to ``model.train``. Returns the results dict that
        is also written to ``results/<run id>/results.json``.
        """
        seed = self._check_seed(seed)
        ds = self.dataset
        seed = ds.seed if seed is None else seed  # recorded: the seed actually used
        if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0:
            raise ConfigError(f"The 'limit' parameter must be an int >= 0 (0 scores every test "
                              f"user). Got {limit!r} instead.")
        limit = int(limit)
        for method in ("train", "predict"):
            if not callable(getattr(model, method, None)):
                raise ConfigError(f"the model {type(model).__name__} has no {method}() method; "
                                  f"subclass evaluation.RecModel and implement train() and "
                                  f"predict().")
        reclist_cls = self._reclist_class(custom_RecList)
        tests = reclist_tests(reclist_cls)
        # again: the folder may have changed since the runner was made, and no fold should
        # be computed before it is known that its results can be saved
        self.results_dir = check_results_dir(self.results_dir)
        # before any training: the parameters the model starts from, not what it learned
        fingerprint = model_fingerprint(model, train_kwargs)
        name = model_name or getattr(model, "name", None) or type(model).__name__
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(name))[:64] or "model"
        dataset_info = {
            "source": getattr(getattr(ds, "tables", None), "source", None),
            "fingerprint": ds.fingerprint,
            "fold_params": ds.fold_params,
            "num_folds": ds.num_folds,
        }
        rhash = run_hash(ds.fingerprint, ds.fold_params, tests)
        # The training arguments enter the key through the fingerprint (by content); their
        # repr, which abbreviates arrays and may hold memory addresses, is only recorded.
        config = {"run_hash": rhash, "model": name, "seed": seed, "limit": limit, "k": self.k,
                  "reclist": f"{reclist_cls.__module__}.{reclist_cls.__qualname__}",
                  "model_fingerprint": fingerprint["sha256"]}
        kwargs_repr = {k: repr(v) for k, v in sorted(train_kwargs.items())}
        run_key = hashlib.sha256(_canonical(config)).hexdigest()
        run_id = f"{name}-{run_key[:12]}"
        run_dir = self.results_dir / run_id
        console = self._console()
        created = self._run_created(run_dir, run_key)
        if created is None:
            created = datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds")
            self._report_model_change(run_dir, name, config, fingerprint, console)
        reasons = []
        if limit:
            reasons.append(f"limit={limit} scores only part of the test users")
        if ds.num_folds != OFFICIAL_NUM_FOLDS:
            reasons.append(f"num_folds={ds.num_folds} (the official protocol has "
                           f"{OFFICIAL_NUM_FOLDS})")
        if self.k != DEFAULT_K:
            reasons.append(f"k={self.k} (the official protocol has k={DEFAULT_K})")
        _atomic.write_json(run_dir / "run.json", {"run_id": run_id, "run_key": run_key,
                                                  "created": created,
                                                  "dataset": dataset_info, **config,
                                                  "fingerprint": fingerprint,
                                                  "train_kwargs": kwargs_repr,
                                                  "tests": tests,
                                                  "harness_version": __version__})
        if self.verbose:
            console.print(f"[bold]EvalRS run[/bold] {run_id}  (run hash {rhash[:16]}..., "
                          f"seed {seed}, {ds.num_folds} folds"
                          + (f", limit {limit}" if limit else "") + f")\n  results: {run_dir}")

        folds: list[dict] = []
        user_scores: list[UserScores | None] = []
        started = time.perf_counter()
        bar = _progress(total=ds.num_folds, desc="folds", enabled=self.progress)
        for fold in range(ds.num_folds):
            done = self._load_fold(run_dir, fold, run_key, tests, console) if resume else None
            if done is not None:
                fold_result, scores = done
                if self.verbose:
                    console.print(f"  fold {fold}: finished in an earlier run, reused")
            else:
                fold_result, scores = self._run_fold(
                    model, fold, seed=seed, limit=limit, reclist_cls=reclist_cls,
                    model_name=name, run_dir=run_dir, run_key=run_key,
                    train_kwargs=train_kwargs)
            folds.append(fold_result)
            user_scores.append(scores)
            bar.update(1)
        bar.close()

        results = self._aggregate(folds, user_scores, seed)
        results = {
            "format": RESULTS_FORMAT,
            "run_id": run_id,
            "run_hash": rhash,
            "model": {"name": name, "class": f"{type(model).__module__}."
                      f"{type(model).__qualname__}", "fingerprint": fingerprint},
            "harness_version": __version__,
            "seed": seed,
            "limit": limit,
            "k": self.k,
            "dataset": dataset_info,
            "tests": tests,
            "train_kwargs": kwargs_repr,
            **results,
            "references": {
                "note": self.references_note,
                **({"name": self.references.name, "values": self.references.to_dict()}
                   if self.references else {}),
            },
            "eligible_for_upload": not reasons,
            "not_eligible_because": reasons,
            "environment": environment(),
            "folds": folds,
            "runtime": {"seconds": round(time.perf_counter() - started, 3)},
        }
        results = to_jsonable(results)
        _atomic.write_json(run_dir / "results.json", results)
        results["results_path"] = str(run_dir / "results.json")
        if self.verbose:
            self._print_summary(console, results)
        if upload:
            results["submission"] = self._submit(results, run_dir, console)
        return results

    @staticmethod
    def _check_seed(seed) -> int | None:
        if seed is None:
            return None
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) \
                or not 0 <= seed < 2**32:
            raise ConfigError(f"The 'seed' parameter must be None (the dataset's seed) or an "
                              f"int in [0, 2**32). Got {seed!r} instead.")
        return int(seed)

    def _console(self):
        from rich.console import Console

        return Console(highlight=False)

    # ------------------------------------------------------------------ one fold

    def _run_fold(self, model, fold: int, *, seed, limit, reclist_cls, model_name, run_dir,
                  run_key, train_kwargs) -> tuple[dict, UserScores]:
        from evaluation.predictions import validate_predictions

        ds = self.dataset
        fold_seed = _fold_seed(seed, fold)
        runtime = _FoldRuntime()
        memory = _PeakMemory()
        stages = ["data", "train", "predict", "validate", "score"]
        bar = _progress(total=len(stages), desc=f"fold {fold}", enabled=self.progress,
                        leave=False)

        @contextlib.contextmanager
        def stage(name: str):
            bar.set_postfix_str(name)
            memory.reset()
            t0 = time.perf_counter()
            yield
            runtime.stages[name] = _Stage(time.perf_counter() - t0, memory.read())
            bar.update(1)

        with stage("data"):
            train_df = ds.get_train_set(fold)
            test_df = ds.get_test_set(fold, limit=limit or None)
        # A model may change the frames it gets (add columns, drop rows in place, write with
        # .loc): under pandas' copy-on-write a shallow copy takes those changes without
        # copying any data, so validation, scoring and the recorded counts use the
        # harness's own frames. The catalog comes from the tables, not from a model's copy.
        _forget_fold(run_dir, fold)
        _seed_global_generators(fold_seed)
        with stage("train"):
            model.train(train_df.copy(deep=False), **train_kwargs)
        with stage("predict"):
            raw = model.predict(test_df[["user_id"]].reset_index(drop=True))
        with stage("validate"):
            predictions = validate_predictions(
                raw, test_df["user_id"].to_numpy(), k=self.k, catalog=ds.tables.tracks.index,
                train=train_df)
        with stage("score"):
            scored = self._score(reclist_cls, model_name, fold, train_df, test_df,
                                 predictions, run_dir)
        bar.close()
        tests, details, challenge_fold = scored
        scores = UserScores.from_challenge_fold(challenge_fold)
        result = to_jsonable({
            "fold": fold,
            "n_users": int(len(test_df)),
            "n_train_rows": int(len(train_df)),
            "tests": tests,
            "details": details,
        })
        rating = self._rating_errors(model, test_df)
        if rating is not None:
            result["rating_errors"] = to_jsonable(rating)
        result["runtime"] = runtime.to_dict()
        # The per-user arrays first, then the JSON that marks the fold finished (it names its
        # fold, its run and the arrays' checksum), then both checksums in the manifest.
        npz_name, json_name = f"fold_{fold}_users.npz", f"fold_{fold}.json"
        with _atomic.atomic_path(run_dir / npz_name) as tmp:
            with open(tmp, "wb") as fh:  # a file object: np.savez would append ".npz" to a name
                np.savez(fh, **scores.to_arrays())
            npz_sha = _sha256_file(tmp)
        text = json.dumps({"run_key": run_key, **result, "users_sha256": npz_sha}, indent=2,
                          allow_nan=False) + "\n"
        _atomic.write_text(run_dir / json_name, text)
        _record_checksums(run_dir, run_key, {
            json_name: hashlib.sha256(text.encode("utf-8")).hexdigest(), npz_name: npz_sha})
        if self.verbose:
            parts = ", ".join(f"{t} {tests[t]:.4f}" for t in ("HIT_RATE", "MRR") if t in tests)
            took = sum(s.seconds for s in runtime.stages.values())
            self._console().print(f"  fold {fold}: {parts} ({took:.1f} s)")
        return result, scores

    def _score(self, reclist_cls, model_name, fold, train_df, test_df, predictions, run_dir):
        """Run the RecList on one fold: its tests as JSON-ready values, details, the fold."""
        rl = reclist_cls(self.dataset, fold, predictions, model_name=model_name, k=self.k,
                         x_train=train_df, y_test=test_df, validate=False,
                         meta_data_folder=run_dir / "reclist" / f"fold_{fold}")
        if self.reports:
            # reclist's own loop prints its table and writes its report folder (plots, JSON).
            out = contextlib.nullcontext() if self.verbose else \
                contextlib.redirect_stdout(io.StringIO())
            with out:
                rl(verbose=self.verbose)
            # reuse what reclist computed instead of running every test a second time
            rl._results = {r["name"]: r["result"] for r in rl._test_results}
        scored = rl.results(), rl.details(), rl.state
        # A RecList keeps its own bound methods (a reference cycle), so it would live, with the
        # fold's frames, until a later garbage collection: two folds' data at once. Drop them.
        rl.__dict__.clear()
        return scored

    def _rating_errors(self, model, test_df: pd.DataFrame) -> dict | None:
        events = self.dataset.tables.events
        if "rating" not in events.columns:
            return None
        from evaluation.protocols import rating_errors, supports_ratings

        if not supports_ratings(model):
            return None
        ratings = events["rating"]
        # the scale of the whole dataset, so that NRMSE/NMAE compare across folds
        scale = (float(ratings.min()), float(ratings.max()))
        return rating_errors(model, test_df.assign(rating=ratings.reindex(test_df.index)
                                                   .to_numpy()), rating_range=scale)

    def _load_fold(self, run_dir: Path, fold: int, run_key: str, tests: list[str], console):
        """The finished fold's results and per-user scores, verified; None to compute it.

        Nothing is reused unless it is exactly what the fold wrote when it finished: both
        files match the checksums recorded then, the JSON names this fold and this run, and
        the contents have the expected shape. Anything else is recomputed with a warning
        naming the file and the reason.
        """
        found = _verify_fold(run_dir, fold, run_key, tests)
        if found is None or isinstance(found, tuple):
            return found
        message = f"{found}: recomputing fold {fold}"
        warnings.warn(f"{message} (run directory {run_dir})", RunWarning, stacklevel=3)
        if self.verbose:
            console.print(f"  [yellow]{message}[/yellow]")
        return None

    def _run_created(self, run_dir: Path, run_key: str) -> str | None:
        """When the run in ``run_dir`` started, if it is this run (same key)."""
        record = _read_json(run_dir / "run.json")
        if isinstance(record, dict) and record.get("run_key") == run_key:
            created = record.get("created")
            return created if isinstance(created, str) else _mtime(run_dir / "run.json")
        return None

    def _report_model_change(self, run_dir: Path, name: str, config: dict, fingerprint: dict,
                             console) -> None:
        """Say so when the latest run of the same model and configuration had another model.

        Its folds are not reused: the new fingerprint gives the new run its own directory.
        """
        same = {k: v for k, v in config.items() if k != "model_fingerprint"}
        latest = None
        for path in self.results_dir.glob(f"{glob.escape(name)}-*/run.json"):
            if path.parent == run_dir:
                continue
            record = _read_json(path)
            if not isinstance(record, dict) or not isinstance(record.get("fingerprint"), dict) \
                    or any(record.get(k) != v for k, v in same.items()):
                continue
            created = record.get("created") if isinstance(record.get("created"), str) \
                else _mtime(path)
            if latest is None or created > latest[0]:
                latest = (created, path, record)
        if latest is None:
            return
        created, path, record = latest
        parts = changed_parts(record["fingerprint"], fingerprint) or ["model"]
        what = " and ".join(PART_LABELS.get(p, p) for p in parts)
        message = (f"{what} changed since the run of {created}: starting a new run "
                   f"({run_dir.name}; the folds of {path.parent.name} are not reused)")
        warnings.warn(message, RunWarning, stacklevel=3)
        if self.verbose:
            console.print(f"[yellow]{message}[/yellow]")

    # ------------------------------------------------------------------ aggregation

    def _aggregate(self, folds: list[dict], user_scores: list[UserScores], seed) -> dict:
        fold_tests = [{t: v for t, v in f["tests"].items()
                       if v is None or isinstance(v, (int, float))} for f in folds]
        agg = aggregate(fold_tests, self.references)
        out = {
            "aggregate": agg,
            "phase1_score": agg["phase1_score"],
            "phase2_score": agg["phase2_score"],
            "leaderboard_score": agg["phase2_score"],
        }
        if self.n_boot:
            out["confidence_intervals"] = bootstrap(user_scores, self.references,
                                                    n_boot=self.n_boot, seed=seed)
        else:
            out["confidence_intervals"] = None
        if any("rating_errors" in f for f in folds):
            names = folds[0].get("rating_errors", {})
            out["rating_errors"] = {
                n: float(np.mean([f["rating_errors"][n] for f in folds]))
                for n in names if all(isinstance(f.get("rating_errors", {}).get(n), (int, float))
                                      for f in folds)}
        return out

    # ------------------------------------------------------------------ output

    def _print_summary(self, console, results: dict) -> None:
        from rich.table import Table

        agg = results["aggregate"]
        ci = (results.get("confidence_intervals") or {}).get("tests", {})
        table = Table(title=f"EvalRS results: {results['model']['name']}")
        table.add_column("Test", style="cyan", no_wrap=True)
        table.add_column("Mean", justify="right", style="green")
        table.add_column("Std", justify="right")
        table.add_column("95% CI", justify="right", no_wrap=True)
        per_fold = console.width >= 100 + 9 * len(results["folds"])
        if per_fold:
            for f in results["folds"]:
                table.add_column(f"Fold {f['fold']}", justify="right")
        flagged = set((results.get("confidence_intervals") or {}).get("bias_dominated", []))
        for name in agg["mean"]:
            interval = ci.get(name)
            mark = " *" if name in flagged else ""
            cells = [name, _fmt(agg["mean"][name]), _fmt(agg["std"][name]),
                     f"[{interval[0]:.4f}, {interval[1]:.4f}]{mark}" if interval else ""]
            if per_fold:
                cells += [f"{f['tests'][name]:.4f}" if isinstance(f["tests"].get(name),
                                                                  (int, float)) else ""
                          for f in results["folds"]]
            table.add_row(*cells)
        console.print(table)
        if flagged:
            console.print("* resampling bias exceeds the spread (small groups): the interval is "
                          "unreliable; see confidence_intervals.bias_dominated")
        stages = list(results["folds"][0]["runtime"]) if results["folds"] else []
        timing = Table(title="Seconds per stage; peak memory of the fold")
        timing.add_column("Fold")
        for s in stages:
            timing.add_column(s, justify="right")
        timing.add_column("peak MiB", justify="right")
        for f in results["folds"]:
            rt = f["runtime"]
            peaks = [rt[s]["peak_rss_mib"] for s in stages if rt[s]["peak_rss_mib"] is not None]
            timing.add_row(str(f["fold"]), *(f"{rt[s]['seconds']:.2f}" for s in stages),
                           f"{max(peaks):.0f}" if peaks else "n/a")
        console.print(timing)
        full_ci = results.get("confidence_intervals") or {}
        p1 = full_ci.get("phase1_score")
        console.print(f"Phase-1 score (mean of the nine tests): {_fmt(results['phase1_score'])}"
                      + (f"  95% CI [{p1[0]:.6f}, {p1[1]:.6f}]" if p1 else ""))
        console.print(f"References: {results['references']['note']}")
        if not results["eligible_for_upload"]:
            console.print("[yellow]Not eligible for upload:[/yellow] "
                          + "; ".join(results["not_eligible_because"]))
        score = results["leaderboard_score"]
        if score is None:
            console.print("LEADERBOARD SCORE: n/a (no phase-2 references for this dataset)")
        else:
            p2 = full_ci.get("phase2_score")
            gated = " (HIT_RATE below the threshold)" if results["aggregate"]["gated"] else ""
            console.print(f"[bold]LEADERBOARD SCORE: {score}[/bold]{gated}"
                          + (f"  95% CI [{p2[0]:.6f}, {p2[1]:.6f}]" if p2 else ""))
        console.print(f"Results: {results['results_path']}")

    def _submit(self, results: dict, run_dir: Path, console) -> dict:
        """Save ``submission.json``; upload it when the run is eligible and a URL is set.

        Returns ``{"uploaded", "outcome", "path", ...}`` with ``outcome`` one of "uploaded",
        "local" (no URL: saved only), "not_eligible" or "failed" (with the ``reason``).
        """
        from evaluation.errors import UploadError
        from evaluation.runner import _submit as _upload

        payload = {
            "email": self.email,
            "participant_id": self.participant_id,
            "run_id": results["run_id"],
            "run_hash": results["run_hash"],
            "leaderboard_score": results["leaderboard_score"],
            "results": {k: v for k, v in results.items() if k != "results_path"},
        }
        path = run_dir / "submission.json"
        _atomic.write_json(path, payload)
        # soft_wrap: the messages' paths and URLs stay on one line, to be copied
        if not results["eligible_for_upload"]:
            msg = ("not uploaded: the run is not eligible ("
                   + "; ".join(results["not_eligible_because"]) + f"); saved to {path}")
            console.print(msg, style="yellow", markup=False, soft_wrap=True)
            return {"uploaded": False, "outcome": "not_eligible", "path": str(path),
                    "reason": msg}
        if not self.upload_url:
            msg = (f"no upload endpoint configured (UPLOAD_URL in upload.env): the submission "
                   f"was saved locally to {path}")
            console.print(msg, style="yellow", markup=False, soft_wrap=True)
            return {"uploaded": False, "outcome": "local", "path": str(path), "reason": msg}
        try:
            answer = _upload.post(self.upload_url, payload, token=self.upload_token,
                                  log=lambda m: console.print(m, markup=False,
                                                              soft_wrap=True))
        except UploadError as exc:
            msg = f"{str(exc).rstrip('.')}. The submission is saved at {path}"
            console.print(msg, style="red", markup=False, soft_wrap=True)
            return {"uploaded": False, "outcome": "failed", "path": str(path), "reason": msg}
        console.print(f"uploaded to {_upload.display_url(self.upload_url)}: "
                      f"{answer.describe()} (a copy is at {path})", markup=False, soft_wrap=True)
        return {"uploaded": True, "outcome": "uploaded", "path": str(path),
                "status": answer.status, "verdict": answer.verdict}


def _fmt(value) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _fold_seed(seed: int, fold: int) -> int:
    return (int(seed) * 1_000_003 + fold) % 2**32


def _seed_global_generators(seed: int) -> None:
    """Seed the generators a model might draw from without a seed of its own."""
    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002 - participants' models may use the legacy global API
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, desc: str, enabled: bool, leave: bool = True):
    if not enabled:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, leave=leave, unit="step" if not leave else "fold")



# --------------------------------------------------------------------------- run integrity


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _read_json(path: Path):
    """The JSON in ``path``, or None when it is missing or unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _mtime(path: Path) -> str:
    try:
        stamp = path.stat().st_mtime
    except OSError:
        return "an unknown date"
    return datetime.fromtimestamp(stamp, timezone.utc).astimezone().isoformat(timespec="seconds")


def _read_checksums(run_dir: Path, run_key: str) -> dict[str, str]:
    data = _read_json(run_dir / CHECKSUMS_FILE)
    if not isinstance(data, dict) or data.get("run_key") != run_key \
            or not isinstance(data.get("files"), dict):
        return {}
    return {k: v for k, v in data["files"].items() if isinstance(v, str)}


def _record_checksums(run_dir: Path, run_key: str, files: dict[str, str]) -> None:
    recorded = _read_checksums(run_dir, run_key)
    recorded.update(files)
    _atomic.write_json(run_dir / CHECKSUMS_FILE,
                       {"run_key": run_key, "files": dict(sorted(recorded.items()))})


def _forget_fold(run_dir: Path, fold: int) -> None:
    """Drop a fold's checksums before it is computed again: a run killed while it recomputes
    leaves no record that vouches for the old files."""
    data = _read_json(run_dir / CHECKSUMS_FILE)
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        return
    names = (f"fold_{fold}.json", f"fold_{fold}_users.npz")
    if any(n in data["files"] for n in names):
        data["files"] = {k: v for k, v in data["files"].items() if k not in names}
        _atomic.write_json(run_dir / CHECKSUMS_FILE, data)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and bool(np.isfinite(value))


def _is_count(value, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def _fold_json_problem(data, fold: int, run_key: str, tests: list[str]) -> str | None:
    """What is wrong with a fold JSON's content, or None."""
    if not isinstance(data, dict):
        return f"expected a JSON object, found {type(data).__name__}"
    if data.get("run_key") != run_key:
        return f"it belongs to another run (run_key {str(data.get('run_key'))[:12]!r})"
    if data.get("fold") != fold or isinstance(data.get("fold"), bool):
        return f"it holds the results of fold {data.get('fold')!r}, not of fold {fold}"
    if not _is_count(data.get("n_users"), 1):
        return f"'n_users' must be a positive int, found {data.get('n_users')!r}"
    if not _is_count(data.get("n_train_rows"), 0):
        return f"'n_train_rows' must be an int >= 0, found {data.get('n_train_rows')!r}"
    values = data.get("tests")
    if not isinstance(values, dict):
        return f"'tests' must be an object, found {type(values).__name__}"
    missing = [t for t in tests if t not in values]
    if missing:
        return f"'tests' lacks {missing}"
    bad = {t: values[t] for t in LEADERBOARD_TESTS if t in values and not _is_number(values[t])}
    if bad:
        return f"leaderboard tests must be finite numbers, found {bad}"
    for key in ("details", "runtime"):
        if not isinstance(data.get(key), dict):
            return f"{key!r} must be an object, found {type(data.get(key)).__name__}"
    if "rating_errors" in data and not (
            isinstance(data["rating_errors"], dict)
            and all(v is None or _is_number(v) for v in data["rating_errors"].values())):
        return "'rating_errors' must map names to finite numbers"
    if not isinstance(data.get("users_sha256"), str):
        return "it does not record the checksum of its per-user file"
    return None


_USER_ARRAYS = {"hit": np.dtype(bool), "rr": np.dtype(np.float64), "blw": np.dtype(np.float64),
                "ld": np.dtype(np.float64),
                **{f"slice:{t}": np.dtype(np.int32) for t in MRED_TESTS}}


def _user_arrays_problem(arrays: dict, data: dict) -> str | None:
    """What is wrong with a fold's per-user arrays (given its JSON), or None."""
    missing = sorted(set(_USER_ARRAYS) - set(arrays))
    if missing:
        return f"arrays {missing} are missing"
    for key, dtype in _USER_ARRAYS.items():
        a = arrays[key]
        if a.dtype != dtype or a.ndim != 1 or len(a) != data["n_users"]:
            return (f"array {key!r} must be 1-d {dtype} with n_users={data['n_users']} values, "
                    f"found {a.dtype} of shape {a.shape}")
    # the per-user values must reproduce the fold's recorded tests
    if not np.isfinite(arrays["rr"]).all() \
            or abs(float(arrays["hit"].mean()) - data["tests"]["HIT_RATE"]) > 1e-9 \
            or abs(float(arrays["rr"].mean()) - data["tests"]["MRR"]) > 1e-9:
        return "its hits and reciprocal ranks do not reproduce the fold's HIT_RATE and MRR"
    return None


def _verify_fold(run_dir: Path, fold: int, run_key: str, tests: list[str]):
    """``(results, UserScores)`` of a verified finished fold; None when the fold was never
    finished; otherwise a message naming the file and what is wrong with it."""
    json_name, npz_name = f"fold_{fold}.json", f"fold_{fold}_users.npz"
    json_path, npz_path = run_dir / json_name, run_dir / npz_name
    if not json_path.exists():
        return None  # not finished (its arrays, if any, are leftovers of a killed fold)
    if not npz_path.is_file():
        return f"{npz_name}: missing, while {json_name} says the fold finished"
    recorded = _read_checksums(run_dir, run_key)
    try:
        raw = json_path.read_bytes()
        npz_sha = _sha256_file(npz_path)
    except OSError as exc:
        return f"{json_name}: cannot be read ({exc.strerror or exc})"
    for name, sha in ((json_name, hashlib.sha256(raw).hexdigest()), (npz_name, npz_sha)):
        if name not in recorded:
            return (f"{name}: no checksum was recorded for it in {CHECKSUMS_FILE} (the run "
                    f"stopped before the fold was recorded, or the manifest was changed)")
        if recorded[name] != sha:
            return f"{name}: checksum does not match the one recorded when the fold finished " \
                   f"(edited?)"
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError as exc:
        return f"{json_name}: not valid JSON ({exc})"
    problem = _fold_json_problem(data, fold, run_key, tests)
    if problem is not None:
        return f"{json_name}: {problem}"
    if data["users_sha256"] != npz_sha:
        return f"{npz_name}: checksum does not match the one {json_name} recorded (swapped?)"
    try:
        with np.load(npz_path, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        return f"{npz_name}: cannot be read ({exc})"
    problem = _user_arrays_problem(arrays, data)
    if problem is not None:
        return f"{npz_name}: {problem}"
    data.pop("run_key")
    data.pop("users_sha256")
    return data, UserScores.from_arrays(arrays)
