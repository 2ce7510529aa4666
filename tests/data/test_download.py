"""Downloads against a local HTTP server on 127.0.0.1 (``server``, from the conftest): complete,
interrupted + resumed, corrupt zip, sha256, env-var URL override, cache hit."""

from __future__ import annotations

import hashlib
import io
import re
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from benchmarks._challenge_files import PAIRS, write_2022, write_2023, zip_directory
from evaluation.data import load_source
from evaluation.data._download import download
from evaluation.data._lfm import URL_ENV, lfm_cache_dir
from evaluation.errors import DownloadError


def make_zip(size: int = 300_000) -> bytes:
    payload = np.random.default_rng(1).integers(0, 256, size, dtype=np.uint8).tobytes()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr("data/blob.bin", payload)
        zf.writestr("data/readme.txt", "hello")
    return buf.getvalue()


def test_complete_download(server, tmp_path):
    data = make_zip()
    server.files["/d.zip"] = data
    dest = download(server.base + "/d.zip", tmp_path / "d.zip", progress=False)
    assert dest.read_bytes() == data
    assert not (tmp_path / "d.zip.part").exists()
    assert server.log == [("/d.zip", None)]


def test_interrupted_transfer_resumes_within_the_call(server, tmp_path):
    data = make_zip()
    server.files["/d.zip"] = data
    server.drops["/d.zip"] = 1
    dest = download(server.base + "/d.zip", tmp_path / "d.zip", progress=False)
    assert dest.read_bytes() == data
    assert len(server.log) == 2
    assert server.log[0][1] is None
    # resumed from the bytes kept (all but the chunk that was being read when it broke off)
    resumed_at = int(re.match(r"bytes=(\d+)-", server.log[1][1]).group(1))
    assert 0 < resumed_at <= len(data) // 3


def test_interrupted_transfer_resumes_on_the_next_call(server, tmp_path):
    data = make_zip()
    server.files["/d.zip"] = data
    server.drops["/d.zip"] = 1
    url = server.base + "/d.zip"
    with pytest.raises(DownloadError, match=r"kept in .*d\.zip\.part.*run\s+again to resume"):
        download(url, tmp_path / "d.zip", progress=False, retries=0)
    assert not (tmp_path / "d.zip").exists()
    kept = (tmp_path / "d.zip.part").stat().st_size
    assert 0 < kept <= len(data) // 3
    download(url, tmp_path / "d.zip", progress=False, retries=0)
    assert (tmp_path / "d.zip").read_bytes() == data
    assert server.log[-1][1] == f"bytes={kept}-"


def test_server_ignoring_range_restarts_cleanly(server, tmp_path):
    data = make_zip()
    server.files["/d.zip"] = data
    server.ranges = False
    (tmp_path / "d.zip.part").write_bytes(b"stale bytes from another file")
    download(server.base + "/d.zip", tmp_path / "d.zip", progress=False)
    assert (tmp_path / "d.zip").read_bytes() == data


def test_complete_part_file_is_finished_without_a_body(server, tmp_path):
    data = make_zip()
    server.files["/d.zip"] = data
    (tmp_path / "d.zip.part").write_bytes(data)
    download(server.base + "/d.zip", tmp_path / "d.zip", progress=False)
    assert (tmp_path / "d.zip").read_bytes() == data
    assert server.log == [("/d.zip", f"bytes={len(data)}-")]


@pytest.mark.parametrize("damage", ["flipped byte", "not a zip"])
def test_corrupt_zip_is_removed_with_a_clear_error(server, tmp_path, damage):
    data = bytearray(make_zip())
    if damage == "flipped byte":
        data[len(data) // 2] ^= 0xFF  # inside the stored member: its CRC fails
    else:
        data = bytearray(b"<html>502 Bad Gateway</html>")
    server.files["/d.zip"] = bytes(data)
    with pytest.raises(DownloadError, match="corrupt or truncated zip.*removed.*run again"):
        download(server.base + "/d.zip", tmp_path / "d.zip", progress=False)
    assert list(tmp_path.iterdir()) == []


def test_sha256_checked(server, tmp_path):
    data = make_zip()
    server.files["/d.zip"] = data
    url = server.base + "/d.zip"
    with pytest.raises(DownloadError, match="sha256 mismatch: expected 00ff") as info:
        download(url, tmp_path / "d.zip", sha256="00ff" * 16, progress=False)
    assert hashlib.sha256(data).hexdigest() in str(info.value)
    assert list(tmp_path.iterdir()) == []
    good = hashlib.sha256(data).hexdigest().upper()
    assert download(url, tmp_path / "d.zip", sha256=good, progress=False).exists()


def test_http_error_names_status_and_url(server, tmp_path):
    with pytest.raises(DownloadError, match=r"HTTP 404.*EVALRS_LFM_URL"):
        download(server.base + "/missing.zip", tmp_path / "m.zip", progress=False)


def test_unreachable_server(tmp_path):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = srv.server_address[1]
    srv.server_close()  # nothing listens on this port any more
    with pytest.raises(DownloadError, match="failed after 2 attempts"):
        download(f"http://127.0.0.1:{port}/x.zip", tmp_path / "x.zip", progress=False,
                 retries=1, timeout=5)


def test_lfm_url_from_environment_and_cache_hit(server, tmp_path, monkeypatch):
    server.files["/mirror/evalrs_dataset.zip"] = zip_directory(write_2022(tmp_path / "src"))
    url = server.base + "/mirror/evalrs_dataset.zip"
    monkeypatch.setenv(URL_ENV, url)
    cache = tmp_path / "cache"
    with pytest.warns(UserWarning):
        first = load_source("lfm", cache_dir=cache, progress=False)
    assert server.log == [("/mirror/evalrs_dataset.zip", None)]
    assert first.source == "lfm" and len(first.events) == 6
    assert (lfm_cache_dir(url, cache) / "evalrs_dataset.zip").is_file()

    server.shutdown()  # the second load must not need the network at all
    second = load_source("lfm", cache_dir=cache, progress=False)
    assert len(server.log) == 1
    assert second.fingerprint() == first.fingerprint()
    np.testing.assert_array_equal(second.track_vectors.track_ids, [501, 503, 504])


def test_lfm_url_argument_beats_environment(server, tmp_path, monkeypatch):
    server.files["/a/evalrs_dataset.zip"] = zip_directory(write_2022(tmp_path / "src"))
    monkeypatch.setenv(URL_ENV, server.base + "/nowhere.zip")
    with pytest.warns(UserWarning):
        load_source("lfm", url=server.base + "/a/evalrs_dataset.zip", cache_dir=tmp_path / "c",
                    progress=False)
    assert [p for p, _ in server.log] == ["/a/evalrs_dataset.zip"]


def test_lfm_sha256_mismatch_leaves_no_cache(server, tmp_path):
    server.files["/evalrs_dataset.zip"] = zip_directory(write_2022(tmp_path / "src"))
    url = server.base + "/evalrs_dataset.zip"
    with pytest.raises(DownloadError, match="sha256 mismatch"):
        load_source("lfm", url=url, sha256="0" * 64, cache_dir=tmp_path / "c", progress=False)
    root = lfm_cache_dir(url, tmp_path / "c")
    assert not (root / "evalrs_dataset.zip").exists() and not (root / "tables-2").exists()


def test_lfm_2023_parquet_zip(server, tmp_path):
    server.files["/evalrs_2023.zip"] = zip_directory(write_2023(tmp_path / "src"), top="data")
    tables = load_source("lfm", url=server.base + "/evalrs_2023.zip",
                         cache_dir=tmp_path / "c", progress=False)
    assert len(tables.events) == len(PAIRS) and tables.track_vectors is not None
    assert tables.users.loc[11, "novelty_artist_avg_month"] == 0.1  # profile statistics kept


def test_lfm_damaged_cached_zip_is_fetched_again(server, tmp_path):
    data = zip_directory(write_2022(tmp_path / "src"))
    server.files["/evalrs_dataset.zip"] = data
    url = server.base + "/evalrs_dataset.zip"
    root = lfm_cache_dir(url, tmp_path / "c")
    root.mkdir(parents=True)
    (root / "evalrs_dataset.zip").write_bytes(data[: len(data) // 2])  # truncated earlier copy
    with pytest.warns(UserWarning):
        tables = load_source("lfm", url=url, cache_dir=tmp_path / "c", progress=False)
    assert len(server.log) == 1 and len(tables.events) == len(PAIRS)
    assert (root / "evalrs_dataset.zip").read_bytes() == data
