"""Reading a rendered figure back: the pixel size of a PNG."""

from __future__ import annotations

import struct


def png_size(png: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", png[16:24])
