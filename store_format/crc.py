"""Body CRC of commitlog records: the one place that owns ``UtilAll.crc32``.

``UtilAll.crc32(byte[] array, int offset, int length)`` (common module, 4.9.x and 5.x) returns
``(int) (crc32.getValue() & 0x7FFFFFFF)`` of a ``java.util.zip.CRC32``: the CRC-32 of zlib
(IEEE 802.3 polynomial, reflected, initial and final XOR ``0xFFFFFFFF``) with the sign bit cleared;
the broker stores it in a record's ``bodyCRC`` field and checks it on recovery.

Two ways to compute it, one rule:

* :func:`crc32` / :func:`body_crc`: one byte string, for Python callers (``zlib.crc32``);
* :func:`crc32_spans` / :func:`body_crc_spans`: many spans of one buffer (a walk's text addressed by
  segment position, a writer's column of bodies) in a loop compiled with numba, with no Python
  object per span.  Each span's CRC comes from ISA-L's ``crc32_gzip_refl`` (the ``isal`` package's
  library, carry-less multiplication folding: about 8 GB/s on 1 KiB bodies against 1 GB/s for a
  table walk), called from the compiled loop by its symbol; without that library, from a
  slicing-by-8 table walk (:data:`SPANS_ENGINE` says which).  ``tests/test_crc.py`` checks that
  all of them agree with zlib.
"""
from __future__ import annotations

import ctypes
import zlib

import numba
import numpy as np
from numba import types

__all__ = ["BODY_CRC_MASK", "SPANS_ENGINE", "crc32", "body_crc", "crc32_spans", "body_crc_spans"]

BODY_CRC_MASK = 0x7FFFFFFF  # UtilAll.crc32: ``crc32.getValue() & 0x7FFFFFFF``, the sign bit cleared
_POLY = 0xEDB88320  # CRC-32 (IEEE 802.3), reflected


def _tables() -> np.ndarray:
    t = np.zeros((8, 256), dtype=np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        t[0, i] = c
    for i in range(256):
        c = int(t[0, i])
        for k in range(1, 8):
            c = (c >> 8) ^ int(t[0, c & 0xFF])
            t[k, i] = c
    return t


_TABLES = _tables()


@numba.njit(cache=True, nogil=True)
def _crc(buf, start, length, tables):
    """CRC-32 (unmasked, uint32) of ``buf[start:start + length]`` with the tables of :func:`_tables`;
    a kernel, callable from other kernels."""
    c = np.uint32(0xFFFFFFFF)
    p = start
    end = start + length
    t0, t1, t2, t3 = tables[0], tables[1], tables[2], tables[3]
    t4, t5, t6, t7 = tables[4], tables[5], tables[6], tables[7]
    while p + 8 <= end:
        lo = c ^ (np.uint32(buf[p]) | (np.uint32(buf[p + 1]) << 8) | (np.uint32(buf[p + 2]) << 16)
                  | (np.uint32(buf[p + 3]) << 24))
        c = (t7[lo & 0xFF] ^ t6[(lo >> 8) & 0xFF] ^ t5[(lo >> 16) & 0xFF] ^ t4[lo >> 24]
             ^ t3[buf[p + 4]] ^ t2[buf[p + 5]] ^ t1[buf[p + 6]] ^ t0[buf[p + 7]])
        p += 8
    while p < end:
        c = (c >> 8) ^ t0[(c ^ buf[p]) & 0xFF]
        p += 1
    return c ^ np.uint32(0xFFFFFFFF)


@numba.njit(cache=True, nogil=True)
def _table_spans(buf, origin, starts, lens, tables, out):
    for i in range(starts.shape[0]):
        n = lens[i]
        if n <= 0 or starts[i] < 0:
            out[i] = 0  # CRC-32 of an empty body
        else:
            out[i] = np.int64(_crc(buf, starts[i] - origin, n, tables))


def _load_isal() -> bool:
    """Make ISA-L's ``crc32_gzip_refl(init, buf, len)`` (zlib's CRC-32 of ``buf`` continued from
    ``init``) resolvable by name in compiled code: load the ``isal`` package's extension library,
    which exports it, into the process's symbol space.  False when it is not installed."""
    try:
        import llvmlite.binding as llvm
        from isal import isal_zlib
        ctypes.CDLL(isal_zlib.__file__).crc32_gzip_refl   # noqa: B018 (the symbol must be exported)
        llvm.load_library_permanently(isal_zlib.__file__)
    except (ImportError, OSError, AttributeError, RuntimeError):
        return False
    return True


SPANS_ENGINE = "isa-l" if _load_isal() else "table"
_ISAL_CRC = types.ExternalFunction("crc32_gzip_refl", types.uint32(types.uint32, types.voidptr, types.uint64))


@numba.njit(cache=True, nogil=True)
def _spans_fit(buf, origin, starts, lens):
    """Every non-empty span lies in ``buf`` (the compiled loops do not check their reads)."""
    size = buf.shape[0]
    for i in range(starts.shape[0]):
        n = lens[i]
        if n > 0 and starts[i] >= 0 and (starts[i] - origin < 0 or starts[i] - origin + n > size):
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _isal_spans(buf, origin, starts, lens, out):
    for i in range(starts.shape[0]):
        n = lens[i]
        if n <= 0 or starts[i] < 0:
            out[i] = 0  # CRC-32 of an empty body
        else:
            out[i] = np.int64(_ISAL_CRC(np.uint32(0), buf[starts[i] - origin:].ctypes.data, np.uint64(n)))  # type: ignore[arg-type]


def crc32(data: bytes | bytearray | memoryview | np.ndarray) -> int:
    """``java.util.zip.CRC32.getValue()`` of one byte string (``zlib.crc32``, unsigned)."""
    if isinstance(data, np.ndarray):
        return zlib.crc32(np.ascontiguousarray(data).view(np.uint8).data)
    return zlib.crc32(data)


def body_crc(data: bytes | bytearray | memoryview | np.ndarray) -> int:
    """``UtilAll.crc32(byte[])``: the bodyCRC of one body, ``0 <= value <= 0x7FFFFFFF``."""
    return crc32(data) & BODY_CRC_MASK


def crc32_spans(text: np.ndarray, origin: int, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """CRC-32 of each span ``text[start - origin : start - origin + len]`` (int64, unsigned values)."""
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    lens = np.ascontiguousarray(lens, dtype=np.int64)
    out = np.empty(len(starts), dtype=np.int64)
    buf = np.asarray(text, dtype=np.uint8)
    if not _spans_fit(buf, np.int64(origin), starts, lens):
        raise IndexError("a span ends beyond the buffer")
    if SPANS_ENGINE == "isa-l":
        _isal_spans(buf, np.int64(origin), starts, lens, out)
    else:
        _table_spans(buf, np.int64(origin), starts, lens, _TABLES, out)
    return out


def body_crc_spans(text: np.ndarray, origin: int, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """``UtilAll.crc32`` of each body span (:func:`body_crc` of each), as int32."""
    return (crc32_spans(text, origin, starts, lens) & BODY_CRC_MASK).astype(np.int32)
