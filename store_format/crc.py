"""Body CRC of commitlog records, vectorized over byte spans.

Mirrors ``UtilAll.crc32(byte[])``: the CRC-32 of ``java.util.zip.CRC32`` (the zlib polynomial,
reflected, initial and final XOR ``0xFFFFFFFF``) with the sign bit cleared (``& 0x7FFFFFFF``), which
is what the broker stores in a record's ``bodyCRC`` field.

The kernel is a slicing-by-8 table walk compiled with numba; it reads spans of one buffer (the walk's
text, addressed by segment position) and never builds Python objects.
"""
from __future__ import annotations

import numba
import numpy as np

__all__ = ["crc32", "crc32_spans", "body_crc_spans"]

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
def _crc_spans(buf, origin, starts, lens, tables, out):
    for i in range(starts.shape[0]):
        n = lens[i]
        if n <= 0 or starts[i] < 0:
            out[i] = 0  # CRC-32 of an empty body
        else:
            out[i] = np.int64(_crc(buf, starts[i] - origin, n, tables))


def crc32(data: bytes | memoryview | np.ndarray) -> int:
    """``java.util.zip.CRC32`` of one byte string (equal to ``zlib.crc32``)."""
    buf = np.frombuffer(bytes(data), dtype=np.uint8) if not isinstance(data, np.ndarray) else data.view(np.uint8)
    return int(_crc(buf, 0, len(buf), _TABLES))


def crc32_spans(text: np.ndarray, origin: int, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """CRC-32 of each span ``text[start - origin : start - origin + len]`` (int64, unsigned values)."""
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    lens = np.ascontiguousarray(lens, dtype=np.int64)
    out = np.empty(len(starts), dtype=np.int64)
    _crc_spans(np.asarray(text, dtype=np.uint8), np.int64(origin), starts, lens, _TABLES, out)
    return out


def body_crc_spans(text: np.ndarray, origin: int, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """``UtilAll.crc32`` of each body span: the CRC-32 with the sign bit cleared, as int32."""
    return (crc32_spans(text, origin, starts, lens) & 0x7FFFFFFF).astype(np.int32)
