"""A local HTTP file server on 127.0.0.1 (``server``) for the download tests: it serves
``server.files`` by path, answers byte ranges (unless ``server.ranges`` is false), hangs up
part-way through a file ``server.drops[path]`` times, and logs each request's path and range."""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        srv = self.server
        rng = self.headers.get("Range")
        srv.log.append((self.path, rng))
        data = srv.files.get(self.path)
        if data is None:
            self.send_error(404, "Not Found")
            return
        start = 0
        if rng and srv.ranges:
            start = int(re.match(r"bytes=(\d+)-", rng).group(1))
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if srv.drops.get(self.path, 0) > 0:  # send part of the body, then hang up
            srv.drops[self.path] -= 1
            self.wfile.write(body[: max(1, len(body) // 3)])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    """The file server, started for the test and stopped after it; ``server.base`` is its URL."""
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.files, srv.drops, srv.log, srv.ranges = {}, {}, [], True
    thread = threading.Thread(target=srv.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    srv.base = f"http://127.0.0.1:{srv.server_address[1]}"
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=5)
