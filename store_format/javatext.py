"""Java's text rules over UTF-8 bytes, for the kernels: ``Integer.parseInt``/``Long.parseLong`` and
``Character.isWhitespace`` (through ``StringUtils.isBlank``).

The broker decodes property values with ``new String(bytes, UTF_8)`` and applies these to the
UTF-16 string.  The kernels work on the bytes: they decode one code point at a time and look
BMP characters up in tables built here from :mod:`unicodedata`.  A supplementary character is two
surrogate units for Java, neither a digit nor whitespace; malformed UTF-8 becomes U+FFFD, which is
neither either.  (The tables follow the Unicode version of this Python; a broker JDK with an older
Unicode knows fewer digit scripts.)
"""
from __future__ import annotations

import unicodedata

import numba
import numpy as np

__all__ = ["java_digit_table", "java_whitespace_table", "parse_java_long", "is_blank", "next_code_point"]


def _digit_table() -> np.ndarray:
    """``Character.digit(char, 10)`` for every UTF-16 unit: 0..9, or -1."""
    table = np.full(0x10000, -1, dtype=np.int8)
    for unit in range(0x10000):
        if 0xD800 <= unit <= 0xDFFF:
            continue
        d = unicodedata.decimal(chr(unit), -1)
        if d >= 0:
            table[unit] = d
    return table


def _whitespace_table() -> np.ndarray:
    """``Character.isWhitespace(char)``: Unicode space separators (Zs, Zl, Zp) except the non-breaking
    ones (U+00A0, U+2007, U+202F), and U+0009..U+000D, U+001C..U+001F."""
    table = np.zeros(0x10000, dtype=np.bool_)
    for unit in range(0x10000):
        if 0xD800 <= unit <= 0xDFFF or unit in (0x00A0, 0x2007, 0x202F):
            continue
        if unicodedata.category(chr(unit)) in ("Zs", "Zl", "Zp"):
            table[unit] = True
    for unit in (0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F):
        table[unit] = True
    return table


java_digit_table = _digit_table()
java_whitespace_table = _whitespace_table()
_DIGIT = java_digit_table
_SPACE = java_whitespace_table


@numba.njit(cache=True, nogil=True, inline="always")
def next_code_point(buf, i, end):
    """The code point of the well-formed UTF-8 sequence at ``buf[i]`` and the index after it;
    (0xFFFD, i + 1) for a malformed one (what it stands for does not matter to the callers: U+FFFD
    is neither a digit nor whitespace)."""
    b0 = np.int64(buf[i])
    if b0 < 0x80:
        return b0, i + 1
    if 0xC2 <= b0 <= 0xDF and i + 1 < end and (buf[i + 1] & 0xC0) == 0x80:
        return ((b0 & 0x1F) << 6) | (np.int64(buf[i + 1]) & 0x3F), i + 2
    if 0xE0 <= b0 <= 0xEF and i + 2 < end and (buf[i + 1] & 0xC0) == 0x80 and (buf[i + 2] & 0xC0) == 0x80:
        cp = ((b0 & 0x0F) << 12) | ((np.int64(buf[i + 1]) & 0x3F) << 6) | (np.int64(buf[i + 2]) & 0x3F)
        if cp >= 0x800 and not (0xD800 <= cp <= 0xDFFF):
            return cp, i + 3
    if (0xF0 <= b0 <= 0xF4 and i + 3 < end and (buf[i + 1] & 0xC0) == 0x80 and (buf[i + 2] & 0xC0) == 0x80
            and (buf[i + 3] & 0xC0) == 0x80):
        cp = (((b0 & 0x07) << 18) | ((np.int64(buf[i + 1]) & 0x3F) << 12) | ((np.int64(buf[i + 2]) & 0x3F) << 6)
              | (np.int64(buf[i + 3]) & 0x3F))
        if 0x10000 <= cp <= 0x10FFFF:
            return cp, i + 4
    return np.int64(0xFFFD), i + 1


@numba.njit(cache=True, nogil=True)
def parse_java_long(buf, start, end, lo, hi):
    """``Long.parseLong`` / ``Integer.parseInt`` / ``Short.parseShort`` (radix 10) of the UTF-8 value
    ``buf[start:end]`` for the range [lo, hi]: returns (value, ok).  Digits of any script count
    (``Character.digit``); an optional leading ``-`` or ``+``; nothing else."""
    if start >= end:
        return np.int64(0), False
    neg = False
    i = start
    if buf[i] == 45 or buf[i] == 43:  # '-' '+'
        neg = buf[i] == 45
        i += 1
        if i >= end:
            return np.int64(0), False
    # accumulate negatively, as the JDK does, so that the full range fits an int64
    limit = lo if neg else -hi
    multmin = limit // 10 + (1 if limit % 10 != 0 else 0)  # Java's truncating limit / 10
    v = np.int64(0)
    while i < end:
        cp, i = next_code_point(buf, i, end)
        if cp >= 0x10000:
            return np.int64(0), False
        d = np.int64(_DIGIT[cp])
        if d < 0 or v < multmin:
            return np.int64(0), False
        v *= 10
        if v < limit + d:
            return np.int64(0), False
        v -= d
    return (v if neg else -v), True


@numba.njit(cache=True, nogil=True)
def is_blank(buf, start, length):
    """``StringUtils.isBlank`` of a present UTF-8 value: empty, or every char ``Character.isWhitespace``."""
    i = start
    end = start + length
    while i < end:
        c = buf[i]
        if c < 0x80:
            if not _SPACE[c]:
                return False
            i += 1
            continue
        cp, i = next_code_point(buf, i, end)
        if cp >= 0x10000 or not _SPACE[cp]:
            return False
    return True
