"""Reading a store file for a dump in bounded memory: windows of it, exact reads, zero scans."""
from __future__ import annotations

import numpy as np

from .. import commitlog as cl
from ..store import Reader

__all__ = ["DEFAULT_WINDOW", "SCAN_WINDOW", "WindowReader", "read_exact", "first_nonzero", "zero_unit_event",
           "partial_unit_event"]


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


def zero_unit_event(read: cl.Reader, unit: int, unit_size: int, size: int, window: int, what: str,
                    **fields: object) -> dict:
    """The ``end_of_data`` event of a file of fixed-size units (a consume queue, DLedger's index) at its
    first all-zero unit ``unit``: where ``what`` ends in this file, and whether non-zero bytes follow."""
    position = unit * unit_size
    after = first_nonzero(read, position, size, min(window, SCAN_WINDOW))
    item: dict = {"type": "event", "event": "end_of_data", "unit": unit, "position": position, **fields,
                  "detail": f"unit {unit} is all zero: {what} in this file ends here"}
    if after >= 0:
        item["detail"] += f"; non-zero bytes follow at position {after}"
        item["non_zero_after"] = after
    else:
        item["detail"] += " (the rest of the file is zero)"
    return item


def partial_unit_event(size: int, unit_size: int) -> dict | None:
    """The ``partial_unit`` event of a file of fixed-size units whose size is not a whole number of them."""
    if not size % unit_size:
        return None
    return {"type": "event", "event": "partial_unit", "position": size - size % unit_size,
            "detail": f"the file ends with {size % unit_size} bytes that are not a whole unit"}
