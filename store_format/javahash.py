"""Java ``String.hashCode`` over UTF-16 code units, vectorized, and the index key hash.

``s.hashCode() = s[0]*31^(n-1) + ... + s[n-1]`` in wrapping 32-bit arithmetic, where ``s[i]`` are
UTF-16 code units: a character outside the BMP counts as two (a surrogate pair).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import numba
import numpy as np

from .layout import INDEX_KEY_SEPARATOR, signed32

__all__ = [
    "java_string_hash",
    "java_string_hashes",
    "index_key",
    "index_key_hash",
    "index_key_hashes",
    "index_hash",
    "utf16_hash_update",
    "java_utf8_decode",
]

_MASK32 = 0xFFFFFFFF


def java_string_hash(text: str) -> int:
    """``String.hashCode`` of one string, as a signed 32-bit int."""
    return int(java_string_hashes([text])[0])


def java_string_hashes(texts: Sequence[str] | Iterable[str]) -> np.ndarray:
    """``String.hashCode`` of many strings at once (int32 array).

    All strings are encoded to one UTF-16-BE buffer; each code unit is multiplied by
    ``31^(units after it)`` and the products are summed per string, all modulo 2**32.
    """
    texts = list(texts)
    if not texts:
        return np.zeros(0, dtype=np.int32)
    encoded = [t.encode("utf-16-be", "surrogatepass") for t in texts]
    lengths = np.fromiter((len(e) // 2 for e in encoded), dtype=np.int64, count=len(encoded))
    units = np.frombuffer(b"".join(encoded), dtype=">u2").astype(np.uint32)
    return _hash_units(units, lengths)


def _hash_units(units: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    total = int(lengths.sum())
    out = np.zeros(len(lengths), dtype=np.uint32)
    if total == 0:
        return out.view(np.int32)
    ends = np.cumsum(lengths)
    owner = np.repeat(np.arange(len(lengths)), lengths)
    # exponent of each unit = number of units after it in its own string
    exponent = ends[owner] - 1 - np.arange(total)
    powers = _powers_of_31(int(lengths.max()))
    terms = units * powers[exponent]  # uint32 arithmetic wraps modulo 2**32
    nonempty = lengths > 0
    starts = ends - lengths
    out[nonempty] = np.add.reduceat(terms, starts[nonempty]).astype(np.uint32)
    return out.view(np.int32)


def _powers_of_31(n: int) -> np.ndarray:
    powers = np.empty(max(n, 1), dtype=np.uint32)
    powers[0] = 1
    for i in range(1, n):  # n is the longest string, not the number of strings
        powers[i] = np.uint32((int(powers[i - 1]) * 31) & _MASK32)
    return powers


def index_key(topic: str, key: str) -> str:
    """The string the index stores a key under: ``topic#key`` [IndexService.buildKey].

    >>> index_key("TopicA", "order-1")
    'TopicA#order-1'
    """
    return topic + INDEX_KEY_SEPARATOR + key


def index_key_hash(key: str) -> int:
    """Hash used for index slots: ``abs(key.hashCode())`` with ``Integer.MIN_VALUE`` mapped to 0
    [IndexFile.indexKeyHashMethod]."""
    return int(index_key_hashes([key])[0])


def index_key_hashes(keys: Sequence[str] | Iterable[str]) -> np.ndarray:
    """Vectorized :func:`index_key_hash` (int32 array)."""
    return index_hash(java_string_hashes(keys))


def index_hash(java_hash: np.ndarray) -> np.ndarray:
    """``IndexFile.indexKeyHashMethod`` of hashCodes (int32, or the same 32 bits held unsigned in an
    int64): ``abs(hashCode)``, with ``Integer.MIN_VALUE`` (whose abs overflows to itself) as 0."""
    out = np.abs(signed32(np.asarray(java_hash, dtype=np.int64)))
    out[out > 0x7FFFFFFF] = 0
    return out.astype(np.int32)


@numba.njit(cache=True, nogil=True)
def utf16_hash_update(h, buf, start, end):
    """Continue a ``String.hashCode`` (``h`` as int64 in [0, 2**32)) over the UTF-8 bytes
    ``buf[start:end]`` decoded to UTF-16 code units.

    Runs of ASCII go four characters a step (``h*31^4 + c0*31^3 + c1*31^2 + c2*31 + c3``), which
    breaks the multiply-add dependency chain of the plain loop.  Returns ``(h, ok)``; ``ok`` is
    False on malformed UTF-8, where Java substitutes U+FFFD and the caller must recompute with a
    real decoder.
    """
    i = start
    while i < end:
        if i + 4 <= end:
            b0 = np.int64(buf[i])
            b1 = np.int64(buf[i + 1])
            b2 = np.int64(buf[i + 2])
            b3 = np.int64(buf[i + 3])
            if ((b0 | b1 | b2 | b3) & 0x80) == 0:
                h = (h * 923521 + b0 * 29791 + b1 * 961 + b2 * 31 + b3) & 0xFFFFFFFF
                i += 4
                continue
        b0 = np.int64(buf[i])
        if b0 < 0x80:
            h = (h * 31 + b0) & 0xFFFFFFFF
            i += 1
            continue
        if b0 >= 0xC2 and b0 <= 0xDF:
            if i + 1 >= end or (buf[i + 1] & 0xC0) != 0x80:
                return h, False
            cp = ((b0 & 0x1F) << 6) | (np.int64(buf[i + 1]) & 0x3F)
            i += 2
        elif b0 >= 0xE0 and b0 <= 0xEF:
            if i + 2 >= end or (buf[i + 1] & 0xC0) != 0x80 or (buf[i + 2] & 0xC0) != 0x80:
                return h, False
            cp = ((b0 & 0x0F) << 12) | ((np.int64(buf[i + 1]) & 0x3F) << 6) | (np.int64(buf[i + 2]) & 0x3F)
            if cp < 0x800 or (cp >= 0xD800 and cp <= 0xDFFF):
                return h, False
            i += 3
        elif b0 >= 0xF0 and b0 <= 0xF4:
            if (i + 3 >= end or (buf[i + 1] & 0xC0) != 0x80 or (buf[i + 2] & 0xC0) != 0x80
                    or (buf[i + 3] & 0xC0) != 0x80):
                return h, False
            cp = (((b0 & 0x07) << 18) | ((np.int64(buf[i + 1]) & 0x3F) << 12) | ((np.int64(buf[i + 2]) & 0x3F) << 6)
                  | (np.int64(buf[i + 3]) & 0x3F))
            if cp < 0x10000 or cp > 0x10FFFF:
                return h, False
            i += 4
        else:
            return h, False
        if cp >= 0x10000:
            cp -= 0x10000
            h = (h * 31 + (0xD800 | (cp >> 10))) & 0xFFFFFFFF
            h = (h * 31 + (0xDC00 | (cp & 0x3FF))) & 0xFFFFFFFF
        else:
            h = (h * 31 + cp) & 0xFFFFFFFF
    return h, True


_REPLACEMENT = "\ufffd"


def _continuation(b: int) -> bool:
    return (b & 0xC0) == 0x80


def java_utf8_decode(data: bytes | bytearray | memoryview | np.ndarray) -> str:
    """``new String(bytes, StandardCharsets.UTF_8)``: malformed input becomes U+FFFD the way the
    JDK's decoder does it.

    Valid UTF-8 decodes as in Python.  Malformed input mostly does too, except where the JDK first
    takes a lead byte and its continuation bytes as one unit and only then rejects it: ``ED A0 80``
    (an encoded surrogate, as CESU-8 writes them) is one U+FFFD for the JDK and three for Python's
    ``decode("utf-8", "replace")``; the hash codes of tags, keys and topics follow the JDK.
    """
    data = bytes(data)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    out: list[str] = []
    i, n = 0, len(data)
    while i < n:
        b1 = data[i]
        i += 1
        if b1 < 0x80:
            out.append(chr(b1))
        elif 0xC2 <= b1 <= 0xDF:  # two bytes
            if i < n and _continuation(data[i]):
                out.append(chr(((b1 & 0x1F) << 6) | (data[i] & 0x3F)))
                i += 1
            else:
                out.append(_REPLACEMENT)
        elif 0xE0 <= b1 <= 0xEF:  # three bytes
            if i + 1 < n:
                b2, b3 = data[i], data[i + 1]
                bad_second = (b1 == 0xE0 and (b2 & 0xE0) == 0x80) or not _continuation(b2)
                if bad_second or not _continuation(b3):
                    out.append(_REPLACEMENT)  # the malformed unit: the lead, or lead + second byte
                    i += 0 if bad_second else 1
                else:
                    c = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
                    out.append(_REPLACEMENT if 0xD800 <= c <= 0xDFFF else chr(c))  # a surrogate: one U+FFFD
                    i += 2
            else:  # cut short by the end of the input
                out.append(_REPLACEMENT)
                if i < n and ((b1 == 0xE0 and (data[i] & 0xE0) == 0x80) or not _continuation(data[i])):
                    continue
                break
        elif 0xF0 <= b1 <= 0xF7:  # four bytes
            if i + 2 < n:
                b2, b3, b4 = data[i], data[i + 1], data[i + 2]
                cp = ((b1 & 0x07) << 18) | ((b2 & 0x3F) << 12) | ((b3 & 0x3F) << 6) | (b4 & 0x3F)
                if _continuation(b2) and _continuation(b3) and _continuation(b4) and 0x10000 <= cp <= 0x10FFFF:
                    out.append(chr(cp))
                    i += 3
                    continue
                out.append(_REPLACEMENT)
                if (b1 > 0xF4 or (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF) or (b1 == 0xF4 and (b2 & 0xF0) != 0x80)
                        or not _continuation(b2)):
                    pass
                elif not _continuation(b3):
                    i += 1
                else:
                    i += 2
            else:  # cut short by the end of the input
                out.append(_REPLACEMENT)
                if b1 > 0xF4 or (i < n and ((b1 == 0xF0 and not 0x90 <= data[i] <= 0xBF)
                                            or (b1 == 0xF4 and (data[i] & 0xF0) != 0x80)
                                            or not _continuation(data[i]))):
                    continue
                i += 1
                if i < n and not _continuation(data[i]):
                    continue
                break
        else:  # a continuation byte without a lead, C0, C1, F8..FF
            out.append(_REPLACEMENT)
    return "".join(out)
