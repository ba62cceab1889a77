"""The whole-record CRC property a 5.x recovery checks with ``forceVerifyPropCRC=true``.

Mirrors ``CommitLog.checkMessageAndReturnSize`` (rocketmq-all-5.3.3 and rocketmq-store 5.5.1,
``store/CommitLog.java``; 4.9.8 has neither setting) with ``checkCRC`` (``checkCRCOnRecover``) and
``MessageStoreConfig.isForceVerifyPropCRC()``:

* the body CRC is then not checked at all;
* after the properties are read, ``MessageConst.PROPERTY_CRC32`` (``"__CRC32#"``) is looked up in the map
  ``MessageDecoder.string2messageProperties`` made (the last such pair wins: the walk's property spans,
  :data:`store_format.walkresult.P_CRC32`).  Its value, a string of ``n`` UTF-16 units ``c[0..n-1]``, is read
  from its last unit to its first as ``expected = expected * 10 + (c[i] - '0')`` in ``int`` arithmetic, that
  is ``sum(c[i] - '0') * 10**i`` modulo 2**32, signed: the writer stores the digits least significant first
  (``MessageDecoder.createCrc32``, ten of them);
* no properties, no such pair, or a negative ``expected``: the check fails ("not found CRC in properties"),
  ``DispatchRequest(-1, false)``;
* else ``UtilAll.crc32`` (CRC-32 with the sign bit cleared) of the record's bytes from its start (the
  buffer's position after the properties minus ``totalSize``) up to ``totalSize - CommitLog.CRC32_RESERVED_LEN``
  (20: the property's own ``__CRC32#`` + 0x01 + ten digits + 0x02, which the writer
  ``DefaultAppendMessageCallback`` reserves at the end of the properties when ``enabledAppendPropCRC=true``)
  must equal ``expected``, else -1.

The check comes after the properties' other reads (``DELAY`` parsing, ...) and before ``totalSize`` is compared
with the fields; a record whose sizes disagree fails either way, at the same position, so only records whose
sizes agree are checked here.  The DLedger commit log's encoder never appends the property.

The lookup and the CRCs run over a walk's output arrays (:func:`prop_crc_check`): a numba loop over the
value spans, and the spans' CRCs from :func:`store_format.crc.crc32_spans`; no Python object per record,
except for a value that is not valid UTF-8 (decoded as the JDK does, :func:`store_format.javahash.java_utf8_decode`).
"""
from __future__ import annotations

import numba
import numpy as np

from .crc import BODY_CRC_MASK, crc32_spans
from .javahash import java_utf8_decode

__all__ = ["CRC32_RESERVED_LEN", "PROPERTY_CRC32", "expected_prop_crc", "prop_crc_check"]

PROPERTY_CRC32 = "__CRC32#"                        # MessageConst.PROPERTY_CRC32
CRC32_RESERVED_LEN = len(PROPERTY_CRC32) + 1 + 10 + 1   # CommitLog.CRC32_RESERVED_LEN


@numba.njit(cache=True, nogil=True, inline="always")
def _unit_step(acc, scale, unit):
    """One UTF-16 unit of the value into ``sum((unit - '0') * 10**i)`` modulo 2**32."""
    acc = (acc + (unit - 48) * scale) % 4294967296
    return acc, (scale * 10) % 4294967296


@numba.njit(cache=True, nogil=True)
def _expected_values(buf, origin, starts, lens, out, slow):
    """``expected`` for each value span (``starts`` segment positions, -1: no property), as int64 in
    [-2**31, 2**31); -1 without the property.  ``slow[i]``: the value is not well-formed UTF-8, left to
    the JDK decoder."""
    for i in range(starts.shape[0]):
        out[i] = -1
        slow[i] = False
        s = starts[i]
        if s < 0:
            continue
        p = s - origin
        end = p + lens[i]
        acc = np.int64(0)
        scale = np.int64(1)
        ok = True
        while p < end:
            b0 = np.int64(buf[p])
            if b0 < 0x80:
                acc, scale = _unit_step(acc, scale, b0)
                p += 1
                continue
            if 0xC2 <= b0 <= 0xDF and p + 1 < end and (buf[p + 1] & 0xC0) == 0x80:
                cp = ((b0 & 0x1F) << 6) | (np.int64(buf[p + 1]) & 0x3F)
                p += 2
            elif (0xE0 <= b0 <= 0xEF and p + 2 < end and (buf[p + 1] & 0xC0) == 0x80
                  and (buf[p + 2] & 0xC0) == 0x80):
                cp = ((b0 & 0x0F) << 12) | ((np.int64(buf[p + 1]) & 0x3F) << 6) | (np.int64(buf[p + 2]) & 0x3F)
                if cp < 0x800 or (0xD800 <= cp <= 0xDFFF):
                    ok = False
                    break
                p += 3
            elif (0xF0 <= b0 <= 0xF4 and p + 3 < end and (buf[p + 1] & 0xC0) == 0x80
                  and (buf[p + 2] & 0xC0) == 0x80 and (buf[p + 3] & 0xC0) == 0x80):
                cp = (((b0 & 0x07) << 18) | ((np.int64(buf[p + 1]) & 0x3F) << 12)
                      | ((np.int64(buf[p + 2]) & 0x3F) << 6) | (np.int64(buf[p + 3]) & 0x3F))
                if cp < 0x10000 or cp > 0x10FFFF:
                    ok = False
                    break
                p += 4
            else:
                ok = False
                break
            if cp >= 0x10000:   # a surrogate pair: two units
                cp -= 0x10000
                acc, scale = _unit_step(acc, scale, 0xD800 | (cp >> 10))
                acc, scale = _unit_step(acc, scale, 0xDC00 | (cp & 0x3FF))
            else:
                acc, scale = _unit_step(acc, scale, cp)
        if not ok:
            slow[i] = True
            continue
        out[i] = acc - 4294967296 if acc >= 2147483648 else acc


def expected_prop_crc(value: str) -> int:
    """``expected`` of one property value (a Java string), as ``checkMessageAndReturnSize`` reads it."""
    acc, scale = 0, 1
    units = value.encode("utf-16-be", "surrogatepass")
    for k in range(0, len(units), 2):
        acc = (acc + (int.from_bytes(units[k:k + 2], "big") - 48) * scale) % (1 << 32)
        scale = scale * 10 % (1 << 32)
    return acc - (1 << 32) if acc >= 1 << 31 else acc


def prop_crc_check(text: np.ndarray, origin: int, pos: np.ndarray, total: np.ndarray,
                   value_span: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The check of each record: ``(expected, computed)`` as int64 arrays; the record passes when
    ``expected >= 0 and computed == expected``.  ``computed`` is -1 where not computed (no property, or
    ``rows`` False: records whose sizes disagree, which fail anyway).

    ``text``/``origin``: the walk's bytes (``text[p - origin]`` is segment position ``p``); ``pos`` and
    ``total``: each record's start and totalSize; ``value_span``: ``(start, length)`` of its
    ``__CRC32#`` value (start -1: none)."""
    buf = np.asarray(text, dtype=np.uint8)
    starts = np.ascontiguousarray(np.where(rows, value_span[:, 0], -1), dtype=np.int64)
    lens = np.ascontiguousarray(value_span[:, 1], dtype=np.int64)
    expected = np.empty(len(starts), dtype=np.int64)
    slow = np.empty(len(starts), dtype=np.bool_)
    _expected_values(buf, np.int64(origin), starts, lens, expected, slow)
    for i in np.flatnonzero(slow):   # malformed UTF-8: U+FFFD where the JDK puts it
        s = int(starts[i]) - origin
        expected[i] = expected_prop_crc(java_utf8_decode(buf[s:s + int(lens[i])]))
    check = rows & (expected >= 0)
    computed = np.full(len(starts), -1, dtype=np.int64)
    if check.any():
        computed[check] = crc32_spans(buf, origin, np.asarray(pos)[check],
                                      np.asarray(total)[check] - CRC32_RESERVED_LEN) & BODY_CRC_MASK
    return expected, computed
