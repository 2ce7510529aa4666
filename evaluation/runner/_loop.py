"""``EvalRSRunner``: the fold loop.

For every fold the runner trains the model, asks it for the fold's test users, validates what
it returned, scores it with the RecList and saves the fold's results. It then aggregates the
folds into the leaderboard scores (``evaluation.challenge``), prints a summary and writes the
final results file. A run that was killed resumes at its first unfinished fold.
"""

from __future__ import annotations

import os
import re
import sys
import time
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.text import Text
from tqdm.auto import tqdm

from evaluation._util import atomic as _atomic
from evaluation._util.hugepages import no_hugepage_advice
from evaluation._util.jsonable import to_jsonable
from evaluation._util.once import warn_once
from evaluation._util.validation import check_int, check_k
from evaluation._version import __version__
from evaluation.challenge import (
    TESTS,
    References,
    UserScores,
    aggregate,
    bootstrap,
    check_coverage,
    dataset_not_applicable,
)
from evaluation.contract import (
    FINGERPRINT_KEY,
    FOLD_PARAMS_KEY,
    NUM_FOLDS_KEY,
    SOURCE_KEY,
    CompetitionTarget,
    run_hash,
)
from evaluation.dataset import ChallengeDataset
from evaluation.errors import ConfigError, PredictionWarning, RunWarning
from evaluation.participant import (
    PART_LABELS,
    changed_files,
    changed_parts,
    compared_code,
    loaded_checkout_modules,
    model_fingerprint,
)
from evaluation.runner import _ray, _store
from evaluation.runner._checks import (
    check_executor,
    check_model,
    check_n_boot,
    check_run_name,
    check_run_seed,
    check_run_settings,
    not_a_dataset,
    output_level,
    reclist_tests,
)
from evaluation.runner._eligibility import DEFAULT_K, ineligible_because
from evaluation.runner._fold import (
    FoldJob,
    FoldOutput,
    FoldPredictions,
    compute_fold,
    repeated_mode,
)
from evaluation.runner._profile import environment
from evaluation.runner._reclist import reclist_base
from evaluation.runner._references import references_record, resolve_references
from evaluation.runner._result import RunResult
from evaluation.runner._settings import model_params
from evaluation.runner._submit import UploadSettings, submit_run, upload_settings
from evaluation.runner._summary import (
    fold_line,
    paragraph,
    repeated_items_note,
    score_line,
    show,
    summary,
    training_items_note,
)
from evaluation.runner._target import resolve_competition
from evaluation.runner._trial import check_reclist

DEFAULT_N_BOOT = 500
#: The RecList a run records when it scores the challenge's own tests (``reclist_cls``
#: None): the class that scored them before a fold was scored without reclist. Part of the
#: run's key, so it stays, and earlier runs resume.
DEFAULT_RECLIST = "evaluation.challenge._reclist.EvalRSRecList"


class EvalRSRunner:
    """Runs a model through every fold of a ``ChallengeDataset`` and scores it.

    Parameters
    ----------
    dataset : ChallengeDataset, optional
        The data and its folds (default: the synthetic dataset).
    results_dir : str or os.PathLike
        Where run directories go (``results_dir/<run id>/``); created if missing.
    references : References, str, os.PathLike or None
        The phase-2 references: a ``References``, a file path, a shipped name such as
        ``"lfm"``, ``"auto"`` (the shipped file of the dataset, if any) or None (no phase-2
        score).
    k : int
        Length of the recommendation lists (the official protocol: 100).
    n_boot : int
        Bootstrap replicates for the confidence intervals; 0 turns them off.
    progress : bool
        Show progress bars.
    verbose : bool or None, default None
        How much the run prints. None: a line per fold (HIT_RATE, MRR, seconds) and the
        summary (the tests, how the leaderboard score is made, the scores, why the run is not
        eligible). True: also the tests that do not apply as the run starts, the seconds per
        stage of every fold and, with ``reports=True``, reclist's own table per fold. False:
        nothing (warnings go through Python's ``warnings``).
    quiet : bool, default False
        Print only the leaderboard score line (errors are raised as always, and every file is
        written). Not with ``verbose=True``.
    reports : bool, default False
        Also run reclist's own loop per fold: its table, plots and report folder under the run
        directory (``reclist/fold_<f>/``, about half a second per fold at full scale). The
        default computes the same tests, with the same numbers, without them.
    upload : UploadSettings, optional
        The leaderboard settings used by ``evaluate(..., upload=True)`` (see
        ``submission.py``); checked here, so that a bad URL or token fails before the run.
    email, participant_id : str, optional
        The 2022 runner's spelling, still accepted with a ``DeprecationWarning``: pass
        ``upload=UploadSettings(email=..., participant_id=...)``.
    competition : CompetitionTarget, str, os.PathLike or None
        The competition the run is made for, which decides whether it is eligible for upload:
        None (default) for the official board (the real challenge data, source ``"lfm"``, with
        the default folds), or a competition TOML file (see ``competition.toml``) naming
        another dataset by its fingerprint, fold parameters and harness versions.
    executor : {"local", "ray"}
        Where the folds run: ``"local"`` (default) one after the other in this process;
        ``"ray"`` each as a Ray task (needs the ``ray`` extra), on a local Ray or on the
        cluster named by ``RAY_ADDRESS``. Both write the same results, bit for bit, but a
        Ray task trains its own copy of the model: the model passed to ``evaluate`` stays
        untrained, and ``train`` must not rely on state left from an earlier fold.
    ray_resources : dict, optional
        What each fold's task asks Ray for: ``num_cpus`` (default 1), ``num_gpus`` (default
        0), ``memory`` (bytes). Only with ``executor="ray"``.
    ray_max_retries : int
        How often Ray runs a fold again when its worker process dies (default 3).

    Raises
    ------
    ConfigError
        When a parameter is invalid or ``results_dir`` cannot hold run directories.
    """

    def __init__(
        self,
        dataset: ChallengeDataset | None = None,
        *,
        results_dir: str | os.PathLike = "results",
        references: References | str | os.PathLike | None = "auto",
        k: int = DEFAULT_K,
        n_boot: int = DEFAULT_N_BOOT,
        progress: bool = True,
        verbose: bool | None = None,
        quiet: bool = False,
        reports: bool = False,
        upload: UploadSettings | None = None,
        competition: CompetitionTarget | str | os.PathLike | None = None,
        email: str | None = None,
        participant_id: str | None = None,
        executor: str = "local",
        ray_resources: dict | None = None,
        ray_max_retries: int = _ray.DEFAULT_MAX_RETRIES,
    ) -> None:
        if dataset is not None and not isinstance(dataset, ChallengeDataset):
            raise ConfigError(not_a_dataset(dataset))
        # checked before the default dataset is loaded: a bad path fails at once
        self.results_dir = _store.check_results_dir(results_dir)
        self.dataset = ChallengeDataset() if dataset is None else dataset
        self.k = check_k(k, owner="EvalRSRunner")
        self.n_boot = check_n_boot(n_boot)
        self.progress = progress
        self.output = output_level(verbose, quiet)
        self.reports = reports
        # checked here, before the run, so that a bad setting does not wait for the last fold
        self.upload_settings = upload_settings(upload, {
            "email": email, "participant_id": participant_id})
        self.references, self.references_note = resolve_references(references, self.dataset)
        self.competition = resolve_competition(competition)
        self.executor, self.ray_resources = check_executor(executor, ray_resources)
        self.ray_max_retries = check_int("ray_max_retries", ray_max_retries, minimum=0,
                                         owner="EvalRSRunner")

    # ------------------------------------------------------------------ configuration

    @staticmethod
    def _reclist_class(reclist_cls, custom_RecList) -> type | None:
        """The custom RecList class to score with (``reclist_cls`` or the deprecated name);
        None for the challenge's own tests, which a fold scores without reclist."""
        if custom_RecList is not None:
            if reclist_cls is not None:
                raise ConfigError("evaluate() got both reclist_cls and custom_RecList; pass "
                                  "reclist_cls only.")
            # once per process, as every old spelling: a notebook calls evaluate() in a loop
            warn_once("argument:evaluate.custom_RecList",
                      "evaluate(custom_RecList=...) is deprecated: pass reclist_cls=... "
                      "(the keyword will be removed in the next release)", stacklevel=3)
            reclist_cls = custom_RecList
        if reclist_cls is None:
            return None
        # reclist, which EvalRSRecList subclasses, is loaded only for a custom RecList (whose
        # module imported it already)
        base = reclist_base()
        if not (isinstance(reclist_cls, type) and issubclass(reclist_cls, base)):
            raise ConfigError(f"reclist_cls must be a subclass of EvalRSRecList (so that it "
                              f"keeps the leaderboard tests); got {reclist_cls!r}.")
        return None if reclist_cls is base else reclist_cls

    # ------------------------------------------------------------------ the run

    def evaluate(
        self,
        model,
        seed: int | None = None,
        limit: int = 0,
        reclist_cls: type | None = None,
        upload: bool = False,
        *,
        resume: bool = True,
        model_name: str | None = None,
        name: str | None = None,
        custom_RecList: type | None = None,
        settings: dict | None = None,
        **train_kwargs: Any,
    ) -> RunResult:
        """Train, predict, validate and score ``model`` on every fold; aggregate; save.

        Parameters
        ----------
        model : RecModel
            An object with ``train(train_df, **train_kwargs)`` and ``predict(user_ids)``.
        seed : int, optional
            Seeds Python's and NumPy's global generators before each fold (for models that
            draw from them) and the bootstrap. Default: the dataset's seed.
        limit : int
            When > 0, score only the first ``limit`` test users of each fold (for quick
            iterations; such a run is not eligible for upload).
        reclist_cls : type, optional
            A subclass of ``EvalRSRecList`` with extra tests.
        upload : bool
            Save ``submission.json`` and upload it with the runner's ``UploadSettings``.
        resume : bool
            Reuse the finished folds of an earlier run with the same configuration.
        model_name : str, optional
            The model's name (default: ``model.name`` or the class name): the run id's
            prefix unless ``name`` is given.
        name : str, optional
            The run's own name, to tell runs of one model apart (``"als-64-factors"``):
            recorded as ``name`` in ``results.json`` and shown wherever the run is (compare,
            the report, the upload); it is the run id's prefix. It enters the run's key, so
            two names never share a directory, but not the run hash, which identifies the
            data, folds, harness version and tests only.
        custom_RecList : type, optional
            Deprecated name of ``reclist_cls``.
        settings : dict, optional
            How the run was asked for (``submission.py`` passes its command line's model
            parameters, RecList, references and competition): recorded as ``settings`` in
            ``run.json`` and ``results.json``, and part of the run's key, so that a run with
            other settings never reuses these folds. JSON values only.
        **train_kwargs
            Passed to ``model.train``.

        Returns
        -------
        RunResult
            The results; ``result.to_dict()`` is what was written to
            ``results/<run id>/results.json``.

        Raises
        ------
        ConfigError
            When a parameter is invalid or the model lacks ``train`` or ``predict``.
        PredictionError
            When the model's predictions are malformed.
        """
        seed = self.dataset.seed if seed is None else check_run_seed(seed)
        limit = check_int("limit", limit, minimum=0, owner="EvalRSRunner.evaluate")
        check_model(model)
        reclist_cls = self._reclist_class(reclist_cls, custom_RecList)
        if reclist_cls is not None:
            # a mistake in a custom test shows now, in seconds, not after a fold has trained
            check_reclist(self.dataset, reclist_cls, k=self.k)
        tests = sorted(TESTS) if reclist_cls is None else reclist_tests(reclist_cls)
        not_applicable = self._not_applicable()
        # again: the folder may have changed since the runner was made, and no fold should
        # be computed before it is known that its results can be saved
        self.results_dir = _store.check_results_dir(self.results_dir)
        run = self._start_run(model, seed, limit, reclist_cls, tests, model_name, train_kwargs,
                              settings, check_run_name(name))
        self._print_not_applicable(run, not_applicable)
        started = time.perf_counter()
        folds, user_scores = self._run_folds(model, run, resume=resume, train_kwargs=train_kwargs)
        with no_hugepage_advice():
            result = self._result(model, run, folds, user_scores, started)
        _atomic.write_json(run.results_path, result.to_dict())
        self._print_result(result, run, computed=run.computed)
        if upload:
            result = replace(result, submission=submit_run(
                result.to_dict(), run.dir, self.upload_settings, run.console))
        return result

    def _not_applicable(self) -> dict[str, str]:
        """The leaderboard tests the dataset cannot measure, each with the reason; raises when
        the references lack a test that applies."""
        # decided once per run, from the dataset alone (the same for every fold), and before
        # any fold: references that lack an applicable test fail now, not after the last fold
        not_applicable = dataset_not_applicable(self.dataset)
        if self.references is not None:
            check_coverage(self.references, not_applicable)
        return not_applicable

    def _print_not_applicable(self, run: _Run, not_applicable: dict[str, str]) -> None:
        """With ``verbose=True``, say which tests do not apply, and why."""
        if self.output == "verbose":
            for test, reason in not_applicable.items():
                show(run.console, paragraph(f"{test}: not applicable ({reason})",
                                            run.console.width, "  "))

    def _warn_repeated_items(self, run: _Run, fresh: list[dict]) -> None:
        """Say once per run, with every fold's count, that lists repeated items."""
        note = repeated_items_note(fresh)
        if note and self.output == "silent":
            counts = {"repeated_lists": sum(f.get("repeated_lists", 0) for f in fresh)}
            warnings.warn(PredictionWarning(note, counts=counts), stacklevel=4)
        elif note and self.output != "quiet":
            show(run.console, paragraph(f"Warning: {note}", run.console.width, style="yellow"))

    def _print_result(self, result: RunResult, run: _Run, computed: list[int]) -> None:
        """Print what the run's output level asks for; warn once about training items."""
        # once per run, with every fold's counts, for the folds computed now (reused ones
        # were reported by the run that computed them)
        fresh = [f for f in result.folds if f["fold"] in computed]
        self._warn_repeated_items(run, fresh)
        note = training_items_note(fresh)
        if note and self.output == "silent":
            seen = [f.get("seen_in_training") or {} for f in fresh]
            counts = {k: sum(x.get(k, 0) for x in seen) for k in ("items", "lists")}
            warnings.warn(PredictionWarning(note, counts=counts), stacklevel=3)
        elif note and self.output != "quiet":
            show(run.console, paragraph(f"Warning: {note}", run.console.width, style="yellow"))
        if self.output == "quiet":
            Console(highlight=False).print(score_line(result))
        elif self.output != "silent":
            for part in summary(result, run.console.width, verbose=self.output == "verbose"):
                show(run.console, part)

    def _start_run(self, model, seed, limit, reclist_cls, tests, model_name,
                   train_kwargs, settings=None, run_name: str | None = None) -> _Run:
        """Set up the run: its name, key, directory and ``run.json``; returns the ``_Run``."""
        ds = self.dataset
        # before any training: the parameters the model starts from, not what it learned
        fingerprint = model_fingerprint(model, train_kwargs)
        name = model_name or getattr(model, "name", None) or type(model).__name__
        name = _id_prefix(str(name))
        rhash = run_hash(ds.fingerprint, ds.fold_params, tests)
        # The training arguments enter the key through the fingerprint (by content); their
        # repr, which abbreviates arrays and may hold memory addresses, is only recorded.
        config = {"run_hash": rhash, "model": name, "seed": seed, "limit": limit, "k": self.k,
                  "reclist": DEFAULT_RECLIST if reclist_cls is None
                  else f"{reclist_cls.__module__}.{reclist_cls.__qualname__}",
                  "model_fingerprint": fingerprint["sha256"]}
        if settings:
            config["settings"] = check_run_settings(settings)
        if run_name is not None:
            # only a named run's key holds its name: an unnamed run keeps its key and id
            config["name"] = run_name
        key = _store.run_key(config)
        prefix = name if run_name is None else _id_prefix(run_name)
        run = _Run(name=name, key=key, dir=self.results_dir / f"{prefix}-{key[:12]}", seed=seed,
                   limit=limit, tests=tests, reclist_cls=reclist_cls, config=config,
                   fingerprint=fingerprint,
                   kwargs_repr={k: repr(v) for k, v in sorted(train_kwargs.items())},
                   console=Console(highlight=False, quiet=self.output in ("quiet", "silent")),
                   params=model_params(model))
        created = _store.run_created(run.dir, key)
        if created is None:
            created = _store.now()
            self._report_model_change(run)
        _atomic.write_json(run.dir / "run.json", {
            "run_id": run.id, "run_key": key, "created": created,
            "dataset": self._dataset_info(), **config, "fingerprint": fingerprint,
            "train_kwargs": run.kwargs_repr, "tests": tests, "harness_version": __version__})
        run.console.print(Text.assemble(("EvalRS run ", "bold"), run.id))
        run.console.print(f"  run hash {rhash[:16]}..., seed {seed}, {ds.num_folds} folds"
                          + (f", limit {limit}" if limit else ""))
        show(run.console, paragraph(f"results: {run.dir}", run.console.width, "  "))
        return run

    def _dataset_info(self) -> dict:
        """The dataset's source, fingerprint, fold parameters and fold count."""
        ds = self.dataset
        return {SOURCE_KEY: getattr(getattr(ds, "tables", None), "source", None),
                FINGERPRINT_KEY: ds.fingerprint, FOLD_PARAMS_KEY: ds.fold_params,
                NUM_FOLDS_KEY: ds.num_folds}

    def _ineligible_because(self, limit: int, not_applicable: dict[str, str],
                            folds: list[dict]) -> list[str]:
        """Why the run may not be uploaded to its competition (empty when it may)."""
        return ineligible_because(limit=limit, k=self.k, dataset=self._dataset_info(),
                                  version=__version__, competition=self.competition,
                                  not_applicable=not_applicable, folds=folds)

    def _run_folds(self, model, run: _Run, *, resume: bool,
                   train_kwargs: dict) -> tuple[list[dict], list[UserScores]]:
        """Each fold's results and per-user scores, reused when finished, else computed.

        The folds to compute run in this process or as Ray tasks (``executor``); either way
        this process saves each one as it finishes, and the progress bar follows.
        """
        done: dict[int, tuple[dict, UserScores]] = {}
        bar = tqdm(total=self.dataset.num_folds, desc="folds", unit="fold",
                   disable=not self.progress)
        todo = []
        for fold in range(self.dataset.num_folds):
            found = self._load_fold(run, fold) if resume else None
            if found is None:
                todo.append(fold)
                continue
            if not done:
                # said once, before the first reused fold: what the reuse rests on
                show(run.console, paragraph(
                    f"the model is the earlier run's ({compared_code(run.fingerprint)}, "
                    f"parameters and training arguments unchanged): its finished folds are "
                    f"reused", run.console.width, "  "))
            run.console.print(fold_line(found[0], reused=True))
            done[fold] = found
            bar.update(1)
        for fold in todo:
            # a run killed while it recomputes the fold leaves no record vouching for old files
            _store.forget_fold(run.dir, fold)
        jobs = [self._job(run, fold, train_kwargs) for fold in todo]
        loaded = loaded_checkout_modules(type(model))
        if self.executor == "ray" and jobs:
            # a second check returns checked resources unchanged, and catches the attribute
            # set to something else since the runner was made
            resources = _ray.check_resources(self.ray_resources)
            computed = _ray.run_folds(model, self.dataset, jobs, resources=resources,
                                      max_retries=self.ray_max_retries)
        else:
            computed = (_computed(job.fold, *compute_fold(model, self.dataset, job))
                        for job in jobs)
        for out in computed:
            done[out.fold] = self._save_fold(run, out)
            run.computed.append(out.fold)
            bar.update(1)
        bar.close()
        if jobs and self.executor != "ray":
            self._report_late_modules(model, run, loaded)
        return ([done[f][0] for f in range(self.dataset.num_folds)],
                [done[f][1] for f in range(self.dataset.num_folds)])

    def _result(self, model, run: _Run, folds: list[dict], user_scores: list[UserScores],
                started: float) -> RunResult:
        """The ``RunResult`` of the finished folds."""
        not_applicable = dataset_not_applicable(self.dataset)
        agg = aggregate([_numeric_tests(f) for f in folds], self.references, not_applicable)
        reasons = self._ineligible_because(run.limit, not_applicable, folds)
        fields = to_jsonable({
            "run_id": run.id, "run_hash": run.config["run_hash"],
            **({"name": run.config["name"]} if "name" in run.config else {}),
            "model": {"name": run.name, "class": f"{type(model).__module__}."
                      f"{type(model).__qualname__}", "fingerprint": run.fingerprint,
                      "params": run.params},
            "harness_version": __version__, "seed": run.seed, "limit": run.limit, "k": self.k,
            "dataset": self._dataset_info(), "tests": run.tests,
            "train_kwargs": run.kwargs_repr,
            "aggregate": agg,
            "not_applicable": not_applicable,
            "confidence_intervals": bootstrap(user_scores, self.references, n_boot=self.n_boot,
                                              seed=run.seed, not_applicable=not_applicable)
            if self.n_boot else None,
            "rating_errors": _mean_rating_errors(folds),
            "references": references_record(self.references, self.references_note),
            "environment": environment(),
            "folds": folds,
            "eligible_for_upload": not reasons, "not_eligible_because": reasons,
            "competition": self.competition.to_dict(), "settings": run.config.get("settings"),
            "runtime": {"seconds": round(time.perf_counter() - started, 3)},
        })
        return RunResult(path=run.results_path, **fields)

    # ------------------------------------------------------------------ one fold

    def _job(self, run: _Run, fold: int, train_kwargs: dict) -> FoldJob:
        """The settings of one fold of ``run``."""
        return FoldJob(fold=fold, name=run.name, seed=run.seed, limit=run.limit, k=self.k,
                       reclist_cls=run.reclist_cls, reports=self.reports,
                       verbose=self.output == "verbose", progress=self.progress,
                       report_dir=run.dir / "reclist" / f"fold_{fold}",
                       train_kwargs=train_kwargs,
                       repeated=repeated_mode(self.dataset, self.competition),
                       repeated_rule=self.competition.repeated_rule()
                       if self.competition.repeated_items == "error" else "")

    def _save_fold(self, run: _Run, out: FoldOutput) -> tuple[dict, UserScores]:
        """Save a computed fold (and reclist's files from a Ray task); its results and scores."""
        if out.printed and self.output == "verbose":
            sys.stdout.write(out.printed)
        report_dir = run.dir / "reclist" / f"fold_{out.fold}"
        for name, data in out.report_files.items():
            path = report_dir / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        if out.lists is not None:  # first: a finished fold always has its lists
            _store.write_predictions(run.dir, out.fold, run.key, out.lists.users,
                                    out.lists.items)
        _store.write_fold(run.dir, out.fold, run.key, out.result, out.scores)
        run.console.print(fold_line(out.result))
        return out.result, out.scores

    def _load_fold(self, run: _Run, fold: int):
        """The finished fold's results and per-user scores, verified; None to compute it.

        Nothing is reused unless it is exactly what the fold wrote when it finished: both
        files match the checksums recorded then, the JSON names this fold and this run, and
        the contents have the expected shape. Anything else is recomputed with a warning
        naming the file and the reason.
        """
        found = _store.verify_fold(run.dir, fold, run.key, run.tests)
        if found is None or isinstance(found, tuple):
            return found
        message = f"{found}: recomputing fold {fold}"
        warnings.warn(f"{message} (run directory {run.dir})", RunWarning, stacklevel=4)
        show(run.console, paragraph(message, run.console.width, "  ", style="yellow"))
        return None

    def _report_model_change(self, run: _Run) -> None:
        """Say so when the latest run of the same model and configuration had another model.

        Its folds are not reused: the new fingerprint gives the new run its own directory.
        """
        # the run id's prefix: the run's name when it has one, else the model's
        prefix = run.id.rsplit("-", 1)[0]
        latest = _store.latest_other_run(self.results_dir, prefix, run.dir, run.config)
        if latest is None:
            return
        created, path, record = latest
        parts = changed_parts(record["fingerprint"], run.fingerprint) or ["model"]
        what = " and ".join(PART_LABELS.get(p, p) for p in parts)
        files = changed_files(record["fingerprint"], run.fingerprint)
        if files:
            what += f" ({', '.join(files)})"
        self._say(run, f"{what} changed since the run of {created}: starting a new run "
                       f"({run.dir.name}; the folds of {path.parent.name} are not reused)",
                  stacklevel=5)

    def _report_late_modules(self, model, run: _Run, loaded: set[str]) -> None:
        """Say so when the folds loaded modules of the model's checkout that the run's id does
        not cover (imported by name while the model trained or predicted); ``loaded``: the
        checkout's modules loaded before the folds."""
        checkout = run.fingerprint["code"].get("checkout") or {}
        covered = {f["path"] for f in checkout.get("files", [])}
        late = sorted(loaded_checkout_modules(type(model)) - loaded - covered)
        if late:
            one = len(late) == 1
            it = "it" if one else "them"
            self._say(run, f"{', '.join(late)} of the model's checkout "
                           f"{'was' if one else 'were'} imported by name while the model "
                           f"trained or predicted: no import statement of the model's code "
                           f"names {it}, so the run id does not cover {it} and a change there "
                           f"would not start a new run. Import {it} with an import statement "
                           f"(or pass resume=False, submission.py --fresh).", stacklevel=5)

    def _say(self, run: _Run, message: str, stacklevel: int) -> None:
        """Say ``message`` once: on the console where the run prints, else (verbose=False,
        quiet) as a RunWarning that a caller can catch."""
        if self.output in ("silent", "quiet"):
            warnings.warn(message, RunWarning, stacklevel=stacklevel)
        else:
            show(run.console, paragraph(message, run.console.width, style="yellow"))


@dataclass(frozen=True)
class _Run:
    """What the steps of one ``evaluate`` call share: names, key, directory, configuration."""

    name: str
    key: str
    dir: Path
    seed: int
    limit: int
    tests: list[str]
    #: a custom RecList; None for the challenge's own tests
    reclist_cls: type | None
    config: dict
    fingerprint: dict
    kwargs_repr: dict
    console: Console
    #: the model's parameters as it shows them before training (``model_params``)
    params: dict = field(default_factory=dict)
    #: the folds computed by this call (the others were reused from an earlier run)
    computed: list[int] = field(default_factory=list)

    @property
    def id(self) -> str:
        """The run id: the run directory's name."""
        return self.dir.name

    @property
    def results_path(self) -> Path:
        """Where the run's ``results.json`` goes."""
        return self.dir / "results.json"


def _computed(fold: int, result: dict, scores: UserScores, lists: FoldPredictions
              ) -> FoldOutput:
    """The output of a fold computed in this process."""
    return FoldOutput(fold, result, scores, lists=lists)


def _id_prefix(name: str) -> str:
    """``name`` as the run id's prefix: letters, digits, ``_.-`` only, at most 64."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:64] or "model"


def _numeric_tests(fold: dict) -> dict:
    """The fold's tests that have a number (or None) as their value."""
    return {t: v for t, v in fold["tests"].items() if v is None or isinstance(v, (int, float))}


def _mean_rating_errors(folds: list[dict]) -> dict | None:
    """Each rating error averaged over the folds; None when no fold has rating errors."""
    if not any("rating_errors" in f for f in folds):
        return None
    names = folds[0].get("rating_errors", {})
    return {n: float(np.mean([f["rating_errors"][n] for f in folds]))
            for n in names if all(isinstance(f.get("rating_errors", {}).get(n), (int, float))
                                  for f in folds)}
