"""Distribution files fetched and read without running anything in them.

An sdist is an archive whose build runs its publisher's code; these helpers only download
files named by the organizer's index (hashes checked, sizes bounded), find a project's sdist on
an index page (PEP 691 JSON or PEP 503 HTML), and read text out of archives: an sdist's
``[build-system] requires`` from its ``pyproject.toml`` and a built wheel's ``Requires-Dist``
from its METADATA, each checked to be a specifier (no URL).
"""

from __future__ import annotations

import email.parser
import hashlib
import html.parser
import json
import tarfile
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomllib
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name, parse_sdist_filename
from packaging.version import Version

from evaluation.errors import ConfigError

#: The build requirements of an sdist that declares none (PEP 517's fallback).
DEFAULT_BUILD_REQUIRES = ("setuptools>=40.8.0",)
#: Seconds one download may take, and the most bytes of one file.
DOWNLOAD_TIMEOUT_S = 300
MAX_DOWNLOAD_BYTES = 2 * 1024 ** 3
#: uv's default index, where none is given.
DEFAULT_INDEX = "https://pypi.org/simple"
#: The most bytes of an index page read.
MAX_INDEX_PAGE_BYTES = 64 * 1024 * 1024
#: The most bytes of an sdist's pyproject.toml read.
MAX_PYPROJECT_BYTES = 1024 * 1024


@dataclass(frozen=True)
class LockedFile:
    """One distribution file of the lock: its URL and sha256 (empty when the index gave none)."""

    url: str
    sha256: str

    @property
    def filename(self) -> str:
        name = urllib.parse.unquote(urllib.parse.urlsplit(self.url).path.rsplit("/", 1)[-1])
        if not name or name.startswith(".") or "/" in name or "\\" in name:
            raise ConfigError(f"the index gave a file URL without a usable file name "
                              f"({self.url!r}); check --index-url.")
        return name

def requires_dist(wheel: Path) -> list[str]:
    """The ``Requires-Dist`` specifiers of a wheel's METADATA (each checked: no URL)."""
    with zipfile.ZipFile(wheel) as archive:
        names = [n for n in archive.namelist() if n.count("/") == 1
                 and n.endswith(".dist-info/METADATA")]
        if len(names) != 1:
            raise ConfigError(f"environment: {wheel.name} built in the sandbox has no single "
                              f"METADATA.")
        with archive.open(names[0]) as f:
            text = f.read(MAX_PYPROJECT_BYTES).decode("utf-8", "replace")
    values = email.parser.HeaderParser().parsestr(text).get_all("Requires-Dist") or []
    return _specifiers(values, f"{wheel.name} built in the sandbox declares a dependency",
                       "packages come")


def sdist_on_index(index_url: str | None, pin: str) -> LockedFile:
    """The sdist of ``pin`` on the index's page of its project (PEP 691 JSON or PEP 503
    HTML)."""
    name, _, version = pin.partition("==")
    base = (index_url or DEFAULT_INDEX).rstrip("/")
    page = f"{base}/{canonicalize_name(name)}/"
    local = page.startswith("file:")
    request = urllib.request.Request(page + ("index.html" if local else ""), headers={
        "Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.1"})
    with urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT_S) as answer:
        body = answer.read(MAX_INDEX_PAGE_BYTES).decode("utf-8", "replace")
        kind = answer.headers.get("Content-Type", "") if not local else "text/html"
    links = _json_links(body) if "json" in kind else _html_links(body)
    for filename, href in links:
        try:
            found_name, found_version = parse_sdist_filename(filename)
        except ValueError:
            continue
        if found_name == canonicalize_name(name) and found_version == Version(version):
            url, _, fragment = urllib.parse.urljoin(page, href).partition("#")
            sha256 = fragment[len("sha256="):] if fragment.startswith("sha256=") else ""
            return LockedFile(url, sha256)
    raise ConfigError(f"environment: the index has no sdist of {pin} ({page}).")


def _json_links(body: str) -> list[tuple[str, str]]:
    files = json.loads(body).get("files", [])
    return [(f["filename"], f["url"] + (f"#sha256={f['hashes']['sha256']}"
                                        if "sha256" in f.get("hashes", {}) else ""))
            for f in files if isinstance(f, dict) and "filename" in f and "url" in f]


def _html_links(body: str) -> list[tuple[str, str]]:
    links: list[tuple[str, str]] = []

    class Anchors(html.parser.HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            href = dict(attrs).get("href")
            if tag == "a" and href:
                path = urllib.parse.urlsplit(href).path
                links.append((urllib.parse.unquote(path.rsplit("/", 1)[-1]), href))

    Anchors().feed(body)
    return links

def fetch(file: LockedFile, folder: Path, *, local_index: bool = False) -> Path:
    """Download ``file`` into ``folder`` (nothing in it runs); its sha256 checked. A
    ``file:`` URL is taken only from a ``local_index`` (an index that is itself a folder)."""
    target = folder / file.filename
    scheme = urllib.parse.urlsplit(file.url).scheme
    if scheme not in ("https", "http") and not (scheme == "file" and local_index):
        raise ConfigError(f"environment: the index gave {file.url!r}, which is not an "
                          f"http(s) URL (file: URLs are taken only from an index that is a "
                          f"local folder); check --index-url.")
    digest = hashlib.sha256()
    size = 0
    with urllib.request.urlopen(file.url, timeout=DOWNLOAD_TIMEOUT_S) as source, \
            open(target, "wb") as out:
        while chunk := source.read(1 << 20):
            size += len(chunk)
            if size > MAX_DOWNLOAD_BYTES:
                raise ConfigError(f"environment: {file.filename} is larger than "
                                  f"{MAX_DOWNLOAD_BYTES} bytes.")
            digest.update(chunk)
            out.write(chunk)
    if file.sha256 and digest.hexdigest() != file.sha256:
        raise ConfigError(f"environment: {file.filename} does not have the sha256 the index "
                          f"gave ({file.sha256}); the index or the download is not to be "
                          f"trusted.")
    return target


def build_requires(sdist: Path) -> list[str]:
    """The ``[build-system] requires`` of an sdist, read from its ``pyproject.toml`` as text
    (PEP 517's setuptools when it declares none)."""
    text = _pyproject_text(sdist)
    try:
        system = tomllib.loads(text).get("build-system", {}) if text is not None else {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"environment: the pyproject.toml of {sdist.name} is not TOML "
                          f"({exc}).") from None
    requires = system.get("requires", list(DEFAULT_BUILD_REQUIRES)) \
        if isinstance(system, dict) else list(DEFAULT_BUILD_REQUIRES)
    return _specifiers(requires, f"{sdist.name} names a build requirement",
                       "build requirements come")


def _pyproject_text(sdist: Path) -> str | None:
    """The top-level ``pyproject.toml`` of an sdist archive (None when it has none)."""
    try:
        if sdist.name.endswith(".zip"):
            with zipfile.ZipFile(sdist) as archive:
                names = [n for n in archive.namelist() if n.count("/") == 1
                         and n.endswith("/pyproject.toml")]
                if not names:
                    return None
                with archive.open(names[0]) as extracted:
                    return extracted.read(MAX_PYPROJECT_BYTES).decode()
        with tarfile.open(sdist) as archive:
            for member in archive:
                if member.isfile() and member.name.count("/") == 1 \
                        and member.name.endswith("/pyproject.toml"):
                    data = archive.extractfile(member)
                    return data.read(MAX_PYPROJECT_BYTES).decode() if data is not None else None
    except (OSError, EOFError, tarfile.TarError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        raise ConfigError(f"environment: {sdist.name} cannot be read as an sdist "
                          f"({type(exc).__name__}).") from None
    return None


def _specifiers(values: Iterable[Any], what: str, source: str) -> list[str]:
    """``values`` as requirement specifiers; ConfigError for one that is not a specifier or
    names a URL (``what`` says whose it is, ``source`` what must come from the index)."""
    found = []
    for value in values:
        try:
            requirement = Requirement(str(value))
        except InvalidRequirement:
            raise ConfigError(f"environment: {what} that is not a specifier "
                              f"({value!r}).") from None
        if requirement.url:
            raise ConfigError(f"environment: {what} by URL ({value!r}): {source} from the "
                              f"organizer's index only.")
        found.append(str(requirement))
    return found
