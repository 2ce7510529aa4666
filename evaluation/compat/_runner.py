"""``ChallengeDataset`` and ``EvalRSRunner`` with the 2022 constructor and ``evaluate`` signatures.

What ``from evaluation.EvalRSRunner import EvalRSRunner, ChallengeDataset`` gives: the
harness's classes, taking their arguments in the 2022 order and names. Where this harness
differs from 2022 in a way that changes numbers (the fold seed, the default data, ``limit``)
a warning says so once.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from evaluation._util.once import warn_once
from evaluation.compat._last_interactions import PROTOCOL_2023_NOTE
from evaluation.dataset import ChallengeDataset
from evaluation.errors import ConfigError
from evaluation.runner import EvalRSRunner, RunResult, UploadSettings
from evaluation.splits import DEFAULT_SEED, Fold, Split, leave_last_out

#: Arguments only the 2023 ``ChallengeDataset`` took.
_ARGUMENTS_2023 = ("dataset_out_path", "folded_dataset_split", "min_user_item_freq",
                   "sample_users_perc")
#: The seed of the 2023 last-interaction split's user sample: 2023 fixed it (``random_state=42``)
#: whatever the dataset's ``seed``.
LAST_INTERACTION_SEED = DEFAULT_SEED


def _no_folds(what: str) -> ConfigError:
    """The error of a fold asked of a ``folded_dataset_split=False`` dataset."""
    return ConfigError(
        f"{what}: this ChallengeDataset was built with folded_dataset_split=False, the 2023 "
        f"last-interaction split (several targets per user), which has no leaderboard folds "
        f"and is never scored by them. Fix: score it with the 2023 RecList, "
        f"EvalRSReclist(dataset=dataset, model_name=..., predictions=model.predict("
        f"dataset._get_test_set()[['user_id']])), or drop folded_dataset_split=False for the "
        f"leaderboard's folds.")


class LegacyChallengeDataset(ChallengeDataset):
    """``ChallengeDataset(num_folds=4, seed=None, force_download=False, **kwargs)`` (2022).

    The harness's dataset, with the 2022 positional order; ``kwargs`` are the harness's own
    arguments (``source``, ``scale``, ...) and the 2023 ones (mapped). Differences from
    2022, each said once:

    * the default data is the harness's default source (the embedded synthetic data); the
      2022 class downloaded the LFM data: pass ``source="lfm"`` for it;
    * ``seed=None`` (2022) and ``seed=0`` (both) drew the folds from the clock, different on
      every run; here ``None`` is the fixed seed 42 and ``0`` is a seed.

    ``get_sample_train_test()`` returns fold 1 (2022) unless a 2023 argument was given (the
    2023 class returned fold 0); ``_get_test_set(fold, limit, seed=0)`` samples ``limit``
    users with ``random_state=seed``, as both did.

    ``folded_dataset_split=False`` (2023) builds the 2023 last-interaction split instead of
    the folds (:meth:`last_interaction_split`): ``_get_train_set()``, ``_get_test_set()``
    and ``get_sample_train_test()`` return it, as in 2023 (any ``fold`` and ``limit``
    ignored), and the 2023 ``EvalRSReclist`` scores it with the 2023 protocol. The folds, and
    so the runner and the leaderboard's tests, are refused on it (``ConfigError``).
    """

    #: False for the 2023 last-interaction split (the 2023 attribute).
    folded_dataset_split: bool = True

    def __init__(self, num_folds: int = 4, seed: int | None = None,
                 force_download: bool = False, **kwargs: Any) -> None:
        self._edition = 2023 if any(a in kwargs for a in _ARGUMENTS_2023) else 2022
        if "folded_dataset_split" in kwargs and not kwargs["folded_dataset_split"]:
            del kwargs["folded_dataset_split"]
            self.folded_dataset_split = False
            warn_once("difference:folded_dataset_split",
                      f"ChallengeDataset(folded_dataset_split=False): {PROTOCOL_2023_NOTE}. "
                      f"Its users are sampled with seed {LAST_INTERACTION_SEED}, as in 2023.",
                      UserWarning, stacklevel=2)
        # 2023's default seed was 42, as here; a missing seed drew from the clock in 2022 only
        if seed == 0 or (seed is None and self._edition == 2022):
            warn_once("difference:seed",
                      f"ChallengeDataset(seed={seed!r}): the {self._edition} harness drew the "
                      f"folds from the clock for a missing or zero seed, so every run had "
                      f"other folds; this harness uses "
                      f"{'the fixed seed 42' if seed is None else 'seed 0'}, so that runs "
                      f"repeat and compare. Pass seed=... to choose the folds.",
                      UserWarning, stacklevel=2)
        if "source" not in kwargs:
            warn_once("difference:source",
                      "ChallengeDataset() of 2022/2023 downloaded the LFM data; here the "
                      "default is the harness's embedded synthetic data. Pass source='lfm' "
                      "(the 2022 data) or source='lfm2023' for the challenge's data.",
                      UserWarning, stacklevel=2)
        if force_download:
            kwargs["force_download"] = force_download  # mapped (and explained) by the base
        if seed is not None:
            kwargs["seed"] = seed  # None: the dataset's default seed
        super().__init__(num_folds=num_folds, **kwargs)

    def last_interaction_split(self) -> Split:
        """The 2023 last-interaction split (computed once): every event at a sampled user's
        latest timestamp is a test event (``evaluation.splits.leave_last_out`` with this
        dataset's ``frac`` and ``k_core``, the users sampled with seed 42 as in 2023).

        Raises
        ------
        ConfigError
            For a dataset with folds (``folded_dataset_split`` not False).
        """
        if self.folded_dataset_split:
            raise ConfigError("last_interaction_split(): this ChallengeDataset has folds; "
                              "build it with folded_dataset_split=False for the 2023 split.")
        found = self.__dict__.get("_last_interactions")
        if found is None:
            found = leave_last_out(self.tables.events, frac=self.params.frac,
                                   seed=LAST_INTERACTION_SEED, k_core=self.params.k_core,
                                   max_rounds=self.params.max_rounds)
            self.__dict__["_last_interactions"] = found
        return found

    def fold(self, fold: int) -> Fold:
        """Fold ``fold``; refused on the 2023 last-interaction split (it has none)."""
        if not self.folded_dataset_split:
            raise _no_folds(f"fold {fold}")
        return super().fold(fold)

    def _get_train_set(self, fold: int | None = None) -> pd.DataFrame:
        """The fold's training events; the 2023 split's (any ``fold``) without folds."""
        if not self.folded_dataset_split:
            return self.last_interaction_split().train
        return super()._get_train_set(0 if fold is None else fold)

    @property
    def _random_state(self) -> int:
        """The fold seed under its 2022 name."""
        return self.seed

    def _get_test_set(self, fold: int | None = None, limit: int | None = None, seed: int = 0,
                      subset_of_cols_to_return: list[str] | None = None) -> pd.DataFrame:
        """The fold's test rows; ``limit`` users drawn with ``random_state=seed`` (2022).

        Without folds: every test event of the 2023 split with all its columns, sorted by
        user (``fold`` and ``limit`` ignored, as in 2023)."""
        if not self.folded_dataset_split:
            test = self.last_interaction_split().test
            return test[list(subset_of_cols_to_return)] if subset_of_cols_to_return else test
        test = self.get_test_set(0 if fold is None else fold)
        if subset_of_cols_to_return:
            test = test[list(subset_of_cols_to_return)]
        if limit:
            return test.sample(n=limit, random_state=seed)
        return test

    def get_sample_train_test(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Fold 1's training events and test rows (2022); fold 0 for 2023 code; the 2023
        split without folds."""
        if not self.folded_dataset_split:
            split = self.last_interaction_split()
            return split.train, split.test
        fold = 1 if self._edition == 2022 and self.num_folds > 1 else 0
        return self.get_train_set(fold), self.get_test_set(fold)


class LegacyEvalRSRunner(EvalRSRunner):
    """``EvalRSRunner(dataset, email, participant_id, aws_access_key_id,
    aws_secret_access_key, bucket_name, **kwargs)`` (2022).

    The AWS keys and bucket name of the closed 2022 S3 upload are accepted and ignored (never
    stored, never printed), with a warning saying how uploads work now. ``kwargs`` are the
    harness's own arguments. :meth:`evaluate` takes the 2022 arguments in their order.
    """

    def __init__(self, dataset: ChallengeDataset | None = None, email: str | None = None,
                 participant_id: str | None = None, aws_access_key_id: str | None = None,
                 aws_secret_access_key: str | None = None, bucket_name: str | None = None,
                 **kwargs: Any) -> None:
        if getattr(dataset, "folded_dataset_split", True) is False:
            raise _no_folds("EvalRSRunner")
        aws = [name for name, value in (("aws_access_key_id", aws_access_key_id),
                                        ("aws_secret_access_key", aws_secret_access_key),
                                        ("bucket_name", bucket_name)) if value is not None]
        if aws:
            warn_once("arg:aws",
                      f"EvalRSRunner({', '.join(f'{a}=...' for a in aws)}): the 2022 S3 upload "
                      f"is closed, so these are ignored (not kept, not printed). Modern "
                      f"spelling: upload=UploadSettings(email=..., participant_id=..., "
                      f"url=..., token=...) (evaluation.runner), or `python submission.py "
                      f"--upload` with upload.env", stacklevel=2)
        if (email is not None or participant_id is not None) and "upload" not in kwargs:
            warn_once("arg:email",
                      "EvalRSRunner(email=..., participant_id=...) is the 2022 spelling. Modern "
                      "spelling: upload=UploadSettings(email=..., participant_id=..., url=..., "
                      "token=...) (evaluation.runner)", stacklevel=2)
            kwargs["upload"] = UploadSettings(email=email, participant_id=participant_id)
        elif email is not None or participant_id is not None:
            kwargs.update(email=email, participant_id=participant_id)  # the runner says "both"
        super().__init__(dataset, **kwargs)

    # the 2022 positional order (seed, upload, limit, custom_RecList) differs from the modern one
    def evaluate(self, model: Any, seed: int | None = None, upload: bool = False,  # type: ignore[override]
                 limit: int = 0, custom_RecList: type | None = None, debug: bool = True,
                 **kwargs: Any) -> RunResult:
        """The 2022 ``evaluate(model, seed, upload, limit, custom_RecList, debug, **kwargs)``.

        ``seed`` seeds the model's generators (the 2022 runner kept it unused); ``upload``
        uploads with the runner's ``UploadSettings`` (the 2022 upload had already been
        switched off); ``debug`` is accepted (the runner prints its progress anyway);
        ``kwargs`` go to ``model.train``.
        """
        if limit:
            warn_once("difference:limit",
                      f"evaluate(limit={limit}) scores the first {limit} test users of each "
                      f"fold (by user_id); the 2022 runner scored {limit} users sampled with "
                      f"random_state=0, so limited runs differ from 2022's (full runs do not)",
                      UserWarning, stacklevel=2)
        if custom_RecList is not None:
            warn_once("arg:custom_RecList",
                      "evaluate(custom_RecList=...) is the 2022 name: pass reclist_cls=...",
                      stacklevel=2)
        # the runner tries a custom RecList on a few users before the first fold trains
        reclist_cls = kwargs.pop("reclist_cls", None) or custom_RecList
        return super().evaluate(model, seed=seed, limit=limit, reclist_cls=reclist_cls,
                                upload=upload, **kwargs)

