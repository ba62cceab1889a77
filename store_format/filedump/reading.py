"""Reading a store file for a dump in bounded memory: windows of it, exact reads, zero scans."""
from __future__ import annotations

import numpy as np

from .. import commitlog as cl
from ..store import Reader

__all__ = ["DEFAULT_WINDOW", "SCAN_WINDOW", "WindowReader", "read_exact", "first_nonzero"]


DEFAULT_WINDOW = 16 << 20  # measured on a 1 GiB segment: ~190 MB resident at 16 MiB, ~350 MB at 64 MiB
SCAN_WINDOW = 4 << 20  # zero scans and table reads


class WindowReader:
    """A :class:`store_format.store.Reader` without its ``view``: walks then copy one window at a time
    into reused memory instead of walking a map of the whole file, so the dump's resident memory
    stays proportional to its window (the pages of a mapped 1 GiB segment count as resident as the
    walk touches them)."""

    def __init__(self, read: Reader) -> None:
        self._read = read

    def __call__(self, pos: int, length: int):
        return self._read(pos, length)

    def read_into(self, pos: int, out) -> int:
        return self._read.read_into(pos, out)


def read_exact(read: cl.Reader, pos: int, length: int) -> bytes:
    return bytes(read(pos, length)) if length > 0 else b""


def first_nonzero(read: cl.Reader, start: int, end: int, window: int = SCAN_WINDOW) -> int:
    """Position of the first non-zero byte in ``[start, end)``, or -1; reads ``window`` bytes at a time."""
    pos = start
    window = max(window, 1 << 16)
    while pos < end:
        n = min(window, end - pos)
        buf = np.frombuffer(read_exact(read, pos, n), dtype=np.uint8)
        if len(buf) == 0:
            return -1
        nz = np.flatnonzero(buf)
        if len(nz):
            return pos + int(nz[0])
        pos += len(buf)
    return -1
