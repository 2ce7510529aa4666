"""The run directory: its key and hash, the fold files, their checksums and their verification.

A run lives in ``results/<model name>-<run key[:12]>/``: ``run.json`` (the configuration),
per finished fold ``fold_<i>.json``, ``fold_<i>_users.npz`` (the per-user scores) and
``fold_<i>_predictions.npz`` (the checked lists, what an upload carries), the manifest
``checksums.json`` (every one of those files' sha256) and, at the end, ``results.json``. A
fold counts as finished only when its JSON and per-user files match the checksums recorded
when it finished; a run that was killed resumes at its first unfinished fold. Its lists are
uploaded only while they match theirs.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import tempfile
import zipfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from evaluation._util import atomic as _atomic
from evaluation._util.jsonable import json_sha256
from evaluation._util.npy import load_npz
from evaluation.challenge import LEADERBOARD_TESTS, MRED_TESTS, UserScores
from evaluation.errors import ConfigError

#: Per-run manifest: the sha256 of each finished fold's files, recorded when the fold finished.
CHECKSUMS_FILE = "checksums.json"

_USER_ARRAYS = {"hit": np.dtype(bool), "rr": np.dtype(np.float64), "blw": np.dtype(np.float64),
                "ld": np.dtype(np.float64),
                **{f"slice:{t}": np.dtype(np.int32) for t in MRED_TESTS}}


# --------------------------------------------------------------------------- the run key


def run_key(config: dict) -> str:
    """The hex sha256 of a run's configuration: the run directory's identity."""
    return json_sha256(config, default=str)


# --------------------------------------------------------------------------- the directory


def check_results_dir(results_dir: str | os.PathLike) -> Path:
    """Check that run directories can be created in ``results_dir``.

    The directory need not exist yet; the nearest existing folder on its path must be a
    writable directory. Write access is tried by creating (and removing) a temporary file,
    since ``os.access`` says yes to root even on a read-only or immutable directory.

    Parameters
    ----------
    results_dir : str or os.PathLike
        Where run directories go.

    Returns
    -------
    Path
        ``results_dir`` as a ``Path``.

    Raises
    ------
    ConfigError
        When it is not a path, is a file, lies under a file or is not writable.
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
    existing = _nearest_existing(path)
    if not existing.is_dir():
        raise ConfigError(f"results_dir {str(path)!r} lies under {str(existing)!r}, which is a "
                          f"file, not a directory, so it cannot be created. Pass a path that "
                          f"is not under a file.")
    reason = _not_writable(existing)
    if reason is not None:
        where = "" if existing == path else f" (its nearest existing folder {str(existing)!r})"
        raise ConfigError(f"results_dir {str(path)!r}{where} is not writable ({reason}): the "
                          f"run's results cannot be saved. Pass a writable directory or change "
                          f"its permissions.")
    return path


def _nearest_existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _not_writable(folder: Path) -> str | None:
    """Why files cannot be created in ``folder``, or None when they can."""
    if not os.access(folder, os.W_OK | os.X_OK):
        return "no write permission"
    try:
        fd, probe = tempfile.mkstemp(prefix=".evalrs-write-test-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None


def read_json(path: Path):
    """The JSON in ``path``, or None when it is missing or unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def mtime(path: Path) -> str:
    """When ``path`` was last changed (local ISO time), or "an unknown date"."""
    try:
        stamp = path.stat().st_mtime
    except OSError:
        return "an unknown date"
    return datetime.fromtimestamp(stamp, timezone.utc).astimezone().isoformat(timespec="seconds")


def now() -> str:
    """The current local time in ISO format, to the second."""
    return datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds")


def run_created(run_dir: Path, key: str) -> str | None:
    """When the run in ``run_dir`` started if it is the run with this key, else None."""
    record = read_json(run_dir / "run.json")
    if isinstance(record, dict) and record.get("run_key") == key:
        created = record.get("created")
        return created if isinstance(created, str) else mtime(run_dir / "run.json")
    return None


def latest_other_run(results_dir: Path, name: str, run_dir: Path,
                     config: dict) -> tuple[str, Path, dict] | None:
    """The latest run whose id starts with ``name`` (the run's name, else its model's), with
    ``config`` but another model fingerprint.

    Returns ``(created, path of its run.json, its record)``, or None when there is none.
    """
    same = {k: v for k, v in config.items() if k != "model_fingerprint"}
    latest: tuple[str, Path, dict] | None = None
    for path in results_dir.glob(f"{glob.escape(name)}-*/run.json"):
        if path.parent == run_dir:
            continue
        record = read_json(path)
        if not isinstance(record, dict) or not isinstance(record.get("fingerprint"), dict) \
                or any(record.get(k) != v for k, v in same.items()):
            continue
        created = record.get("created")
        if not isinstance(created, str):
            created = mtime(path)
        if latest is None or created > latest[0]:
            latest = (created, path, record)
    return latest


# --------------------------------------------------------------------------- fold files


def write_fold(run_dir: Path, fold: int, key: str, result: dict, scores: UserScores) -> None:
    """Save a finished fold: its per-user arrays, its JSON, then both checksums.

    The JSON marks the fold finished (it names its fold, its run and the arrays' checksum), so
    it is written after the arrays; the manifest entry that vouches for both comes last.
    """
    npz_name, json_name = f"fold_{fold}_users.npz", f"fold_{fold}.json"
    with _atomic.atomic_path(run_dir / npz_name) as tmp:
        with open(tmp, "wb") as fh:  # a file object: np.savez would append ".npz" to a name
            # typed as values of any kind: savez's keywords also include allow_pickle (a
            # bool), which no array's name is
            arrays: dict[str, Any] = scores.to_arrays()
            np.savez(fh, **arrays)
        npz_sha = _sha256_file(tmp)
    text = json.dumps({"run_key": key, **result, "users_sha256": npz_sha}, indent=2,
                      allow_nan=False) + "\n"
    _atomic.write_text(run_dir / json_name, text)
    _record_checksums(run_dir, key, {
        json_name: hashlib.sha256(text.encode("utf-8")).hexdigest(), npz_name: npz_sha})


def predictions_path(run_dir: Path, fold: int) -> Path:
    """Where a fold's checked top-k lists are kept: ``fold_<i>_predictions.npz``."""
    return run_dir / f"fold_{fold}_predictions.npz"


def write_predictions(run_dir: Path, fold: int, key: str, users: np.ndarray,
                      items: np.ndarray) -> None:
    """Keep a fold's checked lists (``users``: int32 ids, ``items``: ``(users, k)`` int32
    track ids) for the upload, which carries them instead of the run's scores; their checksum
    goes into the manifest of run ``key``, so that lists edited afterwards are not uploaded."""
    path = predictions_path(run_dir, fold)
    with _atomic.atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:  # a file object: np.savez would append ".npz" to a name
            np.savez(fh, users=users, items=items)
        sha = _sha256_file(tmp)
    _record_checksums(run_dir, key, {path.name: sha})


def read_predictions(run_dir: Path, fold: int) -> tuple[np.ndarray, np.ndarray]:
    """A fold's kept lists: (user ids, ``(users, k)`` track ids), int32.

    Raises
    ------
    ConfigError
        When the file is missing, does not match the checksum the manifest recorded when the
        fold finished, or is not the lists the runner writes.
    """
    path = predictions_path(run_dir, fold)
    manifest = read_json(run_dir / CHECKSUMS_FILE)
    files = manifest.get("files") if isinstance(manifest, dict) else None
    recorded = files.get(path.name) if isinstance(files, dict) else None
    try:
        found = _sha256_file(path)
    except OSError:
        found = None  # missing: said below, as any unreadable file
    if found is not None and recorded != found:
        why = ("no checksum was recorded for it in " + CHECKSUMS_FILE if recorded is None
               else "its checksum does not match the one recorded when the fold finished "
                    "(edited?)")
        raise ConfigError(f"{path.name}: {why}; the upload carries only the lists the run "
                          f"checked and scored: run the model again (--fresh)")
    try:
        arrays = load_npz(path)
        users, items = arrays["users"], arrays["items"]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        raise ConfigError(f"{path.name} cannot be read ({type(exc).__name__}: {exc}): the "
                          f"upload carries every fold's predictions; run the model again with "
                          f"this harness (a run of an older one did not keep them)") from None
    if users.dtype != np.int32 or items.dtype != np.int32 or users.ndim != 1 \
            or items.ndim != 2 or len(items) != len(users):
        raise ConfigError(f"{path.name} does not hold int32 user ids and (users, k) int32 "
                          f"lists; run the model again")
    return users, items


def forget_fold(run_dir: Path, fold: int) -> None:
    """Drop a fold's checksums before it is computed again.

    A run killed while it recomputes the fold then leaves no record that vouches for the old
    files.
    """
    data = read_json(run_dir / CHECKSUMS_FILE)
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        return
    names = (f"fold_{fold}.json", f"fold_{fold}_users.npz",
             predictions_path(run_dir, fold).name)
    if any(n in data["files"] for n in names):
        data["files"] = {k: v for k, v in data["files"].items() if k not in names}
        _atomic.write_json(run_dir / CHECKSUMS_FILE, data)


def _sha256_file(path: Path) -> str:
    """The hex sha256 of the file at ``path``."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _read_checksums(run_dir: Path, key: str) -> dict[str, str]:
    """The manifest's ``{file name: sha256}`` for run ``key``; empty when it has none."""
    data = read_json(run_dir / CHECKSUMS_FILE)
    if not isinstance(data, dict) or data.get("run_key") != key \
            or not isinstance(data.get("files"), dict):
        return {}
    return {k: v for k, v in data["files"].items() if isinstance(v, str)}


def _record_checksums(run_dir: Path, key: str, files: dict[str, str]) -> None:
    """Add ``files`` (name: sha256) to the manifest of run ``key``."""
    recorded = _read_checksums(run_dir, key)
    recorded.update(files)
    _atomic.write_json(run_dir / CHECKSUMS_FILE,
                       {"run_key": key, "files": dict(sorted(recorded.items()))})


# --------------------------------------------------------------------------- verification


def verify_fold(run_dir: Path, fold: int, key: str, tests: list[str]):
    """Check a finished fold's files before they are reused.

    Returns
    -------
    tuple, None or str
        ``(results, UserScores)`` of a verified finished fold; None when the fold was never
        finished; otherwise a message naming the file and what is wrong with it.
    """
    npz_name = f"fold_{fold}_users.npz"
    if not (run_dir / f"fold_{fold}.json").exists():
        return None  # not finished (its arrays, if any, are leftovers of a killed fold)
    data = _checked_fold_json(run_dir, fold, key, tests)
    if isinstance(data, str):
        return data
    npz_path = run_dir / npz_name
    try:
        arrays = load_npz(npz_path)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        return f"{npz_name}: cannot be read ({exc})"
    problem = _user_arrays_problem(arrays, data)
    if problem is not None:
        return f"{npz_name}: {problem}"
    data.pop("run_key")
    data.pop("users_sha256")
    return data, UserScores.from_arrays(arrays)


def verify_fold_files(run_dir: str | os.PathLike, fold: int, key: str,
                      tests: list[str]) -> dict | str:
    """Check a finished fold's two files against the manifest, without reading its arrays.

    For readers of a finished run that load the per-user arrays only when asked: both files
    must match the checksums recorded when the fold finished and the JSON must name this fold
    and this run. :func:`verify_fold` checks the arrays too.

    Parameters
    ----------
    run_dir : str or os.PathLike
        The run directory.
    fold : int
        The fold.
    key : str
        The run key (``run.json``'s ``run_key``).
    tests : list of str
        The tests the fold's JSON must hold.

    Returns
    -------
    dict or str
        The fold's JSON (without ``run_key``); otherwise a message naming the file and what is
        wrong with it (a missing file included).
    """
    run_dir = Path(run_dir)
    data = _checked_fold_json(run_dir, fold, key, tests)
    if isinstance(data, str):
        return data
    data.pop("run_key")
    data.pop("users_sha256")
    return data


def _checked_fold_json(run_dir: Path, fold: int, key: str, tests: list[str]) -> dict | str:
    """A fold's JSON, once both of its files match the manifest, the JSON names this fold
    and run, and the arrays' file is the one it recorded; else what is wrong (a message)."""
    json_name, npz_name = f"fold_{fold}.json", f"fold_{fold}_users.npz"
    for name in (json_name, npz_name):
        if not (run_dir / name).is_file():
            return f"{name}: missing" + (f", while {json_name} says the fold finished"
                                         if name == npz_name else "")
    try:
        raw = (run_dir / json_name).read_bytes()
        npz_sha = _sha256_file(run_dir / npz_name)
    except OSError as exc:
        return f"{json_name}: cannot be read ({exc.strerror or exc})"
    problem = _checksum_problem(_read_checksums(run_dir, key),
                                {json_name: hashlib.sha256(raw).hexdigest(), npz_name: npz_sha})
    if problem is not None:
        return problem
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError as exc:
        return f"{json_name}: not valid JSON ({exc})"
    problem = _fold_json_problem(data, fold, key, tests)
    if problem is not None:
        return f"{json_name}: {problem}"
    if data["users_sha256"] != npz_sha:
        return f"{npz_name}: checksum does not match the one {json_name} recorded (swapped?)"
    return data


def _checksum_problem(recorded: dict[str, str], found: dict[str, str]) -> str | None:
    """What is wrong with the files' checksums against the manifest, or None."""
    for name, sha in found.items():
        if name not in recorded:
            return (f"{name}: no checksum was recorded for it in {CHECKSUMS_FILE} (the run "
                    f"stopped before the fold was recorded, or the manifest was changed)")
        if recorded[name] != sha:
            return f"{name}: checksum does not match the one recorded when the fold finished " \
                   f"(edited?)"
    return None


def _is_number(value) -> bool:
    """Whether ``value`` is a finite int or float (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and bool(np.isfinite(value))


def _is_count(value, minimum: int) -> bool:
    """Whether ``value`` is an int (not a bool) >= ``minimum``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def _fold_json_problem(data, fold: int, key: str, tests: list[str]) -> str | None:
    """What is wrong with a fold JSON's identity and counts, or None."""
    if not isinstance(data, dict):
        return f"expected a JSON object, found {type(data).__name__}"
    if data.get("run_key") != key:
        return f"it belongs to another run (run_key {str(data.get('run_key'))[:12]!r})"
    if data.get("fold") != fold or isinstance(data.get("fold"), bool):
        return f"it holds the results of fold {data.get('fold')!r}, not of fold {fold}"
    if not _is_count(data.get("n_users"), 1):
        return f"'n_users' must be a positive int, found {data.get('n_users')!r}"
    if not _is_count(data.get("n_train_rows"), 0):
        return f"'n_train_rows' must be an int >= 0, found {data.get('n_train_rows')!r}"
    return _fold_values_problem(data, tests)


def _not_applicable(details, test: str) -> bool:
    """Whether a fold's ``details`` mark ``test`` as not applicable to the dataset."""
    detail = details.get(test) if isinstance(details, dict) else None
    return isinstance(detail, dict) and isinstance(detail.get("not_applicable"), str)


def _fold_values_problem(data: dict, tests: list[str]) -> str | None:
    """What is wrong with a fold JSON's tests, details, runtime and checksum, or None."""
    values = data.get("tests")
    if not isinstance(values, dict):
        return f"'tests' must be an object, found {type(values).__name__}"
    missing = [t for t in tests if t not in values]
    if missing:
        return f"'tests' lacks {missing}"
    details = data.get("details")
    # a test the dataset cannot measure is null, and its detail says why
    bad = {t: values[t] for t in LEADERBOARD_TESTS if t in values
           and not (_is_number(values[t]) or (values[t] is None and _not_applicable(details, t)))}
    if bad:
        return f"leaderboard tests must be finite numbers, found {bad}"
    for name in ("details", "runtime"):
        if not isinstance(data.get(name), dict):
            return f"{name!r} must be an object, found {type(data.get(name)).__name__}"
    if "rating_errors" in data and not (
            isinstance(data["rating_errors"], dict)
            and all(v is None or _is_number(v) for v in data["rating_errors"].values())):
        return "'rating_errors' must map names to finite numbers"
    if not isinstance(data.get("users_sha256"), str):
        return "it does not record the checksum of its per-user file"
    return None


def _user_arrays_problem(arrays: dict, data: dict) -> str | None:
    """What is wrong with a fold's per-user arrays (given its JSON), or None."""
    missing = sorted(set(_USER_ARRAYS) - set(arrays))
    if missing:
        return f"arrays {missing} are missing"
    for name, dtype in _USER_ARRAYS.items():
        a = arrays[name]
        if a.dtype != dtype or a.ndim != 1 or len(a) != data["n_users"]:
            return (f"array {name!r} must be 1-d {dtype} with n_users={data['n_users']} values, "
                    f"found {a.dtype} of shape {a.shape}")
    # the per-user values must reproduce the fold's recorded tests
    if not np.isfinite(arrays["rr"]).all() \
            or abs(float(arrays["hit"].mean()) - data["tests"]["HIT_RATE"]) > 1e-9 \
            or abs(float(arrays["rr"].mean()) - data["tests"]["MRR"]) > 1e-9:
        return "its hits and reciprocal ranks do not reproduce the fold's HIT_RATE and MRR"
    return None
