"""``EvalRSRunner``: the fold loop, the results files, the run hash and the summary.

For every fold the runner trains the model, asks it for the fold's test users, validates what
it returned, scores it with the RecList and writes the fold's results atomically. It then
aggregates the folds into the leaderboard scores (``evaluation.leaderboard``), prints a summary
and writes the final results file. A run that was killed resumes at its first unfinished fold.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import platform
import random
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evaluation import _atomic
from evaluation._jsonable import to_jsonable
from evaluation._version import __version__
from evaluation.errors import ConfigError
from evaluation.leaderboard import (
    References,
    UserScores,
    aggregate,
    bootstrap,
    load_references,
    references_name,
)

#: Version of the results file layout.
RESULTS_FORMAT = "evalrs-results/1"
#: Fold count of the official protocol; other counts are not eligible for upload.
OFFICIAL_NUM_FOLDS = 4
DEFAULT_K = 100
DEFAULT_N_BOOT = 500


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
        if dataset is None:
            from evaluation.dataset import ChallengeDataset

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
        self.results_dir = Path(results_dir)
        self.progress = progress
        self.verbose = verbose
        self.reports = reports
        self.email = email
        self.participant_id = participant_id
        self.upload_url = upload_url
        self.upload_token = upload_token
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
        if name is None or not (Path(__file__).parent / "references" / f"{name}.json").exists():
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
        from evaluation.reclist import EvalRSRecList

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
        name = model_name or getattr(model, "name", None) or type(model).__name__
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(name))[:64] or "model"
        dataset_info = {
            "source": getattr(getattr(ds, "tables", None), "source", None),
            "fingerprint": ds.fingerprint,
            "fold_params": ds.fold_params,
            "num_folds": ds.num_folds,
        }
        rhash = run_hash(ds.fingerprint, ds.fold_params, tests)
        config = {"run_hash": rhash, "model": name, "seed": seed, "limit": limit, "k": self.k,
                  "reclist": f"{reclist_cls.__module__}.{reclist_cls.__qualname__}",
                  "train_kwargs": {k: repr(v) for k, v in sorted(train_kwargs.items())}}
        run_key = hashlib.sha256(_canonical(config)).hexdigest()
        run_id = f"{name}-{run_key[:12]}"
        run_dir = self.results_dir / run_id
        reasons = []
        if limit:
            reasons.append(f"limit={limit} scores only part of the test users")
        if ds.num_folds != OFFICIAL_NUM_FOLDS:
            reasons.append(f"num_folds={ds.num_folds} (the official protocol has "
                           f"{OFFICIAL_NUM_FOLDS})")
        if self.k != DEFAULT_K:
            reasons.append(f"k={self.k} (the official protocol has k={DEFAULT_K})")
        _atomic.write_json(run_dir / "run.json", {"run_id": run_id, "run_key": run_key,
                                                  "dataset": dataset_info, **config,
                                                  "tests": tests,
                                                  "harness_version": __version__})
        console = self._console()
        if self.verbose:
            console.print(f"[bold]EvalRS run[/bold] {run_id}  (run hash {rhash[:16]}..., "
                          f"seed {seed}, {ds.num_folds} folds"
                          + (f", limit {limit}" if limit else "") + f")\n  results: {run_dir}")

        folds: list[dict] = []
        user_scores: list[UserScores | None] = []
        started = time.perf_counter()
        bar = _progress(total=ds.num_folds, desc="folds", enabled=self.progress)
        for fold in range(ds.num_folds):
            done = self._load_fold(run_dir, fold, run_key) if resume else None
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
                      f"{type(model).__qualname__}"},
            "harness_version": __version__,
            "seed": seed,
            "limit": limit,
            "k": self.k,
            "dataset": dataset_info,
            "tests": tests,
            "train_kwargs": config["train_kwargs"],
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
        _seed_global_generators(fold_seed)
        with stage("train"):
            model.train(train_df, **train_kwargs)
        with stage("predict"):
            raw = model.predict(test_df[["user_id"]].reset_index(drop=True))
        with stage("validate"):
            predictions = validate_predictions(
                raw, test_df["user_id"].to_numpy(), k=self.k, catalog=ds.df_tracks.index,
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
        # The per-user arrays first, then the JSON that marks the fold finished.
        with _atomic.atomic_path(run_dir / f"fold_{fold}_users.npz") as tmp:
            with open(tmp, "wb") as fh:  # a file object: np.savez would append ".npz" to a name
                np.savez(fh, **scores.to_arrays())
        _atomic.write_json(run_dir / f"fold_{fold}.json", {"run_key": run_key, **result})
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
        events = self.dataset.df_events
        if "rating" not in events.columns:
            return None
        from evaluation.protocol import rating_errors, supports_ratings

        if not supports_ratings(model):
            return None
        ratings = events["rating"]
        # the scale of the whole dataset, so that NRMSE/NMAE compare across folds
        scale = (float(ratings.min()), float(ratings.max()))
        return rating_errors(model, test_df.assign(rating=ratings.reindex(test_df.index)
                                                   .to_numpy()), rating_range=scale)

    def _load_fold(self, run_dir: Path, fold: int, run_key: str):
        path = run_dir / f"fold_{fold}.json"
        npz = run_dir / f"fold_{fold}_users.npz"
        if not path.is_file() or not npz.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            with np.load(npz) as arrays:
                scores = UserScores.from_arrays({k: arrays[k] for k in arrays.files})
        except (OSError, ValueError, KeyError, EOFError):
            return None  # unreadable leftovers: compute the fold again
        if data.pop("run_key", None) != run_key:
            return None
        return data, scores

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
        if not results["eligible_for_upload"]:
            msg = ("not uploaded: the run is not eligible ("
                   + "; ".join(results["not_eligible_because"]) + f"); saved to {path}")
            console.print(f"[yellow]{msg}[/yellow]")
            return {"uploaded": False, "path": str(path), "reason": msg}
        if not self.upload_url:
            msg = (f"no upload endpoint configured (UPLOAD_URL in upload.env): the submission "
                   f"was saved locally to {path}")
            console.print(f"[yellow]{msg}[/yellow]")
            return {"uploaded": False, "path": str(path), "reason": msg}
        import requests

        headers = {"Authorization": f"Bearer {self.upload_token}"} if self.upload_token else {}
        try:
            response = requests.post(self.upload_url, json=payload, headers=headers, timeout=60)
            response.raise_for_status()
        except requests.RequestException as exc:
            msg = f"upload to {self.upload_url} failed ({exc}); the submission is saved at {path}"
            console.print(f"[red]{msg}[/red]")
            return {"uploaded": False, "path": str(path), "reason": msg}
        console.print(f"uploaded to {self.upload_url} (a copy is at {path})")
        return {"uploaded": True, "path": str(path), "status": response.status_code}


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

