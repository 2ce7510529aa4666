"""A live uvicorn for the server tests: the app on 127.0.0.1 (a free port) in a thread, and the
HTTP clients that talk to it."""

from __future__ import annotations

import contextlib
import functools
import ssl
import threading
import time
from collections.abc import Iterator


@contextlib.contextmanager
def live_server(app, timeout: float = 20.0) -> Iterator[str]:
    """Serve ``app`` with uvicorn on 127.0.0.1 in a daemon thread; yield its base URL.

    Raises ``RuntimeError`` when the server has not started within ``timeout`` seconds; the
    server is asked to exit and joined (bounded by ``timeout``) when the block ends.
    """
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                           lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the live server did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout)


@functools.cache
def _tls() -> ssl.SSLContext:
    """The one TLS context of every client of ``http_client``: httpx otherwise loads the
    certificate store again for each client it makes (~30 ms of CPU each, and the tests make
    thousands), while the tests' servers speak plain HTTP on 127.0.0.1."""
    return ssl.create_default_context()


def http_client(base_url: str = "", **options):
    """An ``httpx.Client`` (``options`` as its own: ``timeout``, ...) for a test's server at
    ``base_url``; its connections are its own, its TLS context is shared (``_tls``)."""
    import httpx

    return httpx.Client(base_url=base_url, verify=_tls(), **options)
