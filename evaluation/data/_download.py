"""Resumable, verified HTTP downloads.

A download streams into ``<dest>.part`` with a progress bar. If the connection drops, the
transfer resumes from the bytes already on disk (HTTP ``Range``), both within one call (a few
retries) and across calls (the ``.part`` file is kept). When complete, the file is checked
(its size, an optional sha256, and for zips ``zipfile.testzip()``) and only then renamed onto
``dest``, so ``dest`` never holds a partial or corrupt file. A corrupt file is removed and the
error says so.
"""

from __future__ import annotations

import hashlib
import os
import re
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from tqdm.auto import tqdm

from evaluation.errors import DownloadError

if TYPE_CHECKING:
    import requests

CHUNK_SIZE = 1 << 16  # a dropped connection loses at most the chunk being read


def download(url: str, dest: str | os.PathLike, *, sha256: str | None = None,
             progress: bool = True, check_zip: bool | None = None, retries: int = 3,
             timeout: float = 60.0, session: requests.Session | None = None) -> Path:
    """Download ``url`` to ``dest`` (resuming a previous ``.part``) and verify it.

    ``check_zip`` defaults to whether ``dest`` ends in ``.zip``. ``retries`` is how many times
    a dropped connection is resumed within this call. Returns ``dest``.
    """
    # requests (~0.1 s to import) loads only when something is downloaded: scoring the embedded
    # dataset, or data already cached, never needs it
    import requests

    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    if check_zip is None:
        check_zip = dest.suffix.lower() == ".zip"
    http = session or requests.Session()
    try:
        for attempt in range(retries + 1):
            try:
                if _fetch(http, url, part, progress=progress, timeout=timeout):
                    break
            except (requests.ConnectionError, requests.Timeout,
                    requests.exceptions.ChunkedEncodingError, _Truncated) as exc:
                if attempt == retries:
                    have = part.stat().st_size if part.exists() else 0
                    raise DownloadError(
                        f"download of {url} failed after {retries + 1} attempts ({exc}); "
                        f"{have:,} bytes are kept in {part}. Fix: check the network and run "
                        "again to resume, or set the URL (argument or EVALRS_LFM_URL)"
                    ) from exc
    finally:
        if session is None:
            http.close()
    verify_file(part, url=url, sha256=sha256, check_zip=check_zip)
    os.replace(part, dest)
    return dest


class _Truncated(Exception):
    """The connection closed before the announced size was received (resumed like a drop)."""


def _fetch(http: requests.Session, url: str, part: Path, *, progress: bool,
           timeout: float) -> bool:
    """One request: append the rest of the file to ``part``; True when it is complete."""
    have = part.stat().st_size if part.exists() else 0
    headers = {"Range": f"bytes={have}-"} if have else {}
    with http.get(url, stream=True, timeout=timeout, headers=headers) as resp:
        if resp.status_code == 416 and have:
            total = _total_from_content_range(resp.headers.get("Content-Range", ""))
            if total == have:
                return True  # the previous run had received everything
            part.unlink()  # the server's file changed: start over
            return _fetch(http, url, part, progress=progress, timeout=timeout)
        if resp.status_code not in (200, 206):
            raise DownloadError(
                f"download of {url} failed: HTTP {resp.status_code} {resp.reason}. Fix: check "
                "the URL (argument or EVALRS_LFM_URL) and try again"
            )
        if resp.status_code == 206:
            start = _start_from_content_range(resp.headers.get("Content-Range", ""))
            if start != have:
                part.unlink()
                return _fetch(http, url, part, progress=progress, timeout=timeout)
            total = _total_from_content_range(resp.headers.get("Content-Range", ""))
            mode = "ab"
        else:  # 200: the server ignores Range (or nothing was there yet): whole file
            have, mode = 0, "wb"
            total = int(resp.headers["Content-Length"]) if "Content-Length" in resp.headers \
                else None
        bar = tqdm(total=total, initial=have, unit="B", unit_scale=True, unit_divisor=1024,
                   desc=Path(part.name).stem, disable=not progress, leave=False)
        with bar, open(part, mode) as fh:
            for chunk in resp.iter_content(chunk_size=CHUNK_SIZE):
                fh.write(chunk)
                bar.update(len(chunk))
            fh.flush()
            os.fsync(fh.fileno())
    size = part.stat().st_size
    if total is not None and size < total:
        raise _Truncated(f"connection closed after {size:,} of {total:,} bytes")
    if total is not None and size > total:
        part.unlink()
        raise DownloadError(f"download of {url}: received {size:,} bytes but the server "
                            f"announced {total:,}; the partial file was removed. Fix: run again")
    return True


def _total_from_content_range(value: str) -> int | None:
    match = re.search(r"/(\d+)\s*$", value)
    return int(match.group(1)) if match else None


def _start_from_content_range(value: str) -> int | None:
    match = re.match(r"\s*bytes\s+(\d+)-", value)
    return int(match.group(1)) if match else None


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK_SIZE), b""):
            h.update(block)
    return h.hexdigest()


def verify_file(path: Path, *, url: str = "", sha256: str | None = None,
                check_zip: bool = True) -> None:
    """Check ``path``'s sha256 (if given) and zip integrity; remove it and raise if bad."""
    what = f"{path}" + (f" (from {url})" if url else "")
    if sha256:
        actual = file_sha256(path)
        if actual.lower() != sha256.strip().lower():
            path.unlink(missing_ok=True)
            raise DownloadError(
                f"{what}: sha256 mismatch: expected {sha256}, got {actual}; the file was "
                "removed. Fix: run again to download it afresh; if it fails again, check the "
                "URL and the expected sha256"
            )
    if check_zip:
        problem = zip_problem(path)
        if problem:
            path.unlink(missing_ok=True)
            raise DownloadError(
                f"{what}: corrupt or truncated zip ({problem}); the file was removed. Fix: "
                "run again to download it afresh; if it fails again, check the URL"
            )


def zip_problem(path: Path) -> str | None:
    """None if ``path`` is a readable zip whose members' CRCs check out, else what's wrong."""
    try:
        with zipfile.ZipFile(path) as zf:
            bad = zf.testzip()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as exc:
        return str(exc) or type(exc).__name__
    return f"member {bad!r} fails its CRC check" if bad else None
